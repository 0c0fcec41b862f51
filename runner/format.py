"""Numbers as the user reads them: values with units, durations (plain text, no rich); and
:func:`printable`, the one function that makes text from files safe to print."""

from __future__ import annotations

import functools
import math
import re
import unicodedata
from dataclasses import dataclass
from typing import Protocol

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


def level_shift_words(at: int | None, change: float | None) -> str | None:
    """``"level shift at round 18 (+135 %)"``: the level shifted at the steady round ``at``
    (0-based; printed 1-based) by ``change`` (relative, 1.35 = +135 %; None: size
    unknown); None without a level shift (``at`` None)."""
    if at is None:
        return None
    size = "" if change is None else f" ({100 * change:+.0f} %)"
    return f"level shift at round {at + 1}{size}"


def estimate_text(
    unit: str | DisplayUnit,
    mean: float | None,
    *,
    low: float | None,
    high: float | None,
    certified: bool,
    note: str | None = None,
    readings_needed: int | None = None,
    n: int | None = None,
    nodes: str | None = None,
    level_shift: str | None = None,
) -> str:
    """One workload's estimate as every output prints it.

    ``unit``: the readings' unit (then shown in the unit :func:`display_unit` picks for
    ``mean``) or a :class:`DisplayUnit`; ``low``/``high`` the interval (the certified CI,
    or the uncertified interval of docs/methods.md §4.1 with ``note`` saying what it
    assumes); ``nodes`` the sentence of a CI from node means; ``level_shift`` the words of
    a level shift that leaves no interval. Returns ``"24.73 ms ± 0.61 ms"`` for a
    certified CI, ``"24.73 ms ± 0.61 ms (independence not certified: assumes tau <= 2.4,
    1.6x the i.i.d. width)"`` for an uncertified interval, ``"24.73 ms (no CI: need ~N
    readings, have M)"`` only when there is no interval at all (fewer than 3 readings), and
    ``"-"`` without a mean; a CI from node means is followed by "(CI from 3 node means:
    nodes differ, F=12.3, p=0.0004)".
    """
    if mean is None:
        return "-"
    du = unit if isinstance(unit, DisplayUnit) else display_unit(unit, mean)
    if low is None or high is None:
        if level_shift:
            return f"{du.text(mean)} (no CI: {level_shift})"
        why = (
            f"need ~{readings_needed} readings, have {n}" if readings_needed else "not enough data"
        )
        return f"{du.text(mean)} (no CI: {why})"
    text = f"{du.text(mean)} ± {du.text((high - low) / 2.0)}"
    if not certified and note:
        text += f" ({note})"
    if nodes:
        text += f" ({nodes})"
    return text


class IntervalFields(Protocol):
    """What :func:`interval_line` reads of an estimate: the collector's ``WorkloadStats``
    while a campaign runs, results' ``Estimate`` when read (the same field names)."""

    @property
    def mean(self) -> float | None: ...
    @property
    def interval_low(self) -> float | None: ...
    @property
    def interval_high(self) -> float | None: ...
    @property
    def certified(self) -> bool: ...
    @property
    def interval_note(self) -> str | None: ...
    @property
    def readings_needed(self) -> int | None: ...
    @property
    def n(self) -> int: ...
    @property
    def level_shift_at(self) -> int | None: ...
    @property
    def level_shift_change(self) -> float | None: ...


def interval_line(e: IntervalFields, unit: str | DisplayUnit, nodes: str | None = None) -> str:
    """:func:`estimate_text` of the estimate ``e`` in ``unit``; ``nodes``: the sentence of
    a CI from node means, if it is one."""
    return estimate_text(
        unit,
        e.mean,
        low=e.interval_low,
        high=e.interval_high,
        certified=e.certified,
        note=e.interval_note,
        readings_needed=e.readings_needed,
        n=e.n,
        nodes=nodes,
        level_shift=level_shift_words(e.level_shift_at, e.level_shift_change),
    )


def printable(text: str, keep: str = "") -> str:
    """``text`` with every character a terminal could act on shown escaped, as Python writes
    it: ESC as ``\\x1b``, DEL ``\\x7f``, a C1 control ``\\x9b``, a bidi override
    ``\\u202e``, a newline ``\\n``; the characters of ``keep`` (e.g. ``"\\n\\t"`` for a
    multi-line text) stay as they are.

    Every name benchrun prints comes from a file someone else may have written (an
    experiment's matrix values, an imported benchmark's name, a stored campaign), and a
    terminal obeys escape sequences in it: ``\\x1b]0;TITLE\\x07`` retitles the window,
    OSC 52 writes the clipboard, ``\\u202e`` shows text reversed. The escaped form is one
    visible line of the same meaning. Escaped are the Unicode categories a terminal acts
    on or that reorder or hide text: controls (Cc: C0, DEL, C1), format characters (Cf:
    bidi overrides and isolates, zero-width characters, the soft hyphen), line and
    paragraph separators (Zl, Zp) and surrogates (Cs); spaces such as the no-break space
    (Zs, which benchrun's own tables use between digit groups), private-use and unassigned
    code points show as what they are. The mapping is not injective (a name may hold the
    backslash text ``\\x1b`` itself); where names must stay distinct the caller checks.

    Examples
    --------
    >>> printable("bench\\x1b]0;pwned\\x07")
    'bench\\\\x1b]0;pwned\\\\x07'
    >>> printable("a\\tb\\nc", keep="\\n")
    'a\\\\tb\\nc'
    """
    if text.isprintable():
        return text
    if keep:
        stripped = text
        for ch in keep:
            stripped = stripped.replace(ch, "")
        if stripped.isprintable():
            return text
        # runs between the kept characters, each checked at C speed (a long document with
        # newlines is escaped run by run, not character by character)
        return _runs_without(keep).sub(lambda m: printable(m.group()), text)
    return "".join(
        ch if ch.isprintable() or unicodedata.category(ch) in _SHOWN else repr(ch)[1:-1]
        for ch in text
    )


#: Unicode categories :meth:`str.isprintable` refuses that :func:`printable` shows as they
#: are: spaces other than U+0020, private-use and unassigned code points
_SHOWN = frozenset({"Zs", "Co", "Cn"})


@functools.lru_cache(maxsize=8)
def _runs_without(keep: str) -> re.Pattern[str]:
    """A pattern matching the runs of characters other than those of ``keep``."""
    return re.compile(f"[^{re.escape(keep)}]+")
