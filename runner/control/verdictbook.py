"""The controller's book of declared verdicts, as typed records.

A verdict, once declared at a look, is kept for the rest of the campaign (docs/methods.md
§7: a declared separation is only ever revised to the other order). The controller keeps
one :class:`PairRecord` per compared pair and one :class:`BaselineRecord` per workload
compared with a baseline; each is written into the campaign's events (the ``data`` of a
``pair-verdict`` / ``baseline-verdict`` event and the controller state a resumed campaign
restores) by its ``to_json``, and read back by ``from_json``, the one place that checks a
stored record's shape. The JSON keys are the store's format (docs/export-format.md
"events").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

from benchrun.runner.control.decision import BaselineVerdict, PairVerdict, TestKind
from benchrun.runner.jsonread import FieldError, JsonFields

__all__ = [
    "OwnLook",
    "PairRecord",
    "BaselineRecord",
    "BadRecord",
    "as_declared",
    "as_base_declared",
]


#: a stored verdict record that is not one this controller wrote: the reader's
#: :class:`FieldError` (a ValueError whose one-line message names the field), by its old name
BadRecord = FieldError


#: the verdicts a record holds (an undecided comparison has no record)
DECLARED: tuple[Literal["separated", "equivalent"], ...] = ("separated", "equivalent")
BASE_DECLARED: tuple[Literal["slower", "faster", "equivalent"], ...] = (
    "slower",
    "faster",
    "equivalent",
)
TESTS: tuple[TestKind, ...] = get_args(TestKind)


def as_declared(verdict: str) -> PairVerdict:
    """``verdict`` (a string of :mod:`stats.multi`) as a declared pair verdict."""
    for a in DECLARED:
        if verdict == a:
            return a
    raise ValueError(f"not a declared pair verdict: {verdict!r}")


def as_base_declared(verdict: str) -> BaselineVerdict:
    """``verdict`` as a declared baseline verdict ("slower", "faster", "equivalent")."""
    for a in BASE_DECLARED:
        if verdict == a:
            return a
    raise ValueError(f"not a declared baseline verdict: {verdict!r}")


@dataclass(frozen=True)
class OwnLook:
    """What a verdict declared at a comparison's own looks adds (docs/paired.md): the
    per-pass test (``"rank"`` or ``"t"``), its estimand, the passes tested, the units
    (means of ``q`` passes) the test ran on and whether the series was certified."""

    paired_test: str
    estimand: str
    passes: int
    units: int
    q: int
    certified: bool

    def to_json(self) -> dict[str, object]:
        """The record's keys after the common ones, in the stored order."""
        return {
            "paired_test": self.paired_test,
            "estimand": self.estimand,
            "passes": self.passes,
            "units": self.units,
            "q": self.q,
            "certified": self.certified,
        }

    @classmethod
    def from_json(cls, d: JsonFields) -> OwnLook | None:
        """The own-look part of a stored record; None when it has none (no ``passes``)."""
        if not d.has("passes"):
            return None
        return cls(
            paired_test=d.required("paired_test", str),
            estimand=d.required("estimand", str),
            passes=d.required("passes", int),
            units=d.required("units", int),
            q=d.required("q", int),
            certified=bool(d.value("certified")),
        )


@dataclass(frozen=True)
class PairRecord:
    """A declared verdict on the pair ``a``~``b``: ``a`` is better than ``b``
    (``"separated"``) or they are ``"equivalent"``; at campaign look ``look`` (or the
    pair's own look), level ``alpha``; ``welch_p_holm`` the p of separation as tested
    (Holm-adjusted at campaign looks), ``tost_p`` the TOST p, ``relative_difference`` b/a - 1
    (None when a's mean is 0), ``test`` ``"paired"`` or ``"welch"``; ``own`` set when the
    pair was decided at its own looks."""

    a: str
    b: str
    verdict: PairVerdict
    look: int
    alpha: float
    welch_p_holm: float
    tost_p: float
    relative_difference: float | None
    test: TestKind
    own: OwnLook | None = None

    @property
    def key(self) -> frozenset[str]:
        """The unordered pair, the book's key."""
        return frozenset((self.a, self.b))

    def to_json(self) -> dict[str, object]:
        """The stored form (an event's ``data``; the controller state's ``verdicts``)."""
        out: dict[str, object] = {
            "a": self.a,
            "b": self.b,
            "verdict": self.verdict,
            "look": self.look,
            "alpha": self.alpha,
            "welch_p_holm": self.welch_p_holm,
            "tost_p": self.tost_p,
            "relative_difference": self.relative_difference,
            "test": self.test,
        }
        if self.own is not None:
            out.update(self.own.to_json())
        return out

    @classmethod
    def from_json(cls, d: object) -> PairRecord:
        """The record :meth:`to_json` wrote; :class:`BadRecord` for any other shape."""
        f = JsonFields(d, "verdict record")
        return cls(
            a=f.required("a", str),
            b=f.required("b", str),
            verdict=f.one_of("verdict", DECLARED),
            look=f.required("look", int),
            alpha=f.finite("alpha"),
            welch_p_holm=f.finite("welch_p_holm"),
            tost_p=f.finite("tost_p"),
            relative_difference=f.optional_finite("relative_difference"),
            test=f.one_of("test", TESTS) if f.has("test") else "welch",
            own=OwnLook.from_json(f),
        )


@dataclass(frozen=True)
class BaselineRecord:
    """A declared verdict on workload ``name`` against its baseline ``baseline`` (a
    workload, or ``"@stored"``): ``"slower"``, ``"faster"`` (in the metric's direction) or
    ``"equivalent"``, with ``relative_change`` = name/baseline - 1; the other fields as
    :class:`PairRecord`'s."""

    name: str
    baseline: str
    verdict: BaselineVerdict
    look: int
    alpha: float
    relative_change: float | None
    welch_p_holm: float
    tost_p: float
    test: TestKind
    own: OwnLook | None = None

    def to_json(self) -> dict[str, object]:
        """The stored form (an event's ``data``; the state's ``baseline_verdicts``)."""
        out: dict[str, object] = {
            "name": self.name,
            "baseline": self.baseline,
            "verdict": self.verdict,
            "look": self.look,
            "alpha": self.alpha,
            "relative_change": self.relative_change,
            "welch_p_holm": self.welch_p_holm,
            "tost_p": self.tost_p,
            "test": self.test,
        }
        if self.own is not None:
            out.update(self.own.to_json())
        return out

    @classmethod
    def from_json(cls, d: object) -> BaselineRecord:
        """The record :meth:`to_json` wrote; :class:`BadRecord` for any other shape."""
        f = JsonFields(d, "baseline verdict record")
        return cls(
            name=f.required("name", str),
            baseline=f.required("baseline", str),
            verdict=f.one_of("verdict", BASE_DECLARED),
            look=f.required("look", int),
            alpha=f.finite("alpha"),
            relative_change=f.optional_finite("relative_change"),
            welch_p_holm=f.finite("welch_p_holm"),
            tost_p=f.finite("tost_p"),
            test=f.one_of("test", TESTS) if f.has("test") else "welch",
            own=OwnLook.from_json(f),
        )
