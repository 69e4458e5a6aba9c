"""TSL3xx: input-pipeline stalls: blocking copies, unpinned and main-process loaders, host-side
float normalisation, and host tensors built every step.

The seed measurements: DataLoader workers plus pinned memory gave 2.5x on an MNIST toy, and a
profile-driven pass on a CIFAR-like ResNet-18 (workers, pinning, uint8 transfer normalised on
the GPU, batch size, AMP, compile) gave 8x. Loader facts (arguments, the loops that iterate a
loader, whether it feeds an accelerator) come from ``analysis/loaders.py``; a value the user
configures (``num_workers=args.workers``, ``**loader_kwargs``) is never a finding.
"""

from __future__ import annotations

import libcst as cst

from torchsync_lint.analysis import Kind
from torchsync_lint.analysis.loaders import ArgValue, LoaderInfo, LoaderTracker, literal_value, loaders
from torchsync_lint.rule import Rule
from torchsync_lint.types import Applicability, Edit, Invalid, Valid

# -- case templates ------------------------------------------------------------------------------
_GPU = 'torch.device("cuda" if torch.cuda.is_available() else "cpu")'
_TEMPLATE = """\
import torch
import torch.nn.functional as F
{imports}

device = {device}
model = torch.nn.Linear(8, 4).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
loader = {loader}
for x, y in loader:
    {copy}
    loss = F.cross_entropy(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
{after}"""
LOADER_LINE = 8
COPY_LINE = 10
_PINNED = "DataLoader(dataset, batch_size=32, num_workers=4, pin_memory=True)"
_NB_COPY = "x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)"


def pipeline(
    copy: str = _NB_COPY,
    loader: str = _PINNED,
    imports: str = "from torch.utils.data import DataLoader",
    device: str = _GPU,
    after: str = "",
) -> str:
    """A one-file training script; the loader is on line 8 and the batch copy on line 10."""
    return _TEMPLATE.format(imports=imports, device=device, loader=loader, copy=copy, after=after)


_DATASET_CLASS = """\
import torch
from torch.utils.data import DataLoader, Dataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = torch.nn.Conv2d(3, 8, 3).to(device)


class Images(Dataset):
    def __init__(self, n):
        self.images = torch.randint(0, 256, (n, 3, 32, 32), dtype=torch.uint8)

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        {getitem}


loader = DataLoader(Images(64), batch_size=8, num_workers=2, pin_memory=True)
for x in loader:
    {copy}
    model(x).sum().backward()
"""
GETITEM_LINE = 16


def dataset_script(getitem: str, copy: str = "x = x.to(device, non_blocking=True).float().div_(255)", device_line: str | None = None) -> str:
    src = _DATASET_CLASS.format(getitem=getitem, copy=copy)
    if device_line is not None:
        src = src.replace(f"device = {_GPU}", device_line, 1)
    return src


_TV_SCRIPT = """\
import torch
import torchvision
from torchvision import transforms
from torchvision.transforms import v2
from torch.utils.data import DataLoader

device = {device}
model = torchvision.models.resnet18(num_classes=10).to(device)
transform = transforms.Compose([
    {first},
    transforms.Normalize((0.49, 0.48, 0.45), (0.25, 0.24, 0.26)),
])
train_set = torchvision.datasets.CIFAR10("data", train=True, transform=transform)
loader = DataLoader(train_set, batch_size=128, num_workers=4, pin_memory=True)
for x, y in loader:
    {copy}
    model(x).sum().backward()
"""
TRANSFORM_LINE = 10


def torchvision_script(first: str = "transforms.ToTensor()", copy: str = "x = x.to(device, non_blocking=True)", device: str = _GPU) -> str:
    return _TV_SCRIPT.format(first=first, copy=copy, device=device)


# -- helpers -------------------------------------------------------------------------------------
def _describe(rule: Rule, node: cst.CSTNode, limit: int = 48) -> str:
    text = " ".join(rule.code_for(node).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _render(rule: Rule, node: cst.BaseExpression) -> str:
    """Source of a node as the position table spans it (libcst positions exclude parentheses)."""
    if getattr(node, "lpar", None):
        node = node.with_changes(lpar=(), rpar=())
    return rule.code_for(node)


def _append_keyword(rule: Rule, call: cst.Call, keyword: str, value: str) -> Edit:
    """A zero-width edit that appends ``keyword=value`` to ``call``'s arguments.

    It inserts right after the last argument's value (before any trailing comma), or inside
    the empty parentheses, so that two rules appending to one call never overlap and a
    multi-line call keeps its layout.
    """
    if call.args:
        end = rule.position(call.args[-1]).end  # the Arg span: value and its parentheses, no comma
        return Edit(end.line, end.column + 1, end.line, end.column + 1, f", {keyword}={value}")
    end = rule.position(call).end  # just after `)`: libcst positions exclude the call's own parentheses
    return Edit(end.line, end.column, end.line, end.column, f"{keyword}={value}")


def _is_divide_by_255(node: cst.CSTNode) -> bool:
    """`x / 255`, `x / 255.0`, `x.div(255)`, `x.div_(255.)`, `x.true_divide(255)`."""
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Divide):
        ok, value = literal_value(node.right)
        return ok and not isinstance(value, bool) and value == 255
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in ("div", "div_", "true_divide", "true_divide_"):
        positional = [a for a in node.args if a.keyword is None]
        if len(positional) == 1:
            ok, value = literal_value(positional[0].value)
            return ok and not isinstance(value, bool) and value == 255
    return False


def _divided_operand(node: cst.CSTNode) -> cst.BaseExpression:
    return node.left if isinstance(node, cst.BinaryOperation) else node.func.value  # type: ignore[union-attr]


_LEGACY_CONSTRUCTORS = frozenset(
    f"torch.{n}" for n in "Tensor FloatTensor DoubleTensor HalfTensor LongTensor IntTensor ShortTensor ByteTensor BoolTensor".split()
)  # always build a CPU tensor (they reject CUDA input)
_FRESH_HOST_TENSOR = frozenset({"torch.tensor", "torch.as_tensor", "torch.asarray"}) | _LEGACY_CONSTRUCTORS
_CPU_FACTORIES = frozenset("zeros ones empty full rand randn randint randperm arange linspace eye normal".split())
_DTYPE_WORDS = frozenset({"float32", "float16", "bfloat16", "float64", "int64", "int32", "long", "float", "half", "double", "uint8", "bool", "int8", "int16"})


