"""The JSON documents of ``benchrun analyze``, typed (issue 30).

Each sub-command of :mod:`runner.commands.analyze` builds one document: what ``--json``
prints and the only thing the terminal view (:mod:`runner.analyze.views`) reads, so both
say the same. The documents must stay JSON objects (their key order is the output's), so
they are ``TypedDict``\\s; the statistics inside them are the ``to_dict()`` forms of the
``stats`` results (``stats.summary.Summary``, ``stats.speedup.SpeedupSuiteResult``,
``stats.hpt.HptResult``...), declared here with the keys the views read (the stats
modules write more, which ``--json`` prints as they are).

Units: the values of a group are in the file's unit (``unit``); ``display_unit`` names the
unit a group is shown in (``label``, and ``factor``: one label in the file's unit).
p-values, confidences and shares are fractions.
"""

from __future__ import annotations

from typing import TypedDict


class DisplayUnitJson(TypedDict):
    """A group's display unit: ``label`` printed, ``factor`` one label in the file's unit."""

    label: str
    factor: float


class Header(TypedDict):
    """The keys every analyze document starts with: the sub-command, the file (``source``,
    its ``format``), the data's unit and direction, the confidence and the notes."""

    command: str
    source: str
    format: str
    unit: str
    direction: str
    confidence: float
    notes: list[str]


# ------------------------------------------------------------------------- summary
class SummaryJson(TypedDict):
    """``stats.summary.Summary.to_dict()``: one group's location, spread and diagnostics
    (docs/methods.md §1-§5), in the file's unit; for a benchrun export the estimate is the
    campaign's collector's (runner/commands/analyze.py)."""

    n: int
    warmup_readings: int
    subsession_size: int | None
    n_subsessions: int | None
    mean: float | None
    ci_low: float | None
    ci_high: float | None
    median: float | None
    median_ci_low: float | None
    median_ci_high: float | None
    std: float | None
    cov: float | None
    min: float | None
    q1: float | None
    q3: float | None
    max: float | None
    p90: float | None
    p99: float | None
    autocorrelation_lag1: float | None
    normality_p: float | None
    outliers: int | None
    deterministic: bool | None
    notes: list[str]
    subsession_variance: float | None
    ess: float | None
    enough_data: bool
    certified: bool
    interval_low: float | None
    interval_high: float | None
    tau_bound: float | None
    width_factor: float | None
    interval_note: str | None


class BenchrunSummaryJson(SummaryJson, total=False):
    """The summary of a benchrun export's group: ``stats.summarize``'s descriptive
    statistics with the estimate replaced by the campaign collector's, which adds how many
    readings it still needs, its correlation time and a sentence saying whose it is."""

    readings_needed: int | None
    tau: float | None
    estimate: str


class GroupKey(TypedDict):
    """A group's name, its key (system, benchmark, workload) and its number of readings:
    the keys every :class:`GroupRow` starts with."""

    name: str
    system: str | None
    benchmark: str | None
    workload: str | None
    readings: int


class _GroupRequired(GroupKey):
    summary: SummaryJson | None
    error: str | None
    display_unit: DisplayUnitJson


class GroupRow(_GroupRequired, total=False):
    """One group of ``summary`` and ``compare``: its name and key, its readings, its
    summary (None with the ``error`` that refused it), the unit it is shown in;
    ``rounds`` for a benchrun export's group, ``unit_of_observation`` and ``processes``
    for data with processes."""

    rounds: int
    unit_of_observation: str
    processes: int


class SummaryDoc(Header):
    """``analyze summary``."""

    warmup: str | int
    groups: list[GroupRow]


# ------------------------------------------------------------------------- compare
class EffectSizeJson(TypedDict):
    """``stats.compare.EffectSize.to_dict()``: Hedges' d and its CI."""

    d_ci_low: float | None
    d_ci_high: float | None


class PairJson(TypedDict):
    """One adjacent pair of ``stats.compare.rank_results`` (a the better), with its
    effect size: the difference b - a (file's unit), the tests' p-values, the verdict."""

    a: str
    b: str
    verdict: str
    difference: float | None
    relative_difference: float | None
    welch_p: float | None
    welch_p_holm: float | None
    tost_p: float | None
    ci_overlap: bool | None
    effect_size: float | None
    effect_size_ci: EffectSizeJson
    required_n: int | None
    notes: list[str]


class RankingJson(TypedDict):
    """``stats.compare.rank_results`` as JSON: the names best first with their estimates
    and CIs (file's unit), the adjacent pairs."""

    names: list[str]
    estimates: list[float | None]
    ci_low: list[float | None]
    ci_high: list[float | None]
    pairs: list[PairJson]
    notes: list[str]


class OmnibusTestJson(TypedDict):
    """ANOVA or Kruskal-Wallis over the groups (``stats.multi``)."""

    test: str
    statistic: float | None
    p_value: float | None
    k: int
    notes: list[str]


class OmnibusJson(TypedDict):
    """The omnibus tests of ``compare`` and what they ran ``on``."""

    on: str
    anova: OmnibusTestJson
    kruskal_wallis: OmnibusTestJson


