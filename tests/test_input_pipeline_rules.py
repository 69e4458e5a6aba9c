"""TSL301-TSL305 beyond the embedded cases: TorchFix's known defects, configured values,
CPU-only scripts, aliases, loader tracking, and the fixes (applied with a small helper)."""

from __future__ import annotations

import ast
import collections
import json
import os
import subprocess
import sys
import textwrap

import pytest

from tests._apply_fixes import apply_fixes
from torchsync_lint.engine import lint_source
from torchsync_lint.fixer import fix_source
from torchsync_lint.markers import read_markers
from torchsync_lint.rule import load_rules
from torchsync_lint.types import Applicability

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CODES = {"TSL301", "TSL302", "TSL303", "TSL304", "TSL305"}
RULES = load_rules()


def lint(source: str, codes=CODES):
    return [f for f in lint_source(textwrap.dedent(source), "t.py", set(codes), {}) if f.code in codes]


def found(source: str, codes=CODES) -> set[tuple[int, str]]:
    return {(f.line, f.code) for f in lint(source, codes)}


# A GPU training script whose loader line (4) and copy line (7) the tests vary.
GPU = """\
import torch
from torch.utils.data import DataLoader
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
loader = {loader}
model = torch.nn.Linear(8, 2).to(device)
for x, y in loader:
    {copy}
    model(x).sum().backward()
"""


def gpu(loader="DataLoader(ds, batch_size=32, num_workers=4, pin_memory=True)", copy="x = x.to(device, non_blocking=True)") -> str:
    return GPU.format(loader=loader, copy=copy)


# -- TorchFix TOR401 defects (notes/anchors.md §1) ---------------------------------------------------
def test_star_kwargs_is_not_a_finding():
    # TorchFix reported `DataLoader(ds, **kwargs)` as num_workers=0.
    assert found(gpu(loader="DataLoader(ds, **loader_kwargs)")) == set()
    assert found(gpu(loader="DataLoader(ds, batch_size=32, **cfg.loader)")) == set()


def test_explicit_keyword_beats_star_kwargs():
    # An explicit keyword next to **kwargs is what the call uses (a duplicate would raise).
    assert found(gpu(loader="DataLoader(ds, num_workers=0, pin_memory=False, **extra)")) == {(4, "TSL302"), (4, "TSL303")}


def test_dataloader_submodule_import_path_is_resolved():
    # TorchFix missed `from torch.utils.data.dataloader import DataLoader` (no canonicalisation).
    src = gpu(loader="DL(ds, batch_size=32)").replace("from torch.utils.data import DataLoader", "from torch.utils.data.dataloader import DataLoader as DL")
    assert found(src) == {(4, "TSL302"), (4, "TSL303")}
    src = gpu(loader="torch.utils.data.dataloader.DataLoader(ds, pin_memory=True)")
    assert found(src) == {(4, "TSL303")}


@pytest.mark.parametrize(
    ("loader", "expected"),
    [
        ("DataLoader(ds, 64, True, None, None, 4, None, True)", set()),  # workers 6th, pin 8th positional
        ("DataLoader(ds, 64, True, None, None, 0, None, True)", {"TSL303"}),
        ("DataLoader(ds, 64, True, None, None, 4, None, False)", {"TSL302"}),
        ("DataLoader(ds, 64, True, None, None, 4)", {"TSL302"}),  # pin_memory defaults to False
        ("DataLoader(ds, 64, True, None, None, n, None, pin)", set()),  # variables: unknown
        ("DataLoader(ds, 64, *rest)", set()),  # `*rest` may hold any position
    ],
)
def test_positional_arguments_follow_the_torch_signature(loader, expected):
    assert {code for _, code in found(gpu(loader=loader))} == expected


def test_positional_num_workers_matches_installed_torch_signature():
    torch = pytest.importorskip("torch")
    import inspect

    from torchsync_lint.analysis.loaders import POSITIONS

    params = list(inspect.signature(torch.utils.data.DataLoader.__init__).parameters)[1:]  # drop self
    for name, position in POSITIONS.items():
        assert params[position] == name


