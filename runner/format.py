"""Numbers as the user reads them: values with units, durations (plain text, no rich)."""

from __future__ import annotations


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
