"""The command-line options a module declares with argparse, and the values one may take.

`parser.add_argument("--dataset", choices=["FashionMNIST", "CIFAR10"])` says that `args.dataset`
is one of those strings: a dict of datasets, models or losses picked by it (`all_datasets[
args.dataset]()`) runs only those entries. Read from this module's own `add_argument` calls
(their destination, as argparse derives it, and a `choices=` display of string literals).
"""

from __future__ import annotations

import libcst as cst

from torchsync_lint.pytree import evaluated_literal


def option_choices(declared: dict[str, list[str]], expr: cst.BaseExpression) -> list[str] | None:
    """The string choices of the option ``expr`` reads (`args.dataset`, `opt.model`), when the
    module declares that destination with `choices=` of string literals (``declared``:
    declared_choices of the module); None when it is not such an option."""
    return declared.get(expr.attr.value) if isinstance(expr, cst.Attribute) else None


def declared_choices(index) -> dict[str, list[str]]:
    """destination -> its string choices, for every option the module declares with them
    (every declaration of a destination joined; one without choices makes it any value)."""
    table: dict[str, list[str] | None] = {}
    for call in index.calls:
        if not (isinstance(call.func, cst.Attribute) and call.func.attr.value == "add_argument"):
            continue
        dest = _destination(call)
        if dest is None:
            continue
        choices = _string_choices(call)
        if choices is None or (dest in table and table[dest] is None):
            table[dest] = None
        else:
            table[dest] = sorted({*(table.get(dest) or ()), *choices})
    return {k: v for k, v in table.items() if v is not None}


def _destination(call: cst.Call) -> str | None:
    """argparse's `dest`: the keyword, else the first long option without its dashes
    (`--data-set` -> `data_set`), else a positional's name."""
    for a in call.args:
        if a.keyword is not None and a.keyword.value == "dest":
            value = evaluated_literal(a.value) if isinstance(a.value, cst.SimpleString) else None
            return value if isinstance(value, str) else None
    names = [evaluated_literal(a.value) for a in call.args if a.keyword is None and isinstance(a.value, cst.SimpleString)]
    names = [n for n in names if isinstance(n, str)]
    long = [n for n in names if n.startswith("--")]
    if long:
        return long[0][2:].replace("-", "_")
    if names and not names[0].startswith("-"):
        return names[0]
    return None


def _string_choices(call: cst.Call) -> list[str] | None:
    for a in call.args:
        if a.keyword is not None and a.keyword.value == "choices" and isinstance(a.value, (cst.List, cst.Tuple)):
            values = [evaluated_literal(el.value) if isinstance(el.value, cst.SimpleString) else None for el in a.value.elements]
            return values if values and all(isinstance(v, str) for v in values) else None
    return None