# -- configured values are never findings -------------------------------------------------------------
@pytest.mark.parametrize(
    "loader",
    [
        "DataLoader(ds, num_workers=args.workers, pin_memory=args.pin_mem)",
        "DataLoader(ds, num_workers=cfg['workers'], pin_memory=cfg['pin'])",
        "DataLoader(ds, num_workers=os.cpu_count(), pin_memory=torch.cuda.is_available())",
        "DataLoader(ds, num_workers=get_workers(), pin_memory=use_cuda)",
    ],
)
def test_configured_values_are_not_findings(loader):
    assert found(gpu(loader=loader), {"TSL302", "TSL303"}) == set()


def test_a_name_bound_only_to_a_literal_is_known():
    src = "WORKERS = 0\nPIN = False\n" + gpu(loader="DataLoader(ds, num_workers=WORKERS, pin_memory=PIN)")
    assert found(src) == {(6, "TSL302"), (6, "TSL303")}
    # Bound to a literal on one path and to a configured value on another: unknown.
    src = "WORKERS = 0\nif args.fast:\n    WORKERS = args.workers\n" + gpu(loader="DataLoader(ds, num_workers=WORKERS, pin_memory=True)")
    assert found(src) == set()


def test_function_parameter_values_are_unknown():
    src = """\
    import torch
    from torch.utils.data import DataLoader

    def make(ds, workers=0, pin=False):
        return DataLoader(ds, num_workers=workers, pin_memory=pin)

    loader = make(ds, 0)
    for x in loader:
        x = x.cuda(non_blocking=True)
    """
    assert found(src) == set()


# -- CPU-only scripts ---------------------------------------------------------------------------------
CPU_SCRIPT = """\
import torch
from torch.utils.data import DataLoader, Dataset

class Images(Dataset):
    def __getitem__(self, i):
        return self.data[i].float() / 255

device = {device}
model = torch.nn.Linear(8, 2).to(device)
loader = DataLoader(Images(), batch_size=32)
for x in loader:
    x = x.to(device)
    w = torch.tensor([1.0, 2.0], device=device)
    model(x).sum().backward()
"""


@pytest.mark.parametrize("device", ['"cpu"', 'torch.device("cpu")', "torch.device('cpu:0')"])
def test_cpu_only_script_has_no_pipeline_findings(device):
    assert found(CPU_SCRIPT.format(device=device)) == set()


def test_same_script_on_a_gpu_has_every_finding():
    src = CPU_SCRIPT.format(device='torch.device("cuda" if torch.cuda.is_available() else "cpu")')
    assert found(src) == {(6, "TSL304"), (10, "TSL302"), (10, "TSL303"), (12, "TSL301"), (13, "TSL305")}


def test_script_without_any_device_is_cpu_only():
    src = """\
    import torch
    from torch.utils.data import DataLoader
    loader = DataLoader(ds, batch_size=32)
    model = torch.nn.Linear(8, 2)
    for x, y in loader:
        model(x).sum().backward()
    """
    assert found(src) == set()


# -- aliases and loader tracking ----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("imports", "ctor"),
    [
        ("import torch.utils.data as tud", "tud.DataLoader"),
        ("from torch.utils.data import DataLoader as DL", "DL"),
        ("from torch.utils import data", "data.DataLoader"),
        ("import torch.utils.data.dataloader as tdl", "tdl.DataLoader"),
    ],
)
def test_aliases(imports, ctor):
    src = gpu(loader=f"{ctor}(ds, batch_size=8)").replace("from torch.utils.data import DataLoader", imports)
    assert found(src) == {(4, "TSL302"), (4, "TSL303")}


def test_loader_reaches_its_loop_through_a_function_parameter():
    src = """\
    import torch
    from torch.utils.data import DataLoader

    def train_one_epoch(model, loader, device):
        for batch in loader:
            images = batch["image"].to(device)
            model(images).sum().backward()

    train_dl = DataLoader(ds, batch_size=8, num_workers=2, pin_memory=True)
    stats_dl = DataLoader(ds, batch_size=8)
    train_one_epoch(torch.nn.Linear(2, 2).cuda(), train_dl, "cuda")
    for x, _ in stats_dl:
        mean = x.mean()
    """
    # The training loader feeds the GPU (its blocking copy is TSL301); the statistics
    # loader never reaches a device and is left alone.
    assert found(src) == {(6, "TSL301")}


