"""Jupyter notebooks (`.ipynb`): lint, fix and `--add-noqa` their code cells.

**The json module, not nbformat.** We need each code cell's `source` and, to write a fix
back, where that value sits in the file's text. nbformat gives neither more nor less than
`json.loads` for reading, but it is not on the lint path's dependency list (it pulls in
jsonschema/fastjsonschema, traitlets and jupyter_core into every pre-commit environment),
and its writer re-serialises the whole notebook (`indent=1`, sorted keys, its own escaping),
which would rewrite outputs, metadata and the formatting of notebooks not saved by Jupyter.
So a notebook is validated with `json.loads`, and a short walk with the json module's own
scanner records the text span of every cell's `source` (and of each string in a line
list); a fix replaces only the strings of the lines it changed, in the file's own style
(separator, indent, `ensure_ascii`), and every other byte of the file stays as it was.

**The Python view.** The code cells (`cell_type: "code"`) are joined in order into one module
(the cells share one namespace when the notebook runs top to bottom, so a loader built in
cell 2 feeds the loop in cell 5). Each cell is preceded by a marker comment line, so the
view splits back into cells after a fix, and every view line maps back to (cell, line). The
markers (and ipython.py's tags) carry a nonce that occurs nowhere in the notebook's text,
so no line a user wrote, `# @tsl-cell 7` included, can be taken for one. A cell's lines
end in `\n`, `\r\n` or `\r`, as Python and IPython read them: the view ends every line in
`\n`, and a written cell gets its own line ends back. IPython syntax (magics, shell
escapes) becomes neutral lines of the same count (ipython.py), restored when the cell is
written.

Cells are numbered from 1 over all cells (markdown too), as Jupyter, VS Code and ruff do.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
import warnings
from dataclasses import dataclass, field, replace
from difflib import SequenceMatcher
from functools import cached_property
from json.decoder import scanstring

from torchsync_lint.files import ReadError, SourceFile, read_bytes
from torchsync_lint.ipython import python_view, restore
from torchsync_lint.lines import split_ends, split_lf, split_lines
from torchsync_lint.types import Edit, Finding

SUFFIX = ".ipynb"
# The marker holds none of the engine's trigger words (`torch`, `device`, ...), so a notebook
# without them is skipped unparsed, as a Python file is; nor does its nonce (hex digits).
_MARKER = "# @tsl-cell {index} {nonce}"
# A line ends at \r\n, \r or \n, as in Python's tokenizer and IPython's cell splitter.
_PYTHON_LANGUAGES = {"python", "python3", "ipython", "ipython3"}


def is_notebook(path: str | None) -> bool:
    return bool(path) and path.lower().endswith(SUFFIX)


class NotebookError(Exception):
    """A fix that cannot be written back into the notebook's cells."""


@dataclass
class Cell:
    index: int  # 1-based over all cells
    text: str  # the source as the user wrote it
    span: tuple[int, int]  # where the `source` value sits in the file text
    items: list[tuple[int, int]] | None  # spans of its strings when `source` is a list
    python: str  # the cell as Python: IPython lines neutralised, every line ending in "\n"
    added_newline: bool  # the cell did not end with a newline; the view added one
    magics: dict[int, tuple[str, str]] = field(default_factory=dict)  # tag -> (as written, neutral)
    endings: list[str] = field(default_factory=list)  # each line's own ending as written ("" for the last without one)


@dataclass(frozen=True)
class NotebookFile(SourceFile):
    """The notebook's file text (what is diffed and written), plus its cells for reporters."""

    @cached_property
    def cells(self) -> dict[int, str]:
        try:
            return {c.index: c.text for c in parse_notebook(self.text).cells}
        except ReadError:
            return {}

    def cell_lines(self, index: int) -> list[str]:
        return [body for body, _ in split_ends(self.cells.get(index, ""))]


# -- reading ---------------------------------------------------------------------------------------

def read_notebook(path: str) -> Notebook:
    """The notebook at ``path``, with the fingerprint a write checks (files.read_bytes)."""
    data, taken = read_bytes(path)
    encoding = "utf-8-sig" if data.startswith(b"\xef\xbb\xbf") else "utf-8"
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        raise ReadError("TSL901", f"cannot decode: a notebook is UTF-8 JSON ({exc})") from exc
    nb = parse_notebook(text, encoding)
    nb.fingerprint = taken
    return nb


