"""TSL103-TSL105: a device tensor formatted into text, an explicit synchronisation, and an op
whose output shape depends on the data, inside hot (per-step) loops.

The TSL1xx rules kept out of host_sync.py for size; they ask the same two questions: does this
code run every training step (``self.hot(node)``), and is the value a tensor on an accelerator
(``self.analysis.is_device(expr)``)? A value of unknown origin is never a finding.
"""

from __future__ import annotations

import libcst as cst

from torchsync_lint.analysis import Kind, dotted_parts
from torchsync_lint.analysis.kinds import DEVICE_VALUES
from torchsync_lint.analysis.masks import mask_evidence
from torchsync_lint.knowledge import torch as torch_knowledge
from torchsync_lint.rule import Rule
from torchsync_lint.rules._cases import LOOP_BODY_LINE as L
from torchsync_lint.rules._cases import in_loop
from torchsync_lint.types import Invalid, Valid
from torchsync_lint.pytree import evaluated_literal


class TensorFormatInLoop(Rule):
    """
    ## What it does
    Flags formatting a device tensor in a per-step loop: `print(t)`, `f"{t}"`, `f"{t:.3f}"`,
    `"%s" % t`, `str(t)`, `"{}".format(t)`, and `logging`/`logger` calls with a tensor argument.

    ## Why is this bad?
    Turning a tensor into text reads its values on the host, which waits for every queued
    kernel. It looks like logging; it behaves like `.item()`. An f-string, `%` or `str()` is
    built before any call, whatever the log level; a lazy logging argument
    (`logger.info("loss %s", loss)`) is formatted only when the level is enabled, so it syncs
    when that level is on (the message says so).

    ## Example
    ```python
    for step, (x, y) in enumerate(loader):
        loss = train_step(x, y)
        print(f"step {step}: loss {loss:.4f}")
    ```

    ## Use instead
    ```python
    for step, (x, y) in enumerate(loader):
        loss = train_step(x, y)
        if step % 100 == 0:  # still a sync, but one in a hundred steps
            print(f"step {step}: loss {loss.item():.4f}")
    ```
    """

    code = "TSL103"
    name = "tensor-format-in-loop"
    message = "formatting `{expr}` as text reads a device tensor on the host and waits for the GPU every step"
    lazy_message = "logging `{expr}` formats a device tensor when the record is emitted, reading it on the host and waiting for the GPU every step: it syncs when this level is enabled"

    VALID = [
        Valid(in_loop("print(f'step {step}')")),
        Valid(in_loop("lr = 0.1\nprint('lr', lr)")),
        Valid(in_loop("print(x.shape, logits.dtype)")),
        Valid(in_loop("pass", after="print(f'final loss {loss}')\n")),  # after the loop
        Valid(in_loop("logger.info('step %d', step)")),
        Valid(in_loop("for name, p in model.named_parameters():\n    print(name, p.shape, p.requires_grad)")),
    ]
    INVALID = [
        Invalid(in_loop("print(loss)"), line=L),
        Invalid(in_loop("msg = f'loss {loss:.3f}'"), line=L),
        Invalid(in_loop("log = 'loss %s' % loss"), line=L),
        Invalid(in_loop("logging.info('loss %s', loss)").replace("import torch\n", "import torch\nimport logging\n", 1), line=L + 1, message_contains="syncs when this level is enabled"),
        Invalid(in_loop("logger.debug(f'loss {loss}')"), line=L, message_contains="every step"),  # built before the call, whatever the level
        Invalid(in_loop("text = str(logits)"), line=L),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        parts = dotted_parts(func) or []
        if isinstance(func, cst.Name) and func.value in ("print", "str", "repr", "format"):
            candidates = [a.value for a in node.args if a.keyword is None or a.keyword.value not in ("file", "sep", "end", "flush")]
            if func.value == "format":
                candidates = candidates[:1]
        elif isinstance(func, cst.Attribute) and func.attr.value == "format" and isinstance(func.value, (cst.SimpleString, cst.ConcatenatedString)):
            candidates = [a.value for a in node.args]
            for arg in node.args:
                if arg.star == "**" and self._formats_device_attributes(arg.value):
                    hot = self.hot(node)
                    if hot is not None:
                        self.report(arg.value, expr=self.snippet(arg.value, 40), hot=hot)
            for arg, attr in _formatted_attributes(func.value, node):
                # `"{top1.val:.3f}".format(top1=top1)`: the field reads an attribute of the argument
                if self.analysis.values.attribute_of(arg.value, attr) in DEVICE_VALUES:
                    hot = self.hot(node)
                    if hot is not None:
                        self.report(arg.value, expr=f"{self.snippet(arg.value, 30)}.{attr}", hot=hot)
        elif parts and parts[-1] in _LOG_METHODS and (parts[0] in ("logging", "logger", "log", "LOGGER", "_logger") or (self.analysis.qualname(func) or "").startswith("logging.")):
            # `logger.info("%s", t)`: the record formats `t` only if the level is enabled.
            for arg in node.args[1:]:
                if arg.keyword is None:
                    self._check(arg.value, node, self.lazy_message)
            return
        else:
            return
        for expr in candidates:
            self._check(expr, node)

    def visit_FormattedStringExpression(self, node: cst.FormattedStringExpression) -> None:
        self._check(node.expression, node)

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        # `"%s" % t`, also with a format built from strings: `("%10s" + "%10.4g" * 3) % (...)`
        if isinstance(node.operator, cst.Modulo) and self.analysis.values._is_text(node.left):  # noqa: SLF001
            right = node.right
            parts = [el.value for el in right.elements] if isinstance(right, cst.Tuple) else [right]
            for expr in parts:
                self._check(expr, node)

    def _formats_device_attributes(self, expr: cst.BaseExpression) -> bool:
        """`"{val:.3f}".format(**self.__dict__)`: formats every attribute of the object."""
        parts = dotted_parts(expr)
        if parts != ["self", "__dict__"]:
            return False
        info = self.analysis.index.class_of(expr)
        if info is None:
            return False
        values = self.analysis.values
        return any(values._def(d) in DEVICE_VALUES for defs in info.self_attrs.values() for d in defs)  # noqa: SLF001

    def _check(self, expr: cst.BaseExpression, at: cst.CSTNode, message: str | None = None) -> None:
        if not self.analysis.values.holds_device(expr):  # a tensor, or a container formatting its tensors
            return
        if isinstance(expr, (cst.FormattedString, cst.SimpleString)):
            return
        hot = self.hot(at)
        if hot is not None:
            self.report(expr, message, expr=self.snippet(expr, 40), hot=hot)


def _formatted_attributes(template: cst.BaseExpression, call: cst.Call):
    """(argument, attribute) for every `{name.attr}` / `{0.attr}` field of a literal format."""
    import string

    text = evaluated_literal(template) if isinstance(template, cst.SimpleString) else None
    if not isinstance(text, str):
        return
    positional = [a for a in call.args if a.keyword is None and not a.star]
    keywords = {a.keyword.value: a for a in call.args if a.keyword is not None}
    try:
        fields = [f for _, f, _, _ in string.Formatter().parse(text) if f]
    except ValueError:
        return
    auto = 0
    for field_name in fields:
        head, _, rest = field_name.partition(".")
        attr = rest.split(".")[0].split("[")[0]
        if not attr:
            if head == "" or head.isdigit():
                auto += 1
            continue
        if head.isdigit() or head == "":
            index = int(head) if head else auto
            auto += 1
            arg = positional[index] if index < len(positional) else None
        else:
            arg = keywords.get(head)
        if arg is not None:
            yield arg, attr


_LOG_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "critical", "exception", "log"})


