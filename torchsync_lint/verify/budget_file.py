"""The sync budget file: a TOML file meant to be committed, read with tomllib (tomli before
Python 3.11) and written by a small deterministic writer for this one fixed schema (the
standard library has no TOML writer; the lint path takes no dependency for it).

    version = 1

    [scripts."train.py"]            # path relative to the project root of the budget file
    args = ["--epochs", "1"]        # the script's arguments (after `--`)
    steps = 10                      # --steps of the run that wrote it
    warmup = 2
    window = 10                     # steady-state steps that run observed
    backend = "emulate"
    tolerance = 0                   # syncs per step a line or the total may rise; kept on update
    total = 2.25                    # syncs per step of the whole script (gated lines amortised)
    syncs = [
        { file = "engine.py", line = 31, function = "train_step", kind = "host-read", count = 1, every = 1, code = "loss.item()" },
        { file = "train.py", line = 57, function = "main", kind = "metric", count = 1, every = 4, code = "...", via = "torchmetrics/utilities/data.py:206 _bincount" },
    ]

Written twice from the same measurements, the text is byte-identical: scripts sorted by path,
syncs by place and kind, keys in a fixed order, numbers in one spelling, no timestamps.
"""

from __future__ import annotations

import math
import os
import re

try:  # Python 3.11+
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

from torchsync_lint.atomic import fingerprint, write_atomic
from torchsync_lint.verify.budget import KINDS, BudgetFile, LineCount, Period, ScriptBudget, line_order
from torchsync_lint.verify.scripts import project_directory

VERSION = 1
HEADER = (
    "# torchsync-lint sync budget: steady-state CPU-GPU syncs per training step, by script and line.\n"
    "# `torchsync-lint verify --budget FILE` fails when one rises; `--update-budget` rewrites this file.\n"
    "# Paths are relative to the project root. `tolerance` is yours to edit: an update keeps it.\n"
)


class BudgetError(Exception):
    """The budget file is missing, unreadable or not of this schema (exit status 2)."""


def budget_root(budget_path: str) -> str:
    """Paths in the budget are relative to the project root of the budget file (the nearest
    directory above it with a pyproject.toml, setup.cfg or .git), else to its directory: the
    same keys wherever the checkout lives and wherever the file sits in it."""
    return project_directory(budget_path)


# --- reading -----------------------------------------------------------------------------------


def load(path: str) -> BudgetFile:
    return load_with_fingerprint(path)[0]


