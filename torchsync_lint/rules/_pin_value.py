"""The value TSL302's fix passes as `pin_memory`: tied to the device the script chose, so that a
run on a machine without CUDA does not pin (torch warns "pin_memory ... no accelerator is found"
and pins nothing).

* The loop copies the loader's batches to one variable whose every binding is a
  `torch.device(...)` made before the loader, in its scope: `pin_memory=device.type == "cuda"`.
* Otherwise (a string device, `.cuda()`, a trainer that moves the batches):
  `pin_memory=torch.cuda.is_available()`, with `torch` imported by the fixer when missing.
* `torch` shadowed at the loader (a local of that name): `pin_memory=True`, as before.
"""

from __future__ import annotations

import libcst as cst

from torchsync_lint.rules._fix_guards import shadowed


def pin_value(rule, tracker, info) -> tuple[str, tuple[str, ...]]:
    """(source text of the value, imports it needs)."""
    device = _device_variable(rule.analysis, tracker, info)
    if device is not None:
        return f'{device}.type == "cuda"', ()
    if shadowed(rule.analysis, info.call, "torch"):
        return "True", ()
    return "torch.cuda.is_available()", ("torch",)


def _device_variable(analysis, tracker, info) -> str | None:
    names = set()
    for loop in info.loops:
        for node in analysis.tree.walk_subtree(loop.body):
            if isinstance(node, cst.Call) and tracker.is_h2d_call(node, any_receiver=True):
                target = _destination(node)
                if not isinstance(target, cst.Name) or not _is_torch_device(analysis, target, info.call):
                    return None  # `.cuda()`, a string, `args.device`: no variable to read
                names.add(target.value)
    return names.pop() if len(names) == 1 else None


def _destination(call: cst.Call) -> cst.BaseExpression | None:
    func = call.func
    if not isinstance(func, cst.Attribute) or func.attr.value != "to":
        return None
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "device":
            return arg.value
    first = call.args[0] if call.args else None
    return first.value if first is not None and first.keyword is None and not first.star else None


def _is_torch_device(analysis, name: cst.Name, loader: cst.Call) -> bool:
    """Every binding of ``name`` reaching the copy is `name = torch.device(...)`, made before the
    loader and in its scope (so the name means the same device where the loader is built)."""
    defs = analysis.values.reaching_defs(name)
    index = analysis.index
    scope = index.scope_of(loader)
    return bool(defs) and all(
        d.how == "assign" and isinstance(d.value, cst.Call) and analysis.qualname(d.value.func) == "torch.device"
        and index.scope_of(d.stmt) is scope and analysis.tree.after(loader, d.stmt)
        for d in defs
    )
