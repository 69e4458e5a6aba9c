"""The shared analysis: device-tensor inference and hot-loop detection, case by case."""

from __future__ import annotations

import libcst as cst
import pytest

from torchsync_lint.analysis import Kind, ModuleAnalysis
from torchsync_lint.analysis.imports import canonical


def analyse(source: str) -> ModuleAnalysis:
    module = cst.parse_module(source)
    return ModuleAnalysis(module, source)


def kind_of_last(source: str, name: str) -> Kind:
    """Kind of the last read of ``name`` (a `probe(name)` call marks the read)."""
    analysis = analyse(source)
    probes = [c for c in analysis.index.calls if isinstance(c.func, cst.Name) and c.func.value == "probe"]
    arg = probes[-1].args[0].value
    assert isinstance(arg, cst.Name) and arg.value == name
    return analysis.kind(arg)


HEAD = "import torch\nimport numpy as np\ndevice = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("t = torch.randn(3, device=device)", Kind.DEVICE),
        ("t = torch.randn(3)", Kind.HOST_TENSOR),
        ("t = torch.randn(3, device='cpu')", Kind.HOST_TENSOR),
        ("t = torch.randn(3).cuda()", Kind.DEVICE),
        ("t = torch.randn(3).to(device)", Kind.DEVICE),
        ("t = torch.randn(3).to(device).to(torch.float16)", Kind.DEVICE),
        ("t = torch.randn(3, device=device).cpu()", Kind.HOST_TENSOR),
        ("t = torch.randn(3, device=device).to('cpu')", Kind.HOST_TENSOR),
        ("t = torch.randn(3, device=device).sum().item()", Kind.HOST),
        ("t = np.zeros(3)", Kind.HOST),
        ("t = 0.0", Kind.HOST),
        ("t = torch.randn(3, device=device).shape[0]", Kind.HOST),
        ("a = torch.randn(3, device=device)\nt, u = a, 1", Kind.DEVICE),
        ("a = torch.randn(3, device=device)\nu, t = a, 1", Kind.HOST),
        ("t = 0.0\nt += torch.ones(1, device=device).sum()", Kind.DEVICE),
        ("t = 0.0\nt += torch.ones(1, device=device).sum().item()", Kind.HOST),
        ("model = torch.nn.Linear(2, 2).to(device)\nt = model(torch.ones(2))", Kind.DEVICE),
        ("model = torch.nn.Linear(2, 2).to(device)\nout = model(torch.ones(2))\nt = out > 0", Kind.DEVICE),
        ("t = torch.ones(2).to(device) is None", Kind.HOST),
        ("def f(x):\n    return x * 2\nt = f(torch.ones(2, device=device))", Kind.DEVICE),
        ("def f(x):\n    probe(x)\nf(torch.ones(2, device=device))\nt = 1", Kind.HOST),
    ],
)
def test_value_kinds(body, expected):
    src = HEAD + body + "\nprobe(t)\n"
    if "probe(x)" in body:
        assert kind_of_last(HEAD + body + "\n", "x") is Kind.DEVICE  # parameter from its call site
        return
    assert kind_of_last(src, "t") is expected


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("res = []\nres.append(torch.ones(1, device=device))\nt = res", Kind.CONTAINER),
        ("res = []\nres.extend([torch.ones(1, device=device)])\nt = res", Kind.CONTAINER),
        ("res = []\nres.insert(0, torch.ones(1, device=device))\nt = res", Kind.CONTAINER),
        ("d = {}\nd['x'] = torch.ones(1, device=device)\nt = d", Kind.CONTAINER),
        # near misses: filled after the read, with host values, in another function, or
        # another container
        ("res = []\nt = res\nres.append(torch.ones(1, device=device))", Kind.UNKNOWN),
        ("res = []\nres.append(1.0)\nt = res", Kind.UNKNOWN),
        ("d = {}\nd['x'] = 1.0\nt = d", Kind.UNKNOWN),
        ("d = {}\ndef f():\n    d['x'] = torch.ones(1, device=device)\nt = d", Kind.UNKNOWN),
        ("res = []\nother = []\nother.append(torch.ones(1, device=device))\nt = res", Kind.UNKNOWN),
    ],
)
def test_containers_filled_with_device_values(body, expected):
    """A list or dict that device values were appended or stored into before it is read, in the
    same function, is a container of device tensors (`res.append(acc.mul_(100))`, `d["loss"] = loss`)."""
    assert kind_of_last(HEAD + body + "\nprobe(t)\n", "t") is expected


