"""The sync budget: steady-state syncs per step of a script, by line and kind, and how a run
compares with the budget written earlier (plain Python, no torch; budget_file.py reads and
writes it, budget_command.py runs the scripts, budget_report.py renders the result).

**What is counted.** Every event of a sync kind (evidence.SYNC_KINDS) in the steady-state
window of the run (steady_state.py), at its *site* (sites.py): the innermost line of the
user's project on the stack (a per-step helper in another module is counted at its own line;
a sync inside a library at the project line that called into it, with the library frame
named), split by kind (KINDS below).

**Per line: a count and a period.** ``count`` is the most syncs the line made in one step;
``every`` is the smallest distance, in steps, between two steps in which it synced (1: every
step). Neither depends on how many steps were run, so a gated line (``if step % 100 == 0``)
does not flap with ``--steps`` the way a rate (syncs / steps run) would: 2 firings in 10
steps and 3 in 12 both say "every 5 steps". A line seen in only one step has no measurable
period, only a lower bound (it did not sync again in the steps observed around it):
``every_at_least``. Steps observed are ``[1, last)``: step 0 holds the set-up before the first
optimizer step and the last step the script's teardown.

**Comparing.** A line *rose* when its count rose by more than the tolerance, or its period got
shorter for certain (a gated line now syncs every step). A line the budget does not have
rose, unless its period is longer than the steps the budget's run observed (that run could
not have seen it: reported as ``unseen``, never a failure). A line gone is ``fell`` when this
run was long enough to see it, else ``unseen``. The script's total (gated lines amortised:
``count / every``) rises when it exceeds the budget's total plus the tolerance.
"""

from __future__ import annotations

import math
import os
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from fractions import Fraction

from torchsync_lint.verify import evidence as ev

# Budget kinds, in report order. What the user did, not which op the GPU ran.
HOST_READ = "host-read"  # .item(), float(), .tolist(), .cpu(), .numpy()
TRUTHINESS = "truthiness"  # if t:, assert t, while t.any():
FORMAT = "format"  # print(t), f"{t}", str(t)
SYNCHRONIZE = "synchronize"  # torch.cuda.synchronize(), stream/event synchronize
DYNAMIC_SHAPE = "dynamic-shape"  # nonzero, x[mask], unique, masked_select, bincount
BLOCKING_COPY = "blocking-copy"  # host-to-device copies that block (or stage pageable memory)
LOGGER = "logger"  # a sync inside a logging library (tensorboard's make_np, wandb.log...)
METRIC = "metric"  # a sync inside a metrics library (torchmetrics' bincount or NaN check...)
DISTRIBUTED = "distributed"  # a host wait of a collective (barrier, a metric's cross-rank gather)
DEVICE_SYNC = "device-sync"  # cuda backend: a sync the GPU trace saw and no op explains
KINDS = (HOST_READ, TRUTHINESS, FORMAT, SYNCHRONIZE, DYNAMIC_SHAPE, BLOCKING_COPY, LOGGER, METRIC, DISTRIBUTED, DEVICE_SYNC)

# Libraries whose syncs are counted under their own kind, by the path of the library frame
# (sites.py names modules '/'-separated). Knowledge as data: add rows, not code.
LIBRARY_KINDS: tuple[tuple[str, str], ...] = (
    ("torch/utils/tensorboard/", LOGGER),
    ("tensorboardX/", LOGGER),
    ("wandb/", LOGGER),
    ("mlflow/", LOGGER),
    ("comet_ml/", LOGGER),
    ("neptune/", LOGGER),
    ("clearml/", LOGGER),
    ("aim/", LOGGER),
    ("tqdm/", LOGGER),
    ("accelerate/tracking.py", LOGGER),
    ("lightning/pytorch/loggers/", LOGGER),
    ("lightning/pytorch/callbacks/progress/", LOGGER),
    ("lightning/pytorch/trainer/connectors/logger_connector/", LOGGER),
    ("lightning/fabric/loggers/", LOGGER),
    ("pytorch_lightning/loggers/", LOGGER),
    ("pytorch_lightning/callbacks/progress/", LOGGER),
    ("pytorch_lightning/trainer/connectors/logger_connector/", LOGGER),
    ("torchmetrics/", METRIC),
    ("torcheval/", METRIC),
    ("evaluate/", METRIC),
    ("ignite/metrics/", METRIC),
)
_FORMAT_READS = frozenset({"__format__", "__repr__", "__str__"})
_KIND_OF_EVIDENCE = {
    ev.EXPLICIT_SYNC: SYNCHRONIZE,
    ev.DISTRIBUTED_SYNC: DISTRIBUTED,
    ev.DYNAMIC_SHAPE: DYNAMIC_SHAPE,
    ev.BINCOUNT: DYNAMIC_SHAPE,
    ev.H2D_BLOCKING: BLOCKING_COPY,
    ev.H2D_PAGEABLE: BLOCKING_COPY,
    ev.DEVICE_SYNC: DEVICE_SYNC,
}