class _Loader(Rule):
    """Shared helpers for the constructor rules (no ``code``: not registered)."""

    def tracker(self) -> LoaderTracker:
        return loaders(self.analysis)

    def set_argument(self, info: LoaderInfo, arg: ArgValue, keyword: str, value: str):
        """An edit that sets ``keyword`` to ``value`` on the constructor (replace or append)."""
        if arg.arg is not None:
            return self.edit(arg.arg.value, value)
        return _append_keyword(self, info.call, keyword, value)


# -- TSL301 --------------------------------------------------------------------------------------
class BlockingHostToDeviceCopy(Rule):
    """
    ## What it does
    Flags `.to(device)` and `.cuda()` of a host tensor (a batch from a `DataLoader`, a tensor
    built on the CPU) inside a loop that runs every training step, when the copy does not pass
    `non_blocking=True`.

    ## Why is this bad?
    A blocking host-to-device copy makes the host wait until the copy has finished, which
    means until every kernel queued before it on the stream has run too: the GPU drains its
    queue and idles while Python fetches and collates the next batch. With
    `non_blocking=True` from pinned memory (`DataLoader(pin_memory=True)`, TSL302) the copy is
    queued like a kernel and the host moves on. Workers plus pinned memory gave 2.5x on an
    MNIST toy in a public write-up. `model.to(device)` is not a batch copy and is not flagged;
    neither is any copy towards the CPU (`.to("cpu")`), where `non_blocking=True` would let the
    host read memory that is still being written.

    ## Example
    ```python
    loader = DataLoader(train_set, batch_size=128, num_workers=8, pin_memory=True)
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        loss = criterion(model(x), y)
    ```

    ## Use instead
    ```python
    loader = DataLoader(train_set, batch_size=128, num_workers=8, pin_memory=True)
    for x, y in loader:
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        loss = criterion(model(x), y)
    ```

    ## Fix safety
    Adding `non_blocking=True` to a host-to-device copy is safe: later kernels on the same
    stream are ordered after the copy, and PyTorch keeps a pinned source alive until the copy
    is done (from pageable memory the copy simply stays synchronous). The fix is never offered
    for a copy to the CPU. It only pays off once the loader pins its memory (TSL302).

    ## Known problems
    A batch read on the host right after an asynchronous copy to the device is fine, but a
    tensor *written* on the host after being queued for copy (an in-place edit of the pinned
    batch) would race; data loaders hand out a fresh batch each step, so this does not arise
    for loader batches.
    """

    code = "TSL301"
    name = "blocking-host-to-device-copy"
    message = "`{expr}` is a blocking host-to-device copy in a per-step loop: the host waits for the GPU queue to drain; pass `non_blocking=True` (with `pin_memory=True` on the loader)"
    fix_title = "Add `non_blocking=True`"
    runtime_observable = True  # verifier: a blocking H2D copy (a stream sync)

    VALID = [
        Valid(pipeline()),  # already non_blocking
        Valid(pipeline(copy="pass", after="x0 = x.to(device)\n")),  # a one-off copy after the loop
        Valid(pipeline(copy="x_cpu = x.to('cpu')\n    x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)")),  # towards the CPU
        Valid(pipeline(copy="x, y = x.to(device, non_blocking=args.non_blocking), y.to(device, non_blocking=args.non_blocking)")),  # configured
        Valid(pipeline(copy="model.to(device)\n    x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)")),  # a model, not a batch
        Valid(pipeline(copy="x, y = x.to(device), y.to(device)", device='torch.device("cpu")')),  # a CPU-only script
        Valid(pipeline(copy="x = x.to(torch.float16).cuda(non_blocking=True)\n    y = y.cuda(0, True)")),  # dtype cast; positional non_blocking
    ]
    INVALID = [
        Invalid(
            pipeline(copy="x, y = x.to(device), y.to(device)"),
            line=COPY_LINE,
            message_contains="non_blocking=True",
            expected_fix=pipeline(copy="x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)"),
        ),
        Invalid(pipeline(copy="x, y = x.cuda(), y.cuda()"), line=COPY_LINE, expected_fix=pipeline(copy="x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)")),
        Invalid(
            pipeline(copy="x, y = x.to(device, non_blocking=False), y.to(device, non_blocking=True)"),
            line=COPY_LINE,
            expected_fix=pipeline(copy="x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)"),
        ),
        Invalid(
            pipeline(copy="x, y = x.to(device), y.to(device)", loader="DL(dataset, batch_size=32)", imports="from torch.utils.data.dataloader import DataLoader as DL"),
            line=COPY_LINE,
            message_contains="pin_memory=True",
        ),
        Invalid(
            "import torch\n\n\ndef train(model, loader, opt, device):\n    for batch in loader:\n"
            "        images = batch['image'].to(device, dtype=torch.float32)\n        model(images).sum().backward()\n        opt.step()\n\n\n"
            "dl = torch.utils.data.DataLoader(ds, num_workers=2, pin_memory=True)\n"
            "train(torch.nn.Linear(2, 2).cuda(), dl, None, 'cuda')\n",
            line=6,
            expected_fix=None,
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute) or func.attr.value not in ("to", "cuda"):
            return
        if self.analysis.qualname(func) is not None:
            return  # a module attribute (`torch.cuda`), not a tensor method
        if func.attr.value == "to" and self.analysis.values.to_destination(node) != "accelerator":
            return  # to the CPU or a dtype cast: never a host-to-device copy
        receiver = func.value
        if not loaders(self.analysis).module_feeds_accelerator:
            return  # `Trainer(accelerator="cpu")`: the copy never reaches a GPU
        if loaders(self.analysis).batch_kind(receiver) is not Kind.HOST_TENSOR:
            return  # a model, a tensor already on the device, or something we cannot place
        if self._cpu_factory(receiver) is not None or (isinstance(receiver, cst.Call) and self.analysis.qualname(receiver.func) in _FRESH_HOST_TENSOR):
            return  # `torch.tensor(v).to(device)`, `torch.randn(n).to(device)`: TSL305's findings
        state, arg = self._non_blocking(node)
        if state in ("true", "unknown"):
            return
        hot = self.hot(node)
        if hot is None:
            return  # a one-off copy outside the per-step path
        tracker = loaders(self.analysis)
        sources = self._source_loaders(receiver)
        if sources and all(tracker.dataset_on_device(info) for info in sources):
            return  # `DataLoader(TensorDataset(x.cuda()))` yields device tensors: `.to` is a no-op
        if arg is not None:
            fix = self.make_fix(self.edit(arg.value, "True"))
        else:
            fix = self.make_fix(_append_keyword(self, node, "non_blocking", "True"))
        message = self.message
        unpinned = [info for info in sources if info.pin_memory.known and info.effective("pin_memory") is False]
        if unpinned:
            line = self.analysis.index.line(unpinned[0].call)
            message += f"; the loader on line {line} does not pin its memory yet (TSL302)"
        self.report(node, message, fix=fix, hot=hot, expr=_describe(self, node))

    def _cpu_factory(self, receiver: cst.BaseExpression) -> str | None:
        """`torch.zeros(n)` / `torch.randn(n)` filled on the CPU and then copied (TorchTidy's
        "Extra CUDA Copy" pattern): the factory name, else None."""
        if isinstance(receiver, cst.Call):
            qn = self.analysis.qualname(receiver.func) or ""
            last = qn.rsplit(".", 1)[-1]
            if qn.count(".") == 1 and qn.startswith("torch.") and last in _CPU_FACTORIES:
                return last
        return None

    def _non_blocking(self, call: cst.Call) -> tuple[str, cst.Arg | None]:
        """("true" | "false" | "absent" | "unknown", the keyword argument when written)."""
        if any(a.star for a in call.args):
            return "unknown", None
        for a in call.args:
            if a.keyword is not None and a.keyword.value == "non_blocking":
                ok, value = literal_value(a.value)
                if not ok:
                    return "unknown", None
                return ("true", a) if value else ("false", a)
        positional = [a for a in call.args if a.keyword is None]
        method = call.func.attr.value  # type: ignore[union-attr]
        extra = positional[1:]  # `.cuda(device, non_blocking)`, `.to(device, dtype, non_blocking)`
        for a in extra:
            ok, value = literal_value(a.value)
            if ok and value is True:
                return "true", None
            qn = self.analysis.qualname(a.value) or ""
            is_dtype = qn.startswith("torch.") and qn.rsplit(".", 1)[-1] in _DTYPE_WORDS
            if method == "to" and (is_dtype or (isinstance(a.value, cst.Name) and "dtype" in a.value.value.lower())):
                continue
            return "unknown", None
        return "absent", None

    def _source_loaders(self, expr: cst.BaseExpression, depth: int = 0) -> list[LoaderInfo]:
        """The loaders whose loop produced ``expr`` (through subscripts, unpacking, names)."""
        while True:  # `batch["image"]`, `batch.items()`, `x.float()` -> the underlying name
            if isinstance(expr, (cst.Subscript, cst.Attribute)):
                expr = expr.value
            elif isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
                expr = expr.func.value
            else:
                break
        if not isinstance(expr, cst.Name) or depth > 4:
            return []
        tracker = loaders(self.analysis)
        out: list[LoaderInfo] = []
        for d in self.analysis.values.reaching_defs(expr):
            if d.how == "for" and d.value is not None:
                direct = tracker.loaders_of(d.value)
                out += direct if direct else self._source_loaders(d.value, depth + 1)  # `for t in batch`
            elif d.how in ("assign", "unpack") and d.value is not None:
                value = d.value
                if d.how == "unpack" and isinstance(value, (cst.Tuple, cst.List)) and d.path and 0 <= d.path[0] < len(value.elements):
                    value = value.elements[d.path[0]].value
                out += self._source_loaders(value, depth + 1)
        return out


# -- TSL302 --------------------------------------------------------------------------------------
class DataLoaderUnpinnedMemory(_Loader):
    """
    ## What it does
    Flags a `DataLoader(...)` whose batches go to an accelerator but which does not pass
    `pin_memory=True` (absent, `False`, or a name bound only to `False`). One finding per
    loader, at the constructor, also when the loop copies its batches with
    `non_blocking=True`: from pageable memory that copy is still synchronous.

    A loader feeds an accelerator when the module uses one (`.cuda()`, `.to("cuda")`,
    `torch.device("cuda" if torch.cuda.is_available() else "cpu")`, HF Accelerate, Lightning)
    and a loop over the loader copies its batches to the device or runs a training step, or
    the loader is handed to `accelerator.prepare`, `fabric.setup_dataloaders` or a Lightning
    `Trainer`. A CPU-only script is never flagged; neither is a configured value
    (`pin_memory=args.pin_mem`, `**loader_kwargs`) or a `TensorDataset` of device tensors.

    ## Why is this bad?
    CUDA can only copy asynchronously from page-locked (pinned) host memory. From ordinary
    pageable memory the driver stages the data through a pinned bounce buffer while the host
    waits, so `non_blocking=True` buys nothing and the copy cannot overlap the host's work.
    With `pin_memory=True` the loader's pin thread writes each batch into pinned memory ahead
    of time. Workers plus pinned memory gave 2.5x on an MNIST toy in a public write-up.

    ## Example
    ```python
    loader = DataLoader(train_set, batch_size=128, shuffle=True, num_workers=8)
    for x, y in loader:
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
    ```

    ## Use instead
    ```python
    loader = DataLoader(train_set, batch_size=128, shuffle=True, num_workers=8, pin_memory=True)
    for x, y in loader:
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
    ```

    ## Fix safety
    Safe: the batches hold the same values; only the memory they live in changes. Pinned
    memory is page-locked RAM (about `prefetch_factor * num_workers` batches at a time), so a
    machine already short of RAM may prefer a smaller `prefetch_factor`.
    """

    code = "TSL302"
    name = "dataloader-unpinned-memory"
    message = "this `DataLoader` feeds the GPU from pageable memory, so every batch copy is synchronous and cannot overlap compute; pass `pin_memory=True` (workers + pinning: 2.5x on MNIST)"
    fix_title = "Pass `pin_memory=True`"
    runtime_observable = True  # verifier: a batch of an unpinned loader copied to the device

    VALID = [
        Valid(pipeline()),
        Valid(pipeline(loader="DataLoader(dataset, batch_size=32, num_workers=4, pin_memory=args.pin_mem)")),
        Valid(pipeline(loader="DataLoader(dataset, **loader_kwargs)")),
        Valid(pipeline(loader="DataLoader(dataset, batch_size=32, num_workers=4)", copy="pass", device='torch.device("cpu")')),  # CPU-only
        Valid(pipeline(loader="DataLoader(TensorDataset(torch.randn(64, 8, device=device), torch.zeros(64, dtype=torch.long, device=device)), batch_size=32)", copy="pass", imports="from torch.utils.data import DataLoader, TensorDataset")),
        Valid(pipeline(loader="DataLoader(dataset, batch_size=32, num_workers=4, pin_memory=PIN)", imports="from torch.utils.data import DataLoader\nPIN = True")),
        # A loader only used for host-side statistics in a GPU script.
        Valid("import torch\nfrom torch.utils.data import DataLoader\nmodel = torch.nn.Linear(4, 2).cuda()\nstats = DataLoader(ds, batch_size=64)\nmean = 0.0\nfor x, _ in stats:\n    mean += x.mean()\n"),
    ]
    INVALID = [
        Invalid(
            pipeline(loader="DataLoader(dataset, batch_size=32, num_workers=4)"),
            line=LOADER_LINE,
            message_contains="non_blocking=True",
            expected_fix=pipeline(loader="DataLoader(dataset, batch_size=32, num_workers=4, pin_memory=True)"),
        ),
        Invalid(
            pipeline(loader="DataLoader(dataset, batch_size=32, num_workers=4, pin_memory=False)"),
            line=LOADER_LINE,
            expected_fix=pipeline(loader="DataLoader(dataset, batch_size=32, num_workers=4, pin_memory=True)"),
        ),
        Invalid(
            pipeline(loader="DataLoader(dataset, 32, True, None, None, 4, None, False)"),
            line=LOADER_LINE,
            expected_fix=pipeline(loader="DataLoader(dataset, 32, True, None, None, 4, None, True)"),
        ),
        Invalid(pipeline(loader="DL(dataset, batch_size=32, num_workers=4)", imports="from torch.utils.data.dataloader import DataLoader as DL"), line=LOADER_LINE),
        Invalid(pipeline(loader="torch.utils.data.dataloader.DataLoader(dataset, num_workers=4, pin_memory=PIN)", imports="PIN = False"), line=LOADER_LINE),
        Invalid(
            "import torch\nfrom accelerate import Accelerator\nfrom torch.utils.data import DataLoader\n\naccelerator = Accelerator()\n"
            "loader = DataLoader(ds, batch_size=64, num_workers=4)\nmodel, loader = accelerator.prepare(model, loader)\n"
            "for batch in loader:\n    accelerator.backward(model(batch).sum())\n",
            line=6,
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        tracker = self.tracker()
        info = tracker.info(node)
        if info is None:
            return
        if not info.pin_memory.known or info.effective("pin_memory") is not False:
            return  # pinned, or configured elsewhere (`args.pin_mem`, `**kwargs`)
        if tracker.dataset_on_device(info):
            return  # device tensors cannot (and need not) be pinned
        if not tracker.feeds_accelerator(info):
            return  # a CPU-only script, or batches that never reach a device
        message = self.message
        if self._non_blocking_copies(tracker, info):
            message += "; its `non_blocking=True` copies are synchronous until the memory is pinned"
        fix = self.make_fix(self.set_argument(info, info.pin_memory, "pin_memory", "True"))
        self.report(node, message, fix=fix)

    def _non_blocking_copies(self, tracker: LoaderTracker, info: LoaderInfo) -> bool:
        finder = _NonBlockingFinder()
        for loop in info.loops:
            loop.body.visit(finder)
        return finder.found


class _NonBlockingFinder(cst.CSTVisitor):
    def __init__(self) -> None:
        self.found = False

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None and node.keyword.value == "non_blocking" and literal_value(node.value) == (True, True):
            self.found = True


# -- TSL303 --------------------------------------------------------------------------------------
WORKERS = "min(8, os.cpu_count() or 1)"
_WITH_OS = "from torch.utils.data import DataLoader\nimport os"  # the fix adds `import os` after the last import


class DataLoaderMainProcessLoading(_Loader):
    """
    ## What it does
    Flags a `DataLoader(...)` that feeds an accelerator with `num_workers=0` or no
    `num_workers` at all (keyword, or the 6th positional argument), including a name bound
    only to `0` and the `torch.utils.data.dataloader.DataLoader` import path. Configured
    values (`num_workers=args.workers`, `**loader_kwargs`, `*args`) are never flagged.

    CPU-only scripts are not flagged: the cost of main-process loading is GPU idle time, and
    on a CPU-only run the training step already uses every core through intra-op threads, so
    workers compete with it rather than overlap with it (TorchFix's TOR401 flagged every
    loader and was disabled by default for being noisy). A `TensorDataset` is not flagged
    either: its batches are tensor slices, for which worker processes add IPC, not speed.

    ## Why is this bad?
    With no workers, the training loop itself reads, decodes, augments and collates every
    batch while the GPU waits; nothing overlaps. Worker processes prepare the next batches in
    parallel with the step. Workers plus pinned memory gave 2.5x on an MNIST toy in a public
    write-up, and workers were the first step of an 8x profile-driven pass on a CIFAR-like
    ResNet-18.

    ## Example
    ```python
    loader = DataLoader(train_set, batch_size=128, shuffle=True, pin_memory=True)
    ```

    ## Use instead
    ```python
    import os

    loader = DataLoader(train_set, batch_size=128, shuffle=True, pin_memory=True,
                        num_workers=min(8, os.cpu_count() or 1), persistent_workers=True)
    ```

    ## Fix safety
    Unsafe. The fix sets `num_workers=min(8, os.cpu_count() or 1)` and adds `import os`:
    enough workers to hide loading behind the step on a typical GPU node, capped at 8
    because more rarely helps one GPU and each worker holds a copy of the dataset object and
    `prefetch_factor` batches in RAM (lower it per process under DDP, where every rank starts
    its own workers). Worker processes change behaviour: the dataset, `collate_fn` and
    `worker_init_fn` must be picklable under the `spawn` start method (macOS, Windows, which
    also need an `if __name__ == "__main__":` guard), each worker has its own RNG state
    (seed NumPy/`random` in `worker_init_fn`), and an `IterableDataset` yields duplicates
    unless it shards by `get_worker_info()`.
    """

    code = "TSL303"
    name = "dataloader-main-process-loading"
    message = "this `DataLoader` loads every batch in the training process while the GPU waits; set `num_workers` (e.g. `{workers}`) to prepare batches in parallel (workers + pinning: 2.5x on MNIST)"
    fix_title = f"Set `num_workers={WORKERS}`"
    runtime_observable = True  # verifier: `DataLoader.__iter__` with num_workers == 0

    VALID = [
        Valid(pipeline(loader="DataLoader(dataset, batch_size=32, num_workers=args.workers, pin_memory=True)")),
        Valid(pipeline(loader="DataLoader(dataset, **loader_kwargs)")),
        Valid(pipeline(loader="DataLoader(dataset, 32, True, None, None, 4, None, True)")),  # positional workers
        Valid(pipeline(loader="DataLoader(*loader_args)")),
        Valid(pipeline(loader="DataLoader(dataset, batch_size=32)", copy="pass", device='"cpu"')),  # CPU-only script
        Valid(pipeline(loader="DataLoader(TensorDataset(xs, ys), batch_size=32, pin_memory=True)", imports="from torch.utils.data import DataLoader, TensorDataset")),
        Valid(pipeline(loader="DataLoader(dataset, num_workers=WORKERS, pin_memory=True)", imports="from torch.utils.data import DataLoader\nWORKERS = 2")),
    ]
    INVALID = [
        Invalid(
            pipeline(loader="DataLoader(dataset, batch_size=32, pin_memory=True)"),
            line=LOADER_LINE,
            message_contains="num_workers",
            expected_fix=pipeline(loader=f"DataLoader(dataset, batch_size=32, pin_memory=True, num_workers={WORKERS})", imports=_WITH_OS),
            applicability=Applicability.UNSAFE,
        ),
        Invalid(
            pipeline(loader="DataLoader(dataset, batch_size=32, num_workers=0, pin_memory=True)"),
            line=LOADER_LINE,
            expected_fix=pipeline(loader=f"DataLoader(dataset, batch_size=32, num_workers={WORKERS}, pin_memory=True)", imports=_WITH_OS),
            applicability=Applicability.UNSAFE,
        ),
        Invalid(pipeline(loader="DataLoader(dataset, 32, True, None, None, 0)"), line=LOADER_LINE),  # positional 0
        Invalid(pipeline(loader="DataLoader(dataset, num_workers=NUM_WORKERS, pin_memory=True)", imports="from torch.utils.data import DataLoader\nNUM_WORKERS = 0"), line=LOADER_LINE + 1),
        Invalid(pipeline(loader="torch.utils.data.dataloader.DataLoader(dataset, pin_memory=True)", imports=""), line=LOADER_LINE),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        tracker = self.tracker()
        info = tracker.info(node)
        if info is None:
            return
        if not info.num_workers.known or info.effective("num_workers") != 0:
            return  # workers set, or configured elsewhere (`args.workers`, `**kwargs`)
        if tracker.dataset_on_device(info) or tracker.dataset_in_memory(info):
            return  # a TensorDataset: workers would only add IPC
        if not tracker.feeds_accelerator(info):
            return  # a CPU-only script: workers compete with the step for the same cores
        fix = self.make_fix(self.set_argument(info, info.num_workers, "num_workers", WORKERS), applicability=Applicability.UNSAFE, imports=("os",))
        self.report(node, fix=fix, workers=f"num_workers={WORKERS}")


# -- TSL304 --------------------------------------------------------------------------------------
_CONVERTERS = frozenset(
    {
        "torchvision.transforms.ToTensor",
        "torchvision.transforms.v2.ToTensor",
        "torchvision.transforms.functional.to_tensor",
        "torchvision.transforms.v2.functional.to_tensor",
    }
)
_DTYPE_CONVERTERS = frozenset(
    {
        "torchvision.transforms.ConvertImageDtype",
        "torchvision.transforms.v2.ConvertImageDtype",
        "torchvision.transforms.v2.ToDtype",
        "torchvision.transforms.functional.convert_image_dtype",
        "torchvision.transforms.v2.functional.to_dtype",
        "torchvision.transforms.v2.functional.convert_image_dtype",
    }
)
_NORMALIZE = frozenset(
    {
        "torchvision.transforms.Normalize",
        "torchvision.transforms.v2.Normalize",
        "torchvision.transforms.functional.normalize",
        "torchvision.transforms.v2.functional.normalize",
    }
)
_WIDE_FLOATS = frozenset({"float32", "float", "float64", "double"})
_MAX_WALK = 6


class HostFloatNormalization(Rule):
    """
    ## What it does
    Flags float conversion and normalisation of images on the host for a loader that feeds
    an accelerator: torchvision `ToTensor()`, `ConvertImageDtype(torch.float)`,
    `v2.ToDtype(torch.float32, scale=True)` (or `Normalize` when it is the only float step) in
    the dataset's transform pipeline; `x.float() / 255`-style normalisation in the
    `__getitem__` of a dataset class whose instance the loader reads; and
    `(x.float() / 255).to(device)` on a batch in a per-step loop.

    ## Why is this bad?
    A float32 image is 4x the bytes of the uint8 image it came from: four times the
    collation work, four times the pinned memory and four times the host-to-device
    bandwidth, and the normalisation arithmetic runs on a few CPU cores instead of the GPU.
    Sending uint8 and normalising on the device was one step of the 8x profile-driven pass
    on a CIFAR-like ResNet-18.

    ## Example
    ```python
    transform = transforms.Compose([transforms.ToTensor(), transforms.Normalize(MEAN, STD)])
    train_set = torchvision.datasets.CIFAR10(root, transform=transform)
    loader = DataLoader(train_set, batch_size=128, num_workers=8, pin_memory=True)
    for x, y in loader:
        x = x.to(device, non_blocking=True)
    ```

    ## Use instead
    ```python
    transform = transforms.PILToTensor()  # uint8, CHW
    train_set = torchvision.datasets.CIFAR10(root, transform=transform)
    loader = DataLoader(train_set, batch_size=128, num_workers=8, pin_memory=True)
    mean = torch.tensor(MEAN, device=device).view(1, 3, 1, 1) * 255
    std = torch.tensor(STD, device=device).view(1, 3, 1, 1) * 255
    for x, y in loader:
        x = (x.to(device, non_blocking=True).float() - mean) / std
    ```

    ## Fix safety
    Only a suggestion (shown as a diff, never applied): `ToTensor()` becomes `PILToTensor()`
    and `x.float() / 255` in `__getitem__` becomes `x`, which changes what the dataset
    returns; the training loop must then normalise on the device after the copy
    (`x.to(device, non_blocking=True).float().div_(255)`, then the mean/std), and other
    consumers of the dataset (visualisation, evaluation) must agree.
    """

    code = "TSL304"
    name = "host-float-normalization"
    message = "`{expr}` turns images into float32 on the host before the copy: 4x the bytes of a uint8 transfer; send uint8 and normalise on the device after `.to(device, non_blocking=True)`"
    fix_title = "Keep uint8 on the host; normalise on the device after the copy"
    runtime_observable = True  # verifier: a float tensor made from uint8 on the host, copied H2D

    VALID = [
        Valid(torchvision_script(first="transforms.PILToTensor()", copy="x = x.to(device, non_blocking=True).float().div_(255)").replace(
            "    transforms.Normalize((0.49, 0.48, 0.45), (0.25, 0.24, 0.26)),\n", "")),
        Valid(torchvision_script(device='torch.device("cpu")')),  # a CPU-only script
        Valid(dataset_script("return self.images[i]")),  # uint8 out, normalised on device
        Valid(dataset_script("return self.images[i] // 2")),  # integer arithmetic, stays uint8
        Valid(dataset_script("return self.images[i].float() / 255", device_line='device = torch.device("cpu")')),
        Valid(dataset_script("return self.images[i]", copy="x = x.to(device, non_blocking=True).float() / 255")),  # on device
        # Transforms for a dataset no GPU loader reads (a preview grid).
        Valid("import torch\nfrom torchvision import transforms, datasets\nmodel = torch.nn.Linear(2, 2).cuda()\n"
              "preview = datasets.CIFAR10('data', transform=transforms.ToTensor())\nimg, _ = preview[0]\n"),
    ]
    INVALID = [
        Invalid(torchvision_script(), line=TRANSFORM_LINE, message_contains="4x the bytes", applicability=Applicability.SUGGESTION,
                expected_fix=torchvision_script(first="transforms.PILToTensor()")),
        Invalid(torchvision_script(first="v2.ToImage(),\n    v2.ToDtype(torch.float32, scale=True)"), line=TRANSFORM_LINE + 1),
        Invalid(torchvision_script(first="transforms.ConvertImageDtype(torch.float)"), line=TRANSFORM_LINE),
        Invalid(dataset_script("return self.images[i].float() / 255"), line=GETITEM_LINE, applicability=Applicability.SUGGESTION,
                expected_fix=dataset_script("return self.images[i]")),
        Invalid(dataset_script("x = self.images[i]\n        return x.float().div(255)"), line=GETITEM_LINE + 1),
        Invalid(dataset_script("return self.images[i]", copy="x = (x.float() / 255).to(device, non_blocking=True)"), line=21),
    ]

    def visit_Module(self, node: cst.Module) -> None:
        tracker = loaders(self.analysis)
        if not tracker.module_feeds_accelerator:
            return
        found: dict[cst.CSTNode, cst.CSTNode | None] = {}  # finding node -> suggestion target
        self._class_calls: dict[cst.CSTNode, list[cst.CSTNode]] = {}  # per class / __getitem__
        done: set[int] = set()
        for info in tracker.loaders:
            if not tracker.feeds_accelerator(info):
                continue
            for call in tracker.dataset_calls(info):
                if id(call) in done:
                    continue
                done.add(id(call))
                self._transforms(call, found)
                self._getitem(call, found)
        for n in found:
            self.report(n, fix=self._suggestion(n), expr=_describe(self, n))

    def visit_Call(self, node: cst.Call) -> None:
        """`(x.float() / 255).to(device)` on a batch in a per-step loop."""
        tracker = loaders(self.analysis)
        if not tracker.is_h2d_call(node):
            return
        receiver = node.func.value  # type: ignore[union-attr]
        candidates = [receiver]
        if isinstance(receiver, cst.Name):
            candidates = [d.value for d in self.analysis.values.reaching_defs(receiver) if d.how == "assign" and d.value is not None]
        for expr in candidates:
            division = next((n for n in _walk(expr) if _is_divide_by_255(n) and tracker.batch_kind(n) is Kind.HOST_TENSOR), None)
            if division is not None:
                hot = self.hot(division)
                if hot is not None:
                    self.report(division, hot=hot, expr=_describe(self, division))
                return

    # -- transform pipelines ------------------------------------------------------------------
    def _transforms(self, dataset_call: cst.Call, found: dict) -> None:
        calls: list[cst.Call] = []
        for a in dataset_call.args:
            calls += self._calls_in(a.value, 0, set())
        cls = self._local_class(dataset_call)
        if cls is not None:
            if cls not in self._class_calls:
                self._class_calls[cls] = [n for n in _walk(cls, into_functions=True) if isinstance(n, cst.Call)]
            calls += self._class_calls[cls]
        converters = [c for c in calls if self._is_float_converter(c)]
        for c in converters:
            found.setdefault(c, None)
        if not converters:
            for c in calls:
                if self.analysis.qualname(c.func) in _NORMALIZE:
                    found.setdefault(c, None)

    def _calls_in(self, expr: cst.BaseExpression, depth: int, seen: set[int]) -> list[cst.Call]:
        """Calls inside an argument expression, following local names (`transform = Compose(...)`)."""
        if depth > _MAX_WALK or id(expr) in seen:
            return []
        seen.add(id(expr))
        out: list[cst.Call] = []
        for n in _walk(expr):
            if isinstance(n, cst.Call):
                out.append(n)
            elif isinstance(n, cst.Name):
                for d in self.analysis.values.reaching_defs(n):
                    if d.how == "assign" and d.value is not None:
                        out += self._calls_in(d.value, depth + 1, seen)
        return out

    def _is_float_converter(self, call: cst.Call) -> bool:
        qn = self.analysis.qualname(call.func)
        if qn in _CONVERTERS:
            return True
        if qn not in _DTYPE_CONVERTERS:
            return False
        dtype_args = [a.value for a in call.args if a.keyword is None or a.keyword.value == "dtype"]
        if qn.endswith("functional.to_dtype") or qn.endswith("functional.convert_image_dtype"):
            dtype_args = dtype_args[1:]  # the first positional is the image
        for value in dtype_args[:1]:
            exprs = [el.value for el in value.elements if isinstance(el, cst.DictElement)] if isinstance(value, cst.Dict) else [value]
            for e in exprs:
                dq = self.analysis.qualname(e) or ""
                if dq.startswith("torch.") and dq.rsplit(".", 1)[-1] in _WIDE_FLOATS:
                    return True
        return False

    # -- Dataset.__getitem__ ----------------------------------------------------------------------
    def _local_class(self, call: cst.Call) -> cst.ClassDef | None:
        if isinstance(call.func, cst.Name) and call.func.value in self.analysis.index.classes:
            return self.analysis.index.classes[call.func.value].node
        return None

    def _getitem(self, dataset_call: cst.Call, found: dict) -> None:
        name = dataset_call.func.value if isinstance(dataset_call.func, cst.Name) else None
        seen = 0
        while name in self.analysis.index.classes and seen < 5:
            info = self.analysis.index.classes[name]
            method = info.methods.get("__getitem__") or info.methods.get("__getitems__")
            if method is not None:
                if method not in self._class_calls:  # reused as a per-method memo
                    self._class_calls[method] = [n for n in _walk(method.body) if _is_divide_by_255(n)]
                for n in self._class_calls[method]:
                    found.setdefault(n, n)
                return
            bases = [b.value for b in info.node.bases if isinstance(b.value, cst.Name)]
            name = bases[0] if bases else None
            seen += 1

    def _suggestion(self, node: cst.CSTNode):
        if isinstance(node, cst.Call) and self.analysis.qualname(node.func) in ("torchvision.transforms.ToTensor", "torchvision.transforms.v2.ToTensor"):
            if isinstance(node.func, cst.Attribute):
                return self.make_fix(self.edit(node.func.attr, "PILToTensor"), applicability=Applicability.SUGGESTION)
            return None
        if _is_divide_by_255(node):
            operand = _divided_operand(node)
            if isinstance(operand, cst.Call) and isinstance(operand.func, cst.Attribute) and operand.func.attr.value in ("float", "double") and not operand.args:
                operand = operand.func.value
            return self.make_fix(self.edit(node, _render(self, operand)), applicability=Applicability.SUGGESTION)
        return None


def _walk(node: cst.CSTNode, into_functions: bool = False):
    """Every node under ``node`` (pre-order); nested functions and lambdas only when asked."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        children = [c for c in n.children if into_functions or not isinstance(c, (cst.FunctionDef, cst.Lambda))]
        stack.extend(reversed(children))


# -- TSL305 --------------------------------------------------------------------------------------
class HostTensorInLoop(Rule):
    """
    ## What it does
    Flags, inside a loop that runs every training step:

    - `torch.tensor(...)`, `torch.as_tensor(...)` and `torch.asarray(...)` of host data
      (Python numbers, lists, NumPy arrays) with an accelerator `device=` argument, or
      followed by `.to(device)`/`.cuda()`;
    - a tensor filled on the CPU and then copied: `torch.zeros(n).to(device)`,
      `torch.randn(b, z).cuda()` (TorchTidy's "Extra CUDA Copy" pattern).

    `torch.full((), v, device=d)`, `torch.zeros(..., device=d)` and other factories that
    fill memory on the device are not flagged, nor is `as_tensor` of a device tensor.

    ## Why is this bad?
    These calls build the tensor in (pageable) CPU memory and then copy it to the device
    with a blocking copy: the host waits for the GPU queue to drain, every step
    (pytorch/pytorch#120996). Constants such as normalisation means, class weights or a
    scalar `1.0` can be built once before the loop; a scalar can be filled directly on the
    device with `torch.full`, and `zeros`/`ones`/`randn`/... take `device=` themselves: a
    fill kernel, no copy, no sync.

    ## Example
    ```python
    for x, y in loader:
        mean = torch.tensor([0.49, 0.48, 0.45], device=device).view(1, 3, 1, 1)
        scale = torch.tensor(0.5, device=device)
        noise = torch.randn(x.shape[0], 128).to(device)
        x = (x.to(device, non_blocking=True).float() / 255 - mean) * scale
    ```

    ## Use instead
    ```python
    mean = torch.tensor([0.49, 0.48, 0.45], device=device).view(1, 3, 1, 1)  # once
    for x, y in loader:
        scale = torch.full((), 0.5, device=device)  # or hoist it too
        noise = torch.randn(x.shape[0], 128, device=device)
        x = (x.to(device, non_blocking=True).float() / 255 - mean) * scale
    ```

    ## Fix safety
    - A literal scalar with a `device=` argument (`torch.tensor(0.5, device=d)`) becomes
      `torch.full((), 0.5, device=d)`: the same value, dtype (inferred from the literal exactly
      as `torch.tensor` does), device and `requires_grad`, without the host round trip. Safe.
    - `torch.zeros/ones/empty/full/arange/linspace/eye(...).to(d)` becomes
      `torch.zeros(..., device=d)`: the same values on the same device. Safe.
    - `torch.rand/randn/randint/randperm/normal(...).to(d)` becomes `torch.randn(..., device=d)`:
      unsafe, because the numbers now come from the device's generator, so a seeded run
      draws different values.
    - Anything else (a list, a NumPy array) needs the tensor hoisted out of the loop by hand.
    """

    code = "TSL305"
    name = "host-tensor-in-loop"
    message = "`{expr}` builds a tensor on the host and copies it to the device with a blocking copy every step; {advice}"
    fix_title = "Create the tensor on the device"
    runtime_observable = True  # verifier: `torch.tensor(host data, device=cuda)` / a blocking H2D copy

    _HOIST = "create it once before the loop, or fill a scalar on the device with `torch.full((), v, device=...)`"

    VALID = [
        Valid(pipeline(copy="scale = torch.full((), 0.5, device=device)\n    x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)")),
        Valid(pipeline(copy="bias = torch.zeros(4, device=device)\n    noise = torch.randn(8, 4, device=device)")),
        Valid(pipeline(copy="ids = torch.tensor([1, 2, 3])\n    x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)")),  # no device
        Valid(pipeline(copy="x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)\n    z = torch.as_tensor(x, device=device)")),  # already there
        Valid(pipeline(copy="cpu_scale = torch.tensor(0.5, device='cpu')\n    cpu_noise = torch.randn(3).to('cpu')")),
        Valid(pipeline(loader="DataLoader(dataset, batch_size=32, num_workers=4, pin_memory=True)\nweights = torch.tensor([1.0, 2.0, 1.0, 1.0], device=device)")),  # hoisted
        Valid(pipeline(copy="half = torch.zeros(4).to(torch.float16)")),  # a dtype cast, stays on the CPU
    ]
    INVALID = [
        Invalid(
            pipeline(copy="scale = torch.tensor(0.5, device=device)"),
            line=COPY_LINE,
            expected_fix=pipeline(copy="scale = torch.full((), 0.5, device=device)"),
            applicability=Applicability.SAFE,
        ),
        Invalid(pipeline(copy="w = torch.as_tensor([1.0, 2.0, 1.0, 1.0], device=device)"), line=COPY_LINE, message_contains="once before the loop"),
        Invalid(pipeline(copy="lengths = [len(s) for s in y]\n    lens = torch.tensor(lengths).to(device)"), line=COPY_LINE + 1),
        Invalid(pipeline(copy="t = torch.tensor(np.arange(4)).cuda()", imports="import numpy as np\nfrom torch.utils.data import DataLoader"), line=COPY_LINE + 1),
        Invalid(pipeline(copy="flag = torch.tensor(True, device='cuda')"), line=COPY_LINE, expected_fix=pipeline(copy="flag = torch.full((), True, device='cuda')")),
        Invalid(pipeline(copy="obs, rewards, dones, infos = env.step(action)\n    done = torch.Tensor(dones).to(device)"), line=COPY_LINE + 1),  # cleanrl
        Invalid(
            pipeline(copy="mask = torch.ones(32, 4).to(device)"),
            line=COPY_LINE,
            message_contains="torch.ones(..., device=...)",
            expected_fix=pipeline(copy="mask = torch.ones(32, 4, device=device)"),
            applicability=Applicability.SAFE,
        ),
        Invalid(
            pipeline(copy="noise = torch.randn(32, 4).cuda()"),
            line=COPY_LINE,
            expected_fix=pipeline(copy='noise = torch.randn(32, 4, device="cuda")'),
            applicability=Applicability.UNSAFE,
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        qn = self.analysis.qualname(node.func) or ""
        if qn in _FRESH_HOST_TENSOR:
            self._from_host_data(node, qn)
        elif qn.startswith("torch.") and qn.count(".") == 1 and qn[6:] in _CPU_FACTORIES:
            self._filled_then_copied(node, qn[6:])

    def _from_host_data(self, node: cst.Call, qn: str) -> None:
        positional = [a for a in node.args if a.keyword is None]
        if not positional or positional[0].star:
            return
        data = positional[0].value
        if not loaders(self.analysis).module_feeds_accelerator:
            return  # `Trainer(accelerator="cpu")`: nothing reaches a GPU
        device = self._keyword(node, "device")
        copy = self._chained_copy(node)
        if device is not None:
            if self.analysis.values.device_of(device.value) != "accelerator":
                return  # built on the CPU, or a device we cannot place
        elif copy is None:
            return  # a CPU tensor: no copy here
        kind = self.analysis.kind(data)
        if kind is Kind.DEVICE:
            return  # already on the device: no host round trip
        if qn != "torch.tensor" and qn not in _LEGACY_CONSTRUCTORS and kind not in (Kind.HOST, Kind.HOST_TENSOR):
            return  # `as_tensor(x)` of something we cannot place may be a no-op
        hot = self.hot(node)
        if hot is None:
            return
        fix = None
        ok, value = literal_value(data)
        if device is not None and ok and isinstance(value, (int, float, bool)) and isinstance(node.func, cst.Attribute):
            new = node.with_changes(
                func=node.func.with_changes(attr=cst.Name("full")),
                args=[cst.Arg(cst.Tuple([]), comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))), *node.args],
            )
            fix = self.make_fix(self.edit(node, _render(self, new)))
        self.report(node, fix=fix, hot=hot, expr=_describe(self, node), advice=self._HOIST)

    def _filled_then_copied(self, node: cst.Call, factory: str) -> None:
        """`torch.zeros(n).to(device)`: filled on the CPU, then a blocking copy."""
        copy = self._chained_copy(node)
        if copy is None or self._keyword(node, "device") is not None:
            return  # no copy, or the factory already names a device
        if not loaders(self.analysis).module_feeds_accelerator:
            return
        hot = self.hot(copy)
        if hot is None:
            return
        advice = f"create it on the device: `torch.{factory}(..., device=...)` fills it there with no copy"
        self.report(copy, fix=self._device_fix(node, copy, factory), hot=hot, expr=_describe(self, copy), advice=advice)

    def _device_fix(self, factory_call: cst.Call, copy: cst.Call, factory: str):
        method = copy.func.attr.value  # type: ignore[union-attr]
        if method == "cuda":
            if copy.args:
                return None  # `.cuda(i)` / `.cuda(non_blocking=...)`: leave it to the user
            device = '"cuda"'
        else:
            if len(copy.args) != 1 or copy.args[0].star:
                return None  # a dtype or `non_blocking` as well: not a plain move
            arg = copy.args[0]
            if arg.keyword is not None and arg.keyword.value != "device":
                return None
            device = _render(self, arg.value)
        if any(a.star for a in factory_call.args):
            return None
        # The factory call's own source text (not a re-render, which would lose the block's
        # indentation on continuation lines) with `device=` spliced in; it replaces the copy.
        rng = self.position(factory_call)
        lines = self.analysis.source.splitlines(keepends=True)[rng.start.line - 1 : rng.end.line]
        insertion = _append_keyword(self, factory_call, "device", device)
        i = insertion.line - rng.start.line
        lines[i] = lines[i][: insertion.column - 1] + insertion.content + lines[i][insertion.column - 1 :]
        shift = len(insertion.content) if insertion.line == rng.end.line else 0
        lines[-1] = lines[-1][: rng.end.column + shift]
        lines[0] = lines[0][rng.start.column :]  # after the end trim: absolute columns
        random = factory in ("rand", "randn", "randint", "randperm", "normal")
        return self.make_fix(self.edit(copy, "".join(lines)), applicability=Applicability.UNSAFE if random else Applicability.SAFE)

    @staticmethod
    def _keyword(node: cst.Call, name: str) -> cst.Arg | None:
        return next((a for a in node.args if a.keyword is not None and a.keyword.value == name), None)

    def _chained_copy(self, node: cst.Call) -> cst.Call | None:
        """The `.to(<accelerator>)` / `.cuda()` call applied directly to ``node``, if any."""
        parent = self.analysis.index.parent(node)
        if not isinstance(parent, cst.Attribute) or parent.attr.value not in ("to", "cuda"):
            return None
        call = self.analysis.index.parent(parent)
        if not isinstance(call, cst.Call) or call.func is not parent:
            return None
        if parent.attr.value == "cuda" or self.analysis.values.to_destination(call) == "accelerator":
            return call
        return None


__all__ = [
    "BlockingHostToDeviceCopy",
    "DataLoaderMainProcessLoading",
    "DataLoaderUnpinnedMemory",
    "HostFloatNormalization",
    "HostTensorInLoop",
]