def _nonce(text: str, cells: list[str]) -> str:
    """Hex digits that occur nowhere in ``text`` nor in ``cells``: the markers' and tags' own."""
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    salt = 0
    while digest[:12] in text or any(digest[:12] in cell for cell in cells):
        salt += 1
        digest = hashlib.sha256(f"{salt}:{digest}".encode()).hexdigest()
    return digest[:12]


def parse_notebook(text: str, encoding: str = "utf-8") -> Notebook:
    """ReadError(TSL901) when ``text`` is not an nbformat 4 notebook."""
    try:
        nb = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise ReadError("TSL901", f"not a valid notebook: malformed JSON ({exc})") from exc
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        version = nb.get("nbformat") if isinstance(nb, dict) else None
        hint = f"nbformat {version} is not supported, only 4 (`jupyter nbconvert --to notebook` upgrades it)" if isinstance(version, int) and version < 4 else 'no "cells" list'
        raise ReadError("TSL901", f"not a valid notebook: {hint}")
    spans = _source_spans(text)
    sources: list[tuple[int, str]] = []
    for k, cell in enumerate(nb["cells"]):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        if isinstance(source, list) and all(isinstance(s, str) for s in source):
            sources.append((k, "".join(source)))
        elif isinstance(source, str):
            sources.append((k, source))
        else:
            raise ReadError("TSL901", f"not a valid notebook: cell {k + 1} has a `source` that is not text")
        if k not in spans:
            raise ReadError("TSL901", f"not a valid notebook: cell {k + 1} has no `source`")
    nonce = _nonce(text, [joined for _, joined in sources])  # absent from the file and every cell as decoded
    cells: list[Cell] = []
    for k, joined in sources:
        span, items = spans[k]
        lines = split_ends(joined)
        python, magics = python_view("".join(body + "\n" for body, _ in lines), nonce)
        if python is None:
            continue  # %%bash and friends
        added = bool(lines) and not lines[-1][1]
        cells.append(Cell(k + 1, joined, span, items, python, added, magics, [end for _, end in lines]))
    return Notebook(text, encoding, _language(nb), cells, nonce)


def _language(nb: dict) -> str | None:
    meta = nb.get("metadata") if isinstance(nb.get("metadata"), dict) else {}
    for key, sub in (("language_info", "name"), ("kernelspec", "language")):
        value = meta.get(key, {}).get(sub) if isinstance(meta.get(key), dict) else None
        if isinstance(value, str):
            return value.lower()
    return None


# -- where each cell's `source` is in the file text --------------------------------------------------

_WS = re.compile(r"[ \t\n\r]*")
_scan_once = json.JSONDecoder().scan_once


def _ws(s: str, i: int) -> int:
    return _WS.match(s, i).end()


def _value_end(s: str, i: int) -> int:
    return _scan_once(s, i)[1]


def _members(s: str, i: int) -> list[tuple[str, int, int]]:
    """(key, value start, value end) of the JSON object starting at ``s[i] == "{"``."""
    i = _ws(s, i + 1)
    out: list[tuple[str, int, int]] = []
    if s[i] == "}":
        return out
    while True:
        key, i = scanstring(s, i + 1)
        i = _ws(s, _ws(s, i) + 1)  # past the colon
        end = _value_end(s, i)
        out.append((key, i, end))
        i = _ws(s, end)
        if s[i] == "}":
            return out
        i = _ws(s, i + 1)  # past the comma


def _elements(s: str, i: int) -> list[tuple[int, int]]:
    """(start, end) of each value of the JSON array starting at ``s[i] == "["``."""
    i = _ws(s, i + 1)
    out: list[tuple[int, int]] = []
    if s[i] == "]":
        return out
    while True:
        end = _value_end(s, i)
        out.append((i, end))
        i = _ws(s, end)
        if s[i] == "]":
            return out
        i = _ws(s, i + 1)