def test_loader_on_self_and_from_a_factory_function():
    src = """\
    import torch
    from torch.utils.data import DataLoader

    def get_loaders(ds):
        return DataLoader(ds, batch_size=8), DataLoader(ds, batch_size=8, num_workers=2, pin_memory=True)

    class Trainer:
        def __init__(self, ds):
            self.train_loader, self.val_loader = get_loaders(ds)
            self.model = torch.nn.Linear(2, 2).cuda()

        def fit(self):
            for x, y in self.train_loader:
                self.model(x.cuda(non_blocking=True)).sum().backward()
    """
    # Tuple-returning factories behind `self` attributes are followed position by position:
    # the first loader (unpinned, no workers) feeds the GPU; the configured second one is fine.
    assert found(src) == {(5, "TSL302"), (5, "TSL303")}
    assert found(src.replace("self.train_loader, self.val_loader", "self.val_loader, self.train_loader")) == set()
    # The simpler `self.loader = DataLoader(...)` form is tracked too:
    src2 = """\
    import torch
    from torch.utils.data import DataLoader

    class Trainer:
        def __init__(self, ds):
            self.loader = DataLoader(ds, batch_size=8)
            self.model = torch.nn.Linear(2, 2).cuda()

        def fit(self):
            for x, y in self.loader:
                self.model(x.cuda(non_blocking=True)).sum().backward()
    """
    assert found(src2) == {(6, "TSL302"), (6, "TSL303")}


def test_accelerate_and_lightning_loaders_feed_the_gpu():
    accelerate = """\
    from accelerate import Accelerator
    from torch.utils.data import DataLoader
    accelerator = Accelerator()
    loader = DataLoader(ds, batch_size=8)
    model, loader = accelerator.prepare(model, loader)
    for batch in loader:
        accelerator.backward(model(batch).sum())
    """
    assert found(accelerate) == {(4, "TSL302"), (4, "TSL303")}
    lightning = """\
    import lightning as L
    from torch.utils.data import DataLoader

    class Data(L.LightningDataModule):
        def train_dataloader(self):
            return DataLoader(self.ds, batch_size=8)

    trainer = L.Trainer(accelerator={accel!r})
    trainer.fit(model, datamodule=Data())
    """
    assert found(lightning.format(accel="gpu")) == {(6, "TSL302"), (6, "TSL303")}
    assert found(lightning.format(accel="cpu")) == set()


def test_explicit_cpu_lightning_trainer_makes_the_module_cpu_only():
    src = """\
    import torch
    import lightning as L
    from torch.utils.data import DataLoader

    class Q(L.LightningModule):
        def training_step(self, batch, batch_idx):
            state = torch.tensor([self.state])
            if self.on_gpu:
                state = state.cuda(self.device)
            reward = torch.tensor(self.reward).to(self.device)
            return self.net(state).sum()

        def train_dataloader(self):
            return DataLoader(self.ds, batch_size=16)

    L.Trainer(accelerator={accel!r}).fit(Q())
    """
    assert found(src.format(accel="cpu")) == set()
    # line 9 copies the tensor line 7 built on the host: TSL305's hazard, one finding (not TSL301)
    assert found(src.format(accel="gpu")) == {(9, "TSL305"), (10, "TSL305"), (14, "TSL302"), (14, "TSL303")}


def test_dataset_on_device_and_in_memory_tensor_datasets():
    on_device = gpu(loader="DataLoader(TensorDataset(xs.cuda(), ys.cuda()), batch_size=8)", copy="pass").replace(
        "import DataLoader", "import DataLoader, TensorDataset")
    assert found(on_device) == set()  # nothing to pin (pinning would raise), nothing to load
    in_memory = gpu(loader="DataLoader(TensorDataset(xs, ys), batch_size=8)").replace("import DataLoader", "import DataLoader, TensorDataset")
    assert found(in_memory) == {(4, "TSL302")}  # pinning still helps; workers only add IPC


def test_one_tsl302_per_loader_with_several_loops_and_copies():
    src = gpu(loader="DataLoader(ds, batch_size=8, num_workers=2)", copy="x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)")
    src += "for x, y in loader:\n    model(x.to(device, non_blocking=True)).sum().backward()\n"
    findings = lint(src, {"TSL302"})
    assert [f.line for f in findings] == [4]
    assert "non_blocking=True" in findings[0].message  # says the async copies are still synchronous


