"""TSL105's masks from elsewhere (issue 38): a bool or uint8 index built by a comparison, a
logical op or a mask dtype, reached through names, `self.<attr>` set in `__init__`, a helper
of the same module or of another one, and a parameter. Each form with the near-miss it must
leave alone: integer indices, `torch.where`, `masked_fill`, a host mask on a host tensor, a
comparison of values of unknown kind. Single modules are linted alone; projects are written
to a temporary directory and checked as a tree and file by file (the answers must agree)."""

from __future__ import annotations

import collections
import textwrap
from pathlib import Path

import pytest

from tests.test_objects import project as lint_project
from torchsync_lint.engine import lint_source
from torchsync_lint.rule import load_rules

RULES = load_rules()

LOOP = """\
import torch
{helpers}
def train(model, loader, opt, device):
    model = model.to(device)
    for x, y in loader:
        x = x.to(device, non_blocking=True)
        y = y.to(device, non_blocking=True)
        logits = model(x)
{body}
"""


def in_loop(body: str, helpers: str = "") -> str:
    return LOOP.format(helpers=textwrap.dedent(helpers), body=textwrap.indent(textwrap.dedent(body), " " * 8))


def tsl105(source: str) -> list[tuple[int, str]]:
    return sorted((f.line, f.message) for f in lint_source(source, "t.py", {"TSL105"}))


def line_of(source: str, snippet: str) -> int:
    return next(i for i, line in enumerate(source.splitlines(), 1) if snippet in line)


def project(tmp_path: Path, files: dict[str, str], capsys) -> collections.Counter:
    """TSL105 findings of ``files`` linted as one project, whole and each file alone (both
    must agree): (file name, line, message) -> count."""
    return lint_project(tmp_path, files, capsys, select="TSL105", fields=("line", "message"))


def lines(found: collections.Counter, name: str) -> list[int]:
    return sorted(line for (file, line, _), n in found.items() if file == name for _ in range(n))


# -- one module ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "body",
    [
        "pad = (logits == 0).all(dim=-1)\nkept = logits[~pad]",  # a reduction of a comparison
        "keep = (logits > 0.05)[0, :]\nkept = logits[:, keep]",  # a slice of a mask, not first
        "pos = torch.ge(logits, 0.5)\nkept = logits[pos, :]",  # a comparison function
        "m = y > 0\nm &= y < 9\nkept = logits[m]",  # a mask and-ed in place
        "suppress = torch.zeros(logits.shape[0], dtype=torch.uint8).to(device)\nkept = logits[1 - suppress]",  # uint8
        "m = torch.ones(logits.shape, dtype=bool).to(device)\nkept = logits[m]",  # the builtin bool as dtype
        "m = (y > 0).to(device).reshape(-1)\nkept = logits.reshape(-1)[m]",  # moved and reshaped
    ],
    ids=["all-of-comparison", "sliced-mask", "torch-ge", "and-assign", "uint8", "builtin-bool-dtype", "kept-by-methods"],
)
def test_a_mask_of_device_values_indexes_dynamically(body):
    src = in_loop(body)
    assert [line for line, _ in tsl105(src)] == [line_of(src, "kept = ")]


@pytest.mark.parametrize(
    "body",
    [
        "idx = logits.argmax(1)\nkept = logits[idx]",  # integer indices: a gather of static size
        "idx = torch.arange(4, device=device)\nkept = logits[idx]",
        "idx = (y > 0).long()\nkept = logits[idx]",  # a mask turned into integers
        "kept = torch.where(y > 0, logits, 0.0)",  # no count read
        "kept = logits.masked_fill(y > 0, 0.0)",
        "m = torch.ones(4, dtype=torch.bool)\nkept = torch.zeros(4)[m]",  # a host mask on a host tensor
        "kept = logits[opts.threshold > 0]",  # a comparison of unknown values: maybe a Python bool
        "names = {True: 'pos', False: 'neg'}\nkept = names[y.sum() > 0]",  # a dict, not a tensor
        "m = torch.max(logits, 1)\nkept = logits[m[1]]",  # `max(x, dim)`: indices, no mask
    ],
    ids=["argmax", "arange", "long", "where", "masked-fill", "host-on-host", "unknown-kind", "dict", "max-dim"],
)
def test_integer_indices_and_static_ops_are_not_mask_indexing(body):
    assert tsl105(in_loop(body)) == []


