"""Fixes that would change behaviour or fail at run time are withheld (issue 16, item 4, and a
review of every other fix): the finding stays, the edit goes.

The static tests pin which findings carry a fix; the runtime tests run a script before and
after `fix_source(..., unsafe=True)` with torch on the CPU and compare what it prints.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from torchsync_lint.engine import lint_source
from torchsync_lint.fixer import fix_source
from torchsync_lint.rules._cases import in_loop
from torchsync_lint.rules._metric_cases import metric_case
from torchsync_lint.types import Applicability

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def findings(source: str, code: str):
    return [f for f in lint_source(textwrap.dedent(source), "t.py", {code}, {}) if f.code == code]


def fixes(source: str, code: str) -> dict[str, tuple[str, str] | None]:
    """source line (stripped) -> (applicability, replacement text) of each finding's fix, or
    None without one."""
    lines = textwrap.dedent(source).splitlines()
    out = {}
    for f in findings(source, code):
        out[lines[f.line - 1].strip()] = (f.fix.applicability.value, "".join(e.content for e in f.fix.edits)) if f.fix else None
    return out


# A GPU-looking training loop: line 7 is the first body line the tests fill in.
LOOP = """\
import torch
from torch.utils.data import DataLoader
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
loader = DataLoader(ds, batch_size=32, num_workers=4, pin_memory=True)
model = torch.nn.Linear(8, 2).to(device)
for x, y in loader:
    x = x.to(device, non_blocking=True)
{body}
    model(x).sum().backward()