# -- TSL301 ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "copy",
    [
        'x_host = x.to("cpu")',
        "x_host = x.cpu()",
        "x_host = x.to(torch.device('cpu'), non_blocking=False)",
        "x_half = x.to(torch.float16)",
        "x = x.to(device, non_blocking=flags.non_blocking)",
        "x = x.to(device, torch.float32, True)",
        "model.to(device)",
    ],
)
def test_tsl301_near_misses(copy):
    assert found(gpu(copy=copy), {"TSL301"}) == set()


def test_tsl301_through_comprehensions_over_a_batch():
    src = """\
    import torch
    from torch.utils.data import DataLoader
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    loader = DataLoader(ds, batch_size=8, num_workers=2)
    for step, batch in enumerate(loader):
        batch = tuple(t.to(device) for t in batch)
        model(*batch).sum().backward()
    for batch in loader:
        batch = {k: v.to(device) for k, v in batch.items()}
        moved = [t.to(device, non_blocking=True) for t in batch.values()]
        model(**batch).sum().backward()
    """
    findings = lint(src, {"TSL301"})
    assert [f.line for f in findings] == [6, 9]
    assert all("loader on line 4 does not pin" in f.message for f in findings)


def test_tsl301_device_resident_dataset_and_cpu_factories():
    on_device = gpu(loader="DataLoader(TensorDataset(xs.cuda(), ys.cuda()), batch_size=8)", copy="x = x.to(device)").replace(
        "import DataLoader", "import DataLoader, TensorDataset")
    assert found(on_device, {"TSL301"}) == set()  # the batches are already on the device
    # A CPU factory then a copy is TSL305's (create it on the device), not a batch copy.
    assert found(gpu(copy="noise = torch.randn(8, 16).to(device)")) == {(7, "TSL305")}


def test_tsl301_message_points_at_the_unpinned_loader():
    f = lint(gpu(loader="DataLoader(ds, num_workers=2)", copy="x = x.to(device)"), {"TSL301"})
    assert [x.line for x in f] == [7]
    assert "loader on line 4 does not pin" in f[0].message
    f = lint(gpu(copy="x = x.to(device)"), {"TSL301"})
    assert "does not pin" not in f[0].message


def test_tsl301_after_the_batch_was_moved_is_not_a_second_copy():
    src = gpu(copy="x = x.to(device)\n    x = x.cuda()\n    z = x.float().to(device)")
    assert found(src, {"TSL301"}) == {(7, "TSL301")}


def test_fixes_never_add_non_blocking_to_a_copy_towards_the_cpu():
    copies = [
        'a = x.to("cpu")',
        "b = x.to(device)",
        "c = model(x.to(device)).to('cpu')",
        "d = x.cuda()",
        "e = model(x.cuda()).cpu()",
        "f = x.to(cpu_device)",
    ]
    src = "cpu_device = torch.device('cpu')\n" + gpu(copy="\n    ".join(copies))
    fixed = apply_fixes(src, lint(src), Applicability.UNSAFE)
    ast.parse(fixed)
    assert 'a = x.to("cpu")' in fixed and "f = x.to(cpu_device)" in fixed and ".to('cpu')" in fixed and ".cpu()" in fixed
    assert "b = x.to(device, non_blocking=True)" in fixed
    assert "c = model(x.to(device, non_blocking=True)).to('cpu')" in fixed
    assert "d = x.cuda(non_blocking=True)" in fixed


def test_fix_keeps_multiline_and_trailing_comma_calls_valid():
    src = gpu(copy="x = x.to(\n        device,\n    )\n    y = y.to(device,)")
    fixed = apply_fixes(src, lint(src, {"TSL301"}))
    ast.parse(fixed)
    assert "x = x.to(\n        device, non_blocking=True,\n    )" in fixed
    assert "y = y.to(device, non_blocking=True,)" in fixed


# -- TSL304 ---------------------------------------------------------------------------------------------
def test_tsl304_transforms_reached_through_names_and_local_dataset_classes():
    src = """\
    import torch
    import torchvision.transforms as T
    from torch.utils.data import DataLoader, Dataset

    class Folder(Dataset):
        def __init__(self, files):
            self.files = files
            self.tf = T.Compose([T.Resize(32), T.ToTensor()])

        def __getitem__(self, i):
            return self.tf(load(self.files[i]))

    loader = DataLoader(Folder(files), batch_size=8, num_workers=2, pin_memory=True)
    for x in loader:
        model(x.cuda(non_blocking=True)).sum().backward()
    """
    assert found(src) == {(8, "TSL304")}


