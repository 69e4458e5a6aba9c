"""DataLoaders a library builds from its own settings: HF `Trainer` makes its loaders from
`TrainingArguments` (knowledge/transformers.py), so a `Trainer` given a dataset is a loader
whose `num_workers` and `pin_memory` are `dataloader_num_workers` / `dataloader_pin_memory`
of its arguments, with the library's defaults where they are not written.

Each such loader is a ``LoaderInfo`` whose ``call`` is where its settings are written: the
`TrainingArguments(...)` call (what a fix edits), or the `Trainer(...)` call itself when it is
given no arguments (the defaults). Only what the code shows counts: arguments that come from
`HfArgumentParser`, a parameter, `**cfg` of unknown contents, a project subclass of
`TrainingArguments` (whose fields may have other defaults), or a setting assigned after the
construction (`args.dataloader_num_workers = n`) are configured, and silent.
"""

from __future__ import annotations

import libcst as cst

from torchsync_lint.analysis.loader_info import ArgValue, LoaderInfo, literal_value
from torchsync_lint.knowledge import transformers

_UNKNOWN = None  # call_keywords: a `**` we cannot read


def trainer_calls(tracker):
    """(call, its keywords, the datasets it is given) for each `Trainer(...)` of the module
    given a dataset, whose keywords can be read."""
    values, index = tracker.values, tracker.index
    for call in index.calls:
        if not _is_trainer(values, index, call):
            continue
        keywords = call_keywords(tracker, call)
        if keywords is _UNKNOWN:
            continue
        positional = [a.value for a in call.args if a.keyword is None and not a.star]
        datasets = [keywords[name].value if name in keywords else positional[i] if i < len(positional) else None for name, i in transformers.TRAINER_DATASETS]
        datasets = [d for d in datasets if d is not None and not _is_none(d)]
        if datasets:  # (none given here: no loader is built from this call's arguments)
            yield call, keywords, datasets


def trainer_loaders(tracker) -> list[LoaderInfo]:
    """One loader per place its settings are written (two Trainers sharing arguments: one)."""
    values = tracker.values
    out: dict[cst.Call, LoaderInfo] = {}
    for call, keywords, datasets in trainer_calls(tracker):
        positional = [a.value for a in call.args if a.keyword is None and not a.star]
        name, position = transformers.TRAINER_ARGS
        args = keywords[name].value if name in keywords else positional[position] if position < len(positional) else None
        if args is None or _is_none(args):
            settings, where = {}, call  # `TrainingArguments(output_dir="tmp_trainer")`: every default
        else:
            where = tracker._constructed_by(args)  # noqa: SLF001 - same package
            if where is None or (values.qualname(where.func) or "") not in transformers.TRAINING_ARGUMENTS:
                continue  # parsed from the command line, passed in, a project subclass: configured
            settings = call_keywords(tracker, where)
            if settings is _UNKNOWN or any(a.keyword is None and not a.star for a in where.args[1:]):
                continue  # `**cfg` we cannot read; positional fields
        if where in out:
            continue
        info = _settings_loader(tracker, where, settings, datasets[0], keyword_args=where is not call)
        if info is not None:
            out[where] = info
    return list(out.values())


def _settings_loader(tracker, where: cst.Call, settings: dict, dataset, keyword_args: bool) -> LoaderInfo | None:
    if any(k in settings and literal_value(settings[k].value) == (True, True) for k in transformers.CPU_SETTINGS):
        return None  # `use_cpu=True`: a CPU run
    found = {}
    for torch_name, (keyword, _default) in transformers.LOADER_SETTINGS.items():
        if _assigned_elsewhere(tracker.index, keyword):
            found[torch_name] = ArgValue("unknown")  # `args.dataloader_num_workers = 4` later
        elif keyword in settings:
            element = settings[keyword]  # the argument, or the element of a `**` dict that sets it
            ok, value = tracker.known_value(element.value)
            found[torch_name] = ArgValue("known", value, element) if ok else ArgValue("unknown", None, element)
        else:
            found[torch_name] = ArgValue("absent")
    info = LoaderInfo(where, dataset, found["num_workers"], found["pin_memory"])
    info.handed_to_trainer = True  # the Trainer moves every batch to its device
    info.defaults = {k: d for k, (_, d) in transformers.LOADER_SETTINGS.items()}
    info.keywords = {k: kw for k, (kw, _) in transformers.LOADER_SETTINGS.items()}
    info.settable = keyword_args
    info.owner = "`Trainer`"
    return info