"""


def loop(*lines: str, before: str = "") -> str:
    src = LOOP.format(body="".join(f"    {line}\n" for line in lines))
    return src.replace("model = torch.nn", before + "model = torch.nn", 1) if before else src


# -- TSL305: the move into `device=` ----------------------------------------------------------------
def test_tsl305_to_a_tensor_is_not_moved_into_device():
    # `.to(other)` converts dtype and device; `torch.randn(3, device=other)` is a TypeError.
    src = loop("a = torch.randn(3).to(ref)", "b = torch.zeros(3).to(x)", before="ref = torch.zeros(3, dtype=torch.float16, device=device)\n")
    assert fixes(src, "TSL305") == {"a = torch.randn(3).to(ref)": None, "b = torch.zeros(3).to(x)": None}


def test_tsl305_to_a_parameter_follows_the_call_sites():
    template = """\
    import torch
    from torch.utils.data import DataLoader
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


    def train(model, loader, where):
        for x, y in loader:
            x = x.to(device, non_blocking=True)
            noise = torch.zeros(3).to(where)
            model(x).sum().backward()


    model = torch.nn.Linear(8, 2).to(device)
    train(model, DataLoader(ds, num_workers=2, pin_memory=True), {arg})
    """
    NOISE = "noise = torch.zeros(3).to(where)"
    assert fixes(template.format(arg="device"), "TSL305") == {NOISE: ("safe", "torch.zeros(3, device=where)")}
    assert fixes(template.format(arg="'cuda:1'"), "TSL305") == {NOISE: ("safe", "torch.zeros(3, device=where)")}
    assert fixes(template.format(arg="torch.ones(2, device=device)"), "TSL305") == {NOISE: None}  # a tensor
    second_site = "device)\n    train(model, DataLoader(ds, num_workers=2, pin_memory=True), unknown"
    assert fixes(template.format(arg=second_site), "TSL305") == {NOISE: None}  # one call site passes something unknown


@pytest.mark.parametrize(
    "copy, expected",
    [
        ("torch.ones(3).to(device)", ("safe", "torch.ones(3, device=device)")),
        ("torch.ones(3).to(x.device)", ("safe", "torch.ones(3, device=x.device)")),
        ("torch.ones(3).to('cuda:0')", ("safe", "torch.ones(3, device='cuda:0')")),
        ("torch.ones(3).to(device=device)", ("safe", "torch.ones(3, device=device)")),
        ("torch.ones(3).cuda()", ("safe", 'torch.ones(3, device="cuda")')),
        ("torch.ones(3, dtype=torch.long).to(device)", ("safe", "torch.ones(3, dtype=torch.long, device=device)")),
        ("torch.arange(8).to(device)", ("safe", "torch.arange(8, device=device)")),
        ("torch.arange(2, 10, 2).to(device)", ("safe", "torch.arange(2, 10, 2, device=device)")),
        # Other kernels, other rounding: the CPU accumulates a float32 arange in double.
        ("torch.arange(0, 1, 0.1).to(device)", ("unsafe", "torch.arange(0, 1, 0.1, device=device)")),
        ("torch.arange(0, n, step).to(device)", ("unsafe", "torch.arange(0, n, step, device=device)")),
        ("torch.linspace(0, 1, 5).to(device)", ("unsafe", "torch.linspace(0, 1, 5, device=device)")),
        ("torch.normal(0.0, 1.0, (3,)).to(device)", ("unsafe", "torch.normal(0.0, 1.0, (3,), device=device)")),
        ("torch.randn(3, generator=None).to(device)", ("unsafe", "torch.randn(3, generator=None, device=device)")),
        # Withheld: each of these would fail or change what the program computes.
        ("torch.randn(3, generator=g).to(device)", None),  # a CPU generator cannot fill device memory
        ("torch.randperm(8, g).to(device)", None),  # a generator passed by position
        ("torch.normal(mean_t, 1.0).to(device)", None),  # the tensor overload takes no `device=`
        ("torch.zeros(3, requires_grad=True).to(device)", None),  # the device tensor would become the leaf
        ("torch.empty(3, pin_memory=True).to(device)", None),  # pinning a device tensor raises
        ("torch.zeros(3, out=buf).to(device)", None),  # `buf` would not be filled
        ("torch.zeros(3, layout=torch.sparse_coo).to(device)", None),
        ("torch.zeros(*shape, **kw).to(device)", None),
        ("torch.zeros(3).to(torch.device('cuda'), torch.float16)", None),  # a dtype as well
    ],
)
def test_tsl305_factory_fixes(copy, expected):
    src = loop(f"t = {copy}", before="g = torch.Generator()\ng.manual_seed(0)\nmean_t = torch.zeros(3)\n")
    got = fixes(src, "TSL305")
    assert list(got.values()) == [expected]


def test_tsl305_full_fix_not_for_legacy_constructors_or_other_keywords():
    src = loop("a = torch.Tensor(3, device=device)", "b = torch.asarray(0.5, device=device, copy=True)", "c = torch.tensor(0.5, device=device, dtype=torch.float16)")
    assert list(fixes(src, "TSL305").values()) == [None, None, ("safe", "torch.full((), 0.5, device=device, dtype=torch.float16)")]


# -- TSL303: IterableDataset -----------------------------------------------------------------------------
ITERABLE = """\
import torch
from torch.utils.data import DataLoader, IterableDataset, get_worker_info