class ExplicitSyncInLoop(Rule):
    """
    ## What it does
    Flags `torch.cuda.synchronize()`, `stream.synchronize()` and `event.synchronize()` (and
    the `torch.accelerator`/`mps`/`xpu` equivalents) inside a per-step loop.

    ## Why is this bad?
    An explicit synchronize blocks the host until the GPU is idle, every step, emptying the
    queue that keeps the GPU busy. `torch.cuda.set_sync_debug_mode` does not report these,
    so they survive profiling-era debugging code unnoticed.

    ## Example
    ```python
    for x, y in loader:
        train_step(x, y)
        torch.cuda.synchronize()
        step_times.append(time.perf_counter() - t0)
    ```

    ## Use instead
    ```python
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for x, y in loader:
        train_step(x, y)
    end.record()
    torch.cuda.synchronize()  # once, after the loop
    print(start.elapsed_time(end) / steps, "ms/step")
    ```
    """

    code = "TSL104"
    name = "explicit-sync-in-loop"
    message = "`{expr}` blocks the host until the GPU is idle on every step; time with CUDA events and synchronize once after the loop"

    VALID = [
        Valid(in_loop("pass", after="torch.cuda.synchronize()\n")),
        Valid(in_loop("stream = torch.cuda.Stream()\nwith torch.cuda.stream(stream):\n    pass")),
        Valid(in_loop("event = torch.cuda.Event()\nevent.record()")),
        Valid(in_loop("barrier.synchronize()")),  # not a CUDA stream or event
    ]
    INVALID = [
        Invalid(in_loop("torch.cuda.synchronize()"), line=L),
        Invalid(in_loop("torch.cuda.current_stream().synchronize()"), line=L),
        Invalid(in_loop("done = torch.cuda.Event()\ndone.record()\ndone.synchronize()"), line=L + 2),
        Invalid(in_loop("sync()").replace("import torch\n", "import torch\nfrom torch.cuda import synchronize as sync\n", 1), line=L + 1),
    ]

    _SYNC_FUNCTIONS = torch_knowledge.SYNC_FUNCTIONS
    _SYNC_OBJECTS = torch_knowledge.SYNC_OBJECTS

    def visit_Call(self, node: cst.Call) -> None:
        qn = self.analysis.qualname(node.func)
        if qn not in self._SYNC_FUNCTIONS and not self._is_object_sync(node.func):
            return
        hot = self.hot(node)
        if hot is not None:
            self.report(node, expr=self.snippet(node, 40), hot=hot)

    def _is_object_sync(self, func: cst.BaseExpression) -> bool:
        if not (isinstance(func, cst.Attribute) and func.attr.value == "synchronize"):
            return False
        return self.analysis.values.origin_qualname(func.value) in self._SYNC_OBJECTS


