"""Rewrites: literal keyword arguments become settings the user supplies.

- ``config_dict``: ``DataLoader(ds, num_workers=0)`` -> ``DataLoader(ds, num_workers=CONFIG["num_workers"])``
  with ``CONFIG = json.loads(os.environ.get("TRAIN_CONFIG") or '{"num_workers": 0, ...}')`` at
  module level: the literals become the defaults of a configuration read at run time.
- ``argparse_namespace``: in the function that parses the command line
  (``args = parser.parse_args()``), the literals become ``args.num_workers``, each with a
  ``parser.add_argument("--num_workers", default=0)`` before the parse.

A DataLoader that leaves `num_workers`/`pin_memory` at their defaults gets them spelled out
first (``num_workers=0, pin_memory=False``: the same loader), so they become settings too.
Both run as before (the defaults are the literals). The expectation changes, and that is the
point: a value the user configures is never a finding (DESIGN.md §3), so a marker whose
finding was decided by a literal that became a setting (``DECIDES`` below: `num_workers=0`
decides TSL303) must disappear; every other marker stays. Keywords that say where a value
lives (``device``, ``dtype``) stay literal: a configured device is another experiment.
A finding the rewritten program has at no marker is a configured value flagged: a false
positive (the report's "extra" column).
"""

from __future__ import annotations

import json

import libcst as cst

from .loops import collect
from .rewritten import GONE, Replacer, Rewritten, Source, statement

# code -> the keyword arguments whose literal value decides the finding on that call
DECIDES = {
    "TSL301": {"non_blocking"},
    "TSL302": {"pin_memory"},
    "TSL303": {"num_workers"},
    "TSL106": {"prog_bar", "on_step"},
}
# a DataLoader's settings left at their defaults become explicit settings too (the same values):
# a loader whose worker count the user configures is not a finding either
LOADER_DEFAULTS = {"num_workers": 0, "pin_memory": False}
_LOADERS = {"DataLoader"}
# `nan_strategy`/`average` stay literal too: they decide a metric's finding where it is updated,
# lines away from the keyword, so a rewrite could not say which marker a setting decides
_KEEP = {"device", "dtype", "file", "type", "default", "help", "action", "nan_strategy", "average"}
_SKIP_CALLS = {"add_argument", "dumps", "print", "parse_args", "get", "environ"}


def _literal(node):
    if isinstance(node, cst.Integer):
        return int(node.value)
    if isinstance(node, cst.Float):
        return float(node.value)
    if isinstance(node, cst.Name) and node.value in ("True", "False"):
        return node.value == "True"
    if isinstance(node, cst.SimpleString) and "\\" not in node.value and node.prefix == "":
        return node.evaluated_value
    return None


def _callee(call: cst.Call) -> str:
    f = call.func
    return f.attr.value if isinstance(f, cst.Attribute) else f.value if isinstance(f, cst.Name) else ""


def _settings(module: cst.Module, within=None):
    """[(Arg node, keyword, value)] of the literal keyword arguments a rewrite turns into settings."""
    found = []
    for call in collect(within if within is not None else module, cst.Call):
        if _callee(call) in _SKIP_CALLS:
            continue
        for arg in call.args:
            if arg.keyword is None or arg.keyword.value in _KEEP:
                continue
            value = _literal(arg.value)
            if value is not None:
                found.append((arg, arg.keyword.value, value))
    return found


def _with_loader_defaults(module: cst.Module, within=None):
    """Loader calls that leave a setting at its default -> the call with it spelled out."""
    replace = {}
    for call in collect(within if within is not None else module, cst.Call):
        if _callee(call) not in _LOADERS or any(a.star for a in call.args):
            continue
        given = {a.keyword.value for a in call.args if a.keyword is not None}
        missing = [k for k in LOADER_DEFAULTS if k not in given]
        if missing:
            extra = [cst.Arg(keyword=cst.Name(k), value=cst.parse_expression(repr(LOADER_DEFAULTS[k])), equal=cst.AssignEqual(
                whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(""))) for k in missing]
            args = list(call.args)
            if args:
                args[-1] = args[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
            replace[id(call)] = call.with_changes(args=args + [e.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))) for e in extra[:-1]] + extra[-1:])
    return replace


def spell_out_defaults(text: str) -> str:
    """``text`` with every DataLoader's default settings written as keyword arguments."""
    module = cst.parse_module(text)
    return module.visit(Replacer(_with_loader_defaults(module))).code


