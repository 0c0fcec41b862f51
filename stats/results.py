"""Result-object conventions shared by benchrun.stats, in scipy's naming.

Every test result exposes ``pvalue`` and, where it bounds a parameter,
``confidence_interval`` (a :class:`ConfidenceInterval` with ``low`` and ``high``), as
``scipy.stats`` results do. The stored field names (``p_value``, ``ci_low``/``ci_high``)
stay, because they are the keys of benchrun's JSON files (``to_dict``).
"""

from __future__ import annotations

import math
from dataclasses import asdict
from typing import Any, NamedTuple, cast

import numpy as np


class ConfidenceInterval(NamedTuple):
    """Bounds of a confidence interval, in the units of the estimate (``None``: unbounded
    on that side, e.g. a one-sided interval)."""

    low: float | None
    high: float | None


class AsDict:
    """Mixin for result dataclasses: ``to_dict()`` is every field, JSON-safe (:func:`jsonable`)."""

    def to_dict(self) -> dict[str, object]:
        """The result's fields as a JSON-safe dict (NaN -> None, tuples -> lists)."""
        out: dict[str, object] = jsonable(asdict(cast(Any, self)))
        return out


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


def jsonable(value: Any) -> Any:
    """A JSON-safe copy of ``value``: numpy scalars and arrays become Python numbers and
    lists, NaN and infinities become ``None``, tuples become lists, mapping keys strings;
    containers are copied recursively. Used by every ``to_dict`` of benchrun."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return [jsonable(v) for v in value.tolist()]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
