"""Rewrite: the loader yields dict batches, as HF-style and most real datasets do.

    loader = DataLoader(ds, ...)                 loader = DataLoader(_DictDataset(ds, ("x", "y")), ...)
    for step, (x, y) in enumerate(loader):  ->   for step, batch in enumerate(loader):
        x = x.to(device)                             x = batch["x"]
        ... y ...                                    x = x.to(device)
                                                     ... batch["y"] ...

``_DictDataset`` wraps the dataset and returns ``dict(zip(keys, item))``; the default collate
stacks dicts field by field, so every batch holds the same tensors under names. An element the
body rebinds is read out once (``x = batch["x"]``); one it only reads is read from the batch
where it is used. Expected: the same findings.
"""

from __future__ import annotations

import libcst as cst

from .loops import analysis_of, collect, fresh
from .rewritten import Replacer, Rewritten, Source, statement

_WRAPPER = '''class {name}(_DictBase):
    """Items of ``dataset`` as dicts: ``{{key: value}}`` for the item's fields, in order."""

    def __init__(self, dataset, keys):
        self.dataset = dataset
        self.keys = keys

    def __len__(self):
        return len(self.dataset)

    def __getitem__(self, i):
        return dict(zip(self.keys, self.dataset[i]))
'''


class _ToSubscript(cst.CSTTransformer):
    def __init__(self, names, batch):
        self.names, self.batch = names, batch

    def leave_Attribute(self, original, updated):
        return updated.with_changes(attr=original.attr)

    def leave_Arg(self, original, updated):
        return updated.with_changes(keyword=original.keyword)

    def visit_Param(self, node):
        return False

    def leave_Name(self, original, updated):
        if original.value in self.names:
            return cst.parse_expression(f'{self.batch}["{original.value}"]')
        return updated


def _fields(target, enumerated: bool):
    """(the names of the batch's fields, `(x, y)`; a function putting the batch name in
    their place), or (None, None) when the batch is not unpacked into names."""

    def names_of(node):
        if isinstance(node, cst.Tuple) and node.elements and all(isinstance(e.value, cst.Name) for e in node.elements):
            return [e.value.value for e in node.elements]
        return None

    if not enumerated:
        names = names_of(target)
        return (names, lambda b: cst.Name(b)) if names else (None, None)
    if isinstance(target, cst.Tuple) and len(target.elements) == 2 and isinstance(target.elements[0].value, cst.Name):
        names = names_of(target.elements[1].value)
        if names:
            return names, lambda b: target.with_changes(elements=[target.elements[0], target.elements[1].with_changes(value=cst.Name(b))])
    return None, None


def dict_batch(src: Source) -> Rewritten | None:
    analysis = analysis_of(src)
    module = analysis.module
    replace = {}
    batch = fresh(module, "batch")
    wrapper = fresh(module, "_DictDataset")
    for loop in analysis.step_loops():
        if not isinstance(loop, cst.For):
            continue
        it = loop.iter
        enumerated = isinstance(it, cst.Call) and isinstance(it.func, cst.Name) and it.func.value == "enumerate"
        if enumerated:
            it = it.args[0].value
        names, retarget = _fields(loop.target, enumerated)
        if not names:
            continue
        if not isinstance(it, cst.Name):
            continue
        func = analysis.enclosing(loop, (cst.FunctionDef,))
        makers = [
            a.value for a in collect(func if func is not None else module, cst.Assign)
            if len(a.targets) == 1 and isinstance(a.targets[0].target, cst.Name) and a.targets[0].target.value == it.value
            and isinstance(a.value, cst.Call) and "DataLoader" in cst.Module([]).code_for_node(a.value.func) and a.value.args
            and a.value.args[0].keyword is None
        ]
        if len(makers) != 1:
            continue
        call = makers[0]
        first = call.args[0]
        keys = ", ".join(f'"{n}"' for n in names) + ("," if len(names) == 1 else "")
        wrapped = cst.parse_expression(f"{wrapper}(__ds__, ({keys}))")
        wrapped = wrapped.with_changes(args=[wrapped.args[0].with_changes(value=first.value), wrapped.args[1]])
        replace[id(call)] = call.with_changes(args=[first.with_changes(value=wrapped)] + list(call.args[1:]))
        stored = {n.value for a in collect(loop.body, (cst.Assign, cst.AugAssign, cst.AnnAssign)) for t in (a.targets if isinstance(a, cst.Assign) else [a])
                  for n in collect(t.target, cst.Name)} | {n.value for f in collect(loop.body, cst.For) for n in collect(f.target, cst.Name)}
        rebound = [n for n in names if n in stored]
        read_only = [n for n in names if n not in stored]
        body = [s.visit(_ToSubscript(set(read_only), batch)) for s in loop.body.body]
        head = [statement(f'{n} = {batch}["{n}"]') for n in rebound]
        replace[id(loop)] = loop.with_changes(target=retarget(batch), body=loop.body.with_changes(body=head + body))
    if not replace:
        return None
    klass = cst.parse_module(_WRAPPER.format(name=wrapper)).body[0].with_changes(leading_lines=[cst.EmptyLine(), cst.EmptyLine()])
    imports = [statement("from torch.utils.data import Dataset as _DictBase"), klass]
    new = module.visit(Replacer(replace, after_imports=imports))
    return Rewritten({src.name: new.code})