def test_a_helper_of_the_same_module_returns_a_mask():
    helpers = """\
    def hard_negative_mining(loss, labels, ratio):
        pos_mask = labels > 0
        neg_mask = loss.sort(dim=1)[1] < ratio
        return pos_mask | neg_mask

    def top_indices(loss):
        return loss.argsort(dim=1)[:, :4]
    """
    src = in_loop("mask = hard_negative_mining(logits, y, 3)\nkept = logits[mask, :]\nidx = top_indices(logits)\nother = logits[idx]", helpers)
    assert [line for line, _ in tsl105(src)] == [line_of(src, "kept = ")]


def test_a_parameter_is_a_mask_when_every_call_site_passes_one():
    helpers = """\
    def pick(values, which):
        return values[which]
    """
    masked = in_loop("kept = pick(logits, y > 0)", helpers)
    assert [line for line, _ in tsl105(masked)] == [line_of(masked, "return values[which]")]
    mixed = in_loop("kept = pick(logits, y > 0)\nfirst = pick(logits, y.argmax(1))", helpers)
    assert tsl105(mixed) == []  # integer indices at one call site: not known to be a mask


def test_a_mask_stored_on_self_in_init_by_a_helper_method():
    src = textwrap.dedent("""\
    import torch
    import torch.nn as nn

    class Contrastive(nn.Module):
        def __init__(self, n, device):
            super().__init__()
            self.mask = self.correlated(n)
            self.on_device = torch.eye(n, dtype=torch.bool).to(device)
            self.order = torch.arange(n)

        def correlated(self, n):
            mask = torch.ones((n, n), dtype=bool)
            mask = mask.fill_diagonal_(0)
            return mask

        def forward(self, sim):
            a = sim[self.mask]
            b = sim[~self.on_device]
            c = sim[self.order]
            return a.sum() + b.sum() + c.sum()

    def train(model, loader, device):
        criterion = Contrastive(8, device)
        model = model.to(device)
        for x in loader:
            x = x.to(device, non_blocking=True)
            loss = criterion(model(x))
            loss.backward()
    """)
    found = tsl105(src)
    assert [line for line, _ in found] == [line_of(src, "a = sim[self.mask]"), line_of(src, "b = sim[~self.on_device]")]
    host, device = (message for _, message in found)
    assert "host mask" in host and "blocking copy" in host  # a CPU mask: indices copied to the device
    assert "read a count from the GPU" in device


# -- across modules ------------------------------------------------------------------------------
TRAIN = """\
import torch
from loss import MultiBoxLoss

def train(model, loader, opt, device):
    model = model.to(device)
    criterion = MultiBoxLoss(3)
    for x, y in loader:
        x = x.to(device, non_blocking=True)
        y = y.to(device, non_blocking=True)
        loss = criterion(model(x), y)
        loss.backward()
        opt.step()
"""

LOSS = """\
import torch
import torch.nn as nn
{imports}

class MultiBoxLoss(nn.Module):
    def __init__(self, ratio):
        super().__init__()
        self.ratio = ratio

    def forward(self, confidence, labels):
        with torch.no_grad():
            loss = -confidence[:, :, 0]
            mask = {call}(loss, labels, self.ratio)
        picked = confidence[mask, :]
        return picked.sum()
"""

BOX_UTILS = """\
import torch

def hard_negative_mining(loss, labels, ratio):
    pos_mask = labels > 0
    num_neg = pos_mask.long().sum(dim=1, keepdim=True) * ratio
    _, indexes = loss.sort(dim=1, descending=True)
    _, orders = indexes.sort(dim=1)
    neg_mask = orders < num_neg
    return pos_mask | neg_mask

def top_k(loss, labels, ratio):
    return loss.argsort(dim=1)[:, :ratio]
"""


@pytest.mark.parametrize(
    ("imports", "call"),
    [("from box_utils import hard_negative_mining", "hard_negative_mining"), ("import box_utils", "box_utils.hard_negative_mining")],
    ids=["from-import", "module-import"],
)
def test_a_mask_returned_by_a_helper_of_another_module(tmp_path, capsys, imports, call):
    loss = LOSS.format(imports=imports, call=call)
    found = project(tmp_path, {"train.py": TRAIN, "loss.py": loss, "box_utils.py": BOX_UTILS}, capsys)
    assert lines(found, "loss.py") == [line_of(textwrap.dedent(loss), "picked = confidence[mask, :]")]


def test_integer_indices_returned_by_a_helper_of_another_module(tmp_path, capsys):
    loss = LOSS.format(imports="from box_utils import top_k", call="top_k")
    assert project(tmp_path, {"train.py": TRAIN, "loss.py": loss, "box_utils.py": BOX_UTILS}, capsys) == {}


