"""The settings of the stopping rule (docs/controller.md "The stopping rule").

:class:`ControllerParams`: the adaptive keys of ``runner.config.experiment.Settings`` and the
controller's own, validated once (a bad value is one ``UserError`` line naming the key).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from benchrun.runner.config.schema import SETTINGS_KEYS, check_simple
from benchrun.runner.config.settings import Settings
from benchrun.runner.control.pairlooks import FIRST_SHARE, LAG1_FULL, LAG1_SHIFT, SPEND_RHO
from benchrun.runner.errors import UserError
from benchrun.stats.autocorr import MIN_SUBSESSIONS
from benchrun.stats.sequential import SPENDING_KINDS

__all__ = ["COMPARISONS", "DIRECTIONS", "PAIR_LOOKS", "ControllerParams"]

DIRECTIONS = ("lower_is_better", "higher_is_better")
#: how two workloads of one campaign are compared (``settings.comparison``)
COMPARISONS = ("paired", "independent")
#: where a paired comparison's looks come from: its own passes (docs/controller.md,
#: "Decision efficiency") or the campaign's look schedule (the rule before issue 28)
PAIR_LOOKS = ("own", "campaign")
_DEFAULTS = Settings()


@dataclass(frozen=True)
class ControllerParams:
    """Settings of the stopping rule (the adaptive keys of ``runner.config.experiment.Settings``).

    Not in the config file (defaults chosen by docs/controller.md's simulation):
    ``look_ratio`` growth of the look schedule (§10); ``spending`` how α is split over the
    looks ("uniform" = Bonferroni, "pocock", "obrien-fleming": stats.sequential);
    ``allocation_share`` the share of a pair's remaining uncertainty a workload must hold
    to get rounds for that pair (see Controller); ``min_series`` fewest readings in a
    workload's series before it counts as having enough data; ``check_2q`` whether a
    separation must also hold with subsessions of 2q; ``pair_looks`` "own" (each paired
    comparison looks on its own passes with group-sequential boundaries,
    runner/control/pairlooks.py) or "campaign" (at the campaign's looks, α split evenly,
    on the subsession summary: the rule before issue 28); ``pair_look_ratio`` the growth
    of a comparison's own looks; ``pair_first_share``, ``pair_spend_rho`` their α
    spending (runner/control/pairlooks.py ``cumulative_spend``); ``pair_lag1_shift`` the
    standard errors added to the lag-1 correlation of a comparison's units before it sets
    the variance allowance of its tests (``look_units``), whole up to ``pair_lag1_full``
    passes and shrinking beyond; ``extend_rounds``: a
    paired comparison estimated to decide within the time left of ``max_time`` keeps its
    workloads running past ``max_rounds`` (None: on when ``max_rounds`` is the default).
    """

    # the settings' defaults are the experiment file's (one source: Settings)
    confidence: float = _DEFAULTS.confidence
    ci_rel_width: float | None = _DEFAULTS.ci_rel_width
    alpha: float = _DEFAULTS.alpha
    margin: float = _DEFAULTS.margin
    min_rounds: int = _DEFAULTS.min_rounds
    min_subsessions: int | None = _DEFAULTS.min_subsessions
    max_rounds: int = _DEFAULTS.max_rounds
    max_time: float | None = _DEFAULTS.max_time
    look_ratio: float = 1.5
    spending: str = "uniform"
    allocation_share: float = 1.0 / 3.0
    min_series: int = 8
    check_2q: bool = True
    comparison: str = _DEFAULTS.comparison
    paired_test: str = _DEFAULTS.paired_test
    pair_looks: str = "own"
    pair_look_ratio: float = 1.05
    extend_rounds: bool | None = _DEFAULTS.extend_rounds
    pair_first_share: float = FIRST_SHARE
    pair_spend_rho: float = SPEND_RHO
    pair_lag1_shift: float = LAG1_SHIFT
    pair_lag1_full: float = LAG1_FULL

    def __post_init__(self) -> None:
        """Refuse a bad value with one line naming the key: the settings' values checked
        against their declaration (runner/config/settings.py) as the file's are, the
        controller's own against the ranges above."""

        def bad(key: str, why: str) -> UserError:
            return UserError(f"settings.{key}: {why}")

        for key in _SETTING_KEYS:  # the settings: their declared kind and bounds
            value = getattr(self, key.name)
            if value is not None:
                try:
                    check_simple(key, value)
                except ValueError as exc:
                    raise bad(key.name, str(exc)) from None
        if self.max_rounds < self.min_rounds:
            raise bad("max_rounds", f"need 1 <= min_rounds ({self.min_rounds}) <= max_rounds")
        if not self.look_ratio > 1:
            raise bad("look_ratio", f"must be > 1, got {self.look_ratio}")
        if self.spending not in SPENDING_KINDS:
            raise bad("spending", f"must be one of {SPENDING_KINDS}, got {self.spending!r}")
        if self.pair_looks not in PAIR_LOOKS:
            raise bad("pair_looks", f"must be one of {PAIR_LOOKS}, got {self.pair_looks!r}")
        if not self.pair_look_ratio > 1:
            raise bad("pair_look_ratio", f"must be > 1, got {self.pair_look_ratio}")
        if not 0 < self.pair_first_share < 1:
            raise bad("pair_first_share", f"must be in (0, 1), got {self.pair_first_share}")
        if not self.pair_spend_rho > 0:
            raise bad("pair_spend_rho", f"must be > 0, got {self.pair_spend_rho}")
        if not 0 <= self.pair_lag1_shift <= 5:
            raise bad("pair_lag1_shift", f"must be in [0, 5], got {self.pair_lag1_shift}")
        if not self.pair_lag1_full >= 16:
            raise bad("pair_lag1_full", f"must be >= 16 passes, got {self.pair_lag1_full}")
        if not 0 < self.allocation_share <= 0.5:
            raise bad("allocation_share", f"must be in (0, 0.5], got {self.allocation_share}")
        if self.extend_rounds is None:  # as the loader resolves it: on at the default cap
            object.__setattr__(self, "extend_rounds", self.max_rounds == _DEFAULTS.max_rounds)

    @classmethod
    def from_settings(cls, settings: Any, **overrides: Any) -> ControllerParams:
        """Take every field that ``settings`` (e.g. runner.config.experiment.Settings) has."""
        values = {
            f.name: getattr(settings, f.name) for f in fields(cls) if hasattr(settings, f.name)
        }
        values.update(overrides)
        return cls(**values)

    @property
    def subsessions(self) -> int:
        return MIN_SUBSESSIONS if self.min_subsessions is None else self.min_subsessions


#: the keys of the settings ControllerParams takes (their kinds and bounds declared once,
#: in runner/config/settings.py)
_SETTING_KEYS = tuple(
    k for k in SETTINGS_KEYS if k.name in {f.name for f in fields(ControllerParams)}
)