def _source_spans(s: str) -> dict[int, tuple[tuple[int, int], list[tuple[int, int]] | None]]:
    """Cell number (0-based) -> (span of its `source` value, spans of the list's strings or
    None for a single string). ``s`` has already been validated by ``json.loads``; for a
    repeated key the last one wins, as in ``json.loads``."""
    root = dict((k, (a, b)) for k, a, b in _members(s, _ws(s, 0)))
    out = {}
    for n, (start, _end) in enumerate(_elements(s, root["cells"][0])):
        if s[start] != "{":
            continue
        members = {k: (a, b) for k, a, b in _members(s, start)}
        if "source" in members:
            a, b = members["source"]
            out[n] = ((a, b), _elements(s, a) if s[a] == "[" else None)
    return out


# -- the notebook as one module, and back ----------------------------------------------------------

@dataclass
class Notebook:
    text: str  # the file
    encoding: str
    language: str | None
    cells: list[Cell]  # the code cells that are Python
    nonce: str = "0"  # in every marker and IPython tag; occurs nowhere in ``text``
    fingerprint: tuple | None = None  # of the file as read (a write checks it is unchanged)

    @property
    def is_python(self) -> bool:
        return self.language is None or self.language in _PYTHON_LANGUAGES

    @cached_property
    def python(self) -> str:
        return "".join(_MARKER.format(index=c.index, nonce=self.nonce) + "\n" + c.python for c in self.cells)

    @cached_property
    def _marker_line(self) -> re.Pattern:
        return re.compile(r"# @tsl-cell (\d+) " + re.escape(self.nonce))

    @cached_property
    def _rows(self) -> list[tuple[int, int]]:
        return self.rows(self.python)

    def source_file(self) -> NotebookFile:
        newline = "\r\n" if "\r\n" in self.text[:100000] else "\n"
        return NotebookFile(self.text, self.encoding, newline, self.fingerprint)

    def to_cells(self, finding: Finding, python: str | None = None) -> Finding:
        """``finding`` in the Python view (this one, or the edited ``python``) at its cell and
        its line there; its fix's edits too."""
        table = self._rows if python is None else self.rows(python)
        cell, line = _locate(table, finding.line)
        end_cell, end_line = _locate(table, finding.end_line)
        if end_cell != cell:
            end_line = line
        fix = finding.fix
        if fix is not None and fix.edits:
            fix = replace(fix, edits=tuple(_edit_to_cells(e, table) for e in fix.edits))
        return replace(finding, line=line, end_line=end_line, cell=cell, fix=fix)

    def syntax_error(self, path: str) -> Finding | None:
        """TSL900 at the first cell that does not compile on its own (Python's message)."""
        from torchsync_lint.errors import file_error

        from torchsync_lint.pytree import parse_tree

        flags = getattr(ast, "PyCF_ALLOW_TOP_LEVEL_AWAIT", 0)
        for c in self.cells:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    parse_tree(c.python, path, flags)
            except SyntaxError as exc:
                line = min(max(exc.lineno or 1, 1), max(c.python.count("\n"), 1))
                error = file_error(path, "TSL900", f"cannot parse cell {c.index}: {exc.msg}", line, max(exc.offset or 1, 1))
                return replace(error, cell=c.index)
            except (ValueError, RecursionError, MemoryError) as exc:
                return replace(file_error(path, "TSL900", f"cannot parse cell {c.index}: {type(exc).__name__}"), cell=c.index)
        return None

    def with_python(self, python: str) -> str:
        """The file text with the cells as they are in ``python`` (an edited Python view).
        NotebookError when the edit crossed a cell boundary or touched an IPython line."""
        by_index = {c.index: c for c in self.cells}
        replacements = [(by_index[index].span, self._render(by_index[index], text)) for index, text in self.cell_texts(python).items()]
        out = self.text
        for (start, end), new in sorted(replacements, reverse=True):
            out = out[:start] + new + out[end:]
        return out

    def cell_texts(self, python: str) -> dict[int, str]:
        """The cells an edited Python view changed: cell number -> its new text, IPython lines
        restored. NotebookError when the edit crossed a cell boundary or touched an IPython
        line."""
        segments = self._segments(python)
        if [index for index, _ in segments] != [c.index for c in self.cells]:
            raise NotebookError("an edit moved a cell boundary")
        changed: dict[int, str] = {}
        for cell, (_, text) in zip(self.cells, segments):
            if text == cell.python:
                continue
            text = restore(text, cell.magics, self.nonce)
            if text is None:
                raise NotebookError(f"an edit changed an IPython line of cell {cell.index}")
            text = _with_endings(cell, text)
            if text != cell.text:
                changed[cell.index] = text
        return changed

    def _render(self, cell: Cell, text: str) -> str:
        """``text`` as the cell's `source` JSON value, in the file's own layout; the strings of
        unchanged lines are kept as they were written."""
        ensure_ascii = not any(ord(ch) > 127 for ch in self.text)
        if cell.items is None:
            return json.dumps(text, ensure_ascii=ensure_ascii)
        old_raw = [self.text[a:b] for a, b in cell.items]
        old = [json.loads(r) for r in old_raw]
        new = split_lines(text)
        items: list[str] = []
        matcher = SequenceMatcher(None, old, new, autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag == "equal":
                items += old_raw[i1:i2]
            else:
                items += [json.dumps(line, ensure_ascii=ensure_ascii) for line in new[j1:j2]]
        if not items:
            return "[]"
        lead, sep, close = self._list_layout(cell)
        return "[" + lead + sep.join(items) + close + "]"

    def _list_layout(self, cell: Cell) -> tuple[str, str, str]:
        """(after `[`, between items, before `]`) as this cell's list is written."""
        (start, end), items, s = cell.span, cell.items, self.text
        if items:
            lead = s[start + 1 : items[0][0]]
            close = s[items[-1][1] : end - 1]
            sep = s[items[0][1] : items[1][0]] if len(items) > 1 else "," + lead
            return lead, sep, close
        if "\n" not in s[:start]:
            return "", ",", ""  # a notebook written without newlines
        newline = "\r\n" if "\r\n" in s else "\n"
        line_start = s.rfind("\n", 0, start) + 1
        indent = re.match(r"[ \t]*", s[line_start:]).group(0)
        unit = re.match(r"\{\r?\n([ \t]*)", s)
        unit = unit.group(1) if unit else " "
        return newline + indent + unit, "," + newline + indent + unit, newline + indent


    def rows(self, python: str) -> list[tuple[int, int]]:
        """Python-view line (0-based) -> (cell, line in the cell); a marker is line 0 of its cell."""
        table, cell, row = [], 1, 0
        for line in split_lf(python):
            m = self._marker_line.fullmatch(line.rstrip("\n"))
            cell, row = (int(m.group(1)), 0) if m else (cell, row + 1)
            table.append((cell, row))
        return table

    def _segments(self, python: str) -> list[tuple[int, str]]:
        """The Python view split at its cell markers: (cell, text) in order. Text an edit put
        before the first marker belongs to the first cell."""
        segments: list[tuple[int, list[str]]] = []
        before: list[str] = []
        for line in split_lf(python):
            m = self._marker_line.fullmatch(line.rstrip("\n"))
            if m:
                segments.append((int(m.group(1)), []))
            elif segments:
                segments[-1][1].append(line)
            else:
                before.append(line)
        if before and segments:
            segments[0][1][:0] = before
        return [(index, "".join(lines)) for index, lines in segments]


def _with_endings(cell: Cell, text: str) -> str:
    """``text`` (the cell's lines, each ending in "\\n" as in the view) with the cell's own
    line ends: an unchanged line keeps its ending, a new one takes the cell's first; the last
    line has none when the cell had none."""
    old = [body for body, _ in split_ends(cell.python)]
    new = [body for body, _ in split_ends(text)]
    default = next((end for end in cell.endings if end), "\n")
    endings = [default] * len(new)
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag == "equal" or (tag == "replace" and i2 - i1 == j2 - j1):
            endings[j1:j2] = [end or default for end in cell.endings[i1:i2]]
    if endings and cell.added_newline:
        endings[-1] = ""
    return "".join(body + end for body, end in zip(new, endings))


def _locate(table: list[tuple[int, int]], line: int) -> tuple[int, int]:
    if not table:
        return 1, max(line, 1)
    cell, row = table[min(max(line, 1), len(table)) - 1]
    return cell, max(row, 1)


def _edit_to_cells(edit: Edit, table: list[tuple[int, int]]) -> Edit:
    cell, line = _locate(table, edit.line)
    _, end_line = _locate(table, edit.end_line)
    return replace(edit, line=line, end_line=end_line, cell=cell)


def load(path: str, text: str | None = None) -> Notebook:
    """The notebook at ``path`` (``text``: its content, already read, e.g. from stdin)."""
    return read_notebook(path) if text is None else parse_notebook(text)
