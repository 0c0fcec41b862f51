"""The campaign's wall-clock budget (``settings.max_time``), checked before every round.

Time already spent before a resume counts: it is the sum of the stored rounds' wall times
(what the campaign measured), plus the wall-clock time of this run. A round that starts
within the budget runs to its end (its own ``timeout`` bounds it), so a campaign overruns
``max_time`` by at most one round.
"""

from __future__ import annotations

import time
from collections.abc import Callable


class Budget:
    """Wall-clock budget of one campaign run.

    Parameters
    ----------
    max_time_s : float
        The budget, in seconds (``settings.max_time``).
    prior_s : float
        Seconds already spent by earlier runs of the campaign (stored rounds' wall time).
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
        self._t0 = clock()

    @property
    def elapsed_s(self) -> float:
        """Seconds spent on the campaign so far, this run and the stored ones."""
        return self.prior_s + self._clock() - self._t0

    @property
    def exhausted(self) -> bool:
        """True once :attr:`elapsed_s` has reached ``max_time_s``: launch no more rounds."""
        return self.elapsed_s >= self.max_time_s

    def note(self, done: str) -> str:
        """``max_time 5 s reached after 5.2 s (<done>)``: why the campaign stopped early."""
        return f"max_time {self.max_time_s:g} s reached after {self.elapsed_s:.3g} s ({done})"
