"""The headline of a comparison: "b is 1.392x [1.387, 1.397] slower than a (paired, 383 passes)".

A ratio with its confidence interval is what people read in hyperfine's "1.37 ± 0.05
times faster"; benchrun states it for every comparison in every output (terminal,
``show``, ``status.json``, reports, exports). The ratio is b/a; it is turned around when
b is the smaller, so the factor printed is always >= 1.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import Any

__all__ = ["TIME_UNITS", "PairFigures", "comparison_words", "ratio_headline", "pair_headline"]

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


@dataclass(frozen=True)
class PairFigures:
    """What the headline of one stored comparison says, read from its stored form (the
    controller's ``PairStatus``/``BaselineStatus`` as a dict, runner/campaign/adaptive.py).

    ``a``/``b``: the two sides (a baseline comparison stores them as ``baseline``/``name``);
    ``ratio`` = b/a with its CI ``ratio_low``..``ratio_high`` (unitless); ``passes``: passes
    of the paired series; ``mean``/``baseline_mean``: a baseline's two means (the
    workload's unit), from which the ratio is taken when no ratio CI was stored. A number
    the stored form lacks, or holds as something else, is None.
    """

    a: str
    b: str
    ratio: float | None = None
    ratio_low: float | None = None
    ratio_high: float | None = None
    test: str | None = None
    passes: int | None = None
    estimand: str | None = None
    verdict: str | None = None
    mean: float | None = None
    baseline_mean: float | None = None

    @classmethod
    def from_stored(cls, pair: Mapping[str, object]) -> PairFigures:
        """The figures of a stored pair or baseline comparison (``a``/``b``, else
        ``baseline``/``name``): the one reader of the stored form's headline fields."""
        values = {
            f.name: _CONVERT[f.name](pair.get(f.name, pair.get(_SIDES.get(f.name, f.name))))
            for f in fields(cls)
        }
        return cls(**values)

    def headline(
        self, units: Mapping[str, str] | None = None, directions: Mapping[str, str] | None = None
    ) -> str:
        """:func:`ratio_headline` of this comparison (``units``/``directions`` by workload
        name: ``b``'s are used); a baseline decided without a ratio CI (the workload has no
        CI of its own) reads as the ratio of the two means, without an interval."""
        ratio, low, high = self.ratio, self.ratio_low, self.ratio_high
        mean, base = self.mean, self.baseline_mean
        if (
            ratio is None
            and mean is not None
            and base is not None
            and (math.isfinite(mean) and math.isfinite(base) and base > 0)
        ):
            ratio, low, high = mean / base, None, None
        return ratio_headline(
            self.a,
            self.b,
            ratio,
            low,
            high,
            test=self.test,
            passes=self.passes,
            unit=(units or {}).get(self.b),
            direction=(directions or {}).get(self.b, "lower_is_better"),
            estimand=self.estimand,
            verdict=self.verdict,
        )


def _number(v: object) -> float | None:
    """A stored number as it is (NaN stays NaN: the headline says the ratio is not > 0);
    None for anything else."""
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def _text(v: object) -> str | None:
    return None if v is None else str(v)


def _whole(v: object) -> int | None:
    return int(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


#: the stored key a side is read from when the comparison is a baseline
_SIDES = {"a": "baseline", "b": "name"}
#: how each stored value becomes the field's (keyed by field name)
_CONVERT: dict[str, Callable[[object], Any]] = {
    **dict.fromkeys(("a", "b"), str),
    **dict.fromkeys(("ratio", "ratio_low", "ratio_high", "mean", "baseline_mean"), _number),
    **dict.fromkeys(("test", "estimand", "verdict"), _text),
    "passes": _whole,
}


def pair_headline(
    pair: Mapping[str, object],
    units: Mapping[str, str] | None = None,
    directions: Mapping[str, str] | None = None,
) -> str:
    """:func:`ratio_headline` of a stored pair (``PairStatus``/``BaselineStatus`` as a
    dict: ``a``/``b`` or ``baseline``/``name``, ``ratio``, ``ratio_low``, ...):
    :meth:`PairFigures.headline` of :meth:`PairFigures.from_stored`."""
    return PairFigures.from_stored(pair).headline(units, directions)
