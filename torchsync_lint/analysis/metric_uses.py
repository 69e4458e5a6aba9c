"""Where tracked metrics are used and moved, and the module-wide facts the metric rules read.

``MetricUses`` is a mixin of ``MetricTracker`` (``analysis/metrics.py``), which provides
``sites_of`` and ``container``: it finds the `update`/forward/`compute` calls on metrics, the
`.to()`/`.cuda()`/`.cpu()` moves that decide a metric's device, and, in one look at the module,
subscript stores, functions that escape as values, determinism and NCCL set-up.
"""

from __future__ import annotations

import libcst as cst

from torchsync_lint.analysis.imports import dotted_parts
from torchsync_lint.analysis.metric_classes import _SAME_OBJECT_METHODS, literal
from torchsync_lint.analysis.metric_sites import MetricSite, MetricUse


class MetricUses:
    # -- uses, moves, module facts ---------------------------------------------------------
    def _find_uses(self) -> None:
        for call in self.index.calls:
            func = call.func
            if isinstance(func, cst.Attribute) and func.attr.value in ("update", "compute", "forward"):
                sites = self.sites_of(func.value)
                if sites:
                    kind = {"update": "update", "compute": "compute", "forward": "forward"}[func.attr.value]
                    self.uses[call] = MetricUse(call, kind, func.value, tuple(sites))
            elif not isinstance(func, cst.Name) or func.value not in self.index.classes:
                if self._site_of_call(call) is not None:
                    continue  # a constructor
                sites = self.sites_of(func)
                if sites:
                    self.uses[call] = MetricUse(call, "forward", func, tuple(sites))

    def _find_moves(self) -> dict[int, set[str]]:
        """Site id -> destinations of `.to()`/`.cuda()`/`.cpu()` applied to it (or a container of it)."""
        moves: dict[int, set[str]] = {}
        moved_classes: set[str] = set()
        for call in self.index.calls:
            func = call.func
            if not isinstance(func, cst.Attribute) or func.attr.value not in ("to", "cuda", "cpu"):
                continue
            where = {"cuda": "accelerator", "cpu": "cpu"}.get(func.attr.value) or self.values.to_destination(call)
            if where is None:
                continue
            targets = self.sites_of(func.value)
            container = self.container(func.value)
            if container:
                targets += [s for group in container.values() for s in group]
            for site in targets:
                for leaf in [site, *site.leaves()]:
                    moves.setdefault(id(leaf), set()).add(where)
            cls_name = self._instance_class(func.value)
            if cls_name is not None and where == "accelerator":
                moved_classes.add(cls_name)
        # Metrics that are attributes of a module move with it.
        for info in self.index.classes.values():
            lightning = self.values.is_lightning_class(info.node)
            if not (lightning or info.node.name.value in moved_classes) or not self.values.is_module_class(info.node):
                continue
            for defs in info.self_attrs.values():
                for d in defs:
                    if d.how != "assign" or d.value is None:
                        continue
                    sites = self.sites_of(d.value)
                    container = self.container(d.value)
                    if container:
                        sites += [s for group in container.values() for s in group]
                    for site in sites:
                        for leaf in [site, *site.leaves()]:
                            moves.setdefault(id(leaf), set()).add("accelerator")
        return moves

    def _instance_class(self, expr: cst.BaseExpression, depth: int = 0) -> str | None:
        """`Net()` / `model` bound to `Net(...)`: the local class name it instantiates."""
        if depth > 6:
            return None
        if isinstance(expr, cst.Call):
            if self.index.local_class(expr.func) is not None:
                return expr.func.value
            if isinstance(expr.func, cst.Attribute) and expr.func.attr.value in _SAME_OBJECT_METHODS:
                return self._instance_class(expr.func.value, depth + 1)
            return None
        if isinstance(expr, cst.Name):
            names = set()
            for d in self.values.reaching_defs(expr):
                if d.how == "assign" and d.value is not None:
                    names.add(self._instance_class(d.value, depth + 1))
                elif d.how == "param" and d.func is not None:
                    # a trainer's `model` parameter: what every call site of this module passes
                    names |= {self._instance_class(a, depth + 1) for a in self._passed(d)} or {None}
                else:
                    names.add(None)
            return names.pop() if len(names) == 1 else None
        if isinstance(expr, cst.Attribute):  # `self.model`, `trainer.model`: what is stored there
            names = {self._instance_class(v, depth + 1) for v in self._self_attr_values(expr)}
            return names.pop() if len(names) == 1 else None
        return None

    def _passed(self, d) -> list[cst.BaseExpression]:
        """What the call sites of parameter ``d``'s function pass for it (any unknown: [None])."""
        if self._hidden_callers(d.func):
            return [None]
        return [self.index.argument_for(call, d.func, d.param) for call in self.index.call_sites(d.func)]

    def device_of(self, site: MetricSite) -> str | None:
        """"device" when the metric is moved to an accelerator, "cpu" when it never is."""
        if site.remote_device is not None:
            return site.remote_device
        where = self._moves.get(id(site), set())
        if "accelerator" in where:
            return "device" if self.values.uses_accelerator else "cpu"
        return "cpu"

    def _scan_module(self) -> None:
        """One look at the module's nodes (from the index, no traversal of its own): subscript
        stores, functions referenced other than as a callee, determinism and NCCL set-up."""
        index = self.index
        for node in index.nodes_of(cst.Assign):
            for t in node.targets:
                if isinstance(t.target, cst.Subscript):
                    self._subscript_assigns.append((node, t.target))
        callees: set[int] = set()
        for node in index.calls:
            callees.add(id(node.func))
            qn = self.analysis.qualname(node.func) or ""
            if qn == "torch.use_deterministic_algorithms" and node.args and literal(node.args[0].value) is True:
                self.deterministic = True
            if qn == "torch.distributed.init_process_group" and _backend_is_nccl(node):
                self.nccl_inits.append(node)
        # A function referenced other than as a callee (`optimizer.step(closure)`,
        # `partial(f, m)`, `hook = self.step`) may be called with arguments we cannot see.
        # Names that define or label (def/class/parameter names, keywords, attribute names,
        # anything in an import) are not references.
        not_references: set[int] = set()
        for node_type in (cst.FunctionDef, cst.ClassDef, cst.Param):
            not_references.update(id(n.name) for n in index.nodes_of(node_type))
        # `class Trainer(BaseTrainer):` names its base to inherit from it, not to hand it on
        not_references.update(id(b.value) for c in index.nodes_of(cst.ClassDef) for b in c.bases if isinstance(b.value, cst.Name))
        not_references.update(id(n.keyword) for n in index.nodes_of(cst.Arg) if n.keyword is not None)
        for node in index.nodes_of(cst.Attribute):
            not_references.add(id(node.attr))
            if id(node) not in callees:
                self._escaped_attrs.add(node.attr.value)
        for node_type in (cst.Import, cst.ImportFrom):
            for stmt in index.nodes_of(node_type):
                not_references.update(id(n) for n in index.tree.walk_subtree(stmt) if isinstance(n, cst.Name))
        for node in index.nodes_of(cst.Name):
            if id(node) not in callees and id(node) not in not_references:
                self._escaped_names.add(node.value)

    def computed_sites(self) -> set[int]:
        """Ids of sites whose `compute()` runs somewhere (directly or through a collection),
        or that a LightningModule logs (`self.log(name, metric)` computes it at epoch end)."""
        out: set[int] = set()
        for use in self.uses.values():
            if use.kind == "compute":
                for site in use.sites:
                    out.add(id(site))
                    out.update(id(leaf) for leaf in site.leaves())
        for call in self.index.calls:
            parts = dotted_parts(call.func)
            if parts in (["self", "log"], ["self", "log_dict"]):
                for arg in call.args:
                    for site in self.sites_of(arg.value):
                        out.add(id(site))
                        out.update(id(leaf) for leaf in site.leaves())
        return out


def _backend_is_nccl(call: cst.Call) -> bool:
    arg = next((a for a in call.args if a.keyword is not None and a.keyword.value == "backend"), None)
    if arg is None:
        positional = [a for a in call.args if a.keyword is None and not a.star]
        arg = positional[0] if positional else None
    if arg is None:
        return False  # default: "cpu:gloo,cuda:nccl" - CPU tensors go through gloo
    value = arg.value
    options = [value.body, value.orelse] if isinstance(value, cst.IfExp) else [value]
    for option in options:
        text = literal(option)
        if isinstance(text, str) and text.strip().lower() == "nccl":
            return True
        if (not isinstance(option, cst.SimpleString)) and isinstance(option, (cst.Attribute,)):
            parts = dotted_parts(option)
            if parts and parts[-1] == "NCCL" and "Backend" in parts:
                return True
    return False
