"""The campaign's wall-clock budget (``settings.max_time``), checked before every round.

``max_time`` is the campaign's wall time across resumes: every run of the campaign (the
first ``benchrun run``, each ``--resume``) stores the span it was active in the store's
``run_span`` table (schema 4), and the budget is the sum of the earlier runs' spans plus the
wall-clock time of this run. Everything a run does counts: prepare and setup hooks,
calibration, warm-up rounds, rounds, decisions, waits. The span is written as the run goes
on, by a thread (runner/store/spans.py, every half second, and when the loop ends), so a
run killed with SIGKILL keeps all but its last half second (issue 29: four SIGKILLs used to
give a campaign four fresh budgets). A campaign stored before schema 4 has no spans for its
early runs: their stored rounds' wall time stands in for them (docs/limits.md "Budgets").

A round that starts within the budget runs to its end (its own ``timeout`` bounds it), so a
campaign overruns ``max_time`` by at most one round.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from benchrun.runner.store.database import Store
from benchrun.runner.store.spans import SpanHeartbeat


class Budget:
    """Wall-clock budget of one campaign run.

    Parameters
    ----------
    max_time_s : float
        The budget, in seconds (``settings.max_time``).
    prior_s : float
        Seconds already spent by earlier runs of the campaign (:func:`spent_before`).
    clock : callable, optional
        Monotonic clock in seconds (``time.monotonic``; a fake clock in tests).

    Examples
    --------
    >>> now = [100.0]
    >>> budget = Budget(10.0, prior_s=4.0, clock=lambda: now[0])
    >>> budget.elapsed_s, budget.exhausted
    (4.0, False)
    >>> now[0] = 106.0
    >>> budget.elapsed_s, budget.exhausted
    (10.0, True)
    """

    def __init__(
        self, max_time_s: float, prior_s: float = 0.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.max_time_s = float(max_time_s)
        self.prior_s = float(prior_s)
        self._clock = clock
        #: when this run's span began, on ``clock``
        self.t0 = clock()

    @property
    def elapsed_s(self) -> float:
        """Seconds spent on the campaign so far, this run and the earlier ones."""
        return self.prior_s + self._clock() - self.t0

    @property
    def exhausted(self) -> bool:
        """True once :attr:`elapsed_s` has reached ``max_time_s``: launch no more rounds."""
        return self.elapsed_s >= self.max_time_s

    def note(self, done: str) -> str:
        """``max_time 5 s reached after 5.2 s (<done>)``: why the campaign stopped early."""
        return f"max_time {self.max_time_s:g} s reached after {self.elapsed_s:.3g} s ({done})"


def spent_before(spans: list[tuple[int, float, float]], rounds_s: float) -> float:
    """Seconds the campaign's earlier runs spent: the sum of their stored spans
    (``(pid, started_at, seconds)`` each), or the stored rounds' wall time ``rounds_s``
    when that is more (the runs of a store older than schema 4 have no span; a round lies
    inside its run's span, so with every span stored the sum is the larger). A span that
    is not a positive finite number (never written by benchrun) counts nothing.

    >>> spent_before([(1, 0.0, 3.5), (2, 9.0, 1.0)], rounds_s=0.2)
    4.5
    >>> spent_before([], rounds_s=2.0)
    2.0
    """
    spent = sum(seconds for _, _, seconds in spans if math.isfinite(seconds) and seconds > 0)
    return max(spent, rounds_s)


@contextmanager
def campaign_budget(
    store: Store, campaign_id: int, max_time_s: float, rounds_s: float
) -> Iterator[Budget]:
    """The budget of this run of campaign ``campaign_id``, for the ``with`` block that
    runs its loop: the earlier runs' time (:func:`spent_before`; ``rounds_s`` the stored
    rounds' wall time) as its prior, and a new span of this run in the store, kept current
    by a :class:`runner.store.spans.SpanHeartbeat` until the block ends."""
    prior = spent_before(store.spans(campaign_id), rounds_s)
    span_id = store.start_span(campaign_id, os.getpid(), time.time())
    budget = Budget(max_time_s, prior)
    heartbeat = SpanHeartbeat(store.path, span_id, budget.t0).start()
    try:
        yield budget
    finally:
        heartbeat.stop()
