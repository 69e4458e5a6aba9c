"""What a `DataLoader` constructor says: the torch signature (positions and defaults of the
arguments the TSL3xx rules read), one argument's value (``ArgValue``), one loader
(``LoaderInfo``) and reading literals. Filled in by ``LoaderTracker`` (loaders.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst
from torchsync_lint.pytree import evaluated_literal

DATALOADER = "torch.utils.data.DataLoader"
# `DataLoader(dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
#             num_workers=0, collate_fn=None, pin_memory=False, drop_last=False, ...)`
# (torch/utils/data/dataloader.py, torch 2.13). Positions are 0-based.
POSITIONS = {"dataset": 0, "batch_size": 1, "shuffle": 2, "sampler": 3, "batch_sampler": 4, "num_workers": 5, "collate_fn": 6, "pin_memory": 7}
DEFAULTS = {"num_workers": 0, "pin_memory": False}


@dataclass(frozen=True)
class ArgValue:
    """One constructor argument. ``state``: "absent" (default applies), "known", "unknown"."""

    state: str
    value: object = None
    arg: cst.Arg | None = None  # the argument node, when written out

    @property
    def known(self) -> bool:
        return self.state != "unknown"


@dataclass
class LoaderInfo:
    call: cst.Call
    dataset: cst.BaseExpression | None
    num_workers: ArgValue
    pin_memory: ArgValue
    loops: list[cst.For] = field(default_factory=list)
    handed_to_trainer: bool = False  # accelerate / Fabric / Lightning move its batches
    feeds: bool | None = None  # memo for LoaderTracker.feeds_accelerator
    # A loader a library builds from its own settings (analysis/framework_loaders.py): its
    # defaults, the keyword each setting has, whether ``call`` takes them (a `Trainer` given no
    # `TrainingArguments` does not), and who builds it, for the message.
    defaults: dict = field(default_factory=lambda: DEFAULTS)
    keywords: dict[str, str] = field(default_factory=lambda: {k: k for k in DEFAULTS})
    settable: bool = True
    owner: str | None = None

    def effective(self, name: str) -> object:
        """The value the loader runs with, when known (else None)."""
        arg = getattr(self, name)
        if arg.state == "absent":
            return self.defaults[name]
        return arg.value if arg.state == "known" else None


def literal_value(node: cst.BaseExpression):
    """(True, value) for a Python literal we can read statically, else (False, None)."""
    if isinstance(node, cst.Integer):
        return True, evaluated_literal(node)
    if isinstance(node, cst.Float):
        return True, evaluated_literal(node)
    if isinstance(node, cst.Name) and node.value in ("True", "False", "None"):
        return True, {"True": True, "False": False, "None": None}[node.value]
    if isinstance(node, cst.SimpleString):
        return True, evaluated_literal(node)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        ok, v = literal_value(node.expression)
        if ok and isinstance(v, (int, float)):
            return True, -v
    return False, None


def known_value(values, node: cst.BaseExpression, depth: int = 0):
    """(True, value) for a literal, or a name whose every reaching binding (``values``: the
    module's ValueAnalysis) is the same literal; else (False, None)."""
    ok, value = literal_value(node)
    if ok or not isinstance(node, cst.Name) or depth > 3:
        return ok, value
    defs = values.reaching_defs(node)
    if not defs or any(d.how != "assign" or d.value is None for d in defs):
        return False, None  # a parameter, a loop variable, an import...
    results = {known_value(values, d.value, depth + 1) for d in defs}
    return results.pop() if len(results) == 1 else (False, None)
