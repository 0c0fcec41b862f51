"""A workload's estimate, and its descriptive statistics, as typed records on the read side
(issue 30).

The collector (runner/control/collector.py ``WorkloadStats``) computes a workload's
estimate; what is stored, exported and printed as JSON is its ``to_dict`` (the
``collected`` object of ``show --json``, the report's JSON and benchrun's export format),
serialised there and nowhere else. Everything that reads an estimate back reads it as
:class:`Estimate`, made by :func:`estimate_from` from that dict: the one place that knows
how dicts written by older versions differ (no ``interval_low``/``interval_high`` or
``certified`` before the uncertified interval existed, docs/methods.md §4.1: the CI was
the interval then).

Units: ``mean``, the CI and interval bounds are in the workload's unit (a per-work
workload's: per unit of work); ``variance`` in unit²; ``rel_half_width`` a fraction.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import Any

from benchrun.runner.format import DisplayUnit, interval_line, level_shift_words

__all__ = ["Description", "Estimate", "NodeAnalysis", "description_from", "estimate_from"]


@dataclass(frozen=True)
class Estimate:
    """A workload's estimate (docs/methods.md §3-4): mean and CI in the workload's unit.

    ``variance`` is s_q² of the ``n_q`` subsession means of ``q`` readings (unit²);
    ``rel_half_width`` = half width / |mean|. ``ci_low``/``ci_high`` are None without
    enough data (then ``readings_needed`` may say how much is missing).

    ``interval_low``/``interval_high`` are the interval every output prints: the CI when
    ``certified``, else the collector's uncertified interval (docs/methods.md §4.1, from 3
    readings on), which assumes tau <= ``tau_bound`` and is ``width_factor`` times the
    i.i.d. t interval's width; ``interval_note`` is its mark ("independence not certified:
    assumes tau <= 2.4, 1.6x the i.i.d. width"). Both None only without any interval.

    ``rounds``: the steady rounds the collector was given; ``rounds_needed``: more rounds
    the subsession rule estimates it needs; ``confidence``: the CI's level; ``notes``: what
    the collector decided and why; ``nodes``: the node analysis (docs/methods.md §14) or
    None; ``level_shift_at``/``level_shift_change``: the steady round (0-based) where the
    level shifted and the shift's relative size, or None.
    """

    mean: float
    variance: float | None
    n_q: int | None
    q: int | None
    ci_low: float | None
    ci_high: float | None
    rel_half_width: float | None
    enough: bool
    n: int
    warmup_readings: int
    series: str
    readings_needed: int | None = None
    tau: float | None = None
    ess: float | None = None
    certified: bool = False
    interval_low: float | None = None
    interval_high: float | None = None
    tau_bound: float | None = None
    width_factor: float | None = None
    interval_note: str | None = None
    rounds: int = 0
    rounds_needed: int | None = None
    confidence: float | None = None
    notes: tuple[str, ...] = ()
    nodes: Mapping[str, object] | None = None
    level_shift_at: int | None = None
    level_shift_change: float | None = None

    @property
    def has_interval(self) -> bool:
        """An interval to show (certified or not)."""
        return self.interval_low is not None and self.interval_high is not None

    @property
    def uncertified(self) -> bool:
        """The interval shown is the uncertified one (docs/methods.md §4.1)."""
        return self.has_interval and not self.certified

    @property
    def interval_rel_half_width(self) -> float | None:
        """Half width / |mean| of the interval shown (certified or not)."""
        if not self.has_interval or self.mean == 0:
            return self.rel_half_width
        assert self.interval_low is not None and self.interval_high is not None
        return (self.interval_high - self.interval_low) / 2.0 / abs(self.mean)

    def interval_text(self, unit: str | DisplayUnit) -> str:
        """The mean and its interval as every output prints it
        (:func:`runner.format.estimate_text`), in ``unit``: "24.73 ms ± 0.61 ms", with
        what an uncertified interval assumes, the node means' sentence of a CI from them,
        "(no CI: ...)" only without any interval."""
        nodes = self.node_analysis
        text = nodes.text if nodes is not None and nodes.ci_from == "nodes" and nodes.text else None
        return interval_line(self, unit, text)

    @property
    def level_shift(self) -> str | None:
        """The level shift in words ("level shift at round 18 (+135 %)",
        :func:`runner.format.level_shift_words`); None without one."""
        return level_shift_words(self.level_shift_at, self.level_shift_change)

    @property
    def node_analysis(self) -> NodeAnalysis | None:
        """:attr:`nodes` as the typed :class:`NodeAnalysis`; None without one."""
        return None if not self.nodes else NodeAnalysis.from_stored(self.nodes)

    @property
    def usable(self) -> bool:
        """Enough data for a CI and a comparison (n_q >= 2, a variance)."""
        return self.enough and self.variance is not None and (self.n_q or 0) >= 2

    def to_dict(self) -> dict[str, object]:
        """The report JSON's ``estimate`` object: the fields up to ``interval_note`` (the
        rest are in the ``collected`` object beside it)."""
        return {k: getattr(self, k) for k in _SERIALISED}


#: the fields :meth:`Estimate.to_dict` writes, in this order (the report's JSON format)
_SERIALISED = tuple(f.name for f in fields(Estimate))[
    : [f.name for f in fields(Estimate)].index("interval_note") + 1
]


#: the stored key of each field of :class:`Estimate` whose name differs (the rest are stored
#: under the field's name)
_KEYS = {"variance": "s2_q"}


def _float(v: object) -> float | None:
    """A stored number as a float (NaN and infinities as they are); None for anything else
    (an export is a file anyone can write)."""
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def _whole(v: object) -> int | None:
    """A stored whole number as an int; None for anything else (text, a fraction, NaN)."""
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    return int(v) if isinstance(v, int) or v.is_integer() else None


def _text(v: object) -> str | None:
    return None if v is None else str(v)


#: how a stored value becomes the field's, by field name
_CONVERT: dict[str, Callable[[object], Any]] = {
    **dict.fromkeys(
        ("mean", "variance", "ci_low", "ci_high", "rel_half_width", "tau", "ess")
        + ("interval_low", "interval_high", "tau_bound", "width_factor", "confidence")
        + ("level_shift_change",),
        _float,
    ),
    **dict.fromkeys(("n_q", "q", "readings_needed", "rounds_needed", "level_shift_at"), _whole),
    **dict.fromkeys(("enough", "certified"), bool),
    **dict.fromkeys(("n", "warmup_readings", "rounds"), lambda v: _whole(v) or 0),
    "series": lambda v: str(v or "rounds"),
    "interval_note": _text,
    "notes": lambda v: tuple(str(n) for n in v) if isinstance(v, list | tuple) else (),
    "nodes": lambda v: v if isinstance(v, Mapping) and v else None,
}


def estimate_from(collected: Mapping[str, object] | None) -> Estimate | None:
    """The :class:`Estimate` of the collector's dict ``collected`` (``WorkloadStats.to_dict``
    as stored, exported or computed); None without one or without a mean (a number).

    The one reader of that dict: every field is read under its stored name (``variance``
    as ``s2_q``) and narrowed to its type; a value of another type (a hand-edited export)
    reads as missing (None, 0 for the counts). Dicts stored before the interval fields
    existed read with the CI as the interval."""
    c = collected
    if not c:
        return None
    values = {f.name: _CONVERT[f.name](c.get(_KEYS.get(f.name, f.name))) for f in fields(Estimate)}
    if values["mean"] is None:
        return None
    # dicts stored before the interval fields existed: the CI is the interval
    if "certified" not in c:
        values["certified"] = bool(values["enough"] and values["ci_low"] is not None)
    for bound in ("low", "high"):
        if f"interval_{bound}" not in c:
            values[f"interval_{bound}"] = values[f"ci_{bound}"]
    return Estimate(**values)


@dataclass(frozen=True)
class NodeAnalysis:
    """The node analysis of a workload whose steady rounds ran on 2 or more nodes
    (docs/methods.md §14): :attr:`Estimate.nodes` typed.

    ``nodes``, ``means``, ``counts``: each node, the mean of its subsession (or round)
    means in the workload's unit, and how many means it has; ``text``: the analysis in
    one phrase ("CI from 3 node means: nodes differ, F=685, p=2e-15"); ``ci_from``:
    ``"nodes"`` when the CI is the node-level one; ``between_variance``/``within_variance``
    (unit²), ``icc`` (a fraction) and ``optimal_per_node`` (means per node) as the
    analysis gave them, None when it did not.
    """

    nodes: tuple[str, ...]
    means: tuple[float, ...]
    counts: tuple[int, ...]
    text: str
    ci_from: str | None = None
    icc: float | None = None
    between_variance: float | None = None
    within_variance: float | None = None
    optimal_per_node: int | None = None

    @classmethod
    def from_stored(cls, nodes: Mapping[str, object]) -> NodeAnalysis:
        """The record of the collector's node analysis dict (stored in ``collected``);
        values of another type read as missing (empty lists, None)."""
        values = {f.name: _NODE_CONVERT[f.name](nodes.get(f.name)) for f in fields(cls)}
        return cls(**values)


def _items(convert: Callable[[object], Any]) -> Callable[[object], tuple[Any, ...]]:
    """A stored array, each item through ``convert`` (items it refuses, None, left out);
    () for anything but an array."""
    return lambda v: (
        tuple(x for x in map(convert, v) if x is not None) if isinstance(v, list | tuple) else ()
    )


_NODE_CONVERT: dict[str, Callable[[object], Any]] = {
    "nodes": _items(str),
    "means": _items(_float),
    "counts": _items(_whole),
    "text": lambda v: "" if v is None else str(v),
    "ci_from": _text,
    **dict.fromkeys(("icc", "between_variance", "within_variance"), _float),
    "optimal_per_node": _whole,
}


@dataclass(frozen=True)
class Description:
    """A workload's descriptive statistics of its per-round values (docs/methods.md §1):
    ``WorkloadResult.summary`` (runner/results/workloads.py ``describe_rounds``) typed.

    ``rounds``: the values described; ``median`` with its CI ``median_ci_low`` ..
    ``median_ci_high`` at ``confidence`` (None when computed without intervals, as
    ``benchrun show`` does); ``std``, quartiles ``q1``/``q3``, ``min``, ``max``, ``p90``,
    ``p99`` in the workload's unit; ``cov`` = std / mean (a fraction); ``outliers``: Tukey
    outliers among the values; ``deterministic``: every value the same; ``notes``: what
    ``stats.describe`` noted.
    """

    rounds: int = 0
    median: float | None = None
    median_ci_low: float | None = None
    median_ci_high: float | None = None
    std: float | None = None
    cov: float | None = None
    min: float | None = None
    q1: float | None = None
    q3: float | None = None
    max: float | None = None
    p90: float | None = None
    p99: float | None = None
    outliers: int | None = None
    deterministic: bool | None = None
    confidence: float | None = None
    notes: tuple[str, ...] = ()


def _real(v: object) -> float | None:
    """A number of ``stats`` (a Python or numpy number) as a float; None for anything else."""
    return float(v) if isinstance(v, numbers.Real) and not isinstance(v, bool) else None


def _count(v: object) -> int | None:
    """A count of ``stats`` (a Python or numpy integer) as an int; None for anything else."""
    return int(v) if isinstance(v, numbers.Integral) and not isinstance(v, bool) else None


#: how a value of the ``summary`` dict becomes the :class:`Description` field's, by name
_DESCRIPTION_CONVERT: dict[str, Callable[[object], Any]] = {
    **dict.fromkeys(
        ("median", "median_ci_low", "median_ci_high", "std", "cov", "min", "q1", "q3")
        + ("max", "p90", "p99", "confidence"),
        _real,
    ),
    "rounds": lambda v: _count(v) or 0,
    "outliers": _count,
    "deterministic": lambda v: None if v is None else bool(v),
    "notes": lambda v: tuple(str(n) for n in v) if isinstance(v, list | tuple) else (),
}


def description_from(summary: Mapping[str, object] | None) -> Description | None:
    """The :class:`Description` of ``summary`` (the dict ``describe_rounds`` makes, which the
    JSON outputs print as it is); None without one. A key it lacks is None."""
    if not summary:
        return None
    values = {
        f.name: _DESCRIPTION_CONVERT[f.name](summary.get(f.name)) for f in fields(Description)
    }
    return Description(**values)
