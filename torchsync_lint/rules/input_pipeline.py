"""TSL3xx: input-pipeline stalls. This module: the DataLoader rules (TSL302, TSL303) and the
helpers the family shares; `input_pipeline_copies.py` has blocking copies (TSL301),
`input_pipeline_tensors.py` host normalisation (TSL304) and host tensors built every step
(TSL305).

The seed measurements: DataLoader workers plus pinned memory gave 2.5x on an MNIST toy, and a
profile-driven pass on a CIFAR-like ResNet-18 (workers, pinning, uint8 transfer normalised on
the GPU, batch size, AMP, compile) gave 8x. Loader facts (arguments, the loops that iterate a
loader, whether it feeds an accelerator) come from ``analysis/loaders.py``; a value the user
configures (``num_workers=args.workers``, ``**loader_kwargs``) is never a finding.
"""

from __future__ import annotations

import libcst as cst

from torchsync_lint.analysis.loaders import ArgValue, LoaderInfo, LoaderTracker, literal_value, loaders
from torchsync_lint.rule import Rule
from torchsync_lint.rules._fix_guards import serves_device_tensors, shadowed, yields_per_worker
from torchsync_lint.rules._pin_value import pin_value
from torchsync_lint.rules._pipeline_cases import _GPU_STRING, _ON_CUDA, DEVICE_DATASET, LOADER_LINE, pipeline
from torchsync_lint.types import Applicability, Edit, Invalid, Valid

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


_DTYPE_WORDS = frozenset({"float32", "float16", "bfloat16", "float64", "int64", "int32", "long", "float", "half", "double", "uint8", "bool", "int8", "int16"})


class _Loader(Rule):
    """Shared helpers for the constructor rules (no ``code``: not registered)."""

    def tracker(self) -> LoaderTracker:
        return loaders(self.analysis)

    def set_argument(self, info: LoaderInfo, arg: ArgValue, keyword: str, value: str):
        """An edit that sets ``keyword`` to ``value`` on the constructor (replace or append);
        None when the call that builds the loader cannot take it (a `Trainer` given no
        `TrainingArguments`)."""
        if arg.arg is not None:
            return self.edit(arg.arg.value, value)
        if not info.settable:
            return None
        return _append_keyword(self, info.call, info.keywords.get(keyword, keyword), value)

    def about(self, info: LoaderInfo, message: str) -> str:
        """The message for a loader a library builds from settings written here (HF Trainer):
        it names the library's keywords."""
        if info.owner is None:
            return message
        message = message.replace("this `DataLoader`", f"the `DataLoader` that {info.owner} builds from these arguments")
        for torch_name, keyword in info.keywords.items():
            message = message.replace(f"`{torch_name}", f"`{keyword}")
        if not info.settable:
            message += "; pass it `TrainingArguments(...)` that set them"
        return message