class DynamicShapeInLoop(Rule):
    """
    ## What it does
    Flags ops whose output shape depends on tensor values (`nonzero`, `x[mask]`, `unique`, ...)
    on device tensors in a per-step loop.

    In full: `nonzero`, boolean-mask indexing `x[mask]` and `x[mask] = v` with a device tensor
    `v`, `masked_select`, `unique`, one-argument `torch.where(cond)`, and `repeat_interleave`
    with tensor repeats and no `output_size`, also under another name every assignment binds
    (`_nms = torchvision.ops.nms`). `x[mask] = 0.0` (a host scalar) is not flagged:
    ATen runs it as `masked_fill_`, with no count to read back (seen on an H200).

    A mask is a bool (or uint8) tensor known from the code: a comparison, `~`/`&`/`|`, a
    bool or uint8 dtype (`dtype=torch.bool`, `.bool()`), and what keeps one (`.to(device)`,
    `.reshape(...)`, `m[0, :]`), through names, `self.mask` set in `__init__`, a helper that
    returns one (in this module or another) and a parameter every caller passes one for.
    Integer indices (`argmax`, `arange`) are a gather of static size, and a comparison of
    values of unknown kind may be a Python bool: neither is flagged. A mask on the host
    indexing a device tensor is reported too: its indices are found on the CPU and copied to
    the device with a blocking copy.

    ## Why is this bad?
    To allocate the output, the host must first learn how many elements there are: the
    kernel counts on the GPU, copies the count back and waits. Every such op is a hidden
    `.item()`; it also breaks `torch.compile` graphs and CUDA graph capture.

    ## Example
    ```python
    for x, y in loader:
        logits = model(x)
        loss = criterion(logits[y != IGNORE], y[y != IGNORE])
    ```

    ## Use instead
    ```python
    for x, y in loader:
        logits = model(x)
        loss = criterion(logits, y, ignore_index=IGNORE)  # or weight by the mask:
        # loss = (per_sample_loss * (y != IGNORE)).sum() / (y != IGNORE).sum().clamp(min=1)
    ```
    `torch.where(mask, x, 0)`, `nonzero_static(size=...)` and
    `repeat_interleave(..., output_size=n)` keep shapes static.
    """

    code = "TSL105"
    name = "dynamic-shape-in-loop"
    message = "`{expr}` has a data-dependent output shape, so the host must read a count from the GPU every step; use masked arithmetic or a static-size variant"
    host_mask_message = "`{expr}` indexes a device tensor with a host mask: the indices are computed on the CPU and copied to the device with a blocking copy every step; use masked arithmetic, or integer indices kept on the device"

    VALID = [
        Valid(in_loop("idx = logits.argmax(1)\npicked = logits[torch.arange(32), idx]")),  # integer indexing
        Valid(in_loop("safe = torch.where(y > 0, logits[:, 0], 0.0)")),  # three-argument where
        Valid(in_loop("rep = logits.repeat_interleave(2, dim=0)")),  # static repeats
        Valid(in_loop("counts = torch.tensor([1, 2])\nrep = logits.repeat_interleave(counts.to(device), dim=0, output_size=3)")),
        Valid(in_loop("pass", after="nz = torch.nonzero(logits)\n")),  # after the loop
        Valid(in_loop("m = torch.zeros(4) > 0\nsel = torch.ones(4)[m]")),  # a CPU tensor
        Valid(in_loop("mask = y != 0\nlogits[mask] = 0.0")),  # a host scalar: masked_fill_, no sync
        Valid(in_loop("logits[~(y > 0)] = -1e4")),
        Valid(in_loop("idx = (y > 0).long()\nsel = logits[idx]")),  # a mask made integer: a gather
    ]
    INVALID = [
        Invalid(in_loop("pos = logits[logits > 0]"), line=L),
        Invalid(in_loop("idx = torch.nonzero(y)"), line=L),
        Invalid(in_loop("mask = y != 0\nlogits[mask] = logits.min()"), line=L + 1),  # a device value: nonzero
        Invalid(in_loop("mask = y != 0\nlogits[mask] += 1.0"), line=L + 1),  # reads logits[mask] first
        Invalid(in_loop("classes = y.unique()"), line=L),
        Invalid(in_loop("rows, = torch.where(y > 0)"), line=L),
        Invalid(in_loop("sel = torch.masked_select(logits, logits > 0)"), line=L),
        Invalid(in_loop("pad = (logits == 0).all(dim=-1)\nsel = logits[~pad]"), line=L + 1),
        Invalid(in_loop("keep = find(logits)").replace("import torch\n", "import torch\nfind = torch.nonzero\n", 1), line=L + 1),
    ]

    _FUNCTIONS = frozenset(
        {"torch.nonzero", "torch.masked_select", "torch.unique", "torch.unique_consecutive", "torch.argwhere",
         "torchvision.ops.nms", "torchvision.ops.batched_nms", "torchvision.ops.boxes.nms", "torchvision.ops.boxes.batched_nms"}
    )
    _METHODS = frozenset({"nonzero", "masked_select", "unique", "unique_consecutive", "argwhere"})

    def __init__(self, context) -> None:
        super().__init__(context)
        self._stored: dict[int, cst.BaseExpression] = {}  # id of an assigned `t[...]` -> the value

    def visit_Call(self, node: cst.Call) -> None:
        qn = self.analysis.qualname(node.func) or self._aliased(node.func)
        positional = [a for a in node.args if a.keyword is None]
        if qn in self._FUNCTIONS:
            subject = positional[0].value if positional else None
        elif qn == "torch.where" and len(node.args) == 1:
            subject = node.args[0].value
        elif qn == "torch.repeat_interleave":
            if any(a.keyword and a.keyword.value == "output_size" for a in node.args) or len(positional) < 2:
                return
            subject = positional[1].value if self.analysis.kind(positional[1].value) is Kind.DEVICE else None
        elif isinstance(node.func, cst.Attribute) and qn is None:
            method = node.func.attr.value
            if method in self._METHODS:
                subject = node.func.value
            elif method == "repeat_interleave" and positional and not any(a.keyword and a.keyword.value == "output_size" for a in node.args):
                subject = positional[0].value if self.analysis.kind(positional[0].value) is Kind.DEVICE else None
            else:
                return
        else:
            return
        if subject is None or not self.analysis.is_device(subject):
            return
        hot = self.hot(node)
        if hot is not None:
            self.report(node, expr=self.snippet(node, 40), hot=hot)

    def _aliased(self, func: cst.BaseExpression) -> str | None:
        """`_nms = torchvision.ops.nms` (once, at import) then `_nms(boxes, scores, t)`: the
        library function every assignment of the name binds."""
        if not isinstance(func, cst.Name):
            return None
        defs = self.analysis.values.reaching_defs(func)
        names = {self.analysis.qualname(d.value) if d.how == "assign" and d.value is not None else None for d in defs}
        return names.pop() if len(names) == 1 and defs else None

    def visit_Assign(self, node: cst.Assign) -> None:
        # Only remembered here: the value's kind is asked of a masked store alone (asking it of
        # every assignment would run the value analysis over the whole module).
        for target in node.targets:
            if isinstance(target.target, cst.Subscript):
                self._stored[id(target.target)] = node.value

    def visit_Subscript(self, node: cst.Subscript) -> None:
        if not self.analysis.is_device(node.value):
            return
        for element in node.slice:
            index = element.slice
            where = self._mask_index(index.value) if isinstance(index, cst.Index) else None
            if where is not None:
                stored = self._stored.get(id(node))
                if stored is not None and not self.analysis.is_device(stored):
                    # `t[mask] = 0.0`: one bool mask and a one-element host value run as
                    # masked_fill_, with no nonzero and no sync (seen on an H200,
                    # docs/verification). A device value takes the nonzero path; a value of
                    # unknown kind stays silent.
                    return
                hot = self.hot(node)
                if hot is not None:
                    # A host mask on a device tensor: the indices are found on the CPU and copied
                    # to the device with a blocking copy (ATen's index of a CUDA tensor).
                    message = self.host_mask_message if where is Kind.HOST_TENSOR else None
                    self.report(node, message, expr=self.snippet(node, 40), hot=hot)
                return

    def _mask_index(self, expr: cst.BaseExpression) -> Kind | None:
        """Where a mask index lives (DEVICE or HOST_TENSOR), None when ``expr`` is no mask
        or not known to be a tensor: a comparison of values of unknown kind may be a Python
        bool (`x[True]` adds a dimension, no count is read)."""
        where = self.analysis.kind(expr)
        if where not in (Kind.DEVICE, Kind.HOST_TENSOR):
            return None
        return where if mask_evidence(self.analysis).dtype(expr) is not None else None
