"""Which code runs once per training step ("hot"), and whether a step-interval `if` gates it.

A loop is hot when it iterates a DataLoader-like object, or when its own body (not a nested
loop's) runs `backward()`, `optimizer.step()`, a model forward, an environment step next to a
policy call (an RL rollout), or calls a function that does. A function is hot when a hot region
calls it (in this module, or, with a project view, in another), or when it is a per-step hook of
a LightningModule. An epoch loop that only calls `train_one_epoch()` is not hot: the step work
happens inside that function's own loop.

Not per step, although inside a hot loop: a branch that leaves the loop (`print(x);
sys.exit(1)`, `raise`, `break`), a branch a module-level constant turns off (branches.py), and
a branch that runs a bounded number of times (`if step == 0:`, a first-batch flag: gates.py).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import libcst as cst

from torchsync_lint.analysis.branches import BranchQueries
from torchsync_lint.analysis.engine_handlers import step_handlers
from torchsync_lint.analysis.gates import fills_cache, is_bounded, is_step_interval, memo_hit_index, step_counters
from torchsync_lint.analysis.imports import dotted_parts
from torchsync_lint.analysis.index import ModuleIndex
from torchsync_lint.analysis.tree import LOOP_TYPES, SCOPE_TYPES
from torchsync_lint.analysis.kinds import CALLABLE_MODELS, LOADER_KINDS, Kind
from torchsync_lint.analysis.values import LIGHTNING_BATCH_HOOKS, ValueAnalysis
from torchsync_lint.knowledge import gym, lightning, registry

_LOADER_NAME = re.compile(r"(^|_)(data)?loaders?$|^dl$|_dl$|dataloader", re.I)
_OPTIMIZER_NAME = re.compile(r"optim|^opt$|_opt$|^opt_", re.I)
_MODEL_NAME = re.compile(r"^(self|model|net|network|module|encoder|decoder|generator|discriminator|backbone|ddp_model|raw_model)$|_model$|model_|_net$", re.I)
_STEP_WORK = "runs a training step"
_LOADER = "iterates a data loader"
# Calls that wrap an iterable and yield its items (or tuples of them): `enumerate(loader)`.
ITER_WRAPPERS = frozenset({"enumerate", "zip", "iter", "tqdm", "islice", "track", "chain", "cycle"})
# Calls that run a function they are given before returning: the closure of
# `optimizer.step(closure)`, `torch.utils.checkpoint.checkpoint(fn, x)`, `map(fn, xs)`.
_IMMEDIATE_CALLERS = frozenset(
    {"torch.utils.checkpoint.checkpoint", "torch.utils.checkpoint.checkpoint_sequential", "torch.func.vmap", "torch.func.grad", "torch.vmap", "functools.reduce"}
)
_IMMEDIATE_BUILTINS = frozenset({"map", "filter", "sorted", "min", "max"})
_JUMPS = (cst.Continue, cst.Break, cst.Return, cst.Raise)
# Exact node types for the walks up from a node (tree.exact_types: isinstance is slow here).
_FUNCTIONS = frozenset({cst.FunctionDef, cst.Lambda})


class Reason:
    """A reason written out when a message shows it, not before: where another module calls
    a function every step costs a position to find, and most per-step code reports nothing."""

    __slots__ = ("_write", "_text")

    def __init__(self, write: Callable[[], str]) -> None:
        self._write, self._text = write, None

    def __str__(self) -> str:
        if self._text is None:
            self._text = self._write()
        return self._text


@dataclass(frozen=True)
class HotContext:
    """Why a node runs per step. ``gate`` is the step-interval `if` test, when there is one."""

    reason: str | Reason
    gate: cst.BaseExpression | None = None
    remote: bool = False  # per step because another module calls it every step: say where
    remote_gated: bool = False  # that module calls it under a step-interval gate (its test is there)

    @property
    def gated(self) -> bool:
        return self.gate is not None or self.remote_gated


class HotLoopAnalysis(BranchQueries):
    def __init__(self, index: ModuleIndex, values: ValueAnalysis) -> None:
        self.index = index
        self.values = values
        # Which code runs per step never decides what a value is, so the project's answers here
        # do not count as questions a value's answer leaned on (analysis/asking.py).
        self.env = getattr(values.env, "_env", values.env)
        self._step_like: dict[cst.FunctionDef, bool] = {}
        self.hot_loops: dict[cst.CSTNode, str] = {}
        self.hot_functions: dict[cst.FunctionDef, HotContext] = {}
        self._epoch_functions: set[cst.FunctionDef] = set()
        self._counters: frozenset[str] | None = None
        self._counted: frozenset[str] | None = None  # _step_counters
        self._memo_hits: dict[cst.IndentedBlock, int | None] = {}  # _after_memo_hit
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
            name = func.name.value
            if (name in LIGHTNING_BATCH_HOOKS and self.values.is_lightning_class(info.node)) or (
                name in lightning.CALLBACK_HOOK_PARAMS and self.values.is_lightning_callback(info.node)
            ):
                self.hot_functions[func] = HotContext(f"`{name}` runs every step")
            elif self.values.framework_hook(func) is not None:
                self.hot_functions[func] = HotContext(f"`{name}` runs every step (the trainer calls it per batch)")
        for func in self.index.returns:
            if self.values.batch_function(func) is not None and func not in self.hot_functions:
                self.hot_functions[func] = HotContext(f"`{func.name.value}` runs every batch (the engine it is handed calls it)")
        for func, gate in step_handlers(self.values, self.index).items():
            if func not in self.hot_functions:  # `@trainer.on(Events.ITERATION_COMPLETED)`
                self.hot_functions[func] = HotContext(f"`{func.name.value}` runs every iteration (an ignite handler of a per-step event)", gate)
        # Functions another module calls every step.
        for func in self.index.returns:
            remote = self.env.hot_caller(func)
            if remote is not None and func not in self.hot_functions:
                self.hot_functions[func] = HotContext(remote[0], remote[1], remote=True, remote_gated=remote[2])
        # Functions called from hot regions are hot, transitively (a fixed point). So are
        # functions handed to a call that runs them at once, like the closure in
        # `optimizer.step(closure)`.
        edges = self.index.call_edges()
        for call in self.index.calls:
            if not self._runs_callbacks(call):
                continue
            for arg in call.args:
                if isinstance(arg.value, cst.Name):
                    target = self.index.resolve_function(arg.value, call)
                    if target is not None:
                        edges.append((call, target))
        edges += self._implicit_dunder_calls()
        changed = True
        while changed:
            changed = False
            for call, target in edges:
                if target in self.hot_functions:
                    continue
                ctx = self.hot_context(call)
                if ctx is not None and not self.index.inside(call, target):
                    reason = ctx.reason if ctx.remote else f"`{target.name.value}` is called every step"
                    self.hot_functions[target] = HotContext(reason, ctx.gate, ctx.remote, ctx.remote_gated)
                    changed = True

    def _implicit_dunder_calls(self) -> list[tuple[cst.CSTNode, cst.FunctionDef]]:
        """`str(meter)`, `print(meter)`, `f"{meter}"` run the class's `__str__` (or `__repr__`,
        `__format__`) when `meter` is an instance of a class of this module."""
        edges = []
        for call in self.index.calls:
            func = call.func
            if type(func) is cst.Name and func.value in ("str", "repr", "print", "format") and not self.index.binds_locally(func.value, call):
                names = ("__repr__", "__str__") if func.value == "repr" else ("__str__", "__repr__")
                for arg in call.args:
                    if arg.keyword is None and not arg.star:
                        method = self.index.instance_method(arg.value, names)
                        if method is not None:
                            edges.append((call, method))
        for part in self.index.nodes_of(cst.FormattedStringExpression):
            method = self.index.instance_method(part.expression, ("__format__", "__str__", "__repr__"))
            if method is not None:
                edges.append((part, method))
        return edges

    def _runs_callbacks(self, call: cst.Call) -> bool:
        """Does ``call`` invoke the functions it is given before it returns?"""
        func = call.func
        if type(func) is cst.Attribute and func.attr.value == "step":
            return self._is_optimizer_step(call)
        qn = self.values.qualname(func) or ""
        if qn in _IMMEDIATE_CALLERS:
            return True
        return type(func) is cst.Name and func.value in _IMMEDIATE_BUILTINS and not self.index.binds_locally(func.value, call)

    def _drop_epoch_loops(self) -> None:
        """A loop around a pass over a data loader runs once per epoch, even with a forward.

        `for epoch in ...: train(epoch); sample = model.decode(z).cpu()` is an epoch loop:
        its body contains (or calls a function that contains) a loop over a loader. A loop
        that steps the optimizer itself (gradient accumulation's outer loop) or whose inner
        loops are not loader passes (PPO's update loop around its minibatch loop) stays hot.
        """
        step_loops = [lp for lp, why in self.hot_loops.items() if why == _STEP_WORK]
        # An epoch is a pass over a data loader: only loader loops mark what encloses them.
        loader_loops = [lp for lp, why in self.hot_loops.items() if why == _LOADER]
        if not loader_loops and not any(self.index.calls_by_owner.get(lp) for lp in step_loops):
            return
        epoch_functions = self._epoch_closure(loader_loops, self._is_loop_owned)
        # A loop over several loaders (`for name, loader in zip(names, loaders): evaluate(loader)`)
        # iterates loaders, not batches: what it runs per item is a whole pass.
        for loop in step_loops + loader_loops:
            own_calls = self.index.calls_by_owner.get(loop, ())
            if any(self._is_update_call(c) for c in own_calls):
                continue  # it steps the optimizer itself: the outer loop of gradient accumulation
            nested = any(self.index.inside(other, loop) for other in loader_loops)
            calls_epoch = any(self.index.call_targets().get(c) in epoch_functions or self.env.runs_epoch(c, self.values) for c in own_calls)
            if nested or calls_epoch:
                del self.hot_loops[loop]
        # Functions that run whole passes, outside any per-step loop of theirs: what they do
        # besides the pass runs once per pass (`do_evaluation` gathering its results).
        remaining = [lp for lp, why in self.hot_loops.items() if why == _LOADER]
        self._epoch_functions = self._epoch_closure(remaining, self._in_hot_loop)

    def _epoch_closure(self, loader_loops, in_loop) -> set[cst.FunctionDef]:
        """Functions holding one of ``loader_loops``, and their callers that call them (or another
        module's pass) at a point ``in_loop`` does not accept, transitively."""
        epoch_functions: set[cst.FunctionDef] = set()
        for loop in loader_loops:
            func = self.index.enclosing_function(loop)
            if func is not None:
                epoch_functions.add(func)
        for call in self.index.calls:
            caller = self.index.enclosing_function(call)
            if caller is not None and caller not in epoch_functions and not in_loop(call) and self.index.target_of(call) is None and self.env.runs_epoch(call, self.values):
                epoch_functions.add(caller)
        changed = True
        while changed:  # a function that calls an epoch function is one too
            changed = False
            for call, target in self.index.call_edges():
                caller = self.index.enclosing_function(call)
                if target in epoch_functions and caller is not None and caller not in epoch_functions and not in_loop(call):
                    epoch_functions.add(caller)
                    changed = True
        return epoch_functions

    def _in_hot_loop(self, call: cst.Call) -> bool:
        for anc in self.index.ancestors(call):
            kind = type(anc)
            if kind in LOOP_TYPES and anc in self.hot_loops:
                return True
            if kind in _FUNCTIONS:
                return False
        return False

    def _is_update_call(self, call: cst.Call) -> bool:
        """`loss.backward()` or `optimizer.step()` (not a mere forward)."""
        func = call.func
        if not isinstance(func, cst.Attribute) or func.attr.value not in ("backward", "step"):
            return False
        return self.is_step_call(call)

    def _is_loop_owned(self, call: cst.Call) -> bool:
        for anc in self.index.ancestors(call):
            kind = type(anc)
            if kind in LOOP_TYPES:
                return True
            if kind in _FUNCTIONS:
                return False
        return False

    def _loop_reason(self, loop: cst.For | cst.While) -> str | None:
        if isinstance(loop, cst.For) and self._is_loader_like(loop.iter):
            return _LOADER
        if any(self._pulls_batch(c) for c in self.index.calls_by_owner.get(loop, ())):
            return _LOADER  # `for _ in range(n): batch = next(self.dl)`: a pass over a loader too
        if self._runs_step_work(loop) or self._is_rollout(loop):
            return _STEP_WORK
        return None

    def _pulls_batch(self, call: cst.Call) -> bool:
        func = call.func
        return (
            isinstance(func, cst.Name) and func.value == "next" and len(call.args) == 1
            and not self.index.binds_locally("next", func) and self._is_loader_like(call.args[0].value)
        )

    def _is_loader_like(self, node: cst.BaseExpression, depth: int = 0) -> bool:
        if depth > 4:
            return False
        if isinstance(node, cst.Call):
            parts = dotted_parts(node.func)
            name = parts[-1] if parts else ""
            if name in ITER_WRAPPERS or registry.is_item_wrapper(self.values.qualname(node.func) or ""):
                return any(self._is_loader_like(a.value, depth + 1) for a in node.args if a.keyword is None)
            # (the name first: it answers many loops without asking the value analysis)
            if _LOADER_NAME.search(name):
                return True  # `trainer.train_dataloader()`
            return self.values.kind(node) in LOADER_KINDS
        parts = dotted_parts(node)
        if parts and _LOADER_NAME.search(parts[-1]):
            return True
        if self.values.kind(node) in (*LOADER_KINDS, Kind.PREPARED):
            return True
        if isinstance(node, cst.Name):
            defs = self.values.reaching_defs(node)
            if len(defs) == 1 and defs[0].how == "assign" and isinstance(defs[0].value, cst.Call):
                if self._is_loader_like(defs[0].value, depth + 1):
                    return True  # `pbar = tqdm(loader)`; `for x in pbar`
        return False

    def _runs_step_work(self, owner: cst.CSTNode) -> bool:
        """Step work in a loop's or function's own code, not in nested loops or definitions."""
        return any(self.is_step_call(call) for call in self.index.calls_by_owner.get(owner, ()))

    def _is_rollout(self, loop: cst.For | cst.While) -> bool:
        """An RL rollout: the loop's own body steps an environment and calls a policy
        (a method or forward of a model) on the observations, every iteration."""
        calls = self.index.calls_by_owner.get(loop, ())
        steps_env = any(self._is_env_step(c) for c in calls)
        return steps_env and any(self._is_policy_call(c) for c in calls)

    def _is_env_step(self, call: cst.Call) -> bool:
        func = call.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "step"):
            return False
        origin = self.values.origin_qualname(func.value)
        if origin is not None and registry.is_environment(origin):
            return True
        parent = self.index.parent(call)
        return isinstance(parent, cst.Assign) and any(isinstance(t.target, (cst.Tuple, cst.List)) and len(t.target.elements) in gym.ENV_STEP_ARITIES for t in parent.targets)

    def _is_policy_call(self, call: cst.Call) -> bool:
        """A model's forward or method, or a function handed the model (`sample(model, x)`)."""
        func = call.func
        receiver = func.value if isinstance(func, cst.Attribute) else func
        if self.values.kind(receiver) in CALLABLE_MODELS:
            return True
        return any(not a.star and self.values.kind(a.value) in (Kind.MODEL, Kind.MOVED, Kind.PREPARED) for a in call.args)

    def is_step_call(self, call: cst.Call) -> bool:
        """`loss.backward()`, `optimizer.step()`, `model(x)`, or a call of a step-like function."""
        func = call.func
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            if method == "backward":
                return True
            if method == "step" and self._is_optimizer_step(call):
                return True  # (another object's `step()` is judged like any call: `trainer.step(batch)`)
            origin = self.values.origin_qualname(func.value)
            if origin is not None and registry.is_step_method(origin, method):
                return True  # `accelerator.backward(loss)`
        target = self.index.target_of(call)
        if target is not None:
            return self.is_step_like(target)
        qn = self.values.qualname(func)
        if qn == "torch.autograd.backward":
            return True
        if qn is not None and self.env.is_step_like(qn):
            return True  # a step-like function of another module of the project
        if self.env.is_step_call(call):
            return True  # a step-like method of an object of another module (`policy.train(buffer)`)
        if self.env.hands_model_to_forward(call, self.values):
            return True  # `sample(model, x)`: another module's function runs the model it is handed
        if call.args:
            parts = dotted_parts(func)
            if isinstance(func, cst.Name) and _MODEL_NAME.search(func.value) and self._is_variable(func):
                return True
            if parts == ["self"] or (parts and len(parts) == 2 and parts[0] == "self" and _MODEL_NAME.search(parts[1])):
                return True
            return self.values.kind(func) in CALLABLE_MODELS  # (after the names: the costlier question)
        return False

    def _is_optimizer_step(self, call: cst.Call) -> bool:
        receiver = call.func.value  # type: ignore[union-attr]
        parts = dotted_parts(receiver)
        if (parts and _OPTIMIZER_NAME.search(parts[-1])) or self.values.kind(receiver) is Kind.OPTIMIZER:
            return True
        return bool(parts and parts[-1] == "scaler" and call.args)

    def _is_variable(self, name: cst.Name) -> bool:
        """Is ``name`` a value (a parameter or an assigned variable), not an imported or
        defined class or function? `Model(cfg)` builds a model; `model(x)` runs one."""
        defs = self.values.reaching_defs(name)
        if not defs:
            return self.values.qualname(name) is None and name.value not in self.index.classes and name.value not in self.index.functions
        return all(d.how in ("param", "assign", "unpack", "for", "aug", "module-move") for d in defs)

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
        tree = self.index.tree
        for anc in self.index.ancestors(node):
            kind = type(anc)  # exact types (tree.exact_types): this walks up from most calls
            if kind is cst.If:
                if self._never_taken(anc, child) or (child is anc.body and (fills_cache(anc) or is_bounded(anc, self.index, self._step_counters()))):
                    return None  # never taken, once per key, or a bounded number of times (gates.py)
                if gate is None and child is anc.body and is_step_interval(anc.test, tree, self._step_counters()):
                    gate = anc.test
            elif kind is cst.IndentedBlock:
                if self._leaves_loop(anc):
                    return None  # a failure branch: it runs once, then the loop is over
                if self._after_memo_hit(anc, child):
                    return None  # a memo's miss: once per key (gates.memo_hit_index)
                if after_jump(anc, child):
                    return None  # dead code: a `continue`/`return` before it in its block
            elif kind in LOOP_TYPES:
                if anc in self.hot_loops and child is anc.body:
                    return HotContext(f"this loop {self.hot_loops[anc]}", gate)
            elif kind in _FUNCTIONS:
                if anc in self._epoch_functions:
                    return None  # outside the passes of a function that runs whole passes
                if kind is cst.FunctionDef and anc in self.hot_functions:
                    outer = self.hot_functions[anc]
                    return HotContext(outer.reason, gate or outer.gate, outer.remote, outer.remote_gated)
                return None
            child = anc
        return None

    def enclosing_loop(self, node: cst.CSTNode) -> tuple[cst.For | cst.While | None, bool]:
        """The innermost loop of ``node``'s own function that runs it, and whether a
        step-interval `if` inside that loop gates it: what another module needs to decide,
        with its own answers, that the loop runs per step. With no loop, whether such an `if`
        in the function gates it (`if (step + 1) % args.log_every == 0: log_metrics(...)` in a
        step function another module calls: the view's path through it is gated)."""
        gated = False
        child = node
        for anc in self.index.ancestors(node):
            kind = type(anc)
            if kind is cst.If and child is anc.body and is_bounded(anc, self.index, self._step_counters()):
                return None, False  # a bounded number of times, whoever calls it
            if kind is cst.IndentedBlock and (self._after_memo_hit(anc, child) or after_jump(anc, child)):
                return None, False  # once per key, or never, whoever calls it
            if kind is cst.If and child is anc.body and is_step_interval(anc.test, self.index.tree, self._step_counters()):
                gated = True
            if kind in LOOP_TYPES and child is anc.body:
                return anc, gated
            if kind in SCOPE_TYPES:
                return None, gated
            child = anc
        return None, gated

    def _after_memo_hit(self, block: cst.IndentedBlock, stmt: cst.CSTNode) -> bool:
        """Does ``stmt`` of ``block`` come after a memo's early return there?"""
        if block not in self._memo_hits:
            self._memo_hits[block] = memo_hit_index(block)
        hit = self._memo_hits[block]
        return hit is not None and any(s is stmt for s in block.body[hit + 1 :])

    def _step_counters(self) -> frozenset[str]:
        if self._counted is None:
            self._counted = step_counters(self.index, self.values, self._loop_counters())
        return self._counted

    def _loop_counters(self) -> frozenset[str]:
        """Names the module's loops count with: the target of `for j in range(...)` and the
        index of `for i, x in enumerate(...)`."""
        if self._counters is None:
            found = set()
            for loop in self.index.loops:
                if isinstance(loop, cst.For) and isinstance(loop.iter, cst.Call) and isinstance(loop.iter.func, cst.Name):
                    target = loop.target
                    if loop.iter.func.value == "range" and isinstance(target, cst.Name):
                        found.add(target.value)
                    elif loop.iter.func.value == "enumerate" and isinstance(target, cst.Tuple) and target.elements and isinstance(target.elements[0].value, cst.Name):
                        found.add(target.elements[0].value.value)
            self._counters = frozenset(found)
        return self._counters


def after_jump(block: cst.IndentedBlock, stmt: cst.CSTNode) -> bool:
    """Does ``stmt`` follow, in ``block``, a statement line that always leaves it (`continue`,
    `break`, `return`, `raise`)? Such code never runs: a left-over after a `continue` that
    disabled it is not per-step code."""
    for sibling in block.body:
        if sibling is stmt:
            return False
        if isinstance(sibling, cst.SimpleStatementLine) and any(isinstance(small, _JUMPS) for small in sibling.body):
            return True
    return False
