"""Numbers as the user reads them: values with units, durations (plain text, no rich)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

#: SI prefixes for display, largest first: (factor relative to the base unit, prefix)
_TIME_SCALES = ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns"))
_BYTE_SCALES = ((1024.0**2, "GiB"), (1024.0, "MiB"), (1.0, "KiB"))


@dataclass(frozen=True)
class DisplayUnit:
    """The unit one workload's values are shown in, chosen once for every output.

    Attributes
    ----------
    base : str
        The stored unit (``s`` for times, ``KiB`` for max RSS, the readings' own unit).
    label : str
        The unit shown (``ms``); equal to ``base`` when no rescaling applies.
    factor : float
        Size of one ``label`` in ``base`` units: shown value = stored value / factor.
    """

    base: str
    label: str
    factor: float = 1.0

    def scale(self, value: float | None) -> float | None:
        """``value`` (in ``base``) expressed in ``label``; None stays None."""
        return None if value is None else value / self.factor

    def text(self, value: float | None, digits: int = 4, missing: str = "-") -> str:
        """``value`` (in ``base``) as "37.59 ms": ``digits`` significant digits and the label."""
        if value is None or not math.isfinite(value):
            return missing
        return f"{value / self.factor:.{digits}g} {self.label}".rstrip()

    def axis(self, quantity: str) -> str:
        """An axis title: "wall_time [ms]", or just ``quantity`` for a dimensionless value."""
        return f"{quantity} [{self.label}]" if self.label else quantity


def display_unit(base: str, typical: float | None) -> DisplayUnit:
    """The unit to show values of about ``typical`` (in ``base``) with 1-3 integer digits.

    Seconds become s, ms, µs or ns and KiB become KiB, MiB or GiB, by the magnitude of
    ``typical`` (use the workload's mean or median, so that every figure of one workload
    shares the unit); any other unit is kept as it is.

    Examples
    --------
    >>> display_unit("s", 0.03759).text(0.03759)
    '37.59 ms'
    >>> display_unit("s", 0.03759).text(0.0012)
    '1.2 ms'
    >>> display_unit("KiB", 20480.0).label
    'MiB'
    """
    scales = _TIME_SCALES if base == "s" else _BYTE_SCALES if base == "KiB" else None
    if scales is None or typical is None or not math.isfinite(typical) or typical == 0:
        return DisplayUnit(base, base)
    a = abs(typical)
    for factor, label in scales:
        if a >= factor:
            return DisplayUnit(base, label, factor)
    factor, label = scales[-1]
    return DisplayUnit(base, label, factor)


def format_value(value: float | None, unit: str) -> str:
    """A reading with its unit, seconds shown in s/ms/µs/ns (4 significant digits)."""
    if value is None:
        return "-"
    if unit == "s":
        a = abs(value)
        for scale, name in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns")):
            if a >= scale or scale == 1e-9:
                return f"{value / scale:.4g} {name}"
    return f"{value:.4g} {unit}".rstrip()


def format_duration(seconds: float) -> str:
    """``1h02m``, ``3m05s`` or ``12s``."""
    s = max(0, int(round(seconds)))
    if s >= 3600:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    if s >= 60:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s}s"


def format_percent(
    share: float | None, *, digits: int = 3, signed: bool = False, missing: str = "-"
) -> str:
    """A share as a percentage with ``digits`` significant digits: 0.0123 -> "1.23 %"
    (``signed``: "+1.23 %"); ``missing`` for None."""
    if share is None:
        return missing
    return f"{100 * share:{'+' if signed else ''}.{digits}g} %"


def format_number(value: float | None, missing: str = "-") -> str:
    """A statistic (a p-value, a ratio) with 3 significant digits; ``missing`` for None."""
    return missing if value is None else f"{value:.3g}"


def level_shift_text(collected: Mapping[str, Any]) -> str | None:
    """``"level shift at round 18 (+135 %)"`` from :meth:`WorkloadStats.to_dict` (round
    counted 1-based among the steady rounds), None without a level shift."""
    at = collected.get("level_shift_at")
    if at is None:
        return None
    change = collected.get("level_shift_change")
    size = "" if change is None else f" ({100 * float(change):+.0f} %)"
    return f"level shift at round {int(at) + 1}{size}"