def test_tsl304_normalize_only_reported_without_a_converter():
    src = """\
    import torch
    from torchvision.transforms import v2
    from torch.utils.data import DataLoader
    tf = v2.Compose([v2.ToImage(), v2.ToDtype(torch.uint8), v2.Normalize(MEAN, STD)])
    loader = DataLoader(make_ds(transform=tf), num_workers=2, pin_memory=True)
    for x in loader:
        model(x.cuda(non_blocking=True)).sum().backward()
    """
    assert found(src) == {(4, "TSL304")}  # the Normalize call (uint8 ToDtype is fine)
    assert found(src.replace("v2.ToDtype(torch.uint8), v2.Normalize(MEAN, STD)", "v2.ToDtype(torch.uint8)")) == set()


def test_tsl304_getitem_suggestion_is_text_naming_both_halves():
    # Issue 15: the old suggestion edited the host half only (`return (x - 0.5) / 0.25`),
    # which feeds the model uint8 values 255x too large. A suggestion is text, never an edit.
    src = """\
    import torch
    from torch.utils.data import DataLoader, Dataset

    class D(Dataset):
        def __getitem__(self, i):
            x = self.x[i]
            return (x.float() / 255.0 - 0.5) / 0.25

    loader = DataLoader(D(), num_workers=2, pin_memory=True)
    for x in loader:
        x = x.cuda(non_blocking=True)
    """
    f = lint(src, {"TSL304"})
    assert [x.line for x in f] == [7]
    assert f[0].fix.applicability is Applicability.SUGGESTION and f[0].fix.edits == ()
    title = f[0].fix.title
    assert "return the uint8 `x`" in title and "`x.float() / 255.0`" in title
    assert "after the copy" in title and "`x = x.to(device, non_blocking=True).float().div_(255)`" in title
    for level in Applicability:
        assert apply_fixes(textwrap.dedent(src), f, level) == textwrap.dedent(src)  # nothing to apply, ever


def test_tsl304_transform_suggestion_moves_normalize_to_the_device():
    src = """\
    import torch
    import torchvision
    from torchvision import transforms
    from torch.utils.data import DataLoader
    tf = transforms.Compose([transforms.ToTensor(), transforms.Normalize(mean=MEAN, std=(0.2, 0.2, 0.2))])
    loader = DataLoader(torchvision.datasets.CIFAR10("d", transform=tf), num_workers=2, pin_memory=True)
    for x, y in loader:
        model(x.cuda(non_blocking=True)).sum().backward()
    """
    (finding,) = lint(src, {"TSL304"})
    title = finding.fix.title
    assert finding.fix.edits == ()
    assert "replace `transforms.ToTensor()` with `transforms.PILToTensor()`" in title
    assert "remove `transforms.Normalize(mean=MEAN, std=(0.2, 0.2, 0.2))`" in title
    assert "`x = x.to(device, non_blocking=True).float().div_(255)`" in title
    assert "mean = torch.tensor(MEAN, device=device)" in title and "std = torch.tensor((0.2, 0.2, 0.2), device=device)" in title
    # Normalize alone (uint8 in, float out on the host): remove it, normalise on the device.
    only = src.replace("transforms.ToTensor(), ", "transforms.PILToTensor(), ")
    (finding,) = lint(only, {"TSL304"})
    assert finding.fix.title.count("remove `transforms.Normalize(") == 1 and "PILToTensor()` (uint8)" not in finding.fix.title


# -- TSL305 ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "copy",
    [
        "s = torch.full((), 0.5, device=device)",
        "z = torch.zeros(3, device=device)",
        "o = torch.ones_like(x)",
        "i = torch.tensor([1, 2])",
        "c = torch.tensor(0.5, device='cpu')",
        "t = torch.as_tensor(x.to(device, non_blocking=True), device=device)",
        "u = torch.as_tensor(unknown_thing, device=device)",
    ],
)
def test_tsl305_near_misses(copy):
    assert found(gpu(copy=copy), {"TSL305"}) == set()


