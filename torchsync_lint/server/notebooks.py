"""A notebook document as an editor sends it (LSP 3.17: one text document per cell) and the
linter's Python view of it, both ways, with notebook.py's cell mapping (the same view
`check train.ipynb` lints, so a cell gets the same findings in the editor as on the command
line)."""

from __future__ import annotations

from dataclasses import dataclass

from torchsync_lint.notebook import Notebook, from_cells
from torchsync_lint.types import Finding


@dataclass(frozen=True)
class CellDocument:
    uri: str
    text: str
    code: bool  # a code cell (markdown and raw cells count in the numbering only)
    language: str = "python"


class NotebookBuffer:
    """The cells of one notebook document, numbered from 1 over all cells, as Jupyter, VS Code
    and `check` number them."""

    def __init__(self, cells: list[CellDocument]) -> None:
        self.cells = cells
        self.uris = {number: cell.uri for number, cell in enumerate(cells, 1)}
        self.numbers = {cell.uri: number for number, cell in enumerate(cells, 1)}
        python_cells = [(number, c.text) for number, c in enumerate(cells, 1) if c.code and c.language.lower() in ("python", "python3", "ipython", "ipython3")]
        self.notebook: Notebook = from_cells(python_cells)

    @property
    def python(self) -> str:
        return self.notebook.python

    def to_cell(self, finding: Finding) -> tuple[str, Finding] | None:
        """``finding`` (in the Python view) -> its cell's URI and the finding in that cell."""
        if not self.notebook.cells:
            return None
        located = self.notebook.to_cells(finding)
        uri = self.uris.get(located.cell)
        return (uri, located) if uri is not None else None

    def to_view(self, uri: str, line: int, column: int) -> tuple[int, int] | None:
        """A 1-based (line, column) of a cell -> the same point in the Python view."""
        number = self.numbers.get(uri)
        view_line = self.notebook.view_line(number, line) if number is not None else None
        return (view_line, column) if view_line is not None else None

    def edited_cells(self, python: str) -> dict[str, str]:
        """An edited Python view -> cell URI: its new text, for the cells that changed
        (NotebookError when the edit crossed a cell boundary or an IPython line)."""
        return {self.uris[number]: text for number, text in self.notebook.cell_texts(python).items()}
