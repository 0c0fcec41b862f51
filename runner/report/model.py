"""Everything a report shows about one stored campaign, gathered once (no rendering here).

:func:`load_campaign` reads the campaign once through its read model
(runner/results/campaign_view.py ``read_campaign``: the store's rows, the typed settings,
the stored experiment, the per-workload results and comparisons) and derives, per workload,
what the plots and tables need:

- the readings of every round in launch order with their flags (warm-up round, warm-up
  reading inside a round, Tukey outlier, failed round), docs/methods.md §1-§2;
- the steady series exactly as runner/control/collector.py builds it (warm-up rounds and
  within-round warm-up removed, readings per unit of work when ``per_work``), §2-§3;
- the estimate: (mean, s_q², n_q, q) and the Student t CI over subsession means (§3-§4),
  from ``collected`` (the collector's; ``summary`` holds only descriptive statistics of
  the per-round values, runner/results/workloads.py);
- diagnostics: lag-k autocorrelation of the steady series and of the subsession means
  (§3), Shapiro-Wilk p and Q-Q points (§5), and the relative CI half-width after a growing
  number of rounds (the convergence to ``ci_rel_width``, §4, §10).

Units: values are in the workload's stored (base) unit (``WorkloadView.unit``); every
output shows them in ``WorkloadView.display`` (one unit per workload, chosen from its
mean); times of rounds in Unix seconds; relative widths are fractions (0.05 = 5 %).

The campaign's comparisons (``CampaignModel.verdicts``) are
:func:`runner.results.comparisons.campaign_verdicts`: the stopping controller's stored
verdicts, or a fixed campaign's computed once when read, the same ones ``show`` and
``export`` print.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from benchrun.runner.config.experiment import Experiment, Settings
from benchrun.runner.errors import UserError
from benchrun.runner.execute.contention import CONTENDED_FLAG, left_out_as_contended
from benchrun.runner.format import DisplayUnit
from benchrun.runner.importers.dataset import MAX_MAGNITUDE
from benchrun.runner.report.verdicts import StoredVerdicts
from benchrun.runner.results.campaign_view import display_dict, read_campaign
from benchrun.runner.results.estimate import (
    Description,
    Estimate,
    description_from,
    estimate_from,
)
from benchrun.runner.results.metrics import MetricSummary
from benchrun.runner.results.settings import campaign_settings
from benchrun.runner.results.workloads import (
    WorkloadResult,
    analysed_rounds,
    collect_stored,
    display_of,
)
from benchrun.runner.store.database import (
    CampaignRow,
    EventRow,
    HookRow,
    RoundRow,
    Store,
    WorkloadRow,
)
from benchrun.stats.autocorr import acf, subsession_means
from benchrun.stats.normality import NormalityResult, normality
from benchrun.stats.summary import tukey_outliers

#: lags shown in the autocorrelation plots
MAX_LAG = 20
#: points of the CI-width-over-rounds curve
CONVERGENCE_POINTS = 12


def estimate_of(result: WorkloadResult) -> Estimate | None:
    """The estimate of one result: its ``collected`` statistics (runner/control/collector.py),
    the one estimate and CI of a workload (runner/results/estimate.py). None without data."""
    return estimate_from(getattr(result, "collected", None))


@dataclass
class WorkloadView:
    """One workload as the report shows it (see the module docstring)."""

    name: str
    metric: str
    unit: str
    direction: str
    status: str
    status_reason: str | None
    params: dict[str, object]
    base_name: str | None
    per_work: bool
    rounds: int
    steady_rounds: int
    warmup_rounds: int
    failed_rounds: int
    last_failure: str | None
    estimate: Estimate | None
    summary: dict[str, object] | None
    collected: dict[str, object] | None
    #: every reading in launch order and its round's seq; flags per reading
    all_values: np.ndarray = field(default_factory=lambda: np.zeros(0))
    all_flags: list[str] = field(default_factory=list)
    #: rounds that calibrated the work amount (flag ``calibration``; also warm-up)
    calibration_rounds: int = 0
    #: ok non-warm-up rounds flagged contended (docs/contention.md)
    contended_rounds: int = 0
    #: launch seq of the failed rounds (no readings)
    failed_at: list[int] = field(default_factory=list)
    steady: np.ndarray = field(default_factory=lambda: np.zeros(0))
    within_round_warmup: int = 0
    outlier_fences: tuple[float, float] | None = None
    outliers: int = 0
    acf_raw: list[float] | None = None
    acf_means: list[float] | None = None
    normality: dict[str, Any] | None = None
    #: the same Shapiro-Wilk test as a typed record (its ``p_value``...), None likewise
    normality_test: NormalityResult | None = None
    #: (steady rounds used, relative CI half-width or None)
    convergence: list[tuple[int, float | None]] = field(default_factory=list)
    #: stats.drift_check of the steady round values in time order, with its ``text``
    #: (runner/results/workloads.py ``WorkloadResult.drift``); None with too few rounds
    drift: dict[str, object] | None = None
    #: the command as stored (argv list, or a string with ``shell: true``); None when the
    #: workload was imported or stored without one
    command: list[str] | str | None = None

    @property
    def description(self) -> Description:
        """``summary`` as the typed :class:`Description` (all None without data)."""
        return description_from(self.summary) or Description()

    @property
    def display(self) -> DisplayUnit:
        """The one unit every output shows this workload's values in
        (:func:`runner.results.workloads.display_of`: chosen from the estimate's mean)."""
        return display_of(self.unit, self.collected)

    @property
    def harmonic_mean(self) -> float | None:
        """Harmonic mean of the steady readings (the average of a rate, docs/methods.md §1)."""
        x = self.steady
        if x.size == 0 or float(x.min()) <= 0:
            return None
        return float(x.size / np.sum(1.0 / x))

    @property
    def group(self) -> str:
        """Workloads are ranked only within one metric and unit (runner/campaign/adaptive.py)."""
        return f"{self.metric}:{self.unit}"

    def to_dict(self, raw: bool = False) -> dict[str, object]:
        """JSON form; ``raw`` adds the steady series (can be large)."""
        out: dict[str, object] = {
            "name": self.name,
            "metric": self.metric,
            "unit": self.unit,
            "display_unit": display_dict(self.display),
            "direction": self.direction,
            "status": self.status,
            "status_reason": self.status_reason,
            "params": self.params,
            "rounds": self.rounds,
            "steady_rounds": self.steady_rounds,
            "warmup_rounds": self.warmup_rounds,
            "failed_rounds": self.failed_rounds,
            "contended_rounds": self.contended_rounds,
            "last_failure": self.last_failure,
            "estimate": None if self.estimate is None else self.estimate.to_dict(),
            "summary": self.summary,
            "within_round_warmup": self.within_round_warmup,
            "outliers": self.outliers,
            "outlier_fences": None if self.outlier_fences is None else list(self.outlier_fences),
            "acf_readings": self.acf_raw,
            "acf_subsession_means": self.acf_means,
            "normality_p": None if self.normality_test is None else self.normality_test.p_value,
            "convergence": [{"rounds": r, "rel_half_width": w} for r, w in self.convergence],
            "drift": self.drift,
            "command": self.command,
        }
        if raw:
            out["steady_series"] = [float(v) for v in self.steady]
        return out


@dataclass
class CampaignModel:
    """One campaign with its workloads and events, ready for analysis and rendering."""

    database: Path
    campaign: CampaignRow
    workloads: list[WorkloadView]
    events: list[EventRow]
    confidence: float
    #: distinct CPU lists the rounds were pinned to ("1", "2-3"); empty when unpinned
    cpus: list[str] = field(default_factory=list)
    #: the campaign's comparisons (runner/results/comparisons.py: the controller's stored
    #: verdicts, or a fixed campaign's computed when read); None before an adaptive
    #: campaign reached its end, or when nothing is compared
    verdicts: StoredVerdicts | None = None
    #: the stored experiment, re-read (for its ``compare:`` groups); None if unreadable
    experiment: Experiment | None = None
    #: workload name -> the compute nodes its rounds ran on (rounds' ``node`` fact,
    #: executor: slurm), sorted; empty lists for rounds run on this machine
    nodes: dict[str, list[str]] = field(default_factory=dict)
    #: every stored round (launch order), its readings' stored flags by (round id, index)
    #: and every hook run: read in the same snapshot as the rest (Store.snapshot), so an
    #: export of a live campaign is one consistent state of it (issue 29)
    rounds: list[RoundRow] = field(default_factory=list)
    reading_flags: dict[tuple[int, int], str] = field(default_factory=dict)
    hooks: list[HookRow] = field(default_factory=list)
    #: workload id -> name (the ids the rounds and hooks name)
    names: dict[int, str] = field(default_factory=dict)
    #: every metric of each workload's ``metric:`` list (runner/results/metrics.py); []
    #: when no workload has a list or a counter metric
    metrics: list[MetricSummary] = field(default_factory=list)

    @property
    def settings(self) -> Settings:
        """The campaign's settings, typed (runner/results/settings.py)."""
        return campaign_settings(self.campaign.settings)

    @property
    def adaptive(self) -> bool:
        return bool(self.settings.adaptive)

    def comparison_group(self, view: WorkloadView) -> str | None:
        """The group ``view`` is compared within: its metric and unit, and with the
        experiment's ``compare:`` its group there (:meth:`runner.config.experiment.Experiment.
        comparison_group`); None when ``compare:`` compares it with nothing."""
        if self.experiment is None:
            return view.group
        return self.experiment.comparison_group(view.name)

    def view(self, name: str) -> WorkloadView:
        return next(w for w in self.workloads if w.name == name)


def find_database(path: str | Path) -> Path:
    """The ``benchrun.db`` a path names: the file itself or ``<dir>/benchrun.db``."""
    p = Path(path).expanduser()
    if p.is_dir():
        if (p / "benchrun.db").is_file():
            return p / "benchrun.db"
        found = sorted(p.glob("*/benchrun.db"))
        if len(found) == 1:
            return found[0]
        if found:
            names = ", ".join(str(f.parent) for f in found)
            raise UserError(
                f"{p}: holds several campaigns ({names}); name one of them (without --out, "
                "HTML and Markdown reports are written for each, beside it)"
            )
        raise UserError(
            f"{p}: no benchrun campaign here (no benchrun.db); run `benchrun run` first"
        )
    if not p.exists():
        raise UserError(f"{p}: no such campaign directory or database")
    return p


def _steady_rounds(rounds: list[RoundRow], settings: Settings) -> list[RoundRow]:
    return analysed_rounds(rounds, settings)


def _flags_and_series(
    view: WorkloadView, rounds: list[RoundRow], est: Estimate | None, settings: Settings
) -> tuple[np.ndarray, list[str], np.ndarray, int]:
    """All readings with flags, the steady series and d (within-round warm-up per round).

    Reproduces runner/control/collector.py: one reading per round -> the rounds in order minus the
    first ``warmup_readings`` steady rounds (MSER-5); several -> every steady round minus
    its first d readings, concatenated (docs/methods.md §2-3). A round left out as
    contended (docs/contention.md) has its readings flagged ``contended``."""
    steady = _steady_rounds(rounds, settings)
    policy = settings.contended
    single = bool(steady) and all(len(r.readings) == 1 for r in steady)
    wr = est.warmup_readings if est else 0
    d = 0 if single or not steady else wr // max(1, len(steady))
    values: list[float] = []
    flags: list[str] = []
    series: list[float] = []
    steady_ids = {r.id for r in steady}
    k = 0  # index among steady rounds
    for r in rounds:
        if not r.readings:
            continue
        scale = float(r.work) if view.per_work and r.work else 1.0
        if r.status != "ok":
            tag = "failed"
        elif r.warmup:
            tag = "warmup-round"
        elif left_out_as_contended(r.flags, policy):
            tag = CONTENDED_FLAG
        else:
            tag = ""
        for i, v in enumerate(r.readings):
            values.append(v / scale)
            f = tag
            if r.id in steady_ids:
                if single and k < wr:
                    f = "warmup-reading"
                elif not single and i < d:
                    f = "warmup-reading"
                else:
                    series.append(v / scale)
            flags.append(f)
        if r.id in steady_ids:
            k += 1
    return np.asarray(values, float), flags, np.asarray(series, float), d


def _convergence(
    w: WorkloadRow, rounds: list[RoundRow], settings: Settings
) -> list[tuple[int, float | None]]:
    """Relative CI half-width after the first k steady rounds, k on a geometric grid."""
    steady = _steady_rounds(rounds, settings)
    total = len(steady)
    if total < 2:
        return []
    ks = np.unique(np.geomspace(2, total, CONVERGENCE_POINTS).round().astype(int))
    out: list[tuple[int, float | None]] = []
    for k in ks:
        try:
            c = collect_stored(w, steady[: int(k)], settings)
        except ValueError:
            c = None
        out.append((int(k), None if c is None else c.rel_half_width))
    return out


def _outliers(view: WorkloadView) -> None:
    """Tukey's fences (k = 1.5) over the steady series; flags the readings outside them."""
    x = view.steady
    if x.size >= 4:
        fences = tukey_outliers(x)
        view.outlier_fences = (float(fences.low_fence), float(fences.high_fence))
        view.outliers = int(fences.count)
        lo, hi = view.outlier_fences
        view.all_flags = [
            ("outlier" if (f == "" and (v < lo or v > hi)) else f)
            for v, f in zip(view.all_values, view.all_flags, strict=True)
        ]


def _diagnostics(view: WorkloadView) -> None:
    """Autocorrelation before/after subsession means and normality (docs/methods.md §3, §5)."""
    x = view.steady
    if x.size >= 3 and float(np.ptp(x)) > 0:
        view.acf_raw = [float(v) for v in acf(x, min(MAX_LAG, x.size - 1))]
        q = view.estimate.q if view.estimate and view.estimate.q else 1
        if q > x.size // 3:
            # without enough data the collector's q is the size it would need (larger
            # than the series): there are no subsession means to look at yet
            return
        means = subsession_means(x, q)
        if means.size >= 3 and float(np.ptp(means)) > 0:
            view.acf_means = [float(v) for v in acf(means, min(MAX_LAG, means.size - 1))]
            view.normality_test = normality(means, max_points=400)
            view.normality = view.normality_test.to_dict()


def build_view(
    w: WorkloadRow,
    result: WorkloadResult,
    rounds: list[RoundRow],
    settings: Settings,
    diagnostics: bool = True,
) -> WorkloadView:
    """The :class:`WorkloadView` of one stored workload (module docstring)."""
    est = estimate_of(result)
    spec = w.typed_spec
    command = list(spec.command) if isinstance(spec.command, tuple) else spec.command
    view = WorkloadView(
        name=w.name,
        metric=w.metric,
        unit=w.unit,
        direction=w.direction,
        status=w.status,
        status_reason=w.status_reason,
        params=dict(spec.params),
        base_name=spec.base_name,
        per_work=spec.per_work,
        rounds=result.rounds,
        steady_rounds=result.steady,
        warmup_rounds=result.warmup,
        failed_rounds=result.failed,
        last_failure=result.last_failure,
        estimate=est,
        summary=result.summary,
        collected=getattr(result, "collected", None),
        drift=getattr(result, "drift", None),
        failed_at=[r.seq for r in rounds if r.status != "ok"],
        calibration_rounds=sum(1 for r in rounds if "calibration" in (r.flags or "")),
        contended_rounds=getattr(result, "contended", 0),
        command=command,
    )
    values, flags, series, d = _flags_and_series(view, rounds, est, settings)
    view.all_values, view.all_flags, view.steady, view.within_round_warmup = (
        values,
        flags,
        series,
        d,
    )
    _outliers(view)
    if diagnostics:
        _diagnostics(view)
        view.convergence = _convergence(w, rounds, settings)
    return view


def load_campaign(
    path: str | Path,
    campaign_id: int | None = None,
    diagnostics: bool = True,
    *,
    include_secrets: bool = False,
) -> CampaignModel:
    """Read one campaign (the newest unless ``campaign_id``) into a :class:`CampaignModel`.

    ``diagnostics=False`` skips outliers, autocorrelation, normality and the CI-width curve
    (what ``compare`` and ``export`` do not need). Everything is read in one snapshot of
    the store (Store.snapshot). The secret ``env:`` values of the campaign are hidden in
    every row the model holds (runner/store/redact.py) unless ``include_secrets``; the
    statistics are computed from the stored rows before. Raises :class:`UserError` for a missing
    or foreign database and for a campaign without any workload or round ("empty").
    """
    db = find_database(path)
    if not _is_sqlite(db):
        raise UserError(f"{db}: not a benchrun database (SQLite file expected)")
    with Store.open(db) as store:
        view = read_campaign(
            store,
            campaign_id,
            max_magnitude=MAX_MAGNITUDE,
            include_secrets=include_secrets,
            reading_flags=True,
        )
    campaign = view.campaign
    if not view.workloads or not view.rounds:
        raise UserError(
            f"{db}: campaign {campaign.id} ({campaign.name}) is empty: no round was stored; "
            "run it first (benchrun run FILE)"
        )
    by_w = view.rounds_by_workload()
    views = [
        build_view(w, res, by_w[w.id], view.settings, diagnostics)
        for w, res in zip(view.workloads, view.results, strict=True)
    ]
    return CampaignModel(
        db,
        campaign,
        views,
        view.events,
        view.confidence,
        sorted({r.cpus for r in view.rounds if r.cpus}),
        verdicts=view.comparisons,
        experiment=view.experiment,
        nodes={w.name: sorted({r.node for r in by_w[w.id] if r.node}) for w in view.workloads},
        rounds=view.rounds,
        reading_flags=view.reading_flags,
        hooks=view.hooks,
        names=view.names,
        metrics=view.metrics,
    )


def _is_sqlite(path: Path) -> bool:
    try:
        with path.open("rb") as fh:
            return fh.read(16).startswith(b"SQLite format 3")
    except OSError:
        return False


def finite(v: Any) -> float | None:
    """``v`` as a finite float, else None (for JSON and tables)."""
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None
