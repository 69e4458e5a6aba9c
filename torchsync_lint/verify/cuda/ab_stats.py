"""A/B step-time statistics for ``--measure`` (plain Python, no torch).

The timing harness records a CUDA event at every step-clock tick (no synchronisation in
between) and reads the elapsed times once at the end. Because the events sit on the GPU
timeline, a host stall shows up as the gap it leaves on the GPU. Each variant (original,
fixed) is run ``repeats`` times in fresh processes; a run contributes the median of its
steady-state step times, the variant the median over runs, and the spread over runs is
reported so a reader can tell a cost from noise.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from torchsync_lint.verify import steady_state
from torchsync_lint.verify.steady_state import SteadyWindow


def step_durations(tick_ms: list[float], basis: str | None, window: SteadyWindow) -> list[float]:
    """Durations of the steady steps from the tick times (ms since the first tick).

    ``tick_ms[i]`` is the time of the tick that made the clock count ``i + 1``. Step ``k``
    starts at count ``k`` (optimizer clock: after the k-th ``step()``) or ``k + 1``
    (batch clock: when batch k is fetched) and ends at the next tick.
    """
    if basis is None:
        return []
    offset = 0 if basis == steady_state.OPTIMIZER else 1
    durations = []
    for step in range(window.start, window.stop):
        if not window.contains(step):
            continue
        start_count, end_count = step + offset, step + offset + 1
        if start_count >= 1 and end_count <= len(tick_ms):
            durations.append(tick_ms[end_count - 1] - tick_ms[start_count - 1])
    return durations


@dataclass(frozen=True)
class VariantTiming:
    median_ms: float
    spread_ms: float  # max - min of the per-run medians
    runs: int


@dataclass(frozen=True)
class Comparison:
    original: VariantTiming
    fixed: VariantTiming
    cost_ms_per_step: float  # original - fixed
    cost_pct: float  # of the original step time
    significant: bool  # the difference exceeds the run-to-run spread of both variants (2 runs each at least)

    def to_json(self) -> dict:
        return {
            "original_ms_per_step": self.original.median_ms,
            "fixed_ms_per_step": self.fixed.median_ms,
            "original_spread_ms": self.original.spread_ms,
            "fixed_spread_ms": self.fixed.spread_ms,
            "runs": self.original.runs,
            "cost_ms_per_step": self.cost_ms_per_step,
            "cost_pct": self.cost_pct,
            "significant": self.significant,
        }


def summarize_variant(runs: list[list[float]]) -> VariantTiming | None:
    medians = [statistics.median(durations) for durations in runs if durations]
    if not medians:
        return None
    return VariantTiming(round(statistics.median(medians), 4), round(max(medians) - min(medians), 4), len(medians))


def compare(original_runs: list[list[float]], fixed_runs: list[list[float]]) -> Comparison | None:
    original = summarize_variant(original_runs)
    fixed = summarize_variant(fixed_runs)
    if original is None or fixed is None or original.median_ms <= 0:
        return None
    cost = original.median_ms - fixed.median_ms
    return Comparison(
        original,
        fixed,
        round(cost, 4),
        round(100.0 * cost / original.median_ms, 2),
        # One run per variant has no spread to compare with: a difference of single runs is
        # never called a cost.
        min(original.runs, fixed.runs) >= 2 and abs(cost) > max(original.spread_ms, fixed.spread_ms),
    )
