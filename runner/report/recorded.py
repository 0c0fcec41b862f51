"""What the report's methods paragraph and rules say of a campaign's machine record (the
metadata JSON stored with it, docs/machine.md), read once into typed records.

The record is written by runner/machine/metadata.py and may come from an older benchrun or
a store someone else wrote: a section or fact that is missing, or not of its kind, reads as
not recorded here (None, or nothing counted), never as an error. The machine table walks
the whole record itself (runner/machine/describe.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

#: the sections of the record rule 9 asks for, in the order it names them
SECTIONS = ("hardware", "software", "timer", "environment")


@dataclass(frozen=True)
class TimerFacts:
    """The timer the rounds were timed with: its ``clock`` (e.g. ``perf_counter_ns``), its
    ``implementation``, the smallest step measured between two readings [ns] and the
    cost of one call [ns]; None where the record lacks a fact."""

    clock: str | None = None
    implementation: str | None = None
    resolution_ns: float | None = None
    overhead_ns: float | None = None

    @classmethod
    def from_record(cls, timer: object) -> TimerFacts:
        """The record's ``timer`` section (nothing known when it is not an object)."""
        if not isinstance(timer, Mapping):
            return cls()
        clock, implementation = timer.get("clock"), timer.get("implementation")
        return cls(
            clock=str(clock) if clock else None,
            implementation=str(implementation) if implementation else None,
            resolution_ns=_number(timer.get("measured_resolution_ns")),
            overhead_ns=_number(timer.get("overhead_ns")),
        )


def _number(value: object) -> float | None:
    """``value`` as a number when it is one (JSON int or float), else None."""
    return float(value) if isinstance(value, int | float) else None


@dataclass(frozen=True)
class RecordedFacts:
    """The facts of a machine record the methods and rules use: whether there is a record
    at all, the sections of :data:`SECTIONS` it holds (not empty), how many facts of those
    sections the probes could not read (their ``_unavailable`` entries), the timer, how
    each round's processes were contained (``cgroup`` or ``process group``) and the
    record's ``tuning`` (what ``settings.tune`` changed, read by runner/machine/tuning.py
    ``recorded_changes``)."""

    present: bool = False
    sections: tuple[str, ...] = ()
    unavailable: int = 0
    timer: TimerFacts = TimerFacts()
    containment: str | None = None
    tuning: object = None

    @classmethod
    def from_metadata(cls, metadata: Mapping[str, object] | None) -> RecordedFacts:
        """The facts of a campaign's stored ``metadata`` (None: no record was stored)."""
        if not metadata:
            return cls()
        held = {k: v for k, v in metadata.items() if k in SECTIONS and v}
        containment = metadata.get("containment")
        kind = containment.get("kind") if isinstance(containment, Mapping) else None
        return cls(
            present=True,
            sections=tuple(k for k in SECTIONS if k in held),
            unavailable=sum(_unreadable(part) for part in held.values()),
            timer=TimerFacts.from_record(metadata.get("timer")),
            containment=str(kind) if kind else None,
            tuning=metadata.get("tuning"),
        )


def _unreadable(section: object) -> int:
    """How many facts of one section the probes could not read (its ``_unavailable``
    object: fact -> why)."""
    if not isinstance(section, Mapping):
        return 0
    gone = section.get("_unavailable")
    return len(gone) if isinstance(gone, Mapping | list) else 0