def call_keywords(tracker, call: cst.Call) -> dict | None:
    """The keywords ``call`` passes (each to the `Arg` or `DictElement` that passes it), with
    `**d` read when ``d`` is a dict display bound once in this module and never changed
    (`d[k] = v`, `d.update(...)`); None when a `**` cannot be read, or `*args` may pass
    anything."""
    out: dict[str, cst.Arg | cst.DictElement] = {}
    for a in call.args:
        if a.star == "*":
            return _UNKNOWN
        if a.star == "**":
            spread = _dict_display(tracker, a.value)
            if spread is None:
                return _UNKNOWN
            out.update(spread)
        elif a.keyword is not None:
            out[a.keyword.value] = a
    return out


def _dict_display(tracker, expr: cst.BaseExpression) -> dict | None:
    if isinstance(expr, cst.Name):
        defs = tracker.values.reaching_defs(expr)
        if len(defs) != 1 or defs[0].how != "assign" or defs[0].value is None or _changed(tracker.index, expr.value):
            return None
        expr = defs[0].value
    if isinstance(expr, cst.Dict):
        out = {}
        for el in expr.elements:
            if not isinstance(el, cst.DictElement):
                return None  # `{**base, ...}`
            ok, key = literal_value(el.key)
            if not ok or not isinstance(key, str):
                return None
            out[key] = el
        return out
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value == "dict" and not tracker.index.binds_locally("dict", expr):
        if any(a.star or a.keyword is None for a in expr.args):
            return None
        return {a.keyword.value: a for a in expr.args}
    return None


def _changed(index, name: str) -> bool:
    """Is a dict named ``name`` changed in place anywhere in the module (`name[k] = v`,
    `name.update(...)`, `del name[k]`)?"""
    for node in index.nodes_of(cst.Subscript):
        if isinstance(node.value, cst.Name) and node.value.value == name and not isinstance(index.parent(node), cst.Expr) and _is_target(index, node):
            return True
    for call in index.calls:
        func = call.func
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == name and func.attr.value in ("update", "setdefault", "pop", "__setitem__", "clear", "popitem"):
            return True
    return False


def _is_target(index, node: cst.CSTNode) -> bool:
    parent = index.parent(node)
    if isinstance(parent, cst.AssignTarget) or isinstance(parent, cst.Del):
        return True
    return isinstance(parent, (cst.AugAssign, cst.AnnAssign)) and parent.target is node


def _assigned_elsewhere(index, attr: str) -> bool:
    """`training_args.dataloader_num_workers = 4` (or `setattr`-free equivalents) anywhere."""
    for node in index.nodes_of(cst.Attribute):
        if node.attr.value == attr and _is_target(index, node):
            return True
    return False


def _is_trainer(values, index, call: cst.Call) -> bool:
    """`Trainer(...)`, `Seq2SeqTrainer(...)`, or a project subclass that does not build its
    own loaders."""
    qn = values.qualname(call.func) or ""
    if qn in transformers.TRAINERS:
        return True
    cls = index.local_class(call.func)
    if cls is not None:
        if any(m in cls.methods for m in transformers.LOADER_METHODS):
            return False
        return values._derives_from(cls.node, lambda q: q in transformers.TRAINERS)  # noqa: SLF001 - same package
    return False


def _is_none(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "None"