# -- TSL302 --------------------------------------------------------------------------------------
class DataLoaderUnpinnedMemory(_Loader):
    """
    ## What it does
    Flags a `DataLoader` that feeds an accelerator without `pin_memory=True`.

    That is, `pin_memory` absent, `False`, or a name bound only to `False`. One finding per
    loader, at the constructor, also when the loop copies its batches with
    `non_blocking=True`: from pageable memory that copy is still synchronous.

    A loader feeds an accelerator when the module uses one (`.cuda()`, `.to("cuda")`,
    `torch.device("cuda" if torch.cuda.is_available() else "cpu")`, HF Accelerate, Lightning)
    and a loop over the loader copies its batches to the device or runs a training step, or
    the loader is handed to `accelerator.prepare`, `fabric.setup_dataloaders`, a Lightning
    `Trainer`, or run by a pytorch-ignite engine that moves its batches to the device
    (`create_supervised_trainer(..., device="cuda")`, or `Engine(update)` whose `update`
    copies them) with `trainer.run(loader)`. A CPU-only script is never flagged; neither is a
    configured value (`pin_memory=args.pin_mem`, `**loader_kwargs`) or a `TensorDataset` of
    device tensors.

    HF `Trainer` builds its loaders from `TrainingArguments`: `dataloader_pin_memory` defaults
    to `True` there (transformers 5.23), so only `dataloader_pin_memory=False` is flagged, at
    the `TrainingArguments(...)` call (arguments parsed by `HfArgumentParser`, passed in, or
    built from `**cfg` of unknown contents are configured and never flagged).

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
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    loader = DataLoader(train_set, batch_size=128, shuffle=True, num_workers=8,
                        pin_memory=device.type == "cuda")
    for x, y in loader:
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
    ```
    Pin only when the batches go to a CUDA device: on a machine without one, torch warns that
    it cannot pin and pins nothing.

    ## Fix safety
    Safe: the batches hold the same values; only the memory they live in changes. The fix
    passes `pin_memory=device.type == "cuda"` when the loop copies the batches to a variable
    bound to a `torch.device(...)` before the loader, else `pin_memory=torch.cuda.is_available()`
    (importing `torch` if needed), so a CPU run neither pins nor warns. Pinned
    memory is page-locked RAM (about `prefetch_factor * num_workers` batches at a time), so a
    machine already short of RAM may prefer a smaller `prefetch_factor`. A loader over a
    dataset of device tensors (a `TensorDataset` of them, or a dataset class of this module
    whose `__getitem__` returns them) is not flagged: pinning a device tensor raises.
    """

    code = "TSL302"
    name = "dataloader-unpinned-memory"
    message = "this `DataLoader` feeds the GPU from pageable memory, so every batch copy is synchronous and cannot overlap compute; pass `pin_memory=True` (workers + pinning: 2.5x on MNIST)"
    fix_title = "Pin the batches when they go to CUDA (`pin_memory=device.type == \"cuda\"`)"
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
        Valid(DEVICE_DATASET),  # `__getitem__` returns device tensors: pinning them raises
    ]
    INVALID = [
        Invalid(
            pipeline(loader="DataLoader(dataset, batch_size=32, num_workers=4)"),
            line=LOADER_LINE,
            message_contains="non_blocking=True",
            expected_fix=pipeline(loader=f"DataLoader(dataset, batch_size=32, num_workers=4, pin_memory={_ON_CUDA})"),
        ),
        Invalid(
            pipeline(loader="DataLoader(dataset, batch_size=32, num_workers=4, pin_memory=False)"),
            line=LOADER_LINE,
            expected_fix=pipeline(loader=f"DataLoader(dataset, batch_size=32, num_workers=4, pin_memory={_ON_CUDA})"),
        ),
        Invalid(
            pipeline(loader="DataLoader(dataset, 32, True, None, None, 4, None, False)"),
            line=LOADER_LINE,
            expected_fix=pipeline(loader=f"DataLoader(dataset, 32, True, None, None, 4, None, {_ON_CUDA})"),
        ),
        Invalid(  # a string device has no `.type`: ask torch
            pipeline(loader="DataLoader(dataset, num_workers=4)", device=_GPU_STRING),
            line=LOADER_LINE,
            expected_fix=pipeline(loader="DataLoader(dataset, num_workers=4, pin_memory=torch.cuda.is_available())", device=_GPU_STRING),
        ),
        Invalid(  # no `import torch` yet: the fix adds it
            "from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=2)\nfor x in loader:\n    model(x.cuda()).sum().backward()\n",
            line=2,
            expected_fix="from torch.utils.data import DataLoader\nimport torch\nloader = DataLoader(ds, num_workers=2, pin_memory=torch.cuda.is_available())\nfor x in loader:\n    model(x.cuda()).sum().backward()\n",
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
        if tracker.dataset_on_device(info) or serves_device_tensors(self.analysis, info):
            return  # device tensors cannot (and need not) be pinned
        if not tracker.feeds_accelerator(info):
            return  # a CPU-only script, or batches that never reach a device
        message = self.message
        if self._non_blocking_copies(info):
            message += "; its `non_blocking=True` copies are synchronous until the memory is pinned"
        value, imports = pin_value(self, tracker, info)
        edit = self.set_argument(info, info.pin_memory, "pin_memory", value)
        fix = self.make_fix(edit, imports=imports) if edit is not None else None
        self.report(node, self.about(info, message), fix=fix)

    def _non_blocking_copies(self, info: LoaderInfo) -> bool:
        """Does a loop over the loader pass `non_blocking=True` anywhere in its body?"""
        tree = self.analysis.tree
        return any(
            isinstance(node, cst.Arg) and node.keyword is not None and node.keyword.value == "non_blocking" and literal_value(node.value) == (True, True)
            for loop in info.loops
            for node in tree.walk_subtree(loop.body)
        )


# -- TSL303 --------------------------------------------------------------------------------------
WORKERS = "min(8, os.cpu_count() or 1)"
_WITH_OS = "from torch.utils.data import DataLoader\nimport os"  # the fix adds `import os` after the last import


class DataLoaderMainProcessLoading(_Loader):
    """
    ## What it does
    Flags a `DataLoader` that feeds an accelerator and loads its batches in the training
    process (`num_workers=0` or unset).

    `num_workers` may be a keyword or the 6th positional argument, including a name bound
    only to `0` and the `torch.utils.data.dataloader.DataLoader` import path. Configured
    values (`num_workers=args.workers`, `**loader_kwargs`, `*args`) are never flagged.
    Loaders run by a pytorch-ignite engine (`trainer.run(loader)`) count as TSL302 says.

    HF `Trainer` builds its loaders from `TrainingArguments`, whose `dataloader_num_workers`
    defaults to 0 (transformers 5.23): a `Trainer` given a dataset and arguments that leave it
    unset (or 0) is flagged at the `TrainingArguments(...)` call (at the `Trainer(...)` call
    when it is given none), and the fix sets `dataloader_num_workers`. Arguments parsed by
    `HfArgumentParser`, passed in, built by a project subclass, from `**cfg` of unknown
    contents or changed later (`args.dataloader_num_workers = n`) are configured: never
    flagged; `use_cpu=True` is a CPU run.

    CPU-only scripts are not flagged: the cost of main-process loading is GPU idle time, and
    on a CPU-only run the training step already uses every core through intra-op threads, so
    workers compete with it rather than overlap with it (TorchFix's TOR401 flagged every
    loader and was disabled by default for being noisy). A `TensorDataset` is not flagged
    either: its batches are tensor slices, for which worker processes add IPC, not speed; nor
    is a dataset class of this module whose `__getitem__` (its own or a base's) calls nothing
    (`return {"prompt": self.prompt, "index": index}`): its items are already in memory.

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
    (seed NumPy/`random` in `worker_init_fn`), and each worker iterates its own copy of an
    `IterableDataset`, so one that does not shard yields every sample once per worker.

    No fix is offered when the dataset is, or may be, such an `IterableDataset`: a class of
    this module deriving from `torch.utils.data.IterableDataset` (directly or through local
    bases; or with `__iter__`, no `__getitem__` and a base the rule cannot see), or
    `ChainDataset`, unless its methods or the loader's `worker_init_fn` consult
    `torch.utils.data.get_worker_info()`; when the loader's dataset cannot be traced to its
    constructor, any such class in the module counts. The message says so: shard the dataset
    first. Nor is one offered where `os` means something else (`import numpy as os`, a
    local `os`). A dataset class of this module whose `__getitem__` returns device tensors is
    not flagged at all: worker processes cannot use CUDA tensors.
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
        Valid(DEVICE_DATASET),  # device tensors: a worker process cannot use them
        Valid(  # HF Trainer arguments from the command line: configured
            "from transformers import HfArgumentParser, Trainer, TrainingArguments\n\n"
            "(args,) = HfArgumentParser(TrainingArguments).parse_args_into_dataclasses()\nTrainer(model=model, args=args, train_dataset=ds).train()\n"
        ),
    ]
    INVALID = [
        Invalid(  # HF Trainer: `dataloader_num_workers` defaults to 0
            "from transformers import Trainer, TrainingArguments\n\nargs = TrainingArguments(output_dir='out')\nTrainer(model=model, args=args, train_dataset=ds).train()\n",
            line=3,
            message_contains="dataloader_num_workers",
            expected_fix="from transformers import Trainer, TrainingArguments\nimport os\n\n"
            "args = TrainingArguments(output_dir='out', dataloader_num_workers=min(8, os.cpu_count() or 1))\nTrainer(model=model, args=args, train_dataset=ds).train()\n",
            applicability=Applicability.UNSAFE,
        ),
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
        if serves_device_tensors(self.analysis, info):
            return  # a dataset of device tensors: a worker process cannot read them
        if not tracker.feeds_accelerator(info):
            return  # a CPU-only script: workers compete with the step for the same cores
        message = self.message
        iterable = yields_per_worker(self.analysis, info)
        fix = None
        if iterable is not None:
            message += f"; `{iterable}` is an `IterableDataset` that does not shard by `torch.utils.data.get_worker_info()`: every worker would yield every sample, so shard it first"
        elif not shadowed(self.analysis, node, "os"):
            edit = self.set_argument(info, info.num_workers, "num_workers", WORKERS)
            fix = self.make_fix(edit, applicability=Applicability.UNSAFE, imports=("os",)) if edit is not None else None
        keyword = info.keywords.get("num_workers", "num_workers")
        self.report(node, self.about(info, message), fix=fix, workers=f"{keyword}={WORKERS}")


# -- TSL304 --------------------------------------------------------------------------------------
