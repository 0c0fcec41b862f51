"""benchrun statistics: pure functions over numpy arrays, numbers in, frozen dataclasses out.

Every method is specified in docs/methods.md (section numbers are cited in each docstring).
No I/O, no printing, no global state; ``stats`` never imports ``runner``.

The public names below are importable as ``from benchrun.stats import welch`` (the
package installs as ``benchrun.stats``: docs/architecture.md); each lives in the module
named in :data:`_EXPORTS` (one module per concept) and is loaded on first use.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import Any

#: public name -> submodule that defines it
_EXPORTS: dict[str, str] = {
    # §1 summaries, outliers
    "summarize": "summary",
    "Summary": "summary",
    "describe": "summary",
    "Description": "summary",
    "tukey_outliers": "summary",
    "OutlierResult": "summary",
    "aggregate": "summary",
    "Aggregate": "summary",
    # §2 warm-up
    "mser5": "warmup",
    "mser5_at_limit": "warmup",
    "steady_start": "levelshift",
    "change_point": "levelshift",
    "sn_statistic": "levelshift",
    "LevelShift": "levelshift",
    "SteadyStart": "levelshift",
    # §3 autocorrelation and subsessions
    "autocorrelation": "autocorr",
    "acf": "autocorr",
    "subsession_size": "autocorr",
    "pilot_subsession_size": "autocorr",
    "subsession_means": "autocorr",
    "integrated_autocorrelation_time": "autocorr",
    "SubsessionChoice": "autocorr",
    # §4 confidence intervals
    "mean_ci": "intervals",
    "median_ci": "intervals",
    "quantile_ci": "intervals",
    "bootstrap_ci": "intervals",
    "proportion_ci": "intervals",
    "proportion_sample_size": "intervals",
    "Interval": "intervals",
    "subsessions_for_width": "intervals",
    "uncertified_mean_ci": "uncertified",
    "UncertifiedInterval": "uncertified",
    "initial_sequence_tau": "uncertified",
    # §5 normality
    "normality": "normality",
    "NormalityResult": "normality",
    # §6 two results
    "welch": "compare",
    "welch_from_summary": "compare",
    "WelchResult": "compare",
    "tost": "compare",
    "tost_from_summary": "compare",
    "TostResult": "compare",
    "required_sample_size": "compare",
    "mann_whitney": "compare",
    "MannWhitneyResult": "compare",
    "effect_size": "compare",
    "effect_size_from_summary": "compare",
    "welch_df": "compare",
    "EffectSize": "compare",
    "drift_check": "drift",
    "DriftResult": "drift",
    "von_neumann_ratio": "drift",
    "log_ratios": "paired",
    "paired_test": "paired",
    "PairedTest": "paired",
    "ratio_of_means_ci": "paired",
    # §13.1 rank-based paired test on the per-pass log ratios
    "signed_rank_test": "signedrank",
    "SignedRankTest": "signedrank",
    "signed_rank_p": "signedrank",
    "hodges_lehmann": "signedrank",
    "speedup_test": "speedup",
    "speedup_suite": "speedup",
    "SpeedupTestResult": "speedup",
    "SpeedupSuiteResult": "speedup",
    "ShareResult": "speedup",
    # §7 many workloads
    "holm": "multi",
    "anova": "multi",
    "kruskal_wallis": "multi",
    "rank_results": "multi",
    "OmnibusResult": "multi",
    "Ranking": "multi",
    "PairVerdict": "multi",
    "quantile_regression": "quantreg",
    "QuantileRegressionResult": "quantreg",
    # §14 nodes as a level of variation
    "node_variation": "nodes",
    "NodeVariation": "nodes",
    "optimal_repetitions": "nodes",
    # §8 HPT
    "hpt": "hpt",
    "HptResult": "hpt",
    "r_speedup": "hpt",
    "RSpeedupResult": "hpt",
    # §9 resampling
    "randomization_test": "resampling",
    "gmean_ratio_ci": "resampling",
    "runs_for_ci_width": "resampling",
    "biplot": "resampling",
    # §10.1 group-sequential boundaries for the actual looks
    "Boundaries": "groupseq",
    "empty_boundaries": "groupseq",
    "crossing_probabilities": "groupseq",
    # §15 across campaigns: a control's double ratio, the campaign level
    "LogRatioTest": "campaigns",
    "log_ratio_test": "campaigns",
    "double_ratio_test": "campaigns",
    "campaign_level_test": "campaigns",
    "between_campaign_sd": "campaigns",
    # §16 change points over revisions (docs/history.md)
    "find_changes": "changepoint",
    "tau_from_history": "changepoint",
    "ChangePoint": "changepoint",
    "ChangePoints": "changepoint",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'benchrun.stats' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"benchrun.stats.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__


class _Package(types.ModuleType):
    """This package, whose public names stay functions when a submodule of the same name
    is imported (``hpt``, ``normality``).

    Importing ``benchrun.stats.hpt`` makes the import system set the package's attribute
    ``hpt`` to that submodule, which would then shadow the function :func:`__getattr__`
    resolves: ``stats.hpt(...)`` raised "'module' object is not callable" once anything
    had imported the submodule first (``benchrun analyze hpt`` in a process that had).
    Such an assignment binds the function of that name instead; ``importlib.
    import_module("benchrun.stats.hpt")`` and ``sys.modules`` still give the module.
    """

    def __setattr__(self, name: str, value: Any) -> None:
        if (
            isinstance(value, types.ModuleType)
            and _EXPORTS.get(name) == name
            and value.__name__ == f"{__name__}.{name}"
            and hasattr(value, name)
        ):
            value = getattr(value, name)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