ROSE, FELL, SAME, UNSEEN = "rose", "fell", "same", "unseen"


def budget_kind(evidence_kind: str, op: str, site: dict) -> str | None:
    """The budget kind of one recorded event; None when it is not a sync (pipeline hazards,
    emulation notes)."""
    if evidence_kind not in ev.SYNC_KINDS:
        return None
    if evidence_kind in (ev.EXPLICIT_SYNC, ev.DISTRIBUTED_SYNC):
        return _KIND_OF_EVIDENCE[evidence_kind]
    for module in site.get("modules") or ():
        for prefix, kind in LIBRARY_KINDS:
            if module.startswith(prefix):
                return kind
    if evidence_kind in _KIND_OF_EVIDENCE:
        return _KIND_OF_EVIDENCE[evidence_kind]
    read = site.get("construct") or op.rpartition(".")[2]  # "Tensor.__repr__" -> "__repr__"
    if read == "__bool__":
        return TRUTHINESS
    if read in _FORMAT_READS:
        return FORMAT
    return HOST_READ


@dataclass(frozen=True)
class Period:
    """Steps between two steps in which a line syncs: exactly ``every``, or (``exact`` False,
    the line synced once) at least ``every``."""

    every: int
    exact: bool = True

    @property
    def low(self) -> float:
        return self.every

    @property
    def high(self) -> float:
        return self.every if self.exact else math.inf

    def text(self) -> str:
        if not self.exact:
            return f"once in >= {self.every} steps"
        return "every step" if self.every == 1 else f"every {self.every} steps"


@dataclass
class LineCount:
    """One line and kind of the budget (or of a run): at most ``count`` syncs in a step that
    syncs, ``period`` apart."""

    file: str  # relative to the project root, '/'-separated
    line: int
    function: str
    code: str
    kind: str
    count: int
    period: Period
    via: str | None = None  # the library frame: "torchmetrics/utilities/data.py:206 _bincount"
    chain: tuple[str, ...] = ()  # the calls from the script down to the sync (reports; not stored)

    @property
    def rate(self) -> Fraction:
        """Syncs per step, amortised over the period (an upper bound for a once-seen line)."""
        return Fraction(self.count, self.period.every)

    @property
    def match_key(self) -> tuple[str, str, str, str]:
        """What identifies a line across edits that move it: lines added above a sync change
        its number, not its file, function, text and kind."""
        return (self.file, self.function, self.code, self.kind)

    def where(self) -> str:
        return f"{self.file}:{self.line}" + (f" ({self.via})" if self.via else "")

    def rate_text(self) -> str:
        per = "per step" if self.period.exact and self.period.every == 1 else self.period.text()
        return f"{self.count} {per}"


@dataclass
class ScriptBudget:
    path: str  # relative to the project root, '/'-separated
    args: list[str]
    steps: int
    warmup: int
    window: int  # steady-state steps the run observed
    backend: str
    tolerance: float | int = 0
    total: float = 0.0
    scale: str | None = None
    lines: list[LineCount] = field(default_factory=list)


@dataclass
class BudgetFile:
    path: str
    scripts: dict[str, ScriptBudget] = field(default_factory=dict)


def total_of(lines: list[LineCount]) -> float:
    return round(float(sum((line.rate for line in lines), Fraction(0))), 3)


# --- measuring a run ---------------------------------------------------------------------------


@dataclass
class Measurement:
    lines: list[LineCount]
    window: int  # steady steps
    observed: tuple[int, int]  # the step range [first, last) periods are measured over