def test_cpu_only_module_has_no_device_tensors():
    src = "import torch\nmodel = torch.nn.Linear(2, 2)\nt = model(torch.ones(2))\nprobe(t)\n"
    assert kind_of_last(src, "t") is Kind.HOST_TENSOR


CPU_MODEL = "import torch\nmodel = torch.nn.Linear(2, 2){move}\nt = model(x{xmove})\nprobe(t)\n"


@pytest.mark.parametrize(
    ("prefix", "move", "xmove", "expected"),
    [
        # the only devices the module names are the CPU: what the user configured
        ('device = "cpu"\n', ".to(device)", ".to(device)", Kind.HOST_TENSOR),
        ("device = torch.device('cpu')\n", ".to(device)", "", Kind.HOST_TENSOR),
        ("# moves nothing to any device\n", "", "", Kind.HOST_TENSOR),
        ("", ".to(torch.float16)", "", Kind.HOST_TENSOR),  # `.to(` with a dtype is not a device
        # a device the code cannot resolve may be an accelerator
        ("device = args.device\n", ".to(device)", ".to(device)", Kind.DEVICE),
        ("", ".to(other.device)", "", Kind.DEVICE),
        ("def f(device):\n    return device\n", ".to(f(0))", "", Kind.DEVICE),
        ('device = "cpu"\nif big:\n    device = "cuda:0"\n', ".to(device)", "", Kind.DEVICE),
        ('device = "cpu"\n', ".cuda()", "", Kind.DEVICE),
    ],
)
def test_a_module_whose_only_device_is_the_cpu_has_no_device_tensors(prefix, move, xmove, expected):
    src = prefix + CPU_MODEL.format(move=move, xmove=xmove)
    assert kind_of_last(src, "t") is expected


def test_dataloader_batches_are_host_until_moved():
    src = HEAD + "from torch.utils.data import DataLoader\nloader = DataLoader(ds)\nfor x, y in loader:\n    probe(x)\n    x = x.to(device)\n    probe(x)\n"
    analysis = analyse(src)
    probes = [c.args[0].value for c in analysis.index.calls if isinstance(c.func, cst.Name) and c.func.value == "probe"]
    assert analysis.kind(probes[0]) is Kind.HOST_TENSOR  # the loop target kills the moved copy
    assert analysis.kind(probes[1]) is Kind.DEVICE


def _hot_lines(source: str) -> dict[int, bool]:
    analysis = analyse(source)
    result = {}
    for call in analysis.index.calls:
        if isinstance(call.func, cst.Name) and call.func.value == "probe":
            ctx = analysis.hot_context(call)
            result[analysis.index.line(call)] = None if ctx is None else ctx.gated
    return result


def test_hot_loops():
    src = """\
import torch
def train_one_epoch(model, loader, opt):
    for x, y in loader:
        loss = model(x).sum()
        loss.backward()
        opt.step()
        probe(1)
        if step % 10 == 0:
            probe(2)
    probe(3)

def train_step(model, x, opt):
    loss = model(x).sum()
    loss.backward()
    opt.step()
    probe(4)

for epoch in range(10):
    train_one_epoch(model, loader, opt)
    scheduler.step()
    probe(5)

while not done:
    batch = next(it)
    train_step(model, batch, opt)
    probe(6)

for name, p in model.named_parameters():
    probe(7)
"""
    lines = _hot_lines(src)
    assert lines[7] is False  # in the batch loop
    assert lines[9] is True  # gated by step % 10
    assert lines[10] is None  # after the batch loop: once per epoch
    assert lines[16] is False  # train_step is called every step
    assert lines[21] is None  # the epoch loop only calls a per-epoch function
    assert lines[26] is False  # the while loop runs a training step
    assert lines[29] is None  # a loop over parameters