class Stream(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        {shard}
        for i in range(lo, hi):
            yield torch.full((4,), float(i))


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = torch.nn.Linear(4, 2).to(device)
loader = {loader}
seen = 0
for x in loader:
    seen += len(x)
    model(x.to(device, non_blocking=True)).sum().backward()
print("RESULT " + str(seen))
"""
NO_SHARD = "lo, hi = 0, self.n"
SHARD = "info = get_worker_info()\n        lo, hi = (0, self.n) if info is None else (info.id * self.n // info.num_workers, (info.id + 1) * self.n // info.num_workers)"
LOADER = "DataLoader(Stream(100), batch_size=10, pin_memory=True)"


def iterable(shard=NO_SHARD, loader=LOADER, extra=""):
    return ITERABLE.format(shard=shard, loader=loader).replace("\n\ndevice =", f"\n\n{extra}device =", 1)


def test_tsl303_no_fix_for_an_iterable_dataset_that_does_not_shard():
    (finding,) = findings(iterable(), "TSL303")
    assert finding.fix is None
    assert "`Stream` is an `IterableDataset` that does not shard" in finding.message


def test_tsl303_fix_stays_for_an_iterable_dataset_that_shards():
    (finding,) = findings(iterable(shard=SHARD), "TSL303")
    assert finding.fix is not None and finding.fix.applicability is Applicability.UNSAFE


def test_tsl303_fix_stays_when_worker_init_fn_shards():
    init = "def split(worker_id):\n    info = get_worker_info()\n    info.dataset.n = info.dataset.n // info.num_workers\n\n\n"
    (finding,) = findings(iterable(loader=LOADER.replace("pin_memory=True", "pin_memory=True, worker_init_fn=split"), extra=init), "TSL303")
    assert finding.fix is not None


@pytest.mark.parametrize(
    "extra, loader",
    [
        # through a local base class
        ("class Base(IterableDataset):\n    pass\n\n\nclass Lines(Base):\n    def __iter__(self):\n        yield from range(3)\n\n\n", "DataLoader(Lines(), pin_memory=True)"),
        # a base the rule cannot see, `__iter__` and no `__getitem__`: it may be one
        ("from webdata import Source\n\n\nclass Lines(Source):\n    def __iter__(self):\n        yield from range(3)\n\n\n", "DataLoader(Lines(), pin_memory=True)"),
        ("from webdata import *\n\n\nclass Lines(Source):\n    def __iter__(self):\n        yield from range(3)\n\n\n", "DataLoader(Lines(), pin_memory=True)"),
        # either branch may run
        ("", "DataLoader(Stream(100) if streaming else data, pin_memory=True)"),
        ("", "DataLoader(torch.utils.data.ChainDataset([Stream(10), Stream(10)]), pin_memory=True)"),
        # built by a factory function of this module
        ("def make():\n    return Stream(100)\n\n\n", "DataLoader(make(), pin_memory=True)"),
        # a dataset we cannot trace, in a module that defines a non-sharding IterableDataset
        ("def build(ds):\n    return DataLoader(ds, pin_memory=True)\n\n\n", "build(data)"),
    ],
)
def test_tsl303_may_be_iterable(extra, loader):
    src = iterable(loader=loader, extra=extra)
    got = [f for f in findings(src, "TSL303")]
    assert got and all(f.fix is None for f in got)


def test_tsl303_map_style_datasets_keep_the_fix():
    extra = "class Table(torch.utils.data.Dataset):\n    def __len__(self):\n        return 4\n\n    def __getitem__(self, i):\n        return torch.zeros(4)\n\n\n"
    got = findings(iterable(loader="DataLoader(Table(), pin_memory=True)", extra=extra), "TSL303")
    assert len(got) == 1 and got[0].fix is not None


def test_tsl303_no_fix_where_os_means_something_else():
    src = iterable(shard=SHARD, loader="make_loader(2)", extra="def make_loader(os):\n    return DataLoader(Stream(100), pin_memory=True)\n\n\n")
    (finding,) = findings(src, "TSL303")
    assert finding.fix is None
    src = iterable(shard=SHARD).replace("import torch\n", "import torch\nimport numpy as os\n", 1)
    (finding,) = findings(src, "TSL303")
    assert finding.fix is None


@pytest.mark.parametrize(
    "module, add, clashes",
    [
        ("import os.path\n", [], []),  # binds `os` to the os package
        ("import os as os\n", [], []),
        ("import numpy as os\n", [], ["os"]),  # `os.cpu_count()` would be `numpy.cpu_count()`
        ("from compat import os\n", [], ["os"]),
        ("import os.path as osp\n", ["import os"], []),
    ],
)
def test_fixer_imports_a_name_only_where_it_means_the_module(module, add, clashes):
    import libcst as cst

    from torchsync_lint.fixing.edits import missing_imports

    assert missing_imports(cst.parse_module(module), ["os"]) == (add, clashes)


def _run(source: str, tmp_path, name: str) -> list[str]:
    path = tmp_path / name
    path.write_text(source, encoding="utf-8")
    proc = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=180, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]


def test_tsl303_runtime_iterable_dataset_sample_count_unchanged(tmp_path):
    pytest.importorskip("torch")
    src = iterable()
    fixed = fix_source(src, "t.py", unsafe=True).new_source
    before, after = _run(src, tmp_path, "before.py"), _run(fixed, tmp_path, "after.py")
    assert before == ["RESULT 100"]
    assert after == before  # with workers and no sharding it was 100 * num_workers


DEVICE_DATASET = """\
import torch
from torch.utils.data import DataLoader, Dataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = torch.nn.Linear(8, 2).to(device)


class OnDevice(Dataset):
    def __init__(self, n):
        self.x = torch.randn(n, 8).to(device)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i], i


