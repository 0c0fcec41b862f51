"""What a duet campaign's checks found, from its events (docs/duet.md): the asymmetry
check (``duet-asymmetry``) and a side that used more than one CPU (``duet-multi-cpu``),
for ``show``, ``run --json`` and the report.

The events' data (written by runner/campaign/duets.py) is read once into
:class:`DuetChecks`; :meth:`DuetChecks.to_dict` is the JSON form ``show --json`` prints
(each event's data with its ``message``), which :func:`duet_lines` also reads back.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

from benchrun.runner.control.duet_asymmetry import ASYMMETRY_EVENT, MULTI_CPU_EVENT
from benchrun.runner.store.database import EventRow

__all__ = ["DuetCheck", "DuetChecks", "duet_checks", "duet_summary", "duet_lines"]


def _float(v: object) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def _pair(v: object) -> tuple[str, str] | None:
    return (str(v[0]), str(v[1])) if isinstance(v, list | tuple) and len(v) == 2 else None


@dataclass(frozen=True)
class DuetCheck:
    """One duet check event: its ``message`` and its data as stored (``data``, printed as
    it is), with what the lines read of it typed: the ``pair`` (a, b), whether the
    asymmetry interval excludes 1 (``flagged``), whether the duet verdict stands
    (``verdict_valid``; None: not said), and the solo passes' ratio b/a with its interval
    (``solo_ratio``, ``solo_low``, ``solo_high``, unitless) over ``n_solo`` passes."""

    message: str
    data: Mapping[str, object]
    pair: tuple[str, str] | None = None
    flagged: bool = False
    verdict_valid: bool | None = None
    solo_ratio: float | None = None
    solo_low: float | None = None
    solo_high: float | None = None
    n_solo: int | None = None

    @classmethod
    def from_stored(cls, data: Mapping[str, object], message: str) -> DuetCheck:
        """The check of an event's ``data`` and ``message``."""
        values = {
            f.name: _CONVERT[f.name](data.get(f.name))
            for f in fields(cls)
            if f.name not in ("message", "data")
        }
        return cls(message=message, data=data, **values)

    def to_dict(self) -> dict[str, object]:
        """The event's data with its ``message`` (the JSON form)."""
        return {**self.data, "message": self.message}

    def refused_line(self) -> str | None:
        """The line of a duet verdict refused (``asymmetry: refuse``): invalid, and what
        the solo passes give instead; None when the verdict stands or is not said."""
        if self.verdict_valid is not False or self.pair is None:
            return None
        a, b = self.pair
        return (
            f"duet verdict INVALID (duet asymmetry: refuse): the pair interferes "
            f"asymmetrically; alone, in the solo passes, {b}/{a} = "
            f"{self.solo_ratio:.4g} [{self.solo_low:.4g}, {self.solo_high:.4g}] "
            f"({self.n_solo} passes)"
        )


_CONVERT: dict[str, Callable[[object], Any]] = {
    "pair": _pair,
    "flagged": bool,
    "verdict_valid": lambda v: None if v is None else bool(v),
    **dict.fromkeys(("solo_ratio", "solo_low", "solo_high"), _float),
    "n_solo": lambda v: v if isinstance(v, int) and not isinstance(v, bool) else None,
}


@dataclass(frozen=True)
class DuetChecks:
    """A duet campaign's checks: the newest asymmetry check (None without one) and every
    multi-CPU stop or warning."""

    asymmetry: DuetCheck | None
    multi_cpu: tuple[DuetCheck, ...]

    @property
    def bad(self) -> bool:
        """A side used more than one CPU, or the pair interferes asymmetrically."""
        return bool(self.multi_cpu) or (self.asymmetry is not None and self.asymmetry.flagged)

    def lines(self) -> list[str]:
        """Lines saying what the checks found: each multi-CPU stop, the asymmetry check's
        sentence, and when the duet verdict was refused that it is invalid and what the
        solo passes give instead."""
        lines = [f"{m.message} (the campaign stopped here)" for m in self.multi_cpu]
        if self.asymmetry is not None:
            lines.append(self.asymmetry.message)
            refused = self.asymmetry.refused_line()
            if refused is not None:
                lines.append(refused)
        return lines

    def to_dict(self) -> dict[str, object]:
        """The JSON form: ``asymmetry`` (its data and message, or None) and ``multi_cpu``."""
        return {
            "asymmetry": None if self.asymmetry is None else self.asymmetry.to_dict(),
            "multi_cpu": [m.to_dict() for m in self.multi_cpu],
        }

    @classmethod
    def from_dict(cls, summary: Mapping[str, object]) -> DuetChecks:
        """The checks of their JSON form (:meth:`to_dict`; each entry's ``message`` beside
        its data)."""

        def check(entry: object) -> DuetCheck | None:
            if not isinstance(entry, Mapping) or not entry:
                return None
            data = {str(k): v for k, v in entry.items() if k != "message"}
            return DuetCheck.from_stored(data, str(entry["message"]))

        multi = summary["multi_cpu"]
        entries = [check(m) for m in multi] if isinstance(multi, list) else []
        return cls(check(summary.get("asymmetry")), tuple(m for m in entries if m is not None))


def duet_checks(events: Sequence[EventRow]) -> DuetChecks | None:
    """The newest asymmetry check and every multi-CPU stop or warning of the campaign;
    None when it has neither (no duet, or one without solo passes that ran through)."""
    check = None
    multi = []
    for e in events:
        if e.kind == ASYMMETRY_EVENT:
            check = DuetCheck.from_stored(e.data or {}, e.message)
        elif e.kind == MULTI_CPU_EVENT:
            multi.append(DuetCheck.from_stored(e.data or {}, e.message))
    if check is None and not multi:
        return None
    return DuetChecks(check, tuple(multi))


def duet_summary(events: Sequence[EventRow]) -> dict[str, Any] | None:
    """:meth:`DuetChecks.to_dict` of :func:`duet_checks` (kept for the readers of the dict:
    ``show --json`` prints it); None without checks."""
    checks = duet_checks(events)
    return None if checks is None else checks.to_dict()


def duet_lines(summary: DuetChecks | Mapping[str, object] | None) -> list[str]:
    """:meth:`DuetChecks.lines` of the checks, or of their JSON form (:func:`duet_summary`);
    [] without checks."""
    if not summary:
        return []
    checks = summary if isinstance(summary, DuetChecks) else DuetChecks.from_dict(summary)
    return checks.lines()