def test_tsl305_fix_only_for_literal_scalars():
    src = gpu(copy="a = torch.tensor(1, device=device, requires_grad=False)\n    b = torch.tensor(vals, device=device)\n    c = torch.tensor(-2.5, device=device)")
    f = lint(src, {"TSL305"})
    assert [(x.line, x.fix is not None) for x in f] == [(7, True), (8, False), (9, True)]
    fixed = apply_fixes(src, f)
    ast.parse(fixed)
    assert "a = torch.full((), 1, device=device, requires_grad=False)" in fixed
    assert "c = torch.full((), -2.5, device=device)" in fixed


def test_tsl305_and_tsl301_do_not_double_report_a_fresh_tensor():
    assert found(gpu(copy="t = torch.tensor([1.0, 2.0]).to(device)")) == {(7, "TSL305")}


# -- rule metadata and every embedded case's fix ---------------------------------------------------------
def test_runtime_observability_is_declared():
    # The verifier observes all five: blocking copies (TSL301/305) as stream syncs; unpinned
    # batches copied to the device (TSL302), `DataLoader.__iter__` with no workers (TSL303) and
    # host-made float32 copied H2D (TSL304) through its DataLoader/copy instrumentation.
    assert all(RULES[c].runtime_observable for c in CODES)


@pytest.mark.parametrize(
    "case",
    [pytest.param((code, case), id=f"{code}-{i}") for code in sorted(CODES) for i, case in enumerate(RULES[code].INVALID)],
)
def test_invalid_case_fixes_parse_and_match(case):
    code, case = case
    findings = [f for f in lint_source(case.code, "case.py", {code}, {}) if f.code == code]
    level = case.applicability or Applicability.SAFE
    fixed = fix_source(
        case.code,
        "case.py",
        unsafe=level is not Applicability.SAFE,
        suggestions=level is Applicability.SUGGESTION,
        lint=lambda text: [f for f in lint_source(text, "case.py", {code}, {}) if f.code == code],
    ).new_source
    ast.parse(fixed)
    if case.expected_fix is not None:
        assert fixed == case.expected_fix  # the shared fixer places imports after the last import
    if case.applicability is not None:
        assert any(f.fix is not None and f.fix.applicability is case.applicability for f in findings)


def test_unsafe_and_suggestion_fixes_are_not_applied_by_default():
    src = gpu(loader="DataLoader(ds, batch_size=8)", copy="x = x.to(device)")
    fixed = apply_fixes(src, lint(src))
    assert 'pin_memory=device.type == "cuda"' in fixed and "non_blocking=True" in fixed
    assert "num_workers" not in fixed and "import os" not in fixed
    fixed = apply_fixes(src, lint(src), Applicability.UNSAFE)
    assert "\nimport os\n" in fixed and "num_workers=min(8, os.cpu_count() or 1)" in fixed
    ast.parse(fixed)


# -- fixtures: the static findings equal the markers, and the scripts run ---------------------------------
FIXTURES = sorted(
    os.path.join(d, name)
    for d in (os.path.join(ROOT, "fixtures", "input_pipeline"), os.path.join(ROOT, "fixtures", "clean"))
    if os.path.isdir(d)
    for name in os.listdir(d)
    if name.endswith(".py") and not name.endswith(".fixed.py") and (d.endswith("input_pipeline") or name.startswith("pipeline"))
)


@pytest.mark.parametrize("path", FIXTURES, ids=[os.path.relpath(p, ROOT) for p in FIXTURES])
def test_fixture_findings_equal_markers(path):
    with open(path, encoding="utf-8") as fh:
        source = fh.read()
    got = collections.Counter((f.line, f.code) for f in lint_source(source, path))
    want = collections.Counter((m.line, m.code) for m in read_markers(path) if m.kind == "expect")
    assert got == want  # one marker per finding: two copies on one line would need two markers
    if "/clean/" in path:
        assert not want