def measure(events: list, event_sites: list, sites: list[dict], window, root: str) -> Measurement:
    """Per-line counts and periods of one run. ``events``: RuntimeEvents; ``event_sites``: the
    site index of each (sites.py); ``window``: the run's SteadyWindow; ``root``: the project
    root paths are made relative to."""
    first, last = 1, window.stop
    per_step: dict[tuple, Counter] = defaultdict(Counter)  # line key -> step -> syncs
    site_events: dict[tuple, Counter] = defaultdict(Counter)  # line key -> site index -> events
    for event, index in zip(events, event_sites):
        if event.step is None or not first <= event.step < last or index is None:
            continue
        site = sites[index]
        kind = budget_kind(event.kind, event.op, site)
        if kind is None:
            continue
        key = (_relative(site.get("file"), root), site.get("line") or 0, site.get("function") or "", site.get("code") or "", kind)
        per_step[key][event.step] += 1
        site_events[key][index] += 1
    lines = []
    for key, steps in per_step.items():
        in_window = [step for step in steps if window.contains(step)]
        if not in_window:
            continue  # syncs only in warm-up, epoch starts or teardown: not steady state
        index = min(site_events[key], key=lambda i: (-site_events[key][i], i))  # the commonest path
        site = sites[index]
        path, line, function, code, kind = key
        lines.append(
            LineCount(
                path, line, function, code, kind,
                count=max(steps[step] for step in in_window),
                period=period_of(sorted(steps), first, last),
                via=_frame_text(site.get("library")),
                chain=_chain(site, root),
            )
        )
    lines.sort(key=line_order)
    return Measurement(lines, window.length, (first, last))


def period_of(steps: list[int], first: int, last: int) -> Period:
    """``steps``: sorted steps in ``[first, last)`` in which the line synced."""
    if len(steps) >= 2:
        return Period(min(b - a for a, b in zip(steps, steps[1:])))
    # Seen once at s: a period P <= s - first or P < last - s would have shown it again.
    (only,) = steps
    return Period(max(only - first + 1, last - only), exact=False)


def line_order(line: LineCount) -> tuple:
    """The order of a script's lines, in a measurement and in the budget file."""
    return (line.file, line.line, KINDS.index(line.kind) if line.kind in KINDS else len(KINDS), line.function, line.code)


def script_key(path: str, root: str) -> str:
    """``path`` relative to the budget's root, with forward slashes (a budget's script and file names)."""
    return os.path.relpath(os.path.abspath(path), root).replace(os.sep, "/")


def _relative(path: str | None, root: str) -> str:
    return script_key(path, root) if path else "<no project frame>"


def _frame_text(frame: list | None) -> str | None:
    return None if not frame else f"{frame[0]}:{frame[1]} {frame[2]}"


def _chain(site: dict, root: str) -> tuple[str, ...]:
    frames = [f"{_relative(path, root)}:{line} {function}".rstrip() for path, line, function in site.get("chain") or []]
    for frame in (site.get("entry"), site.get("library")):
        text = _frame_text(frame)
        if text and text not in frames:
            frames.append(text)
    return tuple(frames)


# --- comparing with the budget -----------------------------------------------------------------


@dataclass
class Row:
    status: str  # ROSE, FELL, SAME, UNSEEN
    change: str  # what changed, in words
    budget: LineCount | None
    now: LineCount | None

    @property
    def line(self) -> LineCount:
        return self.now or self.budget  # type: ignore[return-value]


@dataclass
class Comparison:
    rows: list[Row]
    total_budget: float
    total_now: float
    total_rose: bool

    @property
    def rose(self) -> bool:
        return self.total_rose or any(row.status == ROSE for row in self.rows)

    @property
    def fell(self) -> bool:
        return not self.rose and (self.total_now < self.total_budget or any(row.status == FELL for row in self.rows))


def compare(budget: ScriptBudget, now: Measurement) -> Comparison:
    tolerance = budget.tolerance
    rows: list[Row] = []
    for old, new in pair_lines(budget.lines, now.lines):
        rows.append(_compare_line(old, new, tolerance, budget.window, now.window))
    # The total: this run's lines against the budget's, leaving out what one run could not see.
    counted_now = [row.now for row in rows if row.now is not None and row.status != UNSEEN]
    unseen_budget = [row.budget for row in rows if row.budget is not None and row.now is None and row.status == UNSEEN]
    total_budget = round(budget.total - float(sum((line.rate for line in unseen_budget), Fraction(0))), 3)
    total_now = total_of(counted_now)
    rows.sort(key=lambda row: (_STATUS_ORDER[row.status], row.line.file, row.line.line, KINDS.index(row.line.kind)))
    return Comparison(rows, total_budget, total_now, total_now > total_budget + tolerance + 1e-9)


