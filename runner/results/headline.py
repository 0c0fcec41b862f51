"""The headline of a comparison: "b is 1.392x [1.387, 1.397] slower than a (paired, 383 passes)".

A ratio with its confidence interval is what people read in hyperfine's "1.37 ± 0.05
times faster"; benchrun states it for every comparison in every output (terminal,
``show``, ``status.json``, reports, exports). The ratio is b/a; it is turned around when
b is the smaller, so the factor printed is always >= 1.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

__all__ = ["TIME_UNITS", "comparison_words", "ratio_headline", "pair_headline"]

#: units whose "more" reads "slower" (durations)
TIME_UNITS = frozenset({"s", "ms", "us", "µs", "ns", "min", "h"})


def comparison_words(unit: str | None, direction: str) -> tuple[str, str]:
    """(word for a larger value, word for a smaller one): slower/faster for durations and
    lower-is-better metrics measured in time; faster/slower for rates (higher is better);
    larger/smaller otherwise."""
    if unit in TIME_UNITS and direction == "lower_is_better":
        return "slower", "faster"
    if direction == "higher_is_better" and unit is not None and "/s" in unit:
        return "faster", "slower"
    return "larger", "smaller"


def ratio_headline(
    a: str,
    b: str,
    ratio: float | None,
    low: float | None = None,
    high: float | None = None,
    *,
    test: str | None = None,
    passes: int | None = None,
    unit: str | None = None,
    direction: str = "lower_is_better",
    estimand: str | None = None,
    verdict: str | None = None,
) -> str:
    """One line saying how b compares with a by the ratio b/a and its CI; ``estimand``
    (e.g. "median per-pass ratio") is named after the test. For an ``equivalent``
    ``verdict`` the ratio is stated as b/a without "slower" or "faster" (a 1.001x of two
    equivalent workloads is no direction).

    >>> ratio_headline("x", "y", 1.392, 1.387, 1.397, test="paired", passes=383, unit="s")
    'y is 1.392x [1.387, 1.397] slower than x (paired, 383 passes)'
    >>> ratio_headline("x", "y", 0.5, 0.4, 0.625, test="welch", unit="s")
    'y is 2.000x [1.600, 2.500] faster than x (Welch)'
    >>> ratio_headline("x", "y", 1.1, test="paired", passes=12, estimand="median per-pass ratio")
    'y is 1.100x larger than x (paired, median per-pass ratio, 12 passes)'
    >>> ratio_headline("x", "y", 0.999, 0.994, 1.004, test="paired", verdict="equivalent")
    'y/x = 0.999x [0.994, 1.004] (paired)'
    """
    if ratio is None:
        return f"{b} vs {a}: no ratio yet"
    if not ratio > 0:
        return f"{b} vs {a}: no ratio (a mean is not > 0)"
    how = {"paired": "paired", "welch": "Welch"}.get(test or "", test or "")
    if how and estimand:
        how += f", {estimand}"
    if how and passes:
        how += f", {passes} passes"
    tail = f" ({how})" if how else ""
    if verdict == "equivalent":
        both = low is not None and high is not None and low > 0 and high > 0
        ci = f" [{low:.3f}, {high:.3f}]" if both else ""
        return f"{b}/{a} = {ratio:.3f}x{ci}{tail}"
    more, less = comparison_words(unit, direction)
    word, factor = (more, ratio) if ratio >= 1 else (less, 1.0 / ratio)
    ci = ""
    if low is not None and high is not None and low > 0 and high > 0:
        lo, hi = (low, high) if ratio >= 1 else (1.0 / high, 1.0 / low)
        ci = f" [{lo:.4g}, {hi:.4g}]" if factor >= 10 else f" [{lo:.3f}, {hi:.3f}]"
    num = f"{factor:.4g}" if factor >= 10 else f"{factor:.3f}"
    return f"{b} is {num}x{ci} {word} than {a}{tail}"


def pair_headline(
    pair: Mapping[str, Any],
    units: Mapping[str, str] | None = None,
    directions: Mapping[str, str] | None = None,
) -> str:
    """:func:`ratio_headline` of a stored pair (``PairStatus``/``BaselineStatus`` as a
    dict: ``a``/``b`` or ``baseline``/``name``, ``ratio``, ``ratio_low``, ...)."""
    a = pair.get("a", pair.get("baseline"))
    b = pair.get("b", pair.get("name"))
    units = units or {}
    directions = directions or {}
    ratio, low, high = pair.get("ratio"), pair.get("ratio_low"), pair.get("ratio_high")
    mean, base = pair.get("mean"), pair.get("baseline_mean")
    if (
        ratio is None
        and isinstance(mean, float | int)
        and isinstance(base, float | int)
        and (math.isfinite(mean) and math.isfinite(base) and base > 0)
    ):
        # a baseline decided without a ratio CI (the workload has no CI of its own): the
        # ratio of the two means, without an interval
        ratio, low, high = mean / base, None, None
    return ratio_headline(
        str(a),
        str(b),
        ratio,
        low,
        high,
        test=pair.get("test"),
        passes=pair.get("passes"),
        unit=units.get(str(b)),
        direction=directions.get(str(b), "lower_is_better"),
        estimand=pair.get("estimand"),
        verdict=pair.get("verdict"),
    )