def test_pipeline_fixtures_run_and_fixes_keep_the_losses():
    pytest.importorskip("torch")
    results = {}
    for name in ("input_pipeline/pipeline_baseline.py", "clean/pipeline_optimized.py"):
        out = subprocess.run([sys.executable, os.path.join(ROOT, "fixtures", name), "--steps", "2"], capture_output=True, text=True, timeout=120, check=True)
        last = out.stdout.strip().splitlines()[-1]
        assert last.startswith("RESULT ")
        results[name] = json.loads(last[len("RESULT "):])
    baseline, optimized = results.values()
    assert baseline["steps"] == optimized["steps"] == 2
    # Same data order, same model: normalising uint8 on the device gives the same losses.
    assert baseline["losses"] == pytest.approx(optimized["losses"], abs=1e-4)


def _pin_fix(src: str) -> str:
    (finding,) = [f for f in lint(src, {"TSL302"})]
    fixed = apply_fixes(src, [finding])
    ast.parse(fixed)
    return next(line for line in fixed.splitlines() if "DataLoader(ds" in line)


@pytest.mark.parametrize(
    ("src", "value"),
    [
        (gpu(loader="DataLoader(ds, num_workers=2)"), 'device.type == "cuda"'),
        (gpu(loader="DataLoader(ds, num_workers=2)", copy="x = x.to(device=device)"), 'device.type == "cuda"'),
        # near misses: no `torch.device` variable the loader can read
        (GPU.replace('device = torch.device("cuda" if torch.cuda.is_available() else "cpu")', 'device = "cuda" if torch.cuda.is_available() else "cpu"').format(loader="DataLoader(ds, num_workers=2)", copy="x = x.to(device)"), "torch.cuda.is_available()"),
        (gpu(loader="DataLoader(ds, num_workers=2)", copy="x = x.cuda()"), "torch.cuda.is_available()"),
        (gpu(loader="DataLoader(ds, num_workers=2)", copy="x = x.to(args.device)"), "torch.cuda.is_available()"),
        (gpu(loader="DataLoader(ds, num_workers=2)", copy="x = x.to(device)\n    y = y.to(other)").replace("model = ", "other = torch.device('cuda:1')\nmodel = "), "torch.cuda.is_available()"),  # two devices
        (gpu(loader="DataLoader(ds, num_workers=2)").replace("loader = DataLoader(ds, num_workers=2)\n", "loader = DataLoader(ds, num_workers=2)\ndevice = torch.device('cuda')\n"), "torch.cuda.is_available()"),  # rebound after the loader
    ],
)
def test_pin_memory_fix_follows_the_device_the_script_chose(src, value):
    assert f"pin_memory={value}" in _pin_fix(src)


def test_pinned_fix_runs_quietly_on_a_cpu_machine(tmp_path):
    """torch warns when it is asked to pin without an accelerator; the fixed loader does not ask."""
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("the warning is about machines without CUDA")
    body = "import warnings\nwarnings.simplefilter('always')\nds = [torch.zeros(2) for _ in range(4)]\n"
    script = body + GPU.replace("for x, y in loader:\n    {copy}\n    model(x).sum().backward()\n", "for x in loader:\n    {copy}\n").split("\n", 2)[2]
    script = "import torch\nfrom torch.utils.data import DataLoader\n" + script
    for name, loader in (("before.py", "DataLoader(ds, batch_size=2, pin_memory=True)"), ("after.py", None)):
        text = script.format(loader=loader or "DataLoader(ds, batch_size=2)", copy="x = x.to(device, non_blocking=True)")
        if loader is None:
            text = apply_fixes(text, [f for f in lint(text, {"TSL302"})])
            assert 'pin_memory=device.type == "cuda"' in text
        (tmp_path / name).write_text(text, encoding="utf-8")
        out = subprocess.run([sys.executable, str(tmp_path / name)], capture_output=True, text=True, timeout=120, check=True)
        assert ("pin_memory" in out.stderr) == (name == "before.py"), out.stderr


def test_appended_keyword_goes_after_a_parenthesised_last_argument():
    src = gpu(loader="DataLoader(ds, batch_size=(32) ,)")
    fixed = apply_fixes(src, lint(src), Applicability.UNSAFE)
    ast.parse(fixed)
    pin = 'pin_memory=device.type == "cuda"'
    assert f"DataLoader(ds, batch_size=(32), {pin}, num_workers=min(8, os.cpu_count() or 1) ,)" in fixed or \
        f"DataLoader(ds, batch_size=(32), num_workers=min(8, os.cpu_count() or 1), {pin} ,)" in fixed


