"""Rewrites of names: what a thing is called carries no meaning, so none may change a finding.

- ``rename_locals``: every local variable of every function (not its parameters, which
  callers may pass by keyword) becomes ``v1``, ``v2``, ...
- ``rename_misleading``: the same, with names that say the opposite of what the values are
  (``cpu_list``, ``numpy_array``, ``host_count``...): a device tensor called ``numpy_array``
  is still a device tensor.
- ``import_aliases``: module-level imports of the torch ecosystem get aliases
  (``import torch as T``, ``from torch.utils.data import DataLoader as DL``) and every use
  follows.
- ``kwargs``: calls of the module's own functions pass their arguments as ``**{...}``
  (``train_step(**{"model": model, "x": x})``), after extract_loop_body so that every step
  loop calls one.
Expected: the same findings.
"""

from __future__ import annotations

import re

import libcst as cst
from libcst.metadata import ClassScope, GlobalScope

from .loops import analysis_of, collect
from .rewritten import Replacer, Rewritten, Source

MISLEADING = ["cpu_list", "numpy_array", "host_count", "py_float", "cpu_value", "np_batch", "label_str", "idx", "total_int", "host_scalar"]


class _Rename(cst.CSTTransformer):
    def __init__(self, nodes: dict[int, str]):
        self.nodes = nodes

    def leave_Name(self, original, updated):
        new = self.nodes.get(id(original))
        return updated.with_changes(value=new) if new else updated


def _renamable(scope, name, assignments) -> bool:
    if not all(isinstance(a.node, cst.Name) for a in assignments):
        return False  # a parameter, an import, a nested def: bound by something else than a store
    return all(isinstance(r.node, cst.Name) for a in assignments for r in a.references)


def _rename(src: Source, pool) -> Rewritten | None:
    analysis = analysis_of(src)
    module, scopes = analysis.module, analysis.scopes
    used = {n.value for n in collect(module, cst.Name)}
    if used & {"locals", "vars", "eval", "exec"}:
        return None
    nodes, taken = {}, set(used)
    fresh = iter(pool())
    for scope in sorted({s for s in scopes.values() if s is not None and not isinstance(s, (GlobalScope, ClassScope))}, key=id):
        if any(isinstance(a.node, (cst.Global, cst.Nonlocal)) for a in scope.assignments):
            continue
        by_name = {}
        for a in scope.assignments:
            by_name.setdefault(a.name, []).append(a)
        for name, assignments in sorted(by_name.items()):
            if not _renamable(scope, name, assignments):
                continue
            new = next(fresh)
            while new in taken:
                new = next(fresh)
            taken.add(new)
            for a in assignments:
                nodes[id(a.node)] = new
                for r in a.references:
                    nodes[id(r.node)] = new
    if not nodes:
        return None
    return Rewritten({src.name: module.visit(_Rename(nodes)).code})


def _numbered(base):
    def pool():
        k = 0
        while True:
            k += 1
            yield f"{base}{k}"
    return pool


def _misleading():
    k = 0
    while True:
        for name in MISLEADING:
            yield name if k == 0 else f"{name}_{k}"
        k += 1


def rename_locals(src: Source) -> Rewritten | None:
    return _rename(src, _numbered("v"))


def rename_misleading(src: Source) -> Rewritten | None:
    return _rename(src, _misleading)


PACKAGES = {"torch": "T", "torchmetrics": "TM", "torchvision": "TV", "lightning": "Lt", "pytorch_lightning": "PL", "accelerate": "acc", "wandb": "wb", "tqdm": "tq"}


def _alias_for(name: str) -> str:
    caps = "".join(re.findall(r"[A-Z]", name))
    return caps if len(caps) >= 2 else name[:2] + "_" + name[-1]


def import_aliases(src: Source) -> Rewritten | None:
    analysis = analysis_of(src)
    scopes, module = analysis.scopes, analysis.module
    global_scope = scopes[module.body[0]] if module.body else None
    used = {n.value for n in collect(module, cst.Name)}
    replace, renames = {}, {}
    for stmt in module.body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if isinstance(small, cst.Import):
                names = []
                for alias in small.names:
                    dotted = cst.Module([]).code_for_node(alias.name)
                    if alias.asname is None and dotted in PACKAGES:
                        names.append(alias.with_changes(asname=cst.AsName(name=cst.Name(PACKAGES[dotted]))))
                        renames[dotted] = PACKAGES[dotted]
                    else:
                        names.append(alias)
                replace[id(small)] = small.with_changes(names=names)
            elif isinstance(small, cst.ImportFrom) and small.module is not None and not small.relative and not isinstance(small.names, cst.ImportStar):
                root = cst.Module([]).code_for_node(small.module).split(".")[0]
                if root not in PACKAGES:
                    continue
                names = []
                for alias in small.names:
                    if alias.asname is None and isinstance(alias.name, cst.Name):
                        new = _alias_for(alias.name.value)
                        while new in used or new in renames.values():
                            new += "_"
                        renames[alias.name.value] = new
                        names.append(alias.with_changes(asname=cst.AsName(name=cst.Name(new))))
                    else:
                        names.append(alias)
                replace[id(small)] = small.with_changes(names=names)
    if not renames or global_scope is None:
        return None
    nodes = {}
    for a in global_scope.assignments:
        if a.name in renames and isinstance(a.node, (cst.Import, cst.ImportFrom)):
            for r in a.references:
                if isinstance(r.node, cst.Name):
                    nodes[id(r.node)] = renames[a.name]
                elif isinstance(r.node, cst.Attribute):  # `torch.nn` read as one access of `torch`
                    base = r.node
                    while isinstance(base, cst.Attribute):
                        base = base.value
                    if isinstance(base, cst.Name):
                        nodes[id(base)] = renames[a.name]

    class Both(_Rename):
        def on_leave(self, original, updated):
            updated = super().on_leave(original, updated)
            new = replace.get(id(original))
            return new if new is not None else updated

    return Rewritten({src.name: module.visit(Both(nodes)).code})


def kwargs(src: Source) -> Rewritten | None:
    """Calls of module-level functions with positional arguments -> ``f(**{"param": arg})``."""
    from .extract import extract_loop_body

    extracted = extract_loop_body(src)
    text = extracted.files[src.name] if extracted else src.text
    module = cst.parse_module(text)
    defs = {}
    for stmt in module.body:
        if isinstance(stmt, cst.FunctionDef):
            p = stmt.params
            if isinstance(p.star_arg, cst.MaybeSentinel) and p.star_kwarg is None and not p.posonly_params and not p.kwonly_params:
                defs[stmt.name.value] = [q.name.value for q in p.params]
    replace = {}
    for call in collect(module, cst.Call):
        if not (isinstance(call.func, cst.Name) and call.func.value in defs) or not call.args:
            continue
        params = defs[call.func.value]
        if any(a.star for a in call.args):
            continue
        items, ok = [], True
        for i, arg in enumerate(call.args):
            name = arg.keyword.value if arg.keyword else (params[i] if i < len(params) else None)
            if name is None:
                ok = False
                break
            items.append(cst.DictElement(key=cst.SimpleString(f'"{name}"'), value=arg.value))
        if ok:
            replace[id(call)] = call.with_changes(args=[cst.Arg(value=cst.Dict(items), star="**")])
    if not replace:
        return None
    return Rewritten({src.name: module.visit(Replacer(replace)).code})