def test_a_mask_attribute_of_a_loss_class_of_another_module(tmp_path, capsys):
    """simclr's NT_Xent: a CPU bool mask built in `__init__` by a helper method, indexing the
    device similarity matrix in `forward`, which another module calls every step."""
    nt_xent = """\
    import torch
    import torch.nn as nn

    class NTXent(nn.Module):
        def __init__(self, batch_size):
            super().__init__()
            self.batch_size = batch_size
            self.mask = self.mask_correlated_samples(batch_size)
            self.similarity_f = nn.CosineSimilarity(dim=2)

        def mask_correlated_samples(self, batch_size):
            n = 2 * batch_size
            mask = torch.ones((n, n), dtype=bool)
            mask = mask.fill_diagonal_(0)
            for i in range(batch_size):
                mask[i, batch_size + i] = 0
            return mask

        def forward(self, z_i, z_j):
            z = torch.cat((z_i, z_j), dim=0)
            sim = self.similarity_f(z.unsqueeze(1), z.unsqueeze(0))
            negative_samples = sim[self.mask].reshape(2 * self.batch_size, -1)
            return negative_samples.sum()
    """
    main_py = """\
    import torch
    from nt_xent import NTXent

    def train(model, loader, opt, device):
        model = model.to(device)
        criterion = NTXent(64)
        for x_i, x_j in loader:
            x_i = x_i.to(device, non_blocking=True)
            x_j = x_j.to(device, non_blocking=True)
            loss = criterion(model(x_i), model(x_j))
            loss.backward()
            opt.step()
    """
    found = project(tmp_path, {"main.py": main_py, "nt_xent.py": nt_xent}, capsys)
    assert lines(found, "nt_xent.py") == [line_of(textwrap.dedent(nt_xent), "sim[self.mask]")]
    assert all("host mask" in message for (_, _, message) in found)


# -- a library function under another name -----------------------------------------------------------
@pytest.mark.parametrize(
    ("helpers", "flagged"),
    [
        ("import torchvision\n_nms = torchvision.ops.nms\n", True),  # ssd's alias, set once at import
        ("if torch.__version__ > '2':\n    _nms = torch.unique\nelse:\n    _nms = torch.unique\n", True),  # the same on every path
        ("_nms = torch.argmax\n", False),  # a static-size op under another name
        ("if torch.__version__ > '2':\n    _nms = torch.unique\nelse:\n    _nms = torch.argmax\n", False),  # which one: unknown
    ],
    ids=["alias", "same-on-both-paths", "static-op", "one-of-two"],
)
def test_a_library_function_assigned_to_a_name(helpers, flagged):
    src = in_loop("keep = _nms(logits, y)", helpers)
    assert [line for line, _ in tsl105(src)] == ([line_of(src, "keep = _nms(")] if flagged else [])


# -- a mask stored on self by a base class --------------------------------------------------------
BASE_LOSS = """\
import torch
import torch.nn as nn

class PairLoss(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.mask = ~torch.eye(2 * n, dtype=torch.bool)
        self.order = torch.arange(2 * n)
"""

SUB_LOSS = """\
import torch
{imports}

class Contrastive({base}):
    def forward(self, z):
        sim = z @ z.t()
        negatives = sim[self.mask]
        ordered = sim[self.order]
        return negatives.sum() + ordered.sum()
"""

MAIN = """\
import torch
from contrastive import Contrastive

def train(model, loader, opt, device):
    model = model.to(device)
    criterion = Contrastive(32)
    for x in loader:
        x = x.to(device, non_blocking=True)
        loss = criterion(model(x))
        loss.backward()
        opt.step()
"""


@pytest.mark.parametrize(("imports", "base"), [("from base_loss import PairLoss", "PairLoss"), ("import base_loss", "base_loss.PairLoss")], ids=["from-import", "module-import"])
def test_a_mask_stored_by_a_base_class_of_another_module(tmp_path, capsys, imports, base):
    sub = SUB_LOSS.format(imports=imports, base=base)
    found = project(tmp_path, {"main.py": MAIN, "contrastive.py": sub, "base_loss.py": BASE_LOSS}, capsys)
    assert lines(found, "contrastive.py") == [line_of(textwrap.dedent(sub), "sim[self.mask]")]  # not `sim[self.order]`


def test_a_mask_stored_by_a_base_class_of_the_same_module():
    src = textwrap.dedent(BASE_LOSS + "\n\n" + SUB_LOSS.format(imports="", base="PairLoss").replace("import torch\n", "", 1) + "\n\n" + MAIN.replace("from contrastive import Contrastive\n", ""))
    assert [line for line, _ in tsl105(src)] == [line_of(src, "sim[self.mask]")]
