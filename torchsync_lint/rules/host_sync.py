"""TSL1xx: host reads and explicit syncs inside hot (per-step) loops.

Every rule here asks the shared analysis two questions: does this code run every training
step (``self.hot(node)``), and is the value a tensor on an accelerator
(``self.analysis.is_device(expr)``)? A value of unknown origin is never a finding.
"""

from __future__ import annotations

import libcst as cst

from torchsync_lint.analysis import Kind, dotted_parts
from torchsync_lint.analysis.metrics import metric_tracker
from torchsync_lint.knowledge import registry
from torchsync_lint.knowledge import torch as torch_knowledge
from torchsync_lint.rule import Rule
from torchsync_lint.rules import _accumulate
from torchsync_lint.rules._cases import TRAIN_PRELUDE
from torchsync_lint.rules._cases import LOOP_BODY_LINE as L
from torchsync_lint.rules._cases import in_loop
from torchsync_lint.types import Applicability, Invalid, Valid

HOST_READ_METHODS = frozenset({"item", "tolist", "cpu", "numpy"})
HOST_CONVERSIONS = frozenset({"float", "int", "bool", "complex"})
# Functions that convert their argument with `float()` first: a read of a device tensor.
IMPLICIT_FLOAT_FUNCTIONS = frozenset(
    f"math.{name}" for name in "isnan isinf isfinite exp log log2 log10 sqrt floor ceil fabs pow expm1 log1p trunc".split()
)


def _accumulating(init: str, body: str, after: str) -> str:
    """A training loop with ``init`` just before it, ``body`` at its end and ``after`` it."""
    return in_loop(body, after=after).replace("for step, (x, y)", f"{init}\nfor step, (x, y)", 1)