def _keys(settings) -> list[str]:
    """A key per setting: the keyword, numbered when two calls give it different values."""
    values, keys = {}, []
    for _, kw, value in settings:
        key, k = kw, 2
        while key in values and values[key] != value:
            key, k = f"{kw}_{k}", k + 1
        values[key] = value
        keys.append(key)
    return keys


def _expect(src: Source, positions, settings) -> dict:
    """GONE for each marker on a statement where a keyword that decides its code became a setting."""
    lines_of = {}
    for (arg, kw, _value) in settings:
        pos = positions[arg]
        for line in range(pos.start.line, pos.end.line + 1):
            lines_of.setdefault(line, set()).add(kw)
    return {(line, code): GONE for line, code in src.markers if DECIDES.get(code, set()) & lines_of.get(line, set())}


def config_dict(src: Source) -> Rewritten | None:
    wrapper = cst.metadata.MetadataWrapper(cst.parse_module(spell_out_defaults(src.text)), unsafe_skip_copy=True)
    module = wrapper.module
    settings = _settings(module)
    if not settings:
        return None
    positions = _statement_positions(wrapper)
    keys = _keys(settings)
    defaults = dict(zip(keys, (v for _, _, v in settings)))
    replace = {id(arg): arg.with_changes(value=cst.parse_expression(f"CONFIG[{key!r}]".replace("'", '"'))) for (arg, _, _), key in zip(settings, keys)}
    load = [
        statement("import json"),
        statement("import os"),
        statement(f"CONFIG = json.loads(os.environ.get(\"TRAIN_CONFIG\") or {json.dumps(json.dumps(defaults))})"),
    ]
    new = module.visit(Replacer(replace, after_imports=load))
    return Rewritten({src.name: new.code}, _expect(src, positions, settings))


def _statement_positions(wrapper):
    """Arg node -> the position of the whole statement holding it."""
    positions = wrapper.resolve(cst.metadata.PositionProvider)
    parents = wrapper.resolve(cst.metadata.ParentNodeProvider)
    out = {}
    for arg in collect(wrapper.module, cst.Arg):
        node = arg
        while not isinstance(node, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            node = parents[node]
        if isinstance(node, cst.BaseCompoundStatement):  # the header only (`if ...:`/`for ...:`)
            out[arg] = positions[arg]
        else:
            out[arg] = positions[node]
    return out


def argparse_namespace(src: Source) -> Rewritten | None:
    wrapper = cst.metadata.MetadataWrapper(cst.parse_module(spell_out_defaults(src.text)), unsafe_skip_copy=True)
    module = wrapper.module
    positions = _statement_positions(wrapper)
    replace, chosen = {}, []
    for func in collect(module, cst.FunctionDef):
        parse = [
            s for s in func.body.body
            if isinstance(s, cst.SimpleStatementLine) and len(s.body) == 1 and isinstance(s.body[0], cst.Assign)
            and isinstance(s.body[0].value, cst.Call) and _callee(s.body[0].value) == "parse_args"
            and isinstance(s.body[0].value.func, cst.Attribute) and isinstance(s.body[0].value.func.value, cst.Name)
            and len(s.body[0].targets) == 1 and isinstance(s.body[0].targets[0].target, cst.Name)
        ]
        if not parse:
            continue
        stmt = parse[0]
        at = func.body.body.index(stmt)
        namespace = stmt.body[0].targets[0].target.value
        parser = stmt.body[0].value.func.value.value
        settings = [s for s in _settings(module, [b for b in func.body.body[at + 1:]])]
        if not settings:
            continue
        keys = _keys(settings)
        adds, seen = [], set()
        for (_, _, value), key in zip(settings, keys):
            if key in seen:
                continue
            seen.add(key)
            kind = "" if isinstance(value, (bool, str)) else f", type={type(value).__name__}"
            adds.append(statement(f"{parser}.add_argument(\"--{key}\"{kind}, default={value!r})"))
        for (arg, _, _), key in zip(settings, keys):
            replace[id(arg)] = arg.with_changes(value=cst.parse_expression(f"{namespace}.{key}"))
        replace[id(stmt)] = adds + [stmt]
        chosen += settings
    if not chosen:
        return None
    new = module.visit(Replacer(replace))
    return Rewritten({src.name: new.code}, _expect(src, positions, chosen))