def test_family_docs_match_the_rule_docstrings():
    import importlib.util

    spec = importlib.util.spec_from_file_location("gen_docs", os.path.join(ROOT, "docs", "rules", "generate_input_pipeline.py"))
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    with open(os.path.join(ROOT, "docs", "rules", "input_pipeline.md"), encoding="utf-8") as fh:
        assert fh.read() == gen.render(), "run: PYTHONPATH=. python docs/rules/generate_input_pipeline.py"


def test_multiline_rebinding_reads_the_previous_binding():
    # core fix: `x = f(\n    x)` reads the earlier `x` (the accelerate idiom below spans lines).
    src = """\
    from accelerate import Accelerator
    from torch.utils.data import DataLoader
    accelerator = Accelerator()
    train_dataloader = DataLoader(ds, batch_size=8)
    model, train_dataloader = accelerator.prepare(
        model, train_dataloader
    )
    for batch in train_dataloader:
        accelerator.backward(model(**batch).loss)
    """
    assert found(src) == {(4, "TSL302"), (4, "TSL303")}


def test_tsl305_factory_fix_on_a_multiline_call():
    src = gpu(copy="mask = torch.zeros(\n        8,\n        4,\n    ).to(device)\n    keep = torch.arange(8).cuda(0)")
    f = lint(src, {"TSL305"})
    assert [(x.line, x.fix is not None) for x in f] == [(7, True), (11, False)]  # `.cuda(0)`: no fix
    fixed = apply_fixes(src, f)
    ast.parse(fixed)
    assert "mask = torch.zeros(\n        8,\n        4, device=device,\n    )\n" in fixed


def test_tsl304_every_dataset_branch_and_subset_wrappers():
    src = """\
    import torch
    import torchvision.datasets as dset
    import torchvision.transforms as T
    from torch.utils.data import DataLoader, Subset
    if opt.dataset == "cifar10":
        dataset = dset.CIFAR10(root, transform=T.Compose([T.Resize(64), T.ToTensor()]))
    elif opt.dataset == "mnist":
        dataset = dset.MNIST(root, transform=T.ToTensor())
    else:
        dataset = dset.FakeData(transform=T.PILToTensor())
    loader = DataLoader(Subset(dataset, range(100)), batch_size=64, num_workers=2, pin_memory=True)
    for x, _ in loader:
        netD(x.cuda(non_blocking=True)).mean().backward()
    """
    assert found(src) == {(6, "TSL304"), (8, "TSL304")}


# -- TSL303: a dataset whose items are values already in memory ------------------------------------
IN_MEMORY = """\
import torch
from torch.utils.data import DataLoader, Dataset


class Base(Dataset):
    def __init__(self, prompt, n):
        self.prompt, self.n = prompt, n

    def __len__(self):
        return self.n

    def __getitem__(self, index):
        {getitem}


class Prompts(Base):
    pass


model = torch.nn.Linear(4, 4).cuda()
loader = DataLoader({dataset}("a", 4), batch_size=2, pin_memory=True)
for batch in loader:
    out = model(batch["index"].cuda(non_blocking=True))
"""


@pytest.mark.parametrize(
    "getitem",
    [
        'example = {}\n        example["prompt"] = self.prompt\n        example["index"] = index\n        return example',
        'return {"prompt": self.prompt, "index": index}',
        "return self.prompt[index], index",
    ],
    ids=["dict-filled", "dict-display", "tuple"],
)
@pytest.mark.parametrize("dataset", ["Base", "Prompts"], ids=["own", "inherited"])
def test_a_dataset_whose_items_are_in_memory_needs_no_workers(getitem, dataset):
    src = IN_MEMORY.replace("{getitem}", getitem).replace("{dataset}", dataset)
    assert (21, "TSL303") not in found(src)


@pytest.mark.parametrize(
    "getitem",
    ['return torch.load(f"{index}.pt")', "return self.transform(self.prompt[index])", 'return {"prompt": self.prompt.upper(), "index": index}'],
    ids=["load", "transform", "method-call"],
)
def test_a_dataset_that_computes_its_items_still_loads_in_the_step(getitem):
    src = IN_MEMORY.replace("{getitem}", getitem).replace("{dataset}", "Prompts")
    assert (21, "TSL303") in found(src)