def test_lightning_hooks_are_hot():
    src = "import lightning as L\nclass M(L.LightningModule):\n    def training_step(self, batch, i):\n        probe(1)\n    def configure_optimizers(self):\n        probe(2)\n"
    lines = _hot_lines(src)
    assert lines[4] is False and lines[6] is None


def test_canonical_names():
    assert canonical("torch.utils.data.dataloader.DataLoader") == "torch.utils.data.DataLoader"
    assert canonical("pytorch_lightning.core.module.LightningModule") == "lightning.LightningModule"
    assert canonical("torch.nn.modules.linear.Linear") == "torch.nn.Linear"


def test_import_aliases():
    analysis = analyse("import torch as T\nfrom torch.cuda import synchronize as sync\nimport torch.utils.data as tud\nT.cuda.synchronize()\nsync()\ntud.DataLoader(x)\n")
    names = [analysis.qualname(c.func) for c in analysis.index.calls]
    assert names == ["torch.cuda.synchronize", "torch.cuda.synchronize", "torch.utils.data.DataLoader"]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        # a later straight-line binding kills the earlier one
        ("t = torch.ones(2, device=device).sum()\nt = t.item()", Kind.HOST),
        ("t = 0.0\nt = torch.ones(2, device=device).sum()", Kind.DEVICE),
        # a conditional binding does not kill
        ("t = torch.ones(2, device=device).sum()\nif c:\n    t = t.item()", Kind.DEVICE),
        ("t = 0.0\nif c:\n    t = torch.ones(2, device=device)", Kind.DEVICE),
        # loop-carried: the binding later in the loop reaches the next iteration's read
        ("t = 0.0\nfor i in range(3):\n    probe(t)\n    t = torch.ones(2, device=device)", Kind.DEVICE),
        # ... unless a dominating binding earlier in the same iteration kills it
        ("for i in range(3):\n    t = 1.0\n    probe(t)\n    t = torch.ones(2, device=device)", Kind.HOST),
        # a lambda's parameter shadows the enclosing name: not the outer device tensor
        ("t = torch.ones(2, device=device)\nshow = lambda t: probe(t)", Kind.UNKNOWN),
    ],
)
def test_reaching_definitions(body, expected):
    src = HEAD + body + ("\nprobe(t)\n" if "probe(t)" not in body else "\n")
    analysis = analyse(src)
    probes = [c for c in analysis.index.calls if isinstance(c.func, cst.Name) and c.func.value == "probe"]
    target = probes[0] if "probe(t)" in body else probes[-1]
    assert analysis.kind(target.args[0].value) is expected


def test_step_gates_need_a_step_counter():
    src = """\
import torch
from torch.optim.lr_scheduler import StepLR
scheduler = StepLR(optimizer, 1)
for i, (x, y) in enumerate(loader):
    if args.rank % ngpus_per_node == 0:
        probe(1)
    if i == 0:
        probe(2)
    if (global_step + 1) % args.log_every == 0:
        probe(3)
for epoch in range(3):
    scheduler.step()
    probe(4)
"""
    lines = _hot_lines(src)
    assert lines[6] is False  # a rank check holds on every step of that rank
    assert lines[8] is None  # `i == 0`: once per pass, a bounded branch, not per step (DESIGN 3b)
    assert lines[10] is True
    assert lines[13] is None  # scheduler.step() does not make an epoch loop hot


def test_epoch_loops_with_a_forward_are_not_hot_but_accumulation_loops_are():
    src = """\
import torch
from torch.utils.data import DataLoader
loader = DataLoader(ds)
def train(epoch):
    for x, y in loader:
        model(x).sum().backward()
        optimizer.step()
for epoch in range(3):
    train(epoch)
    sample = model(z)
    probe(1)
while True:
    for micro in range(4):
        loss = model(x)
        loss.backward()
    optimizer.step()
    probe(2)
for update in range(10):
    for step in range(128):
        action = model(obs)
    bootstrap = model(next_obs)
    for mb in range(4):
        model(x).sum().backward()
        optimizer.step()
    probe(3)
def sample_text(model):
    for i in range(10):
        model(x)
        probe(4)
"""
    lines = _hot_lines(src)
    assert lines[11] is None  # calls a function that iterates the loader: an epoch loop
    assert lines[17] is False  # the outer loop of gradient accumulation steps the optimizer
    assert lines[25] is False  # PPO's update loop: its inner loops are not loader passes
    assert lines[29] is False  # a forward per iteration


