"""Result-object conventions shared by benchrun.stats, in scipy's naming.

Every test result exposes ``pvalue`` and, where it bounds a parameter,
``confidence_interval`` (a :class:`ConfidenceInterval` with ``low`` and ``high``), as
``scipy.stats`` results do. The stored field names (``p_value``, ``ci_low``/``ci_high``)
stay, because they are the keys of benchrun's JSON files (``to_dict``).
"""

from __future__ import annotations

from typing import NamedTuple


class ConfidenceInterval(NamedTuple):
    """Bounds of a confidence interval, in the units of the estimate (``None``: unbounded
    on that side, e.g. a one-sided interval)."""

    low: float | None
    high: float | None


class HasPValue:
    """Mixin: ``pvalue`` (scipy's name) for a result whose field is ``p_value``."""

    p_value: float | None

    @property
    def pvalue(self) -> float | None:
        """The p-value of the test (the ``p_value`` field)."""
        return self.p_value


class HasCI:
    """Mixin: ``confidence_interval`` for a result with ``ci_low``/``ci_high`` fields."""

    ci_low: float | None
    ci_high: float | None

    @property
    def confidence_interval(self) -> ConfidenceInterval:
        """``ConfidenceInterval(ci_low, ci_high)``, at the result's confidence level."""
        return ConfidenceInterval(self.ci_low, self.ci_high)