loader = DataLoader(OnDevice(64), batch_size=8)
for x, i in loader:
    model(x).sum().backward()
"""


def test_tsl302_tsl303_not_for_a_dataset_of_device_tensors():
    # `pin_memory=True` raises ("cannot pin 'torch.cuda.FloatTensor'"), and a worker process
    # cannot use CUDA tensors: the loader must stay as it is.
    assert findings(DEVICE_DATASET, "TSL302") == findings(DEVICE_DATASET, "TSL303") == []
    on_host = DEVICE_DATASET.replace("torch.randn(n, 8).to(device)", "torch.randn(n, 8)")
    # host tensors in memory: pinning helps (TSL302); workers would only add IPC (no TSL303)
    assert len(findings(on_host, "TSL302")) == 1 and findings(on_host, "TSL303") == []
    computed = on_host.replace("return self.x[i], i", "return torch.flip(self.x[i], [0]), i")
    assert len(findings(computed, "TSL302")) == len(findings(computed, "TSL303")) == 1


# -- TSL301 ------------------------------------------------------------------------------------------------
def test_tsl301_reused_pinned_buffer_is_not_made_asynchronous():
    src = loop("staging.copy_(y)", "yd = staging.to(device)", before="staging = torch.empty(32).pin_memory()\n")
    assert fixes(src, "TSL301") == {"yd = staging.to(device)": None}


def test_tsl301_source_written_after_the_copy():
    src = loop("yd = y.to(device)", "y.mul_(2)")
    assert fixes(src, "TSL301") == {"yd = y.to(device)": None}
    src = loop("yd = y[0].to(device)", "y[0] = 0")
    assert fixes(src, "TSL301") == {"yd = y[0].to(device)": None}


def test_tsl301_writes_to_the_new_binding_keep_the_fix():
    src = loop("y = y.to(device)", "y /= 2", "y.add_(1)")
    assert fixes(src, "TSL301") == {"y = y.to(device)": ("safe", ", non_blocking=True")}
    src = loop("y.mul_(2)", "yd = y.to(device)")  # written before the copy: a fresh batch every step
    assert fixes(src, "TSL301") == {"yd = y.to(device)": ("safe", ", non_blocking=True")}


def test_tsl301_no_fix_in_a_module_with_its_own_streams():
    # A blocking copy made on a side stream is complete before the default stream reads it;
    # an asynchronous one is not, unless the user adds `wait_stream`.
    src = loop("with torch.cuda.stream(side):", "    yd = y.to(device)", "model(yd)", before="side = torch.cuda.Stream()\n")
    assert fixes(src, "TSL301") == {"yd = y.to(device)": None}


def test_tsl301_whole_batch_of_a_custom_collate_fn():
    src = """\
    import torch
    from torch.utils.data import DataLoader
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = torch.nn.Linear(8, 2).to(device)
    loader = DataLoader(ds, batch_size=4, collate_fn=make_batch, num_workers=2, pin_memory=True)
    for i, batch in enumerate(loader):
        batch = batch.to(device)
        inputs, labels = batch.x, batch.y
        model(inputs).sum().backward()
    for x, y in loader:
        x = x.to(device)
        model(x).sum().backward()
    """
    assert fixes(src, "TSL301") == {"batch = batch.to(device)": None, "x = x.to(device)": ("safe", ", non_blocking=True")}


# -- TSL2xx, TSL101 ----------------------------------------------------------------------------------------
def test_tsl201_no_fix_for_a_subclass_with_its_own_init():
    setup = "class Smoothed(MeanMetric):\n    def __init__(self, momentum):\n        super().__init__()\n        self.momentum = momentum\n\n\navg = Smoothed(0.9).to(device)"
    got = findings(metric_case(setup, "avg.update(loss)"), "TSL201")
    assert got and all(f.fix is None for f in got)  # it would have become `Smoothed("disable")`


def test_tsl202_only_for_calls_that_return_one_number():
    src = metric_case("import time\nm = MeanMetric().to(device)", "m.update(time.localtime())\nm.update(time.perf_counter())")
    got = {f.line: f.fix is not None for f in findings(src, "TSL202")}
    assert list(got.values()) == [False, True]


def test_tsl202_no_fix_for_a_metric_collection():
    src = metric_case('coll = MetricCollection({"a": MeanMetric(), "b": SumMetric()}).to(device)\nm = MeanMetric().to(device)', "coll.update(0.5)\nm.update(0.5)")
    got = {f.line: f.fix is not None for f in findings(src, "TSL202")}
    assert list(got.values()) == [False, True]  # `coll.dtype` is an AttributeError


def test_tsl202_no_torch_fix_where_torch_is_rebound():
    setup = "def record(m, torch=None):\n    m.update(0.5)\n\n\navg = MeanMetric().to(device)"
    assert [f.fix is not None for f in findings(metric_case(setup.replace("torch=None", "scale=None"), "record(avg)"), "TSL202")] == [True]
    assert [f.fix is not None for f in findings(metric_case(setup, "record(avg)"), "TSL202")] == [False]  # `torch.full` would be `None.full`


def test_tsl101_no_float64_accumulator_on_a_script_that_may_run_on_mps():
    body = "total += loss.item()"
    cuda = in_loop(body, after="print(total)\n").replace("for step,", "total = 0.0\nfor step,", 1)
    mps = cuda.replace('"cuda" if torch.cuda.is_available() else "cpu"', '"cuda" if torch.cuda.is_available() else "mps"')
    assert [f.fix is not None for f in findings(cuda, "TSL101")] == [True]
    assert [f.fix is not None for f in findings(mps, "TSL101")] == [False]


# -- every fix at run time: the fixer must not change what a script computes -----------------------------
RUNTIME_SCRIPT = """\
import json
import torch
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = torch.nn.Linear(4, 2).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
data = TensorDataset(torch.randn(16, 4), torch.randint(0, 2, (16,)))
loader = DataLoader(data, batch_size=4)
ref = torch.zeros(4, dtype=torch.float16, device=device)
g = torch.Generator()
g.manual_seed(1)
out = []
total = 0.0
for step, (x, y) in enumerate(loader):
    x, y = x.to(device), y.to(device)
    mask = torch.ones(4).to(device)
    noise = torch.randn(4).to(ref)
    drawn = torch.randn(4, generator=g).to(device)
    steps = torch.arange(0, 1, 0.25).to(device)
    idx = torch.arange(4).to(device)
    scale = torch.tensor(0.5, device=device)
    like = torch.zeros(4).to(x)
    loss = torch.nn.functional.cross_entropy(model(x * mask * scale + like + steps[idx]), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    total += loss.item()
    out.append([noise.dtype == torch.float16, drawn.tolist(), loss.item()])
print("RESULT " + json.dumps([out, float(total)]))
"""


def test_fixed_script_computes_the_same_on_cpu(tmp_path):
    pytest.importorskip("torch")
    safe = fix_source(RUNTIME_SCRIPT, "t.py").new_source
    unsafe = fix_source(RUNTIME_SCRIPT, "t.py", unsafe=True).new_source
    assert "non_blocking=True" in safe and "torch.full((), 0.5" in safe and "torch.ones(4, device=device)" in safe
    assert "torch.randn(4).to(ref)" in unsafe and "torch.zeros(4).to(x)" in unsafe and "generator=g).to(device)" in unsafe
    before = _run(RUNTIME_SCRIPT, tmp_path, "before.py")
    assert before and json.loads(before[0][len("RESULT "):])[0][0][0] is True
    assert _run(safe, tmp_path, "safe.py") == before
    # On the CPU the unsafe fixes also keep every number (the generator is the CPU's either way).
    assert _run(unsafe, tmp_path, "unsafe.py") == before
