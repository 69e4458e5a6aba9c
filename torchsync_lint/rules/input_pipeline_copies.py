"""TSL301: blocking host-to-device copies in the per-step loop (the DataLoader rules TSL302 and
TSL303 are in input_pipeline.py, host tensors and normalisation in input_pipeline_tensors.py).
A `non_blocking=` value is read as a literal, a name bound to one, or a parameter its callers
fix (analysis/fixed_params.py); anything else is configured and never a finding.
"""

from __future__ import annotations

import libcst as cst

from torchsync_lint.analysis.fixed_params import caller_fixed
from torchsync_lint.analysis.index import param_index
from torchsync_lint.analysis.loaders import LoaderInfo, literal_value, loaders
from torchsync_lint.knowledge.torch import COPY_METHODS
from torchsync_lint.rule import Rule
from torchsync_lint.rules._fix_guards import custom_batch, uses_streams, written_in_place
from torchsync_lint.rules._pipeline_cases import COPY_LINE, pipeline
from torchsync_lint.rules._host_built import host_built
from torchsync_lint.rules.input_pipeline import _DTYPE_WORDS, _append_keyword
from torchsync_lint.types import Invalid, Valid


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

    Withheld where it could change results or fail: when the source is written in place after
    the copy, or is a buffer reused across steps and written in the loop (`staging.copy_(x)`
    then `staging.to(device)`: the next write could land before the asynchronous copy has read
    it); and when the receiver is the whole batch of a loader with its own `collate_fn` (a
    user batch class or an older `BatchEncoding` whose `.to()` takes no `non_blocking`); and
    in a module that works with CUDA streams of its own (`torch.cuda.stream(s)`,
    `torch.cuda.Stream()`), where a kernel on another stream could read the copy before it
    lands unless that stream waits for this one.

    A `non_blocking=` value that is a parameter counts when every call in the project fixes
    it to `False` (`def to_device(x, device, non_blocking=False)` that no caller passes `True`
    to, or a constructor default stored as `self.non_blocking` that no construction
    overrides). The message says so and offers no fix: the callers' value is the one to
    change. A caller passing `True` or a value of its own (`args.non_blocking`), a call
    through `**kwargs`, or the function handed around as a value keeps it silent.

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
        Valid(pipeline(copy="nb = step > 0 or False\n    x, y = x.to(device, non_blocking=nb), y.to(device, non_blocking=True)")),  # computed
        Valid(pipeline(copy="model.to(device)\n    x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)")),  # a model, not a batch
        Valid(pipeline(copy="x, y = x.to(device), y.to(device)", device='torch.device("cpu")')),  # a CPU-only script
        Valid(pipeline(copy="x = x.to(torch.float16).cuda(non_blocking=True)\n    y = y.cuda(0, True)")),  # dtype cast; positional non_blocking
        Valid(  # a parameter a caller sets True
            "from torch.utils.data import DataLoader\n\n\ndef to_device(x, non_blocking=False):\n    return x.to('cuda', non_blocking=non_blocking)\n\n\n"
            "for x in DataLoader(ds, num_workers=2, pin_memory=True):\n    model(to_device(x, non_blocking=True)).sum().backward()\n"
        ),
        Valid(pipeline(copy="x, y = x.type_as(torch.zeros(1)), y.to(device, non_blocking=True)\n    x = x.to(device, non_blocking=True)")),  # a host dtype cast
    ]
    INVALID = [
        # `x.type_as(device_tensor)` copies the batch where that tensor is: no `non_blocking` to add
        Invalid(pipeline(copy="w = torch.zeros(1, device=device)\n    x, y = x.type_as(w), y.to(device, non_blocking=True)"), line=COPY_LINE + 1, message_contains="type_as", expected_fix=None),
        Invalid(
            pipeline(copy="x, y = x.to(device), y.to(device)"),
            line=COPY_LINE,
            message_contains="non_blocking=True",
            expected_fix=pipeline(copy="x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)"),
        ),
        Invalid(pipeline(copy="flag = False\n    x, y = x.to(device, non_blocking=flag), y.to(device, non_blocking=True)"), line=COPY_LINE + 1),  # False on every path
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
        Invalid(  # a parameter every caller leaves False
            "from torch.utils.data import DataLoader\n\n\ndef to_device(x, non_blocking=False):\n    return x.to('cuda', non_blocking=non_blocking)\n\n\n"
            "for x in DataLoader(ds, num_workers=2, pin_memory=True):\n    model(to_device(x)).sum().backward()\n",
            line=5,
            message_contains="False from every caller",
            expected_fix=None,
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        if not isinstance(node.func, cst.Attribute) or node.func.attr.value not in COPY_METHODS:
            return  # cheap, before the module's loader analysis is built
        tracker = loaders(self.analysis)
        # A host tensor copied to an accelerator (not a module attribute like `torch.cuda`, a
        # dtype cast, a model or a tensor already on the device).
        if not tracker.is_h2d_call(node):
            return
        if not tracker.module_feeds_accelerator:
            return  # `Trainer(accelerator="cpu")`: the copy never reaches a GPU
        receiver = node.func.value
        if host_built(self.analysis, receiver) is not None:
            # `torch.tensor(v).float().to(device)`, `z = torch.zeros(n) * -1; z.cuda()`: a tensor
            # built on the host in the step is TSL305's finding (one hazard, one finding)
            return
        state, arg = self._non_blocking(node)
        if state in ("true", "unknown"):
            return
        hot = self.hot(node)
        if hot is None:
            return  # a one-off copy outside the per-step path
        sources = self._source_loaders(receiver)
        if sources and all(tracker.dataset_on_device(info) for info in sources):
            return  # `DataLoader(TensorDataset(x.cuda()))` yields device tensors: `.to` is a no-op
        fix = None
        message = self.message
        if state == "callers":
            # `non_blocking=non_blocking` of a helper every caller calls with False: the fix is
            # the callers' (or the default's) to make, not this line's
            message += f"; `{self.snippet(arg.value, 40)}` is False from every caller in the project"
        elif node.func.attr.value == "type_as":
            message += "; `type_as` takes no `non_blocking`: `.to(other.device, other.dtype, non_blocking=True)` does the same copy"
        elif custom_batch(self.analysis, receiver) or written_in_place(self.analysis, node) or uses_streams(self.analysis):
            pass  # a user batch's `.to()` may not take `non_blocking`; a reused buffer or another stream would race
        elif arg is not None:
            fix = self.make_fix(self.edit(arg.value, "True"))
        else:
            fix = self.make_fix(_append_keyword(self, node, "non_blocking", "True"))
        unpinned = [info for info in sources if info.pin_memory.known and info.effective("pin_memory") is False]
        if unpinned:
            line = self.analysis.index.line(unpinned[0].call)
            message += f"; the loader on line {line} does not pin its memory yet (TSL302)"
        self.report(node, message, fix=fix, hot=hot, expr=self.snippet(node))

    def _non_blocking(self, call: cst.Call) -> tuple[str, cst.Arg | None]:
        """("true" | "false" | "absent" | "unknown" | "callers": a parameter its callers leave
        False, the keyword argument when written)."""
        if any(a.star for a in call.args):
            return "unknown", None
        for a in call.args:
            if a.keyword is not None and a.keyword.value == "non_blocking":
                # a literal, or a name every path binds to the same literal (`flag = False`)
                ok, value = loaders(self.analysis).known_value(a.value)
                if not ok:
                    # a parameter (or `self.attr` set from one) every caller leaves False
                    ok, value = caller_fixed(self.analysis, a.value)
                    if not ok:
                        return "unknown", None
                    return ("true", a) if value else ("callers", a)
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
            elif isinstance(expr, cst.Call) and (self.analysis.qualname(expr.func) or "").startswith("torch.") and expr.args and not expr.args[0].star:
                expr = expr.args[0].value  # `F.one_hot(y, 10)`, `torch.stack(batch)`: made of the batch
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
            elif d.how == "param" and self.analysis.values.batch_function(d.func) == param_index(d.func, d.param):
                out += tracker.engine_run_loaders(d.func)  # `def step(engine, batch)` of `Engine(step).run(loader)`
        return out