def test_torch_predicates_return_host_values():
    src = HEAD + "from torch.utils._python_dispatch import is_traceable_wrapper_subclass\nx = torch.ones(2, device=device)\nt = is_traceable_wrapper_subclass(x) or torch.is_floating_point(x)\nprobe(t)\n"
    assert kind_of_last(src, "t") is Kind.HOST


@pytest.mark.parametrize("order", ["caller-first", "callee-first"])
def test_a_very_long_forwarding_chain_gives_up_instead_of_crashing(order):
    """300 functions each passing the loss on: resolving the last parameter through every call
    site used to exhaust Python's stack (a TSL903 crash of TSL102 for the whole file)."""
    from torchsync_lint.engine import lint_source

    n = 300
    funcs = [
        f"def f{i}(x):\n    if x:\n        pass\n" + (f"    return f{i + 1}(x)\n" if i < n - 1 else "    return x.item()\n")
        for i in range(n)
    ]
    if order == "callee-first":
        funcs.reverse()
    source = (
        "import torch\ndevice = torch.device('cuda')\nmodel = torch.nn.Linear(2, 2).to(device)\n"
        + "".join(funcs)
        + "for batch in loader:\n    loss = model(batch.to(device)).sum()\n    loss.backward()\n    f0(loss)\n"
    )
    findings = lint_source(source, "deep.py")
    assert [f for f in findings if f.severity == "error"] == []
    condition_lines = {i + 1 for i, line in enumerate(source.splitlines()) if line == "    if x:"}
    flagged = {f.line for f in findings if f.code == "TSL102"}
    assert flagged <= condition_lines  # whatever it gives up on is simply not reported
    f0_condition = source.splitlines().index("def f0(x):") + 2
    assert f0_condition in flagged  # the start of the chain is still resolved


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        ("helper(np.zeros(3))\n", Kind.HOST),  # the call site passes host data: the annotation does not move it
        ("helper(torch.ones(3).cuda())\n", Kind.DEVICE),
        ("", Kind.DEVICE),  # no call site says: a tensor-annotated parameter may be on the device
        ("helper(unknown_thing)\n", Kind.DEVICE),  # the call site does not say either
    ],
)
def test_a_tensor_annotation_counts_only_when_the_call_sites_do_not_say(call, expected):
    source = HEAD + "model = torch.nn.Linear(2, 2).to(device)\n\ndef helper(data: torch.Tensor):\n    value = data\n    probe(value)\n\n" + call
    assert kind_of_last(source, "value") is expected


LIBRARY_LIKE = '''import torch
from pathlib import Path


class Saver:
    def __init__(self, model, root):
        self.model = model.cuda()
        self.root = Path(root)

    def fit(self, loader, optimizer):
        for batch in loader:
            loss = self.model(batch.cuda()).sum()
            loss.backward()
            optimizer.step()
            if self.root.is_dir() and any(self.root.iterdir()):
                print(f"saving under {self.root}")
            if self.model.__class__.__name__ == "DataParallel":
                print(f"wrapped: {self.model.__class__.__name__}")
'''


def test_pathlib_methods_and_python_object_data_are_not_device_tensors():
    """Issue 16 item 6: `p.is_dir()`, `any(p.iterdir())` and `obj.__class__.__name__` in a hot
    loop of library code were taken for device tensors (TSL102/TSL103)."""
    from torchsync_lint.api import lint_text
    from torchsync_lint.config import Config

    codes = {f.code for f in lint_text(LIBRARY_LIKE, "saver.py", Config(select=["ALL"]))}
    assert codes == {"TSL301"}  # the loop is hot and the module uses the GPU: only the copy