class HostReadInLoop(Rule):
    """
    ## What it does
    Flags `.item()`, `.tolist()`, `.cpu()`, `.numpy()`, `.to("cpu")` and `float()`/`int()`/`bool()`
    of a device tensor inside a loop that runs every training step.

    ## Why is this bad?
    CUDA runs asynchronously: the host queues kernels and moves on. Reading a value back
    (`loss.item()`) makes the host wait until every queued kernel has finished and the copy is
    done, so the GPU drains its queue and idles while Python prepares the next step. One
    `.item()` per step is the most common reason a GPU sits under-utilised. Reads behind
    `if step % N == 0:` still sync on those steps; the message says when a read is gated.

    ## Example
    ```python
    for x, y in loader:
        loss = criterion(model(x.to(device)), y.to(device))
        loss.backward()
        optimizer.step()
        running_loss += loss.item()
    ```

    ## Use instead
    ```python
    running_loss = torch.zeros((), device=device)
    for x, y in loader:
        loss = criterion(model(x.to(device)), y.to(device))
        loss.backward()
        optimizer.step()
        running_loss += loss.detach()
    print(running_loss.item())  # one sync, after the loop
    ```

    ## Fix safety
    Unsafe (applied with `--unsafe-fixes`), and offered only for the accumulate pattern:
    ```python
    total = 0.0                          total = 0.0
    for x, y in loader:                  for x, y in loader:
        total += loss.item()      ->         total += loss.detach().double()
    print(total / n)                     print(float(total) / n)
    ```
    With an integer literal (`correct = 0`) and an added value that provably has an integer
    or bool dtype (`(pred == y).sum()`, `argmax`, `.long()`...), the loop adds
    `.detach().long()` and the reads become `int(correct)`.

    The value and type at every read are the same as before. `0.0 + t.double()` is a 0-dim
    float64 tensor, and float64 additions round exactly like Python's float additions of the
    same operands (`.item()` of a float32/16 tensor widens exactly, like `.double()` does), so
    `float(total)` is bit-identical to the old Python float; with zero iterations `total` is
    still the literal and `float(0.0)` is `0.0`. On the integer path `int64` sums equal
    Python's `int` sums below 2**63, and `int(0)` is `0`. `.detach()` keeps the autograd
    graph from growing across steps.

    Offered only when all of these hold; otherwise there is no fix:
    - the read is `name += <device tensor>.item()`, the whole right-hand side;
    - its innermost loop is the per-step loop (not a nested function, not the `else:` clause);
    - `name = <numeric literal>` is a plain statement of the loop's own block, before it;
    - inside the loop, `name` appears only as the target of such `+=` statements (none
      suppressed with `# noqa`), and an integer literal needs integer-typed values;
    - every other use of `name` in the scope is a read after the loop that does not itself
      run per step and is not in a self-documenting f-string (`f"{name=}"`);
    - `name` has no other binding, no `global`/`nonlocal`/`del`, no use in a nested
      function or class, and `float`/`int` are not shadowed;
    - for a float total, the module does not name the Apple MPS device (`"mps"`,
      `torch.backends.mps`): MPS has no float64, so `.double()` raises there.

    What can still differ: a complex tensor (`.double()` drops the imaginary part where
    `.item()` returned a complex), a multi-element tensor (`.item()` raised, the device sum
    does not), an MPS device chosen outside the module, another module importing the
    module-level name, and code that reads `name` through `globals()` or a debugger.

    ## Known problems
    A read the program genuinely needs every step (early stopping on a loss value, say) is
    still a sync; suppress it with `# noqa: TSL101` once you have decided it is worth it.
    """

    code = "TSL101"
    name = "host-read-in-loop"
    message = "`{expr}` copies a device tensor to the host and waits for the GPU in a per-step loop; keep the value on the device and read it once after the loop"
    fix_title = _accumulate.TITLE

    VALID = [
        Valid(in_loop("arr = np.zeros(3)\ntotal += arr.item()").replace("import torch\n", "import torch\nimport numpy as np\n", 1)),
        Valid(in_loop("losses.append(loss.detach())", after="print(torch.stack(losses).mean().item())\n")),
        Valid(in_loop("n = len(y)\nbatch = x.shape[0]\nlr = float(optimizer.param_groups[0]['lr'])")),
        Valid(in_loop("t = torch.zeros(3)\nv = t.item()")),  # a CPU tensor: no device round trip
        Valid("import torch\nfor x, y in loader:\n    total += x.item()\n"),  # batches stay on the CPU
        Valid("import torch\nmodel = torch.nn.Linear(2, 2)\nfor epoch in range(3):\n    train_one_epoch()\n    print(model.weight.sum().item())\n"),
        Valid(in_loop("avg.update(1.0)\nv = float(avg.compute())").replace("import torch\n", "import torch\nfrom torchmetrics import MeanMetric\navg = MeanMetric()\n", 1)),  # a CPU metric
        Valid(in_loop("n = sum(p.numel() for p in model.parameters())\nfor name, p in model.named_parameters():\n    sizes = p.size()")),
        Valid(TRAIN_PRELUDE.replace("for step,", "print(sum(p.norm().item() for p in model.parameters()))\nfor step,", 1)),  # once, before the loop
        Valid(in_loop("total += loss.item()").replace('torch.device("cuda" if torch.cuda.is_available() else "cpu")', '"cpu"')),  # the user chose the CPU
        Valid(  # a module that never mentions an accelerator: its model and parameters are on the CPU
            "import torch\nmodel = torch.nn.Linear(8, 4)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
            "for x, y in loader:\n    model(x).sum().backward()\n    for p in model.parameters():\n"
            "        v = p.grad.norm().item()\n    opt.step()\n"
        ),
    ]
    INVALID = [
        Invalid(in_loop("total += loss.item()"), line=L, message_contains="loss.item()"),
        # per-parameter grad-norm logging: one sync per parameter tensor, every step
        Invalid(in_loop("sq = 0.0\nfor p in model.parameters():\n    sq += p.grad.norm().item() ** 2"), line=L + 2),
        Invalid(in_loop("for name, p in model.named_parameters():\n    stats[name] = p.data.abs().mean().item()"), line=L + 1),
        Invalid(in_loop("preds = logits.argmax(1).cpu().numpy()"), line=L, message_contains=".cpu()"),
        Invalid(in_loop("acc = float((logits.argmax(1) == y).float().mean())"), line=L),
        Invalid(in_loop("if step % 100 == 0:\n    print(loss.item())"), line=L + 1, message_contains="gated"),
        Invalid(in_loop("hist = logits.tolist()"), line=L),
        Invalid(
            "import torch\n\ndef train_step(model, x, y, opt):\n    loss = model(x).sum()\n    loss.backward()\n"
            "    opt.step()\n    return loss.item()\n\ndef main(model, loader, opt, device):\n"
            "    for x, y in loader:\n        train_step(model, x.to(device), y, opt)\n",
            line=7,
        ),
        Invalid(
            _accumulating("running = 0.0", "running += loss.item()", "print(f'mean loss {running / (step + 1):.4f}')\n"),
            line=L + 1,
            expected_fix=_accumulating("running = 0.0", "running += loss.detach().double()", "print(f'mean loss {float(running) / (step + 1):.4f}')\n"),
            applicability=Applicability.UNSAFE,
        ),
        Invalid(
            _accumulating("correct = 0", "correct += (logits.argmax(1) == y).sum().item()  # count hits", "accuracy = correct / 320\nreport(correct)\n"),
            line=L + 1,
            expected_fix=_accumulating(
                "correct = 0", "correct += (logits.argmax(1) == y).sum().detach().long()  # count hits", "accuracy = int(correct) / 320\nreport(int(correct))\n"
            ),
            applicability=Applicability.UNSAFE,
        ),
        Invalid(  # two accumulations of one total share one fix
            _accumulating("total = 0.0\nseen = 0", "total += loss.item()\nseen += 1\nif step % 2:\n    total += loss.item()", "print(total / seen)\n"),
            line=L + 2,
            expected_fix=_accumulating(
                "total = 0.0\nseen = 0", "total += loss.detach().double()\nseen += 1\nif step % 2:\n    total += loss.detach().double()", "print(float(total) / seen)\n"
            ),
            applicability=Applicability.UNSAFE,
        ),
        Invalid(in_loop("avg.update(loss)\nv = float(avg.compute())").replace("import torch\n", "import torch\nfrom torchmetrics import MeanMetric\navg = MeanMetric().to(device)\n", 1), line=L + 3),
        Invalid(  # the device metric reaches the read as a parameter
            in_loop("avg.update(loss)\nv = current(avg)").replace(
                "import torch\n", "import torch\nfrom torchmetrics import MeanMetric\n\ndef current(metric):\n    return float(metric.compute())\n\navg = MeanMetric().to(device)\n", 1
            ),
            line=5,
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and self.analysis.qualname(func) is None:
            method = func.attr.value
            receiver = func.value
            if self._library_reads_device_arguments(node, func):
                on_device = True  # `metric.add_batch(predictions=preds)` (HF evaluate)
            elif method in HOST_READ_METHODS and not node.args:
                # `.item()`/`.tolist()`/`.numpy()` exist on tensors only, so a moved object of
                # unknown type read this way is a tensor; `.cpu()` is also a module method.
                on_device = self._on_device(receiver, moved_is_tensor=method != "cpu")
            elif method == "to" and self.analysis.values.to_destination(node) == "cpu":
                on_device = self._on_device(receiver, moved_is_tensor=False)
            else:
                return
        elif isinstance(func, cst.Name) and func.value in HOST_CONVERSIONS and len(node.args) == 1:
            if self.analysis.index.binds_locally(func.value, func):
                return  # a local function shadows the builtin
            on_device = self._on_device(node.args[0].value)
        elif (self.analysis.qualname(func) or "") in IMPLICIT_FLOAT_FUNCTIONS and node.args:
            on_device = self._on_device(node.args[0].value)  # `math.isnan(t)` calls `float(t)`
        else:
            return
        if not on_device:
            return  # not provably a device tensor
        hot = self.hot(node)
        if hot is None:
            return  # a single read outside the per-step path is fine
        self.report(node, expr=self.snippet(node, 40), hot=hot, fix=_accumulate.accumulate_fix(self, node))

    def visit_Assign(self, node: cst.Assign) -> None:
        # `cpu_losses[k] = loss`: storing a device value into a CPU tensor copies it back.
        for target in node.targets:
            store = target.target
            if isinstance(store, cst.Subscript) and self._is_cpu_buffer(store.value) and self._on_device(node.value):
                hot = self.hot(node)
                if hot is not None:
                    self.report(node, self.STORE_MESSAGE, expr=self.snippet(node, 40), hot=hot)

    STORE_MESSAGE = "`{expr}` stores a device tensor into a CPU tensor: a copy to the host that waits for the GPU in a per-step loop; keep the buffer on the device and copy it once after the loop"

    def _library_reads_device_arguments(self, node: cst.Call, func: cst.Attribute) -> bool:
        """A library method that converts the tensors it is given to host values at once
        (`metric.add_batch(...)`), or reads its own device state (`scaler.get_scale()`)."""
        origin = self.analysis.values.origin_qualname(func.value)
        if origin is None:
            return False
        if registry.reads_itself_on_host(origin, func.attr.value):
            return self.analysis.values.uses_accelerator and self._enabled(func.value)
        if not registry.reads_arguments_on_host(origin, func.attr.value):
            return False
        return any(self._on_device(a.value) for a in node.args if not a.star)

    def _enabled(self, obj: cst.BaseExpression) -> bool:
        """Built without `enabled=<not literally True>` (a disabled scaler reads nothing)."""
        defs = self.analysis.values.reaching_defs(obj) if isinstance(obj, cst.Name) else []
        for d in defs:
            if d.how == "assign" and isinstance(d.value, cst.Call):
                for a in d.value.args:
                    if a.keyword is not None and a.keyword.value == "enabled" and not (isinstance(a.value, cst.Name) and a.value.value == "True"):
                        return False  # disabled, or configured: never flag a user's setting
        return bool(defs)

    def _is_cpu_buffer(self, expr: cst.BaseExpression) -> bool:
        """A tensor made on the CPU by a torch factory (`torch.zeros(n)`), not a container
        that may hold tensors (a batch dict)."""
        if self.analysis.kind(expr) is not Kind.HOST_TENSOR or not isinstance(expr, cst.Name):
            return False
        defs = self.analysis.values.reaching_defs(expr)
        return bool(defs) and all(
            d.how == "assign" and isinstance(d.value, cst.Call) and (self.analysis.qualname(d.value.func) or "").removeprefix("torch.") in torch_knowledge.FACTORIES for d in defs
        )

    def _on_device(self, expr: cst.BaseExpression, moved_is_tensor: bool = True) -> bool:
        kind = self.analysis.kind(expr)
        if kind is Kind.DEVICE or (moved_is_tensor and kind is Kind.MOVED):
            return True
        # `metric.compute()` of a torchmetrics metric moved to the device returns a device
        # tensor; the metric tracker knows where each metric lives.
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "compute" and not expr.args:
            tracker = metric_tracker(self.analysis)
            sites = tracker.sites_of(expr.func.value)
            return bool(sites) and all(tracker.device_of(site) == "device" for site in sites)
        return False


class TensorTruthinessInLoop(Rule):
    """
    ## What it does
    Flags a device tensor used as a Python condition in a per-step loop: `if t.any():`,
    `while (x > 0).all():`, `assert t`, `a.any() or b.any()`, `if torch.isnan(loss):`,
    `x if t else y`.

    ## Why is this bad?
    Python must know the truth value on the host, so `bool(t)` copies it back and waits for
    the GPU: a full CPU-GPU sync hidden in an innocent-looking `if`. `a.any() or b.any()`
    syncs twice (torchmetrics' NaN check does exactly this on every `update`).

    ## Example
    ```python
    for x, y in loader:
        loss = criterion(model(x), y)
        if torch.isnan(loss):
            raise RuntimeError("NaN loss")
    ```

    ## Use instead
    ```python
    bad_steps = torch.zeros((), device=device, dtype=torch.long)
    for x, y in loader:
        loss = criterion(model(x), y)
        bad_steps += torch.isnan(loss)  # stays on the device
    if bad_steps.item():                # one check after the loop (or every N steps)
        raise RuntimeError("NaN loss")
    ```
    `torch._assert_async(~torch.isnan(loss))` checks on the device without a sync.
    """

    code = "TSL102"
    name = "tensor-truthiness-in-loop"
    message = "`{expr}` is a device tensor used as a Python condition: the host waits for the GPU to read its truth value every step"

    VALID = [
        Valid(in_loop("if x is None:\n    continue")),
        Valid(in_loop("if len(y) < 32:\n    break")),
        Valid(in_loop("if x.shape[0] == 0:\n    continue")),
        Valid(in_loop("keep = torch.where(y > 0, logits, 0)")),
        Valid(in_loop("flag = torch.zeros(1)\nif flag.any():\n    pass")),  # a CPU tensor
        Valid(in_loop("if step > 10 and lr_scale < 1.0:\n    pass")),
        Valid(in_loop("outs = []\nouts.append(logits)\nif not outs:\n    continue")),  # a list's length
        Valid(in_loop("if 'loss' in {'loss': loss}:\n    pass")),  # a dict's keys
    ]
    INVALID = [
        Invalid(in_loop("if torch.isnan(loss):\n    break"), line=L),
        Invalid(in_loop("while (logits > 0).all():\n    logits = logits - 1"), line=L),
        Invalid(in_loop("assert loss > 0"), line=L),
        Invalid(in_loop("if torch.isnan(loss).any() or torch.isinf(loss).any():\n    break"), line=L),
        Invalid(in_loop("scale = 0.5 if loss > 10 else 1.0"), line=L),
        Invalid(in_loop("if any(torch.isnan(p.grad).any() for p in model.parameters()):\n    continue"), line=L),
        Invalid(in_loop("if -1 in y:\n    continue"), line=L),  # Tensor.__contains__
    ]

    def visit_If(self, node: cst.If) -> None:
        self._check_condition(node.test, node)

    def visit_While(self, node: cst.While) -> None:
        self._check_condition(node.test, node)

    def visit_Assert(self, node: cst.Assert) -> None:
        self._check_condition(node.test, node)

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self._check_condition(node.test, node)

    def visit_CompIf(self, node: cst.CompIf) -> None:
        self._check_condition(node.test, node)

    def _contains_test(self, part: cst.BaseExpression) -> bool:
        """`if -1 in labels:` of a device tensor: `Tensor.__contains__` is `(labels == -1).any()`,
        read on the host."""
        return _is_membership(part) and self.analysis.is_device(part.comparisons[0].comparator) and not self.analysis.values.is_python_container(part.comparisons[0].comparator)

    def visit_BooleanOperation(self, node: cst.BooleanOperation) -> None:
        # The left operand of `and`/`or` is always truth-tested, wherever the expression is.
        if not self._is_condition_part(node):
            self._check_condition(node.left, node, descend=False)

    def _is_condition_part(self, node: cst.CSTNode) -> bool:
        parent = self.analysis.index.parent(node)
        while isinstance(parent, (cst.BooleanOperation, cst.UnaryOperation)):
            node, parent = parent, self.analysis.index.parent(parent)
        return isinstance(parent, (cst.If, cst.While, cst.Assert, cst.IfExp, cst.CompIf)) and getattr(parent, "test", None) is node

    def _check_condition(self, test: cst.BaseExpression, stmt: cst.CSTNode, descend: bool = True) -> None:
        for part in _truth_tested_parts(test) if descend else [test]:
            if self._contains_test(part):
                hot = self.hot(stmt)
                if hot is not None:
                    self.report(part, expr=self.snippet(part, 40), hot=hot)
                continue
            # `if not outputs:` of a list that holds device tensors tests its length, not them
            if self.analysis.is_device(part) and not self.analysis.values.is_python_container(part):
                hot = self.hot(stmt)
                if hot is not None:
                    self.report(part, expr=self.snippet(part, 40), hot=hot)


def _is_membership(node: cst.CSTNode) -> bool:
    return isinstance(node, cst.Comparison) and len(node.comparisons) == 1 and isinstance(node.comparisons[0].operator, (cst.In, cst.NotIn))


def _truth_tested_parts(test: cst.BaseExpression):
    """The sub-expressions whose truth value Python computes: `a or not b` -> a, b."""
    if isinstance(test, cst.BooleanOperation):
        yield from _truth_tested_parts(test.left)
        yield from _truth_tested_parts(test.right)
    elif isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        yield from _truth_tested_parts(test.expression)
    else:
        yield test


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
                if self.analysis.values.attribute_of(arg.value, attr) is Kind.DEVICE:
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
        return any(values._def(d) is Kind.DEVICE for defs in info.self_attrs.values() for d in defs)  # noqa: SLF001

    def _check(self, expr: cst.BaseExpression, at: cst.CSTNode, message: str | None = None) -> None:
        if not self.analysis.is_device(expr):
            return
        if isinstance(expr, (cst.FormattedString, cst.SimpleString)):
            return
        hot = self.hot(at)
        if hot is not None:
            self.report(expr, message, expr=self.snippet(expr, 40), hot=hot)


def _formatted_attributes(template: cst.BaseExpression, call: cst.Call):
    """(argument, attribute) for every `{name.attr}` / `{0.attr}` field of a literal format."""
    import string

    text = template.evaluated_value if isinstance(template, cst.SimpleString) else None
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

    In full: `nonzero`, boolean-mask indexing `x[mask]` and `x[mask] = v`, `masked_select`,
    `unique`, one-argument `torch.where(cond)`, and `repeat_interleave` with tensor repeats
    and no `output_size`.

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

    VALID = [
        Valid(in_loop("idx = logits.argmax(1)\npicked = logits[torch.arange(32), idx]")),  # integer indexing
        Valid(in_loop("safe = torch.where(y > 0, logits[:, 0], 0.0)")),  # three-argument where
        Valid(in_loop("rep = logits.repeat_interleave(2, dim=0)")),  # static repeats
        Valid(in_loop("counts = torch.tensor([1, 2])\nrep = logits.repeat_interleave(counts.to(device), dim=0, output_size=3)")),
        Valid(in_loop("pass", after="nz = torch.nonzero(logits)\n")),  # after the loop
        Valid(in_loop("m = torch.zeros(4) > 0\nsel = torch.ones(4)[m]")),  # a CPU tensor
    ]
    INVALID = [
        Invalid(in_loop("pos = logits[logits > 0]"), line=L),
        Invalid(in_loop("idx = torch.nonzero(y)"), line=L),
        Invalid(in_loop("mask = y != 0\nlogits[mask] = 0.0"), line=L + 1),
        Invalid(in_loop("classes = y.unique()"), line=L),
        Invalid(in_loop("rows, = torch.where(y > 0)"), line=L),
        Invalid(in_loop("sel = torch.masked_select(logits, logits > 0)"), line=L),
    ]

    _FUNCTIONS = frozenset(
        {"torch.nonzero", "torch.masked_select", "torch.unique", "torch.unique_consecutive", "torch.argwhere",
         "torchvision.ops.nms", "torchvision.ops.batched_nms", "torchvision.ops.boxes.nms", "torchvision.ops.boxes.batched_nms"}
    )
    _METHODS = frozenset({"nonzero", "masked_select", "unique", "unique_consecutive", "argwhere"})
    _MASK_FUNCTIONS = frozenset(
        {"torch.isnan", "torch.isinf", "torch.isfinite", "torch.isneginf", "torch.isposinf", "torch.logical_and", "torch.logical_or",
         "torch.logical_not", "torch.logical_xor", "torch.isin", "torch.eq", "torch.ne", "torch.gt", "torch.lt", "torch.ge", "torch.le",
        }
    )
    _MASK_METHODS = frozenset({"bool", "eq", "ne", "gt", "lt", "ge", "le", "isnan", "isinf", "isfinite", "logical_not", "logical_and", "logical_or", "isin"})

    def visit_Call(self, node: cst.Call) -> None:
        qn = self.analysis.qualname(node.func)
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

    def visit_Subscript(self, node: cst.Subscript) -> None:
        if not self.analysis.is_device(node.value):
            return
        for element in node.slice:
            index = element.slice
            if isinstance(index, cst.Index) and self._is_bool_mask(index.value):
                hot = self.hot(node)
                if hot is not None:
                    self.report(node, expr=self.snippet(node, 40), hot=hot)
                return

    def _is_bool_mask(self, expr: cst.BaseExpression, depth: int = 0) -> bool:
        """A device tensor of dtype bool: a comparison, `~m`, `m1 & m2`, `isnan(x)`, `x.bool()`..."""
        if depth > 8 or not self.analysis.is_device(expr):
            return False
        if isinstance(expr, cst.Comparison):
            return not any(isinstance(c.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)) for c in expr.comparisons)
        if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.BitInvert):
            return self._is_bool_mask(expr.expression, depth + 1)
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.BitAnd, cst.BitOr, cst.BitXor)):
            return self._is_bool_mask(expr.left, depth + 1) or self._is_bool_mask(expr.right, depth + 1)
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Multiply):
            # `(u > 0) * (l == u)`: a product of masks is a mask (bool * bool stays bool)
            return self._is_bool_mask(expr.left, depth + 1) and self._is_bool_mask(expr.right, depth + 1)
        if isinstance(expr, cst.Call):
            qn = self.analysis.qualname(expr.func)
            if qn in self._MASK_FUNCTIONS:
                return True
            if qn and qn.startswith("torch.") and qn.count(".") == 1 and qn[len("torch.") :] in torch_knowledge.FACTORIES:
                # `torch.eye(n, dtype=torch.bool, device=d)`: a mask made by a factory
                return any(a.keyword is not None and a.keyword.value == "dtype" and self.analysis.qualname(a.value) == "torch.bool" for a in expr.args)
            if qn in ("torch.stack", "torch.cat", "torch.concat", "torch.concatenate") and expr.args:
                # `torch.stack((m1, m2))`: a mask of masks
                parts = expr.args[0].value
                elements = [el.value for el in parts.elements] if isinstance(parts, (cst.Tuple, cst.List)) else []
                return bool(elements) and all(self._is_bool_mask(el, depth + 1) for el in elements)
            return isinstance(expr.func, cst.Attribute) and expr.func.attr.value in self._MASK_METHODS and qn is None
        if isinstance(expr, cst.Name):
            defs = self.analysis.values.reaching_defs(expr)
            return any(d.how == "assign" and d.value is not None and self._is_bool_mask(d.value, depth + 1) for d in defs)
        return False
