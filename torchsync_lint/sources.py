"""Sources enter the linter through this one layer: a file on disk, standard input, a
notebook, an editor buffer that is not saved yet. Each becomes a ``Source``: the module the
engine lints (a notebook: its code cells joined, notebook.py), the file as it is (for
snippets and for writing back), and the way back from the module's positions to the file's.

Nothing here lints or fixes: the project session (project/session.py) lints Sources, the
fixer and `--add-noqa` write them back.
"""

from __future__ import annotations

from dataclasses import dataclass

from torchsync_lint.files import SourceFile, _newline, decode_source, read_source
from torchsync_lint.notebook import Notebook, is_notebook, load as load_notebook
from torchsync_lint.types import Finding


@dataclass
class Source:
    path: str  # as reported (stdin: its --stdin-filename)
    file: SourceFile  # the file's own text (a notebook: its JSON), for reporters and writing back
    python: str | None  # the module the engine lints; None: nothing to lint (a notebook in another language, or without code cells)
    notebook: Notebook | None = None

    def to_file(self, finding: Finding, python: str | None = None) -> Finding:
        """``finding`` (positions in ``python``, default this source's module) at its place in
        the file: a notebook's cell and line there."""
        return self.notebook.to_cells(finding, python) if self.notebook is not None else finding

    def file_errors(self, errors: list[Finding], path: str | None = None) -> list[Finding]:
        """The TSL90x of a lint, in the file's terms: a notebook's TSL900 is reported at the
        first cell that does not compile on its own, with Python's message."""
        if self.notebook is None or not any(e.code == "TSL900" for e in errors):
            return errors
        precise = self.notebook.syntax_error(path or self.path)
        return [(precise or e) if e.code == "TSL900" else e for e in errors]

    def write_back(self, python: str) -> str:
        """The file text holding ``python`` (an edited module); NotebookError when the edit
        cannot go back into a notebook's cells."""
        return self.notebook.with_python(python) if self.notebook is not None else python


def read(path: str, text: str | bytes | None = None, *, report_as: str | None = None) -> Source:
    """The Source at ``path``; ``text``: its content already in hand (stdin, an editor's
    buffer), decoded as the file would be. ReadError (TSL901/TSL902) when it cannot be read."""
    shown = report_as or path
    if is_notebook(shown):
        if isinstance(text, bytes):
            text = decode_source(text).text
        nb = load_notebook(path, text)
        python = nb.python if nb.is_python and nb.cells else None
        return Source(shown, nb.source_file(), python, nb)
    if text is None:
        file = read_source(path)
    elif isinstance(text, bytes):
        file = decode_source(text)
    else:
        file = SourceFile(text, "utf-8", _newline(text))  # (files.py's own rule for the newline)
    return Source(shown, file, file.text)

