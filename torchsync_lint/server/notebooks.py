"""A notebook document as an editor sends it (LSP 3.17: one text document per cell), as the
notebook file the pipeline reads: an nbformat 4 JSON text with the same cells in the same
order, so that cell numbers, IPython lines and findings are exactly those of
`check train.ipynb` (notebook.py), and each finding's cell number leads back to its cell's URI.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

_PYTHON = ("python", "python3", "ipython", "ipython3")


@dataclass(frozen=True)
class CellDocument:
    uri: str
    text: str
    code: bool  # a code cell (markdown cells count in the numbering only)
    language: str = "python"
    version: int | None = None  # the editor's version of the cell's text (for versioned edits)


class NotebookBuffer:
    """The cells of one notebook document, numbered from 1 over all cells, as Jupyter, VS Code
    and `check` number them."""

    def __init__(self, cells: list[CellDocument]) -> None:
        self.cells = cells
        self.uris = {number: cell.uri for number, cell in enumerate(cells, 1)}
        self.numbers = {cell.uri: number for number, cell in enumerate(cells, 1)}

    def text_of(self, uri: str) -> str:
        return self.cells[self.numbers[uri] - 1].text

    def json(self) -> str:
        """The notebook file these cells make. A code cell in another language (a `%%sql` cell
        VS Code marks as SQL) becomes a raw cell: it keeps its number and is not linted."""
        cells = []
        for cell in self.cells:
            python = cell.code and cell.language.lower() in _PYTHON
            kind = "code" if python else ("raw" if cell.code else "markdown")
            entry = {"cell_type": kind, "metadata": {}, "source": cell.text}
            if python:
                entry.update(execution_count=None, outputs=[])
            cells.append(entry)
        notebook = {"cells": cells, "metadata": {"language_info": {"name": "python"}}, "nbformat": 4, "nbformat_minor": 5}
        return json.dumps(notebook, indent=1, ensure_ascii=False) + "\n"
