"""A campaign's comparisons as typed records: one :class:`StoredComparison` per comparison,
:class:`StoredVerdicts` for all of them (issue 30).

The stopping controller stores its comparisons as one "verdicts" event (its
``PairStatus``/``BaselineStatus`` as dicts, runner/campaign/adaptive.py); a fixed campaign's
are computed in the same form when read (runner/results/comparisons.py).
:func:`verdicts_from_dict` is the one reader of that form: ``benchrun show``'s table, the
report (HTML, Markdown, JSON, CSV) and ``benchrun export`` read the typed records, and
:meth:`StoredVerdicts.to_dict` is their one JSON form. Fields the stored form names
otherwise are renamed here once (``welch_p`` -> ``p``, ``welch_p_holm`` -> ``p_holm``; a
baseline's ``baseline``/``name`` -> ``a``/``b``, ``relative_change`` ->
``relative_difference``).

Units: ratios and relative differences are unitless (b/a; 0.05 = 5 %); p-values and
alpha are probabilities.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from benchrun.runner.results.headline import pair_headline

__all__ = [
    "StoredComparison",
    "StoredVerdicts",
    "VerdictsEvent",
    "verdicts_from_dict",
    "TEST_NAMES",
]

#: how each test is named for people
TEST_NAMES = {"paired": "paired", "welch": "Welch"}


def _float(v: object) -> float | None:
    """A stored number (or its text) as a finite float; None for anything else."""
    if not isinstance(v, str | int | float):
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if f == f and f not in (float("inf"), float("-inf")) else None


def _int(v: object) -> int | None:
    """A stored whole number (or its text) as an int; None for anything else."""
    if not isinstance(v, str | int | float):
        return None
    try:
        return int(v)
    except (TypeError, ValueError, OverflowError):
        return None


@dataclass(frozen=True)
class StoredComparison:
    """One comparison as the controller stored it (module docstring).

    ``kind`` is ``pair`` (adjacent workloads of one group; ``a`` the better or equal one)
    or ``baseline`` (``b`` against ``a``, its baseline: an earlier result or the
    experiment's ``reference``). ``ratio`` = b/a with its CI ``ratio_low``..``ratio_high``
    (None when there is none yet); ``passes`` = passes in the paired series (None for
    Welch). ``p`` is the raw p-value of the test that decided (the paired t on the log
    ratios, or Welch's), ``p_holm`` the Holm-adjusted one, ``tost_p`` the equivalence
    test's; ``look`` and ``alpha``: when the verdict was declared and at which level.
    ``headline`` is :func:`runner.results.headline.pair_headline` of the stored dict
    (docs/paired.md).
    """

    kind: str
    a: str
    b: str
    headline: str
    verdict: str
    test: str | None
    ratio: float | None
    ratio_low: float | None
    ratio_high: float | None
    passes: int | None
    p: float | None
    p_holm: float | None
    tost_p: float | None
    look: int | None
    alpha: float | None
    relative_difference: float | None
    rounds_needed: int | None
    notes: tuple[str, ...] = ()
    #: Welch's p on the two workloads' own subsession means beside a paired verdict
    #: (None when not computed, and for Welch comparisons, whose ``p`` it is)
    independent_p: float | None = None

    @property
    def test_name(self) -> str:
        """``paired``, ``Welch`` or ``-``."""
        return TEST_NAMES.get(self.test or "", self.test or "-")

    @property
    def decided(self) -> bool:
        return self.verdict not in ("undecided", "no data")

    def involves(self, name: str) -> bool:
        return name in (self.a, self.b)

    def to_dict(self) -> dict[str, object]:
        d = asdict(self)
        d["notes"] = list(self.notes)
        return d


@dataclass(frozen=True)
class StoredVerdicts:
    """The final "verdicts" event of an adaptive campaign (module docstring).

    ``conditions_met`` is None for campaigns stored before the field existed and for
    fixed campaigns (no stopping rule); ``margin`` (TOST, relative), ``alpha`` and
    ``confidence`` are the campaign's settings. ``computed`` is None for verdicts the
    controller stored, else how they were computed when read (a fixed campaign,
    :func:`runner.results.comparisons.fixed_verdicts`).
    """

    comparisons: tuple[StoredComparison, ...]
    conditions_met: bool | None
    reason: str | None
    margin: float | None
    alpha: float | None
    confidence: float | None
    computed: str | None = None

    @property
    def pairs(self) -> tuple[StoredComparison, ...]:
        return tuple(c for c in self.comparisons if c.kind == "pair")

    @property
    def baselines(self) -> tuple[StoredComparison, ...]:
        return tuple(c for c in self.comparisons if c.kind == "baseline")

    @property
    def budget_stop(self) -> bool:
        """The campaign ended on a budget (or a failure) with a condition unmet."""
        return self.conditions_met is False

    @property
    def paired(self) -> bool:
        """Was any comparison decided (or tested) on per-pass log ratios?"""
        return any(c.test == "paired" for c in self.comparisons)

    def of(self, name: str) -> tuple[StoredComparison, ...]:
        """The comparisons ``name`` is in."""
        return tuple(c for c in self.comparisons if c.involves(name))

    def all_paired(self, name: str) -> bool:
        """``name`` has comparisons and every one of them is paired."""
        mine = self.of(name)
        return bool(mine) and all(c.test == "paired" for c in mine)

    def stop_sentence(self) -> str | None:
        """One plain sentence on how the stopping rule ended (None when not stored), or for
        a fixed campaign how its comparisons were computed and why any is undecided."""
        if self.computed is not None:
            return f"Comparisons of a {self.reason or self.computed}."
        if self.conditions_met is None:
            return None
        if self.conditions_met:
            return (
                "The campaign stopped when every condition of its stopping rule was met: "
                f"{self.reason or '-'}."
            )
        return (
            "The campaign ended on a budget before every condition of its stopping rule was "
            f"met: {self.reason or '-'}. Undecided comparisons and intervals wider than the "
            "target are what the budget allowed."
        )

    def to_dict(self) -> dict[str, object]:
        """JSON form: ``source`` ("controller": stored by the stopping controller;
        "computed": a fixed campaign's, computed when read, ``computed`` says how), the
        settings, and one dict per comparison."""
        return {
            "source": "controller" if self.computed is None else "computed",
            "computed": self.computed,
            "conditions_met": self.conditions_met,
            "budget_stop": self.budget_stop,
            "reason": self.reason,
            "margin": self.margin,
            "alpha": self.alpha,
            "confidence": self.confidence,
            "comparisons": [c.to_dict() for c in self.comparisons],
        }


#: the stored key of each field of :class:`StoredComparison` whose name differs, for a pair
#: and for a baseline comparison (the rest are stored under the field's name)
_PAIR_KEYS = {"p": "welch_p", "p_holm": "welch_p_holm"}
_BASELINE_KEYS = {
    **_PAIR_KEYS,
    "a": "baseline",
    "b": "name",
    "relative_difference": "relative_change",
}
#: how a stored value becomes the field's (fields not named here are taken as stored)
_CONVERT: dict[str, Callable[[object], Any]] = {
    **dict.fromkeys(("a", "b"), str),
    **dict.fromkeys(
        ("ratio", "ratio_low", "ratio_high", "p", "p_holm", "tost_p", "alpha")
        + ("relative_difference", "independent_p"),
        _float,
    ),
    **dict.fromkeys(("passes", "look", "rounds_needed"), _int),
    "verdict": lambda v: str(v or "undecided"),
    "notes": lambda v: tuple(str(n) for n in v) if isinstance(v, list | tuple) else (),
}


def _comparison(
    kind: str, p: Mapping[str, object], units: Mapping[str, str], directions: Mapping[str, str]
) -> StoredComparison:
    keys = _PAIR_KEYS if kind == "pair" else _BASELINE_KEYS
    values = {
        f.name: _CONVERT.get(f.name, _same)(p.get(keys.get(f.name, f.name)))
        for f in fields(StoredComparison)
        if f.name not in ("kind", "headline")
    }
    return StoredComparison(kind=kind, headline=pair_headline(p, units, directions), **values)


def _same(v: object) -> object:
    return v


def _met(v: object) -> bool | None:
    return None if v is None else bool(v)


def _text(v: object) -> str | None:
    return None if v is None else str(v)


def _names(v: object) -> dict[str, str]:
    """A stored map of workload name -> unit (or direction); {} when it is none."""
    return {str(k): str(x) for k, x in v.items()} if isinstance(v, Mapping) else {}


def _entries(v: object) -> tuple[Mapping[str, object], ...]:
    """The stored comparisons of one kind: the objects of a stored array."""
    return tuple(e for e in v if isinstance(e, Mapping)) if isinstance(v, list) else ()


@dataclass(frozen=True)
class VerdictsEvent:
    """The data of a stored "verdicts" event, read once (module docstring): the stored
    ``pairs`` and ``baselines`` (each the controller's status as a dict, read by
    :func:`_comparison`), the workloads' ``units`` and ``directions`` by name, and the
    campaign-level fields :class:`StoredVerdicts` keeps. A value of another type reads as
    missing."""

    pairs: tuple[Mapping[str, object], ...] = ()
    baselines: tuple[Mapping[str, object], ...] = ()
    units: dict[str, str] = field(default_factory=dict)
    directions: dict[str, str] = field(default_factory=dict)
    conditions_met: bool | None = None
    reason: str | None = None
    margin: float | None = None
    alpha: float | None = None
    confidence: float | None = None
    computed: str | None = None

    @classmethod
    def from_stored(cls, doc: Mapping[str, object]) -> VerdictsEvent:
        values = {f.name: _EVENT_CONVERT[f.name](doc.get(f.name)) for f in fields(cls)}
        return cls(**values)


#: how each field of :class:`VerdictsEvent` is read from the stored event's data (under
#: the field's name)
_EVENT_CONVERT: dict[str, Callable[[object], Any]] = {
    **dict.fromkeys(("pairs", "baselines"), _entries),
    **dict.fromkeys(("units", "directions"), _names),
    "conditions_met": _met,
    **dict.fromkeys(("reason", "computed"), _text),
    **dict.fromkeys(("margin", "alpha", "confidence"), _float),
}


def verdicts_from_dict(doc: Mapping[str, object]) -> StoredVerdicts:
    """:class:`StoredVerdicts` of the data of a stored "verdicts" event."""
    e = VerdictsEvent.from_stored(doc)
    comparisons = [_comparison("pair", p, e.units, e.directions) for p in e.pairs]
    comparisons += [_comparison("baseline", p, e.units, e.directions) for p in e.baselines]
    return StoredVerdicts(
        comparisons=tuple(comparisons),
        conditions_met=e.conditions_met,
        reason=e.reason,
        margin=e.margin,
        alpha=e.alpha,
        confidence=e.confidence,
        computed=e.computed,
    )
