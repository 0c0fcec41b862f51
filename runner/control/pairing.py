"""The per-pass log-ratio series of two workloads of one campaign (docs/paired.md).

In adaptive mode every active workload gets one round per pass, in a seeded random order,
so two workloads measured in the same pass felt the same machine. For a pair (a, b) the
series ``d_p = ln y_bp - ln y_ap`` over the passes where both have a steady ok round
cancels the machine's drift; :func:`pair_stats` gives it the same treatment as a
workload's own series (runner/control/collector.py: MSER-5 on the series, subsession means, the
t CI with the q/2q envelope), so the controller can test ``E[d] = 0`` and TOST on it.

``y`` is a round's value: its only reading, or the mean of its steady readings (those the
collector keeps after the within-round warm-up; per unit of work with ``per_work``).
Passes where only one of the two ran do not enter the series.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

import numpy as np

from benchrun.runner.config.settings import DEFAULT_CONFIDENCE
from benchrun.runner.control.collector import Warmup, WorkloadStats, collect
from benchrun.stats.paired import log_ratios

__all__ = ["PairSource", "round_values_by_pass", "pair_series", "pair_stats", "PassSeries"]


class PairSource(Protocol):
    """What the controller asks about a pair (a, b): see :class:`PassSeries`."""

    def stats(self, a: str, b: str) -> WorkloadStats | None: ...

    def series(self, a: str, b: str) -> np.ndarray | None: ...

    def possible(self, a: str, b: str) -> bool: ...


def round_values_by_pass(
    readings: Sequence[Sequence[float]],
    works: Sequence[int | None],
    passes: Sequence[int],
    per_work: bool,
    skip: int = 0,
) -> dict[int, float]:
    """Pass index -> the round's value (mean of its readings after the first ``skip``, the
    within-round warm-up the collector drops; per unit of work with ``per_work`` when
    every round has a work amount). Rounds without readings are left out."""
    if not (len(readings) == len(works) == len(passes)):
        raise ValueError("readings, works and passes must have one entry per round")
    divide = per_work and all(w for w in works)
    out: dict[int, float] = {}
    for r, w, p in zip(readings, works, passes, strict=True):
        if len(r) > skip:
            r = r[skip:]
        if len(r):
            # the mean of one reading is that reading (numpy's call costs ~10 us a round)
            v = float(r[0]) if len(r) == 1 else float(np.mean(r))
            out[int(p)] = v / float(w) if divide and w else v
    return out


def pair_series(a: Mapping[int, float], b: Mapping[int, float]) -> np.ndarray | None:
    """``d_p = ln b_p - ln a_p`` over the passes both have, in pass order (natural log of
    b/a); None with fewer than 2 common passes or when a value is not > 0."""
    common = sorted(set(a) & set(b))
    if len(common) < 2:
        return None
    return log_ratios([a[p] for p in common], [b[p] for p in common])


def pair_stats(
    a: Mapping[int, float],
    b: Mapping[int, float],
    *,
    confidence: float = DEFAULT_CONFIDENCE,
    min_subsessions: int | None = None,
    warmup: Warmup = "mser5",
) -> WorkloadStats | None:
    """Statistics of ``d_p = ln b_p - ln a_p`` over the passes both have, in pass order.

    Returns :class:`runner.control.collector.WorkloadStats` of d (mean, q, n_q, s_q², CI, 2q
    summary; units: natural log of b/a; ``rounds`` = passes in the series), or None with
    fewer than 2 common passes or when a value is not > 0 (no log ratio; see
    :meth:`PassSeries.possible`).
    """
    return series_stats(pair_series(a, b), confidence, min_subsessions, warmup)


def series_stats(
    d: np.ndarray | None,
    confidence: float = DEFAULT_CONFIDENCE,
    min_subsessions: int | None = None,
    warmup: Warmup = "mser5",
) -> WorkloadStats | None:
    """:func:`collect` of a log-ratio series ``d`` (one value per pass); None for None."""
    if d is None:
        return None
    return collect(
        d[:, None],  # type: ignore[arg-type]  # a 2-D array is a sequence of rounds
        confidence=confidence,
        warmup=warmup,
        min_subsessions=min_subsessions,
        log_series=True,
    )


class PassSeries:
    """A :class:`PairSource` over per-pass values that the campaign keeps up to date.

    ``values[name]`` maps pass index -> round value (:func:`round_values_by_pass`); the
    caller replaces it as rounds arrive and calls :meth:`invalidate`. Results are cached
    per ordered pair until then.
    """

    def __init__(
        self,
        values: Mapping[str, Mapping[int, float]],
        *,
        confidence: float = DEFAULT_CONFIDENCE,
        min_subsessions: int | None = None,
    ) -> None:
        self.values: dict[str, Mapping[int, float]] = {}
        self._positive: dict[str, bool] = {}
        self.confidence = confidence
        self.min_subsessions = min_subsessions
        self._cache: dict[tuple[str, str], WorkloadStats | None] = {}
        self._d: dict[tuple[str, str], np.ndarray | None] = {}
        self._own: dict[str, dict[int, float]] = {}  # values this object may change in place
        for name, v in values.items():
            self.update(name, v)

    def update(self, name: str, values: Mapping[int, float]) -> None:
        """Replace one workload's per-pass values (drops the cached pairs it is in)."""
        self.values[name] = values
        self._own.pop(name, None)
        self._positive[name] = all(v > 0 for v in values.values())
        self._cache = {k: v for k, v in self._cache.items() if name not in k}
        self._d = {k: v for k, v in self._d.items() if name not in k}

    def add(self, name: str, values: Mapping[int, float]) -> None:
        """Add the values of passes that ``name`` did not have yet (its new rounds), in
        place of :meth:`update` with all of them (drops the cached pairs it is in)."""
        if not values:
            return
        mine = self._own.get(name)
        if mine is None:  # the first add after update(): copy the caller's mapping once
            mine = self._own[name] = dict(self.values.get(name, {}))
            self.values[name] = mine
        mine.update(values)
        self._positive[name] = self._positive.get(name, True) and all(
            v > 0 for v in values.values()
        )
        self._cache = {k: v for k, v in self._cache.items() if name not in k}
        self._d = {k: v for k, v in self._d.items() if name not in k}

    def possible(self, a: str, b: str) -> bool:
        """False when a value of either side is not > 0 (a log ratio cannot exist)."""
        return self._positive.get(a, True) and self._positive.get(b, True)

    def series(self, a: str, b: str) -> np.ndarray | None:
        """The log-ratio series of (a, b) in pass order (:func:`pair_series`), cached."""
        key = (a, b)
        if key not in self._d:
            self._d[key] = pair_series(self.values.get(a, {}), self.values.get(b, {}))
        return self._d[key]

    def stats(self, a: str, b: str) -> WorkloadStats | None:
        key = (a, b)
        if key not in self._cache:
            self._cache[key] = series_stats(
                self.series(a, b), self.confidence, self.min_subsessions
            )
        return self._cache[key]