_STATUS_ORDER = {ROSE: 0, FELL: 1, UNSEEN: 2, SAME: 3}


def pair_lines(old: list[LineCount], new: list[LineCount]) -> list[tuple[LineCount | None, LineCount | None]]:
    """Match budget lines to measured ones: by file, function, text and kind (line numbers in
    order within each group), so that code added above a sync does not make it "new"; then
    what is left by file, line and kind (the statement was edited in place); then by file,
    function and kind where exactly one line is left on each side."""
    pairs: list[tuple[LineCount | None, LineCount | None]] = []
    left_old, left_new = list(old), list(new)
    passes = (
        (lambda item: item.match_key, False),
        (lambda item: (item.file, item.line, item.kind), False),
        (lambda item: (item.file, item.function, item.kind), True),
    )
    for key, only_one in passes:
        groups: dict[tuple, tuple[list, list]] = defaultdict(lambda: ([], []))
        for line in left_old:
            groups[key(line)][0].append(line)
        for line in left_new:
            groups[key(line)][1].append(line)
        left_old, left_new = [], []
        for before, after in groups.values():
            before.sort(key=lambda item: item.line)
            after.sort(key=lambda item: item.line)
            matched = min(len(before), len(after))
            if only_one and (len(before), len(after)) != (1, 1):
                matched = 0
            pairs += zip(before[:matched], after[:matched])
            left_old += before[matched:]
            left_new += after[matched:]
    pairs += [(line, None) for line in left_old]
    pairs += [(None, line) for line in left_new]
    return pairs


def _compare_line(old: LineCount | None, new: LineCount | None, tolerance: float, budget_window: int, now_window: int) -> Row:
    if old is None:
        assert new is not None
        if new.period.low > budget_window:
            return Row(UNSEEN, f"new, {new.rate_text()}: longer than the {budget_window} steps the budget observed", None, new)
        return Row(ROSE, f"new: {new.rate_text()}", None, new)
    if new is None:
        if old.period.low > now_window:
            return Row(UNSEEN, f"not seen: {old.rate_text()} is longer than this run's {now_window} steps", old, None)
        return Row(FELL, f"gone (was {old.rate_text()})", old, None)
    changes = []
    status = SAME
    if new.count > old.count + tolerance:
        status = ROSE
        changes.append(f"{old.count} -> {new.count} syncs per step")
    elif new.count < old.count:
        changes.append(f"{old.count} -> {new.count} syncs per step")
    if new.period.high < old.period.low:
        status = ROSE
        changes.append(f"{old.period.text()} -> {new.period.text()}")
    elif new.period.low > old.period.high:
        changes.append(f"{old.period.text()} -> {new.period.text()}")
    if status == SAME and changes:
        status = FELL
    return Row(status, "; ".join(changes) or new.rate_text(), old, new)


# --- the result of a run -----------------------------------------------------------------------


# Script statuses (ScriptResult.status). A script ROSE/FELL/SAME as a whole; lines use the
# line statuses above (same word for rose and fell; "within" for a script within budget).
ERROR, SKIPPED, NOT_RUN = "error", "skipped", "not-run"
UPDATED, ADDED, UNCHANGED = "updated", "added", "unchanged"  # --update-budget
WITHIN = "within"


@dataclass
class ScriptResult:
    path: str  # the budget's key: relative to the project root, '/'-separated
    status: str
    detail: str = ""
    comparison: Comparison | None = None
    budget: ScriptBudget | None = None  # the entry the run was compared with
    measured: ScriptBudget | None = None  # what this run saw, as a budget entry


@dataclass
class BudgetReport:
    budget_path: str
    backend: str
    update: bool
    results: list[ScriptResult]
    written: bool | None = None  # --update-budget: the file changed
    write_error: str | None = None  # --update-budget: why the file could not be written

    @property
    def exit_code(self) -> int:
        if self.write_error is not None or any(r.status == ERROR for r in self.results):
            return 2
        return 1 if not self.update and any(r.status == ROSE for r in self.results) else 0