def load_with_fingerprint(path: str) -> tuple[BudgetFile, tuple]:
    """The budget and the fingerprint of the bytes it was read from (atomic.fingerprint: what
    a write compares to leave a file changed meanwhile alone)."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
            seen = fingerprint(os.fstat(handle.fileno()), raw)
    except FileNotFoundError:
        raise BudgetError(f"{path}: no such budget file (write one with --update-budget)") from None
    except OSError as exc:
        raise BudgetError(f"{path}: cannot read the budget file: {exc.strerror or exc}") from None
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise BudgetError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except tomllib.TOMLDecodeError as exc:
        raise BudgetError(f"{path}: not valid TOML: {exc}") from None
    except RecursionError:  # tomllib parses nested arrays and tables recursively
        raise BudgetError(f"{path}: not valid TOML for a sync budget: nested too deeply") from None
    return parse(data, path), seen


def parse(data: dict, path: str) -> BudgetFile:
    version = data.get("version")
    if version != VERSION:
        raise BudgetError(f"{path}: `version = {VERSION}` expected (found {version!r}): not a sync budget of this torchsync-lint")
    unknown = sorted(set(data) - {"version", "scripts"})
    if unknown:
        raise BudgetError(f"{path}: unknown top-level key(s) {', '.join(unknown)}")
    scripts = data.get("scripts", {})
    if not isinstance(scripts, dict):
        raise BudgetError(f"{path}: `scripts` must be a table of scripts")
    budget = BudgetFile(path)
    for name, table in scripts.items():
        where = f"{path}: scripts.{_key(name)}"
        if not isinstance(table, dict):
            raise BudgetError(f"{where}: must be a table")
        problem = key_problem(name)
        if problem:
            raise BudgetError(f"{where}: {problem}")
        budget.scripts[name] = _script(name, table, where)
    return budget


_SCRIPT_KEYS = {"args", "steps", "warmup", "window", "backend", "tolerance", "total", "scale", "syncs"}
_LINE_KEYS = {"file", "line", "function", "kind", "count", "every", "every_at_least", "code", "via"}


def _script(name: str, table: dict, where: str) -> ScriptBudget:
    _no_unknown(table, _SCRIPT_KEYS, where)
    args = _get(table, "args", list, where)
    if not all(isinstance(a, str) for a in args):
        raise BudgetError(f"{where}: `args` must be a list of strings")
    tolerance = _amount(table, "tolerance", where, default=0)
    syncs = _get(table, "syncs", list, where, default=[])
    script = ScriptBudget(
        path=name,
        args=list(args),
        steps=_positive(table, "steps", where),
        warmup=_positive(table, "warmup", where, minimum=0),
        window=_positive(table, "window", where),
        backend=_get(table, "backend", str, where),
        tolerance=tolerance,
        total=float(_amount(table, "total", where, default=0.0)),
        scale=_get(table, "scale", str, where, default=None),
    )
    for i, item in enumerate(syncs):
        script.lines.append(_line(item, f"{where}.syncs[{i}]"))
    return script


def _line(item: object, where: str) -> LineCount:
    if not isinstance(item, dict):
        raise BudgetError(f"{where}: must be a table {{ file = ..., line = ..., kind = ..., count = ..., every = ... }}")
    _no_unknown(item, _LINE_KEYS, where)
    kind = _get(item, "kind", str, where)
    if kind not in KINDS:
        raise BudgetError(f"{where}: unknown kind {kind!r} (one of: {', '.join(KINDS)})")
    if ("every" in item) == ("every_at_least" in item):
        raise BudgetError(f"{where}: give exactly one of `every` (its period in steps) and `every_at_least`")
    exact = "every" in item
    period = Period(_positive(item, "every" if exact else "every_at_least", where), exact)
    return LineCount(
        file=_get(item, "file", str, where),
        line=_positive(item, "line", where, minimum=0),
        function=_get(item, "function", str, where, default=""),
        code=_get(item, "code", str, where, default=""),
        kind=kind,
        count=_positive(item, "count", where),
        period=period,
        via=_get(item, "via", str, where, default=None),
    )


def _get(table: dict, key: str, kind: type | tuple, where: str, default: object = ...) -> object:
    if key not in table:
        if default is ...:
            raise BudgetError(f"{where}: `{key}` is missing")
        return default
    value = table[key]
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        names = " or ".join(k.__name__ for k in (kind if isinstance(kind, tuple) else (kind,)))
        raise BudgetError(f"{where}: `{key}` must be {_TYPE_WORDS.get(names, names)}, not {value!r}")
    return value


_TYPE_WORDS = {"list": "a list", "str": "a string", "int": "an integer", "int or float": "a number"}


def _amount(table: dict, key: str, where: str, default: float | int) -> float | int:
    """A number of syncs per step: finite and >= 0 (TOML spells nan and inf, and a nan
    total would compare as within any budget)."""
    value = _get(table, key, (int, float), where, default=default)
    try:
        finite = math.isfinite(value)
    except OverflowError:  # an integer beyond any float
        finite = False
    if not (finite and value >= 0):
        raise BudgetError(f"{where}: `{key}` must be a finite number >= 0, not {value!r}")
    return value


def key_problem(name: str) -> str | None:
    """Why ``name`` cannot be a script key: a key is a path relative to the project root,
    '/'-separated, that stays inside it. The budget replays its scripts, so a key naming a
    file elsewhere (`../x.py`, `/tmp/x.py`) would run code from outside the project."""
    if name.startswith("/"):
        return "a script key must be a '/'-separated path relative to the project root, not an absolute path"
    if any(part in ("", ".", "..") for part in name.split("/")):
        return "a script key must be a path inside the project root (no `..`, `.` or empty parts)"
    return None


_MAX_INTEGER = 2**53


def _positive(table: dict, key: str, where: str, minimum: int = 1) -> int:
    value = _get(table, key, int, where)
    if value < minimum:
        raise BudgetError(f"{where}: `{key}` must be an integer >= {minimum}, not {value}")
    if value > _MAX_INTEGER:  # TOML integers are unbounded; totals and periods become floats
        raise BudgetError(f"{where}: `{key}` must be an integer <= 2**53")
    return value


def _no_unknown(table: dict, known: set[str], where: str) -> None:
    unknown = sorted(set(table) - known)
    if unknown:
        raise BudgetError(f"{where}: unknown key(s) {', '.join(unknown)}")


# --- writing -----------------------------------------------------------------------------------


def dumps(budget: BudgetFile) -> str:
    out = [HEADER, f"version = {VERSION}\n"]
    for name in sorted(budget.scripts):
        script = budget.scripts[name]
        out.append(f"\n[scripts.{_key(name)}]\n")
        out.append(f"args = {_array(script.args)}\n")
        out.append(f"steps = {script.steps}\nwarmup = {script.warmup}\nwindow = {script.window}\n")
        out.append(f"backend = {_string(script.backend)}\n")
        if script.scale is not None:
            out.append(f"scale = {_string(script.scale)}\n")
        out.append(f"tolerance = {_number(script.tolerance)}\n")
        out.append(f"total = {_number(float(script.total))}\n")
        lines = sorted(script.lines, key=line_order)
        if not lines:
            out.append("syncs = []\n")
            continue
        out.append("syncs = [\n")
        for line in lines:
            out.append(f"    {_inline(line)},\n")
        out.append("]\n")
    return "".join(out)


def _inline(line: LineCount) -> str:
    fields = [
        ("file", _string(line.file)),
        ("line", str(line.line)),
        ("function", _string(line.function)),
        ("kind", _string(line.kind)),
        ("count", str(line.count)),
        ("every" if line.period.exact else "every_at_least", str(line.period.every)),
        ("code", _string(line.code)),
    ]
    if line.via:
        fields.append(("via", _string(line.via)))
    return "{ " + ", ".join(f"{key} = {value}" for key, value in fields) + " }"


def write(budget: BudgetFile, path: str | None = None, expected: tuple | None = None) -> bool:
    """Write atomically (atomic.py: a crash never leaves half a file; WriteError when it
    cannot be written); False when the text is unchanged (the file is then left untouched,
    its timestamp included). ``expected``: the fingerprint of the file as read; a file that
    no longer matches it is left alone (ChangedOnDisk). budget_update.py locks and merges."""
    path = path or budget.path
    text = dumps(budget)
    try:
        with open(path, encoding="utf-8", newline="") as handle:
            if handle.read() == text:
                return False
    except (OSError, UnicodeDecodeError):
        pass
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    write_atomic(path, text.encode("utf-8"), expected=expected, retry="run --update-budget again")  # WriteError: the file is as it was
    return True


_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


def _string(text: str) -> str:
    """A TOML basic string: quotes, backslashes and control characters escaped."""
    out = []
    for char in text:
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\u{ord(char):04X}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def _key(name: str) -> str:
    return name if _BARE_KEY.fullmatch(name) else _string(name)


def _array(items: list[str]) -> str:
    return "[" + ", ".join(_string(item) for item in items) + "]"


def _number(value: float | int) -> str:
    if isinstance(value, bool):  # pragma: no cover - rejected on load
        raise TypeError("a bool is not a number here")
    if isinstance(value, int):
        return str(value)
    if not math.isfinite(value):
        raise ValueError(f"a budget number must be finite, not {value!r}")
    return repr(round(value, 3) + 0.0)  # repr: the shortest spelling that reads back equal; +0.0: no -0.0
