"""Match runtime evidence to static findings and inline markers (plain Python, no torch).

Per script:
* every static finding and every ``# expect: CODE`` marker becomes one entry keyed by
  (line, code): ``confirmed`` when an event at that line has a kind that confirms the code
  (evidence.CONFIRMS), else ``unconfirmed`` (or ``not-observable`` for rules whose hazard
  does not show up at runtime on one process, e.g. TSL205). Confirmation counts events from
  the whole run: a gated log line that syncs only at step 0 still syncs.
* a finding of a module the script imports (``origin``: data.py's ``DataLoader(...)``) becomes
  one entry at that location, as `check` reports it, confirmed by an event at any of the
  script's lines on a call chain to it (where the runtime attributes it: the innermost frame
  in the script), which the entry names as where it was ``observed_at``.
* every ``# expect-sync:`` marker becomes an entry with code None, confirmed by any sync.
* every steady-state event whose kind no finding/marker at its line explains becomes a
  ``runtime-only`` entry (a static false negative). DataLoader hazards are per loader, not
  per step, so they are reported wherever they happen.
* a line whose only unexplained syncs are ``distributed-sync`` (a metric gathering its states
  across ranks in ``compute()``) and happen in some steady steps but not all is ``gated``: the
  expected cost of computing metrics every N steps under DDP, which the linter deliberately does
  not flag (TSL204 is for every-step compute). It is reported, never failed.
* an ``emulated`` note (the emulate backend ran something differently from a GPU, e.g.
  ``torch.compile`` eagerly) becomes a ``note`` entry at its line.

An entry ``failed`` (the run exits 1) when a marker of a runtime-observable rule is
unconfirmed, an expect-sync line does not sync, or a script with no markers at all (a clean
fixture) syncs in its steady state.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from torchsync_lint.verify import evidence as ev
from torchsync_lint.verify.evidence import RuntimeEvent
from torchsync_lint.verify.steady_state import SteadyWindow

CONFIRMED = "confirmed"
UNCONFIRMED = "unconfirmed"
NOT_OBSERVABLE = "not-observable"
RUNTIME_ONLY = "runtime-only"
GATED = "gated"
NOTE = "note"

# Rules whose hazard needs more than one process (NCCL) to show up; used only when the rule
# registry cannot be imported.
FALLBACK_NOT_OBSERVABLE = frozenset({"TSL205"})
_PER_LOADER_KINDS = frozenset({ev.DATALOADER_MAIN_PROCESS, ev.DATALOADER_UNPINNED})


@dataclass(frozen=True)
class Expectation:
    """A static finding and/or an inline marker at one line. ``code`` None = expect-sync."""

    line: int
    code: str | None
    name: str = ""
    message: str = ""
    static: bool = False
    marker: bool = False
    origin: tuple[str, int] | None = None  # (file, line) of a finding in a module the script reaches; ``line`` is the script's


@dataclass
class Evidence:
    kind: str
    op: str
    count: int  # whole run
    per_step: float | None  # steady-state average; None without a step clock

    def to_json(self) -> dict:
        return {"kind": self.kind, "op": self.op, "per_step": self.per_step, "count": self.count}


@dataclass
class Entry:
    path: str
    line: int | None
    code: str | None
    status: str
    backend: str
    evidence: list[Evidence] = field(default_factory=list)
    name: str = ""
    message: str = ""
    static: bool = False
    marker: str | None = None  # "expect" | "expect-sync" | None
    failed: bool = False
    detail: str = ""
    cost_ms_per_step: float | None = None
    cost_pct: float | None = None
    script: str | None = None  # the script whose run this is, when ``path`` is another module of its project
    observed_at: list[str] = field(default_factory=list)  # "train.py:40": the script lines where it happened
    measurement: dict | None = None  # --measure: the timings behind a ``measured`` entry (measure.py)

    @property
    def run_script(self) -> str:
        return self.script or self.path

    def to_json(self) -> dict:
        return {
            "path": self.path,
            "line": self.line,
            "code": self.code,
            "name": self.name or None,
            "status": self.status,
            "backend": self.backend,
            "evidence": [e.to_json() for e in self.evidence],
            "cost_ms_per_step": self.cost_ms_per_step,
            "cost_pct": self.cost_pct,
            "static": self.static,
            "marker": self.marker,
            "failed": self.failed,
            "detail": self.detail or None,
            "script": self.run_script,
            "observed_at": list(self.observed_at),
        } | ({"measurement": self.measurement} if self.measurement is not None else {})

    @classmethod
    def from_json(cls, data: dict) -> "Entry":
        """The inverse of ``to_json``: reports of several runs (shards of one GPU session) merged
        into one page (benchmarks/verify_gpu_merge.py)."""
        evidence = [Evidence(e["kind"], e["op"], e["count"], e["per_step"]) for e in data.get("evidence") or []]
        return cls(
            data["path"], data["line"], data["code"], data["status"], data["backend"], evidence, data.get("name") or "",
            static=data["static"], marker=data["marker"], failed=data["failed"], detail=data.get("detail") or "",
            cost_ms_per_step=data.get("cost_ms_per_step"), cost_pct=data.get("cost_pct"),
            script=data.get("script") if data.get("script") != data["path"] else None, observed_at=list(data.get("observed_at") or []),
            measurement=data.get("measurement"),
        )


def merge_expectations(findings: Iterable[Expectation], markers: Iterable[Expectation]) -> list[Expectation]:
    """One expectation per (line, code), remembering whether the linter and/or a marker said so.
    A finding of another module stays apart from the script's own at the same line: it is
    reported at its own location."""
    merged: dict[tuple, Expectation] = {}
    for item in [*findings, *markers]:
        key = (item.line, item.code, item.origin)
        old = merged.get(key)
        if old is None:
            merged[key] = item
        else:
            merged[key] = Expectation(
                item.line,
                item.code,
                old.name or item.name,
                old.message or item.message,
                old.static or item.static,
                old.marker or item.marker,
                item.origin,
            )
    return sorted(merged.values(), key=lambda e: (e.line, e.code or "", e.origin or ("", 0)))


class _LineEvidence:
    """Event counts at one line: whole run and steady window, per (kind, op)."""

    def __init__(self) -> None:
        self.total: dict[tuple[str, str], int] = defaultdict(int)
        self.steady: dict[tuple[str, str], int] = defaultdict(int)
        self.steady_steps: dict[str, set[int]] = defaultdict(set)  # kind -> steady steps it occurred in

    def evidence(self, window: SteadyWindow, kinds: Iterable[str] | None = None) -> list[Evidence]:
        wanted = None if kinds is None else set(kinds)
        return [
            Evidence(kind, op, count, window.per_step(self.steady.get((kind, op), 0)))
            for (kind, op), count in sorted(self.total.items())
            if wanted is None or kind in wanted
        ]

    def kinds(self) -> set[str]:
        return {kind for kind, _ in self.total}

    def steady_kinds(self) -> set[str]:
        return {kind for (kind, _), n in self.steady.items() if n > 0}


def _index(events: Iterable[RuntimeEvent], window: SteadyWindow) -> dict[int, _LineEvidence]:
    by_line: dict[int, _LineEvidence] = defaultdict(_LineEvidence)
    for event in events:
        line = by_line[event.line]
        line.total[(event.kind, event.op)] += 1
        if window.contains(event.step):
            line.steady[(event.kind, event.op)] += 1
            if event.step is not None:
                line.steady_steps[event.kind].add(event.step)
    return by_line


def match_script(
    path: str,
    expectations: list[Expectation],
    events: list[RuntimeEvent],
    window: SteadyWindow,
    backend: str,
    observable: dict[str, bool] | None = None,
) -> list[Entry]:
    by_line = _index(events, window)
    clean = not any(e.marker for e in expectations)
    entries: list[Entry] = []

    def is_observable(code: str) -> bool:
        if observable is not None and code in observable:
            return observable[code]
        return code not in FALLBACK_NOT_OBSERVABLE

    for exp in expectations:
        if exp.origin is not None:
            continue  # below, one entry per finding of another module
        at_line = by_line.get(exp.line, _LineEvidence())
        if exp.code is None:  # expect-sync: any sync at the line will do
            syncs = at_line.kinds() & ev.SYNC_KINDS
            entries.append(
                Entry(
                    path,
                    exp.line,
                    None,
                    CONFIRMED if syncs else UNCONFIRMED,
                    backend,
                    at_line.evidence(window, syncs if syncs else None),
                    marker="expect-sync",
                    message=exp.message,
                    failed=not syncs,
                    detail="" if syncs else "an `expect-sync` line that did not sync",
                )
            )
            continue
        confirming = {k for k in at_line.kinds() if exp.code in ev.codes_confirmed_by(k)}
        if confirming:
            status = CONFIRMED
        elif not is_observable(exp.code):
            status = NOT_OBSERVABLE
        else:
            status = UNCONFIRMED
        entries.append(
            Entry(
                path,
                exp.line,
                exp.code,
                status,
                backend,
                # Show what did happen at the line even when it is not the right kind.
                at_line.evidence(window, confirming if confirming else None),
                name=exp.name,
                message=exp.message,
                static=exp.static,
                marker="expect" if exp.marker else None,
                failed=exp.marker and status == UNCONFIRMED,
                detail=_unconfirmed_detail(exp, at_line) if status == UNCONFIRMED else "",
            )
        )

    entries += _reached_entries(path, [e for e in expectations if e.origin is not None], by_line, window, backend, is_observable)

    explained = _explained_kinds(expectations)
    # Host normalisation is recorded both where the float is made and where it is copied;
    # a TSL304 finding at the first explains the event at the second.
    anywhere = {ev.HOST_NORMALIZED_H2D} if any(exp.code == "TSL304" for exp in expectations) else set()
    for line in sorted(by_line):
        at_line = by_line[line]
        if ev.EMULATED in at_line.kinds():
            entries.append(_note_entry(path, line, at_line, window, backend))
        candidates = (at_line.steady_kinds() | (at_line.kinds() & _PER_LOADER_KINDS)) - {ev.EMULATED}
        leftover = candidates - explained.get(line, set()) - anywhere
        if not leftover:
            continue
        steady_syncs = leftover & at_line.steady_kinds() & ev.SYNC_KINDS
        gated = bool(steady_syncs) and steady_syncs <= {ev.DISTRIBUTED_SYNC} and _is_gated(at_line, ev.DISTRIBUTED_SYNC, window)
        failed = clean and bool(steady_syncs) and not gated
        if gated:
            detail = (
                f"gated: a cross-rank gather in {len(at_line.steady_steps[ev.DISTRIBUTED_SYNC])} of {window.length} "
                "steady steps (metrics computed every N steps), not a per-step sync"
            )
        else:
            detail = "a script with no markers (clean) syncs in its steady state" if failed else ""
        entries.append(
            Entry(
                path,
                line or None,
                None,
                GATED if gated else RUNTIME_ONLY,
                backend,
                at_line.evidence(window, leftover),
                failed=failed,
                detail=detail,
            )
        )
    return entries


def _reached_entries(
    path: str, reached: list[Expectation], by_line: dict[int, _LineEvidence], window: SteadyWindow, backend: str, is_observable
) -> list[Entry]:
    """One entry per finding of a module the script imports, at the finding's own file and
    line (one location for one finding, as `check` reports it); the script lines on a call
    chain to it are where the runtime can see it (its innermost frame in the script), and
    those that show its hazard are named as where it was observed."""
    groups: dict[tuple[str, int, str], list[Expectation]] = defaultdict(list)
    for exp in reached:
        if exp.code is not None and exp.origin is not None:
            groups[(exp.origin[0], exp.origin[1], exp.code)].append(exp)
    entries = []
    for (where, line, code), exps in sorted(groups.items()):
        lines = sorted({e.line for e in exps})
        evidence = {n: by_line.get(n, _LineEvidence()) for n in lines}
        confirming = {n: {k for k in evidence[n].kinds() if code in ev.codes_confirmed_by(k)} for n in lines}
        seen = [n for n in lines if confirming[n]]
        status = CONFIRMED if seen else NOT_OBSERVABLE if not is_observable(code) else UNCONFIRMED
        shown = seen or lines
        at = ", ".join(f"{path}:{n}" for n in shown)
        if seen:
            detail = f"observed at {at}"
        elif status == UNCONFIRMED:
            detail = f"not observed at {at} (the script's line on the way to it): " + _unconfirmed_detail(exps[0], evidence[lines[0]])
        else:
            detail = ""
        entries.append(
            Entry(
                where, line, code, status, backend,
                [item for n in shown for item in evidence[n].evidence(window, confirming[n] or None)],
                name=exps[0].name, message=exps[0].message, static=True, detail=detail,
                script=path, observed_at=[f"{path}:{n}" for n in seen],
            )
        )
    return entries


def _is_gated(at_line: _LineEvidence, kind: str, window: SteadyWindow) -> bool:
    """The line shows ``kind`` in some steady steps but not in all of them. Without a step
    clock there is no telling, so the strict answer (not gated) stands."""
    if window.basis is None:
        return False
    return 0 < len(at_line.steady_steps[kind]) < window.length


def _note_entry(path: str, line: int, at_line: _LineEvidence, window: SteadyWindow, backend: str) -> Entry:
    notes = at_line.evidence(window, {ev.EMULATED})
    return Entry(
        path, line or None, None, NOTE, backend, notes, detail="; ".join(item.op for item in notes)
    )


def syncs_per_step(events: list[RuntimeEvent], window: SteadyWindow) -> float | None:
    """Host syncs per steady step, all lines together (pipeline hazards are not syncs)."""
    return window.per_step(sum(1 for e in events if e.kind in ev.SYNC_KINDS and window.contains(e.step)))


def _explained_kinds(expectations: list[Expectation]) -> dict[int, set[str]]:
    explained: dict[int, set[str]] = defaultdict(set)
    for exp in expectations:
        if exp.code is None:
            explained[exp.line] |= ev.SYNC_KINDS
            continue
        explained[exp.line] |= {kind for kind, codes in ev.CONFIRMS.items() if exp.code in codes}
    return explained


def _unconfirmed_detail(exp: Expectation, at_line: _LineEvidence) -> str:
    if not at_line.kinds():
        return "no runtime event at this line"
    return "the line shows " + ", ".join(sorted(at_line.kinds())) + f", none of which confirms {exp.code}"
