"""TSL1xx: host reads and explicit syncs inside hot (per-step) loops.

Every rule here asks the shared analysis two questions: does this code run every training
step (``self.hot(node)``), and is the value a tensor on an accelerator
(``self.analysis.is_device(expr)``)? A value of unknown origin is never a finding.
"""

from __future__ import annotations

import libcst as cst

from torchsync_lint.analysis import Kind
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
_LITERAL_BOUNDS = frozenset({cst.Integer, cst.UnaryOperation})  # `x[1:-1]`: no tensor to read
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

    Also the reads Python makes itself: a device tensor as a slice bound (`pred[:length]`) or
    an argument of `range(...)` (both call `__index__`), and `math.sqrt(t)`-style functions
    (they call `float`).

    ## Why is this bad?
    CUDA runs asynchronously: the host queues kernels and moves on. Reading a value back
    (`loss.item()`) makes the host wait until every queued kernel has finished and the copy is
    done, so the GPU drains its queue and idles while Python prepares the next step. One
    `.item()` per step is the most common reason a GPU sits under-utilised. Reads behind
    `if step % N == 0:` still sync on those steps; the message says when a read is gated.
    A branch that runs a bounded number of times (`if step == 0:`, `if batch_idx < 2:`, a
    first-batch flag the branch clears) is not per-step code: nothing in it is reported.

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
        elif isinstance(func, cst.Name) and func.value == "range" and not self.analysis.index.binds_locally("range", func):
            on_device = any(self._on_device(a.value) for a in node.args if not a.star)  # `range(t)` calls `t.__index__()`
        else:
            return
        if not on_device:
            return  # not provably a device tensor
        hot = self.hot(node)
        if hot is None:
            return  # a single read outside the per-step path is fine
        self.report(node, expr=self.snippet(node, 40), hot=hot, fix=_accumulate.accumulate_fix(self, node))

    def visit_Slice(self, node: cst.Slice) -> None:
        """`x[:n]` with `n` a device tensor: a slice bound is converted with `__index__`, one
        host read of the 0-d tensor (a length taken from a device lengths tensor)."""
        bounds = [b for b in (node.lower, node.upper, node.step) if b is not None and type(b) not in _LITERAL_BOUNDS]
        device = next((b for b in bounds if self._on_device(b)), None)
        if device is None:
            return
        hot = self.hot(node)
        if hot is not None:
            self.report(node, self.INDEX_MESSAGE, expr=self.snippet(device, 40), hot=hot)

    INDEX_MESSAGE = "`{expr}` is a device tensor used as a slice bound: Python reads it on the host (`__index__`) and waits for the GPU in a per-step loop; take the bound from host data (a list of lengths), or mask on the device"

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
