"""A parameter whose value its callers fix (issue 38, misses 2): `x.to(device,
non_blocking=non_blocking)` in a helper every caller of which passes `False` or leaves the
default `False`, or a constructor's default stored on `self` that no construction overrides, is
a blocking copy (TSL301, no fix: the callers' values are the thing to change). Any caller
passing `True` or an unknown value, or a use of the function as a value, keeps it silent.
(analysis/fixed_params.py; the project view's call records carry their literal arguments.)"""

from __future__ import annotations

import textwrap

import pytest

from tests.test_objects import RULES, at, findings, project
from torchsync_lint.engine import lint_source

HELPER = """\
    import torch
    from torch.utils.data import DataLoader


    def to_device(x, device, non_blocking={default}):
        return x.to(device, non_blocking=non_blocking)


    def train(model, ds, opt):
        loader = DataLoader(ds, num_workers=4, pin_memory=True)
        for x, y in loader:
            x = {first}
            y = to_device(y, "cuda", non_blocking=False)
            loss = model(x, y)
            loss.backward()
            opt.step()
"""

MOVER = """\
    import torch
    from torch.utils.data import DataLoader


    class Mover:
        def __init__(self, device, non_blocking={default}):
            self.device = device
            self.non_blocking = non_blocking

        def move(self, x):
            return x.to(self.device, non_blocking=self.non_blocking)


    def train(model, ds, opt):
        loader = DataLoader(ds, num_workers=4, pin_memory=True)
        mover = {made}
        {after}
        for x, y in loader:
            loss = model(mover.move(x), mover.move(y))
            loss.backward()
            opt.step()
"""


def _messages(source: str) -> list[tuple[int, str, str]]:
    return [(f.line, f.code, f.message) for f in lint_source(textwrap.dedent(source), "t.py", RULES) if f.code < "TSL9"]


@pytest.mark.parametrize(
    ("default", "first"),
    [
        ("False", 'to_device(x, "cuda")'),  # the default
        ("True", 'to_device(x, "cuda", False)'),  # every caller says False
        ("None", 'to_device(x, "cuda", non_blocking=nb)'),  # a name bound to False
    ],
)
def test_a_helper_whose_callers_leave_non_blocking_false_copies_blocking(default, first):
    source = HELPER.format(default=default, first=first).replace("        loader =", "        nb = False\n        loader =")
    found = [f for f in lint_source(textwrap.dedent(source), "t.py", RULES) if f.code < "TSL9"]
    assert [(f.line, f.code) for f in found] == [(at(source, "return x.to("), "TSL301")]
    assert "False from every caller" in found[0].message and found[0].fix is None


@pytest.mark.parametrize(
    ("default", "first"),
    [
        ("False", 'to_device(x, "cuda", True)'),  # one caller pipelines its copies
        ("False", 'to_device(x, "cuda", non_blocking=args.non_blocking)'),  # configured
        ("False", 'to_device(x, "cuda", non_blocking=step > 0)'),  # computed
        ("False", 'to_device(x, "cuda", **opts)'),  # may pass it
        ("True", 'to_device(x, "cuda")'),  # the default pipelines
    ],
)
def test_a_helper_some_caller_configures_is_silent(default, first):
    assert findings(HELPER.format(default=default, first=first)) == []


def test_a_helper_used_as_a_value_may_be_called_with_anything():
    source = HELPER.format(default="False", first='to_device(x, "cuda")') + "\n\nmove = functools.partial(to_device, non_blocking=True)\n"
    assert findings(source) == []


@pytest.mark.parametrize(
    ("default", "made", "after"),
    [
        ("False", 'Mover("cuda")', ""),
        ("True", 'Mover("cuda", False)', ""),
        ("True", 'Mover(device="cuda", non_blocking=False)', ""),
    ],
)
def test_a_constructor_default_stored_on_self_that_no_construction_overrides(default, made, after):
    source = MOVER.format(default=default, made=made, after=after)
    found = _messages(source)
    assert [(line, code) for line, code, _ in found] == [(at(source, "return x.to("), "TSL301")]
    assert "`self.non_blocking` is False from every caller" in found[0][2]


@pytest.mark.parametrize(
    ("made", "after"),
    [
        ('Mover("cuda", True)', ""),  # a construction pipelines
        ('Mover("cuda", args.non_blocking)', ""),  # configured
        ('Mover("cuda")', "mover.non_blocking = True"),  # set later
        ('Mover("cuda")', "Mover(\"cuda\", non_blocking=True)"),  # another construction
    ],
)
def test_a_stored_flag_any_construction_or_store_configures_is_silent(made, after):
    assert findings(MOVER.format(default="False", made=made, after=after)) == []


UTILS = """\
    def to_device(x, device, non_blocking=False):
        return x.to(device, non_blocking=non_blocking)
"""
TRAIN = """\
    from torch.utils.data import DataLoader
    from utils import to_device


    def train(model, ds, opt):
        loader = DataLoader(ds, num_workers=4, pin_memory=True)
        for x, y in loader:
            loss = model(to_device(x, "cuda"), to_device(y, "cuda", {passed}))
            loss.backward()
            opt.step()
"""


@pytest.mark.parametrize(("passed", "flagged"), [("False", True), ("non_blocking=False", True), ("True", False), ("args.nb", False)])
def test_a_helper_of_another_module_whose_callers_fix_non_blocking(tmp_path, capsys, passed, flagged):
    """The callers are in another module: their call records say what they pass."""
    found = project(tmp_path, {"utils.py": UTILS, "train.py": TRAIN.format(passed=passed)}, capsys)
    assert found == ({("utils.py", 2, "TSL301"): 1} if flagged else {})


MOVER_MODULE = """\
    class Mover:
        def __init__(self, device, non_blocking=False):
            self.device = device
            self.non_blocking = non_blocking

        def move(self, x):
            return x.to(self.device, non_blocking=self.non_blocking)
"""
MOVER_TRAIN = """\
    from torch.utils.data import DataLoader
    from mover import Mover


    def train(model, ds, opt):
        loader = DataLoader(ds, num_workers=4, pin_memory=True)
        mover = Mover("cuda"{extra})
        for x in loader:
            loss = model(mover.move(x))
            loss.backward()
            opt.step()
"""


@pytest.mark.parametrize(("extra", "flagged"), [("", True), (", non_blocking=False", True), (", True", False), (", cfg.nb", False)])
def test_a_stored_flag_of_a_class_another_module_constructs(tmp_path, capsys, extra, flagged):
    found = project(tmp_path, {"mover.py": MOVER_MODULE, "train.py": MOVER_TRAIN.format(extra=extra)}, capsys)
    assert found == ({("mover.py", 7, "TSL301"): 1} if flagged else {})
