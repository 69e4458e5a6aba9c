"""Making a module's summary (project/summary.py) for the session: the env-free analysis of its
text, a worker's summary of a file, and the summarizers a session keeps to compute the deferred
fields of its summaries (project/deferred.py) when the view reads them.

Nothing here imports the parser at import time: a run the cache serves never loads libcst.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from pathlib import Path

from torchsync_lint import sources
from torchsync_lint.files import ReadError


def text_sha(text: str) -> str:
    """The SHA-256 of a module's text, as every key names it (lone surrogates kept)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def analyse(text: str | None):
    """The env-free analysis of a module's ``text``, or None when it cannot be parsed."""
    import libcst as cst

    from torchsync_lint.analysis import ModuleAnalysis

    if text is None:
        return None
    try:
        return ModuleAnalysis(cst.parse_module(text), text)
    except Exception:  # noqa: BLE001 - a module we cannot summarise is unknown, never a crash
        return None


def summary_of(summarizer) -> dict | None:
    try:
        return summarizer.run()
    except Exception:  # noqa: BLE001 - a module we cannot summarise is unknown, never a crash
        return None


def analyse_and_summarize(rel: str, text: str):
    """(summary, analysis) of one module, every field computed, or (None, None) when it
    cannot be summarised."""
    from torchsync_lint.project.summary import Summarizer

    analysis = analyse(text)
    summary = summary_of(Summarizer(analysis, rel)) if analysis is not None else None
    return (summary, analysis) if summary is not None else (None, None)


def summarize_file(root: str, rel: str) -> tuple[str | None, dict | None]:
    """A worker's (hash of the text it read, summary) of one module (parsed there, nothing
    kept, every field computed): just the file, not a whole Session (whose layout would
    re-read pyproject.toml for every module). The hash says which text the summary is of: the
    file may have been saved since the session read it."""
    try:
        text = sources.read(str(Path(root) / rel)).python
    except ReadError:
        text = None
    return (text_sha(text), analyse_and_summarize(rel, text)[0]) if text is not None else (None, None)


class Summarizers:
    """Summarizers of modules, to compute their summaries' deferred fields: the most recently
    used kept, within ``budget`` bytes of source (at least one). Each holds its module's
    analysis, parse included, so memory stays bounded however large the project; a module
    whose summarizer was dropped is parsed again if the view reads another of its fields."""

    def __init__(self, budget: int) -> None:
        self._budget = budget
        self._kept: OrderedDict[str, object] = OrderedDict()
        self._bytes = 0

    def keep(self, rel: str, analysis, defer=None) -> tuple[object, list[tuple[str, object]]]:
        """(a summarizer of ``rel``'s ``analysis``, kept; the (rel, analysis) pairs no longer
        held to make room for it, which their owner may release). ``defer``: see
        summary.summarize."""
        from torchsync_lint.project.summary import Summarizer

        dropped = self.drop(rel)
        summarizer = self._kept[rel] = Summarizer(analysis, rel, defer)
        self._bytes += len(analysis.source)
        while len(self._kept) > 1 and self._bytes > self._budget:
            oldest_rel, oldest = self._kept.popitem(last=False)
            self._bytes -= len(oldest.a.source)
            dropped.append((oldest_rel, oldest.a))
        return summarizer, dropped

    def analyses(self) -> list:
        return [summarizer.a for summarizer in self._kept.values()]

    def holds(self, rel: str, analysis) -> bool:
        found = self._kept.get(rel)
        return found is not None and found.a is analysis

    def get(self, rel: str):
        found = self._kept.get(rel)
        if found is not None:
            self._kept.move_to_end(rel)
        return found

    def drop(self, rel: str) -> list[tuple[str, object]]:
        """The (rel, analysis) pair of ``rel``'s summarizer, no longer held (none: empty)."""
        found = self._kept.pop(rel, None)
        if found is None:
            return []
        self._bytes -= len(found.a.source)
        return [(rel, found.a)]
