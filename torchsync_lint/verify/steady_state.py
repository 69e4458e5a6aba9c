"""Steps and the steady-state window.

The harness counts steps without editing the script, by one of two clocks:

* ``optimizer``: every ``torch.optim.Optimizer.step()`` call (a global post-step hook).
  Step ``k`` is the time between the k-th and (k+1)-th optimizer step, so code that runs
  before the first ``step()`` (including setup) is step 0.
* ``batches`` (used when the script never steps an optimizer, e.g. an eval loop): every
  batch fetched from a ``DataLoader``. Step ``k`` starts when batch ``k`` (0-based) is
  fetched; code before the first fetch is step -1.

If neither clock ticks, the run has no steps (basis ``None``) and every event counts as
steady-state (the strict choice: a clean script without a loop we can see must not sync).

Steady state is the steps ``warmup <= k < total - 1``: the first ``warmup`` steps (>= 1,
so setup code before the first step never counts) and the last step are excluded. The last
step is excluded because, with a ``break``-terminated loop, code after the loop (a final
``print(total.item())``) still belongs to it; a sync that happens every step is still seen
in all the middle steps. For the same reason every step during which a ``DataLoader`` loop
starts (``DataLoader.__iter__``: a new epoch, a validation pass) is excluded too: it holds
the previous loop's tail, where per-epoch reads such as ``epoch_loss.item()`` live. A sync that happens only during warm-up or after the loop confirms
a marker (it is a real sync at that line) but does not make a clean script fail.
"""

from __future__ import annotations

OPTIMIZER = "optimizer"
BATCHES = "batches"

DEFAULT_WARMUP = 2
DEFAULT_STEPS = 8


def stop_tick(steps: int, warmup: int) -> int:
    """Where the step clock stops a script that is not a fixture: after the warm-up and
    ``steps`` steady steps (the window ``[warmup, T)`` then holds ``steps`` steps)."""
    return max(1, warmup) + max(1, steps)


def choose_basis(optimizer_steps: int, batches: int) -> str | None:
    if optimizer_steps > 0:
        return OPTIMIZER
    if batches > 0:
        return BATCHES
    return None


def step_index(basis: str | None, optimizer_steps: int, batches: int) -> int | None:
    """Step an event belongs to, from the clock counts at the moment it happened."""
    if basis == OPTIMIZER:
        return optimizer_steps
    if basis == BATCHES:
        return batches - 1
    return None


def total_steps(basis: str | None, optimizer_steps: int, batches: int, stopped_by_clock: bool = False) -> int:
    """Steps of the run. A script the step clock stopped at optimizer step T (harness_common)
    ran steps 0..T-1 in full, and step T holds only what ran after the stop (its
    ``finally`` blocks): T + 1 steps, so the last full one is not taken for a loop's tail. At
    batch T the batch count is already T + 1."""
    if basis == OPTIMIZER:
        return optimizer_steps + (1 if stopped_by_clock else 0)
    if basis == BATCHES:
        return batches
    return 0


class SteadyWindow:
    """The half-open step range ``[start, stop)`` that counts as steady state."""

    def __init__(
        self, basis: str | None, total: int, warmup: int = DEFAULT_WARMUP, excluded: tuple[int, ...] | list[int] = ()
    ) -> None:
        self.basis = basis
        self.total = total
        self.start = max(1, warmup)
        self.stop = max(self.start, total - 1)
        self.excluded = frozenset(excluded)

    @property
    def length(self) -> int:
        return sum(1 for step in range(self.start, self.stop) if step not in self.excluded)

    def contains(self, step: int | None) -> bool:
        if self.basis is None:
            return True
        return step is not None and self.start <= step < self.stop and step not in self.excluded

    def per_step(self, count_in_window: int) -> float | None:
        """Average count per steady step; None when there is no window to average over."""
        if self.basis is None or self.length <= 0:
            return None
        return round(count_in_window / self.length, 3)


def loop_start_steps(basis: str | None, loop_starts: list[tuple[int, int]]) -> list[int]:
    """Steps during which a DataLoader loop started, from clock snapshots at each __iter__."""
    steps = {step_index(basis, *snapshot) for snapshot in loop_starts}
    return sorted(step for step in steps if step is not None)