class ExcludedJson(TypedDict):
    """A group ``compare`` left out, and why."""

    name: str
    reason: str


class CompareDoc(Header):
    """``analyze compare``."""

    warmup: str | int
    alpha: float
    margin: float
    groups: list[GroupRow]
    excluded: list[ExcludedJson]
    ranking: RankingJson
    omnibus: OmnibusJson


# ------------------------------------------------------------------------- speedup
class SpeedupTestJson(TypedDict):
    """``stats.speedup.SpeedupTestResult.to_dict()``: one benchmark's Speedup-Test (x the
    baseline's times, y the candidate's; file's unit)."""

    n_x: int
    n_y: int
    mean_x: float
    mean_y: float
    speedup_mean: float | None
    mean_verdict: str
    mean_warning: bool
    mean_p: float | None
    speedup_median: float | None
    median_verdict: str
    median_warning: bool
    median_p: float | None
    speedup_min: float | None


class ShareJson(TypedDict):
    """``stats.speedup.ShareResult.to_dict()``: a of b benchmarks accelerated, with the CI
    of the proportion and the benchmarks needed for ``precision``."""

    statistic: str
    a: int
    b: int
    proportion: float
    confidence: float
    ci_low: float
    ci_high: float
    valid: bool
    benchmarks_needed: int
    precision: float


class SpeedupSuiteJson(TypedDict):
    """``stats.speedup.SpeedupSuiteResult.to_dict()``."""

    benchmarks: dict[str, SpeedupTestJson]
    alpha: float
    overall_speedup_mean: float | None
    overall_speedup_median: float | None
    gain_mean: float | None
    gain_median: float | None
    share_mean: ShareJson
    share_median: ShareJson


class SpeedupDoc(Header):
    """``analyze speedup``."""

    baseline: str
    candidate: str
    alpha: float
    precision: float
    weights_file: str | None
    result: SpeedupSuiteJson


# ----------------------------------------------------------------------------- HPT
class HptRowJson(TypedDict):
    """``stats.hpt.BenchmarkRow.to_dict()``: one benchmark's rank-sum test."""

    benchmark: str
    n_a: int
    n_b: int
    median_a: float
    median_b: float
    p_value: float | None
    method: str
    winner: str
    d: float | None
    rank: float | None


class HptJson(TypedDict):
    """``stats.hpt.HptResult.to_dict()``: the signed-rank test over the benchmarks."""

    benchmarks: list[HptRowJson]
    r_a: float | None
    r_b: float | None
    confidence: float
    confidence_b: float
    method: str
    alpha: float
    winner: str | None
    wins_a: int
    wins_b: int
    ties: int
    score: str
    notes: list[str]


class RSpeedupJson(TypedDict):
    """``stats.hpt.RSpeedupResult.to_dict()``: the largest speedup HPT supports with
    confidence ``r`` and the confidence of the geometric-mean speedup."""

    r: float
    gamma: float | None
    gamma_grid: float | None
    precision: float | None
    gmean_speedup: float | None
    gmean_confidence: float
    notes: list[str]


class HptDoc(Header):
    """``analyze hpt``."""

    a: str
    b: str
    r: float
    hpt: HptJson
    r_speedup: RSpeedupJson


# ------------------------------------------------------------------------ resample
class RandomizationJson(TypedDict):
    """``stats.resampling.randomization_test`` as JSON."""

    exact: bool
    n_permutations: int
    p_value: float
    notes: list[str]


class RatioCiJson(TypedDict):
    """``stats.resampling.gmean_ratio_ci`` as JSON: the ratio of geometric means a/b and
    its bootstrap CI (None where there is none)."""

    estimate: float | None
    low: float | None
    high: float | None
    confidence: float
    method: str
    notes: list[str]


class RunsForWidthJson(TypedDict):
    """``stats.resampling.runs_for_ci_width`` as JSON: the runs per benchmark for a CI no
    wider than ``width`` (``m``; None when not reached with ``m_available``)."""

    width: float
    m: int | None
    m_available: int
    extrapolated_m: int | None
    notes: list[str]


class ResampleDoc(Header):
    """``analyze resample``."""

    a: str
    b: str
    center: str
    seed: int
    benchmarks: list[str]
    randomization: RandomizationJson
    gmean_ratio_ci: RatioCiJson
    runs_for_ci_width: RunsForWidthJson | None


# ----------------------------------------------------------------------- quantiles
class QuantileFitJson(TypedDict):
    """``stats.quantreg.quantile_regression`` as JSON: per quantile, a's value
    (``intercept``), b - a (``effect``) and its bootstrap CI (file's unit)."""

    quantiles: list[float]
    intercept: list[float | None]
    effect: list[float | None]
    ci_low: list[float | None]
    ci_high: list[float | None]
    confidence: float
    method: str
    n_boot: int
    notes: list[str]


class QuantileItem(TypedDict):
    """One benchmark's fit."""

    benchmark: str
    result: QuantileFitJson


class QuantilesDoc(Header):
    """``analyze quantiles``."""

    a: str
    b: str
    seed: int
    benchmarks: list[QuantileItem]
