"""Which code runs once per training step ("hot"), and whether a step-interval `if` gates it.

A loop is hot when it iterates a DataLoader-like object, or when its own body (not a nested
loop's) runs `backward()`, `optimizer.step()`, a model forward, or calls a same-module function
that does. A function is hot when a hot region calls it, or when it is a per-step hook of a
LightningModule. An epoch loop that only calls `train_one_epoch()` is not hot: the step work
happens inside that function's own loop.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import libcst as cst

from torchsync_lint.analysis.imports import dotted_parts
from torchsync_lint.analysis.index import ModuleIndex
from torchsync_lint.analysis.values import LIGHTNING_BATCH_HOOKS, Kind, ValueAnalysis

_LOADER_NAME = re.compile(r"(^|_)(data)?loaders?$|^dl$|_dl$|dataloader", re.I)
_OPTIMIZER_NAME = re.compile(r"optim|^opt$|_opt$|^opt_", re.I)
_MODEL_NAME = re.compile(r"^(self|model|net|network|module|encoder|decoder|generator|discriminator|backbone|ddp_model|raw_model)$|_model$|model_|_net$", re.I)
_STEP_WORK = "runs a training step"
_LOADER = "iterates a data loader"
# Calls that wrap an iterable and yield its items (or tuples of them): `enumerate(loader)`.
ITER_WRAPPERS = frozenset({"enumerate", "zip", "iter", "tqdm", "islice", "track", "chain", "cycle"})


@dataclass(frozen=True)
class HotContext:
    """Why a node runs per step. ``gate`` is the step-interval `if` test, when there is one."""

    reason: str
    gate: cst.BaseExpression | None = None

    @property
    def gated(self) -> bool:
        return self.gate is not None


class HotLoopAnalysis:
    def __init__(self, index: ModuleIndex, values: ValueAnalysis) -> None:
        self.index = index
        self.values = values
        self._step_like: dict[cst.FunctionDef, bool] = {}
        self.hot_loops: dict[cst.CSTNode, str] = {}
        self.hot_functions: dict[cst.FunctionDef, HotContext] = {}
        self._compute()

    # -- classification -------------------------------------------------------------------
    def _compute(self) -> None:
        for loop in self.index.loops:
            reason = self._loop_reason(loop)
            if reason:
                self.hot_loops[loop] = reason
        self._drop_epoch_loops()
        # Lightning per-step hooks are hot by contract.
        for func, info in self.index.class_of_method.items():
            if func.name.value in LIGHTNING_BATCH_HOOKS and self.values.is_lightning_class(info.node):
                self.hot_functions[func] = HotContext(f"`{func.name.value}` runs every step")
        # Functions called from hot regions are hot, transitively (a fixed point). So are
        # functions handed to a call there, like the closure in `optimizer.step(closure)`.
        edges = list(self.index.call_targets().items())
        for call in self.index.calls:
            for arg in call.args:
                if isinstance(arg.value, cst.Name):
                    target = self.index.resolve_function(arg.value, call)
                    if target is not None:
                        edges.append((call, target))
        changed = True
        while changed:
            changed = False
            for call, target in edges:
                if target in self.hot_functions:
                    continue
                ctx = self.hot_context(call)
                if ctx is not None and not self.index.inside(call, target):
                    gate = ctx.gate
                    self.hot_functions[target] = HotContext(f"`{target.name.value}` is called every step", gate)
                    changed = True

    def _drop_epoch_loops(self) -> None:
        """A loop around a pass over a data loader runs once per epoch, even with a forward.

        `for epoch in ...: train(epoch); sample = model.decode(z).cpu()` is an epoch loop:
        its body contains (or calls a function that contains) a loop over a loader. A loop
        that steps the optimizer itself (gradient accumulation's outer loop) or whose inner
        loops are not loader passes (PPO's update loop around its minibatch loop) stays hot.
        """
        step_loops = [lp for lp, why in self.hot_loops.items() if why == _STEP_WORK]
        if not step_loops:
            return
        # An epoch is a pass over a data loader: only loader loops mark what encloses them.
        loader_loops = [lp for lp, why in self.hot_loops.items() if why == _LOADER]
        epoch_functions: set[cst.FunctionDef] = set()
        for loop in loader_loops:
            func = self.index.enclosing_function(loop)
            if func is not None:
                epoch_functions.add(func)
        changed = True
        while changed:  # a function that calls an epoch function is one too
            changed = False
            for call, target in self.index.call_targets().items():
                caller = self.index.enclosing_function(call)
                if target in epoch_functions and caller is not None and caller not in epoch_functions and not self._is_loop_owned(call):
                    epoch_functions.add(caller)
                    changed = True
        for loop in step_loops:
            if any(self._is_update_call(c) for c in self.index.calls_by_owner.get(loop, ())):
                continue  # it steps the optimizer itself: the outer loop of gradient accumulation
            nested = any(self.index.inside(other, loop) for other in loader_loops)
            calls_epoch = any(self.index.call_targets().get(c) in epoch_functions for c in self.index.calls_by_owner.get(loop, ()))
            if nested or calls_epoch:
                del self.hot_loops[loop]

    def _is_update_call(self, call: cst.Call) -> bool:
        """`loss.backward()` or `optimizer.step()` (not a mere forward)."""
        func = call.func
        if not isinstance(func, cst.Attribute) or func.attr.value not in ("backward", "step"):
            return False
        return self.is_step_call(call)

    def _is_loop_owned(self, call: cst.Call) -> bool:
        for anc in self.index.ancestors(call):
            if isinstance(anc, (cst.For, cst.While)):
                return True
            if isinstance(anc, (cst.FunctionDef, cst.Lambda)):
                return False
        return False

    def _loop_reason(self, loop: cst.For | cst.While) -> str | None:
        if isinstance(loop, cst.For) and self._is_loader_like(loop.iter):
            return _LOADER
        if self._runs_step_work(loop):
            return _STEP_WORK
        return None

    def _is_loader_like(self, node: cst.BaseExpression) -> bool:
        if isinstance(node, cst.Call):
            parts = dotted_parts(node.func)
            name = parts[-1] if parts else ""
            if name in ITER_WRAPPERS:
                return any(self._is_loader_like(a.value) for a in node.args if a.keyword is None)
            return bool(_LOADER_NAME.search(name))  # `trainer.train_dataloader()`
        if self.values.kind(node) is Kind.LOADER:
            return True
        parts = dotted_parts(node)
        return bool(parts and _LOADER_NAME.search(parts[-1]))

    def _runs_step_work(self, owner: cst.CSTNode) -> bool:
        """Step work in a loop's or function's own code, not in nested loops or definitions."""
        return any(self.is_step_call(call) for call in self.index.calls_by_owner.get(owner, ()))

    def is_step_call(self, call: cst.Call) -> bool:
        """`loss.backward()`, `optimizer.step()`, `model(x)`, or a call of a step-like function."""
        func = call.func
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            if method == "backward":
                return True
            if method == "step":
                receiver = func.value
                parts = dotted_parts(receiver)
                if self.values.kind(receiver) is Kind.OPTIMIZER or (parts and _OPTIMIZER_NAME.search(parts[-1])):
                    return True
                if parts and parts[-1] == "scaler" and call.args:
                    return True
                return False
        target = self.index.target_of(call)
        if target is not None:
            return self.is_step_like(target)
        if (self.values.qualname(func) or "") == "torch.autograd.backward":
            return True
        if call.args:
            if self.values.kind(func) is Kind.MODEL:
                return True
            parts = dotted_parts(func)
            if parts and _MODEL_NAME.search(parts[-1]) and not isinstance(func, cst.Attribute) or parts == ["self"]:
                return True
            if parts and len(parts) == 2 and parts[0] == "self" and _MODEL_NAME.search(parts[1]):
                return True
        return False

    def is_step_like(self, func: cst.FunctionDef) -> bool:
        """A function whose own body (outside its loops) does step work: it runs per step."""
        if func in self._step_like:
            return self._step_like[func]
        self._step_like[func] = False  # recursion guard
        result = self._runs_step_work(func)
        self._step_like[func] = result
        return result

    # -- queries --------------------------------------------------------------------------
    def hot_context(self, node: cst.CSTNode) -> HotContext | None:
        """Why ``node`` runs per step, or None when it does not."""
        gate: cst.BaseExpression | None = None
        child = node
        for anc in self.index.ancestors(node):
            if isinstance(anc, cst.If) and gate is None and child is anc.body and _is_step_interval(anc.test, self.index.tree):
                gate = anc.test
            if isinstance(anc, (cst.For, cst.While)) and anc in self.hot_loops and child is anc.body:
                return HotContext(f"this loop {self.hot_loops[anc]}", gate)
            if isinstance(anc, (cst.FunctionDef, cst.Lambda)):
                if isinstance(anc, cst.FunctionDef) and anc in self.hot_functions:
                    outer = self.hot_functions[anc]
                    return HotContext(outer.reason, gate or outer.gate)
                return None
            child = anc
        return None


_COUNTER = re.compile(r"step|iter|batch|idx|^i$|^it$|^n$|count|global|^b$|^t$", re.I)


def _is_step_interval(test: cst.BaseExpression, tree) -> bool:
    """A test that holds on some steps only, judged by a step counter in it.

    `step % N == 0`, `(i + 1) % log_every == 0`, `not step % 10`, `a and it % n == 0`, and
    `i == 0` / `batch_idx == last` (once per epoch). `args.rank % ngpus == 0` is no gate:
    it holds on every step of the rank that runs it.
    """
    for node in tree.walk_subtree(test):
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Modulo):
            if not isinstance(node.left, (cst.SimpleString, cst.FormattedString)) and _mentions_counter(node.left, tree):
                return True
        elif isinstance(node, cst.Comparison) and len(node.comparisons) == 1 and isinstance(node.comparisons[0].operator, cst.Equal):
            sides = (node.left, node.comparisons[0].comparator)
            if any(isinstance(s, (cst.Name, cst.Attribute)) and _mentions_counter(s, tree) for s in sides):
                return True
    return False


def _mentions_counter(node: cst.CSTNode, tree) -> bool:
    return any(isinstance(n, cst.Name) and _COUNTER.search(n.value) for n in tree.walk_subtree(node))
