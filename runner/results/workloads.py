"""Per-workload results of a stored campaign, computed with ``stats``.

Two views of each workload:

- ``collected``: what the adaptive controller sees (:func:`collect_workload`, i.e.
  runner/control/collector.py): every reading of the steady rounds, within-round warm-up removed,
  subsession means of size q, the t interval over them (docs/methods.md §2-4), and
  (mean, s_q², n_q, q), what a later comparison needs. This is *the* estimate and CI.
- ``summary``: descriptive statistics of the per-round values (mean of a round's
  readings; docs/methods.md §1: median with its CI, std, CoV, quartiles, min, max,
  outliers) from ``stats.summarize`` (:func:`describe_rounds`). It holds no mean, CI,
  subsession size or autocorrelation time: those are the estimate's alone, so that no
  output shows two CIs, two subsession choices or two verdicts on the autocorrelation of
  one workload (issue 17).

Every output shows a workload's values in one unit, :func:`display_of` (the one
:func:`runner.format.display_unit` picks for the estimate's mean); the stored unit
(``unit``) stays the base unit of every number in the JSON documents.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from benchrun import stats
from benchrun.runner.control.collector import WorkloadStats, collect
from benchrun.runner.execute.contention import flagged_contended, left_out_as_contended
from benchrun.runner.format import DisplayUnit, display_unit
from benchrun.runner.results.estimate import (
    Description,
    Estimate,
    description_from,
    estimate_from,
)
from benchrun.runner.results.settings import StoredSettings, campaign_settings
from benchrun.runner.store.database import CampaignRow, EventRow, RoundRow, Store, WorkloadRow
from benchrun.stats.drift import DriftResult

#: event kind of the final verdicts of a campaign (read by `benchrun show` and `run`)
VERDICTS_EVENT = "verdicts"


def final_verdicts(events: list[EventRow]) -> dict[str, Any] | None:
    """Data of the newest stored "verdicts" event (pairs, baselines, reason), if any."""
    for e in reversed(events):
        if e.kind == VERDICTS_EVENT and e.data:
            return e.data
    return None


@dataclass(frozen=True)
class WorkloadResult:
    """One row of the results table (values in ``unit``)."""

    name: str
    unit: str
    direction: str
    rounds: int  # rounds stored
    steady: int  # ok rounds analysed: after warm-up rounds and the collector's warm-up cut
    warmup: int  # warm-up rounds: flagged ones and those the collector cut
    failed: int
    status: str
    status_reason: str | None
    summary: dict[str, object] | None  # describe_rounds(...); None if no data
    last_failure: str | None
    #: runner.control.collector.WorkloadStats.to_dict() of the steady rounds; None if no data
    collected: dict[str, Any] | None = None
    #: stats.drift_check(...).to_dict() of the steady round values in time order, with
    #: its one-line ``text``; None with too few rounds
    drift: dict[str, object] | None = None
    #: ok non-warm-up rounds flagged contended (docs/contention.md); left out of ``steady``
    #: and of every estimate unless the campaign's ``contended`` setting is ``keep``
    contended: int = 0

    def estimate_text(self, unit: DisplayUnit | None = None) -> str:
        """The mean and its interval as every output prints it (docs/methods.md §4.1):
        "24.73 ms ± 0.61 ms", with "(independence not certified: assumes tau <= 2.4, 1.6x
        the i.i.d. width)" after an uncertified interval, "(no CI: ...)" only without any
        interval; from ``collected`` (else ``summary``), in ``unit`` (default: the one
        :func:`~benchrun.runner.format.display_unit` picks for the mean)."""
        e = estimate_from(self.collected)
        return "-" if e is None else e.interval_text(unit or self.display)

    @property
    def display(self) -> DisplayUnit:
        """The unit every output shows this workload's values in (:func:`display_of`)."""
        e = self.estimate
        return display_unit(self.unit, None if e is None else e.mean)

    @property
    def description(self) -> Description | None:
        """``summary`` as the typed :class:`Description`; None without data."""
        return description_from(self.summary)

    @property
    def estimate(self) -> Estimate | None:
        """``collected`` as the typed :class:`Estimate` (runner/results/estimate.py); None
        without data."""
        return estimate_from(self.collected)


def display_of(unit: str, collected: Mapping[str, object] | None) -> DisplayUnit:
    """The one display unit of a workload stored in ``unit``: chosen by
    :func:`runner.format.display_unit` from the mean of its estimate (``collected``, the
    collector's :meth:`~runner.control.collector.WorkloadStats.to_dict`); ``unit`` itself
    without an estimate. ``show``, the report tables, ``compare`` and the exports all call
    this, so a 37.59 ms workload stored in seconds reads "37.59 ms" everywhere."""
    e = estimate_from(collected)
    return display_unit(unit, None if e is None else e.mean)


#: the keys of ``stats.summarize`` that ``summary`` keeps: the descriptive statistics of the
#: per-round values (module docstring)
DESCRIPTIVE_KEYS = (
    "median",
    "median_ci_low",
    "median_ci_high",
    "std",
    "cov",
    "min",
    "q1",
    "q3",
    "max",
    "p90",
    "p99",
    "outliers",
    "deterministic",
    "confidence",
)


def describe_rounds(
    values: np.ndarray, confidence: float, *, intervals: bool = True
) -> dict[str, object]:
    """Descriptive statistics of a workload's per-round values (docs/methods.md §1).

    Parameters
    ----------
    values : numpy.ndarray
        The per-round values in launch order (:func:`round_values`), at least one.
    confidence : float
        Level of the median's CI.
    intervals : bool
        False: :data:`DESCRIPTIVE_KEYS` without ``median_ci_low`` and ``median_ci_high``,
        from ``stats.describe`` alone (the same values ``stats.summarize`` takes from it):
        what ``benchrun show``'s tables print, without the median CI, the mean CI and the
        normality test that ``stats.summarize`` also computes (and the 0.3-0.5 s import of
        ``scipy.stats`` they need).

    Returns
    -------
    dict
        ``rounds`` (how many values), :data:`DESCRIPTIVE_KEYS` of ``stats.summarize``
        (whole warm-up rounds are already excluded, so no further warm-up is cut: MSER-5
        over rounds would discard real data of short fixed campaigns) and ``notes`` of
        ``stats.describe``. The mean, its CI, the subsession choice and tau are not here:
        they are the estimate's (``collected``).
    """
    description = stats.describe(values)
    out: dict[str, object] = {"rounds": int(values.size)}
    if intervals:
        full = stats.summarize(values, confidence=confidence, warmup="none").to_dict()
        out.update((k, full.get(k)) for k in DESCRIPTIVE_KEYS)
    else:
        described = description.to_dict()
        out.update(
            (k, confidence if k == "confidence" else described.get(k))
            for k in DESCRIPTIVE_KEYS
            if k not in ("median_ci_low", "median_ci_high")
        )
    out["notes"] = list(description.notes)
    return out


def analysed_rounds(rounds: list[RoundRow], settings: StoredSettings | None) -> list[RoundRow]:
    """The rounds a stored campaign's analysis uses, in launch order: ok, not warm-up,
    with readings, and not left out as contended (``settings``: the campaign's stored
    settings, typed or as stored; ``contended`` other than ``keep`` leaves contended
    rounds out, docs/contention.md)."""
    policy = campaign_settings(settings).contended
    return [
        r
        for r in rounds
        if r.status == "ok"
        and not r.warmup
        and r.readings
        and not left_out_as_contended(r.flags, policy)
    ]


def contended_count(rounds: list[RoundRow]) -> int:
    """How many ok non-warm-up rounds are flagged contended (analysed or not)."""
    return sum(
        1 for r in rounds if r.status == "ok" and not r.warmup and flagged_contended(r.flags)
    )


def round_values(
    workload: WorkloadRow,
    rounds: list[RoundRow],
    settings: StoredSettings | None = None,
) -> np.ndarray:
    """Per-round metric values of the analysed rounds (:func:`analysed_rounds`), in
    launch order (``settings``: the campaign's stored settings; None: the defaults).

    A round with several readings contributes their mean (units as stored).
    """
    values = [float(np.mean(r.readings)) for r in analysed_rounds(rounds, settings)]
    return np.asarray(values, dtype=float)


def collect_workload(
    readings: list[tuple[float, ...]],
    works: list[int | None],
    *,
    per_work: bool,
    confidence: float,
    warmup_readings: int | None = None,
    min_subsessions: int | None = None,
    nodes: list[str | None] | None = None,
    direction: str | None = None,
) -> WorkloadStats | None:
    """The controller's statistics of one workload (runner/control/collector.py, docs/methods.md §2-4).

    ``readings[i]`` and ``works[i]``: the readings and work amount of the i-th steady ok
    round in launch order. ``per_work`` divides each round's readings by its work amount
    (readings per unit of work). ``warmup_readings`` (config) fixes the within-round
    warm-up; None detects it with MSER-5. ``nodes[i]``: the node round i ran on (None:
    this machine), for the node analysis (docs/methods.md §14). ``direction``: the metric's
    (``lower_is_better``/``higher_is_better``), which says which way a warm-up lies
    (docs/methods.md §2.1). None without any reading.
    """
    if not any(readings):
        return None
    pw = [float(w) for w in works if w] if per_work and all(w for w in works) else None
    return collect(
        readings,
        confidence=confidence,
        warmup="mser5" if warmup_readings is None else int(warmup_readings),
        per_work=pw,
        min_subsessions=min_subsessions,
        nodes=nodes,
        direction=direction,
    )


def estimate_rounds(
    rounds: list[np.ndarray], confidence: float, min_subsessions: int | None = None
) -> WorkloadStats | None:
    """The estimate of data benchrun measured and exported, from the readings its analysis
    used, round by round (warm-up rounds, within-round warm-up and failed rounds already
    left out: an export's analysed readings). The collector runs with no further warm-up,
    so its series, subsession choice, mean and CI are the campaign's (the report's)
    whenever the campaign used the same ``confidence`` and ``min_subsessions``."""
    return collect_workload(
        [tuple(float(v) for v in r) for r in rounds],
        [None] * len(rounds),
        per_work=False,
        confidence=confidence,
        warmup_readings=0,
        min_subsessions=min_subsessions,
    )


def estimate_means(rounds: list[np.ndarray], s: WorkloadStats) -> np.ndarray | None:
    """The independent means behind an estimate of :func:`estimate_rounds`: the ``n_q``
    subsession means of ``q`` readings, or the round means when the collector took each
    round as one subsession (its CI was wider); None without a trusted estimate."""
    if not s.enough or not s.q or not s.n_q or s.mean is None:
        return None
    x = np.concatenate(rounds)
    candidates = [x[: s.q * s.n_q].reshape(s.n_q, s.q).mean(axis=1)]
    if len(rounds) == s.n_q:
        candidates.append(np.array([float(np.mean(r)) for r in rounds]))
    for means in candidates:
        if (
            means.size == s.n_q >= 2
            and np.isclose(float(np.mean(means)), s.mean, rtol=1e-9, atol=0)
            and np.isclose(float(np.var(means, ddof=1)), s.s2_q or 0.0, rtol=1e-6, atol=0)
        ):
            return means
    return candidates[0]


def collect_stored(
    workload: WorkloadRow, rounds: list[RoundRow], settings: StoredSettings
) -> WorkloadStats | None:
    """:func:`collect_workload` on a stored workload's steady ok rounds (``settings``: the
    campaign's settings, typed or as stored)."""
    s = campaign_settings(settings)
    steady = analysed_rounds(rounds, s)
    warmup = s.warmup_readings
    single = all(len(r.readings) == 1 for r in steady)
    return collect_workload(
        [r.readings for r in steady],
        [r.work for r in steady],
        per_work=bool(workload.spec.get("per_work")),
        confidence=float(s.confidence),
        warmup_readings=None if warmup is None or single else int(warmup),
        min_subsessions=s.min_subsessions,
        nodes=[(r.facts or {}).get("node") for r in steady],
        direction=workload.direction,
    )


def analysed_cut(collected: WorkloadStats | None) -> int:
    """Steady rounds the collector cut as warm-up (MSER-5 over rounds, one reading per
    round), which no output counts as steady: "steady" is the rounds analysed."""
    if collected is None or collected.series != "rounds":
        return 0
    return int(collected.warmup_readings)


def contended_line(results: list[WorkloadResult], settings: StoredSettings) -> str | None:
    """The one line every output prints when rounds were contended (docs/contention.md):
    which workloads, how many of their rounds, the threshold, and what the analysis did
    with them (``settings``: the campaign's stored settings); None when none was."""
    hit = [r for r in results if r.contended]
    if not hit:
        return None
    s = campaign_settings(settings)
    policy = str(s.contended or "exclude")
    threshold = float(s.contended_threshold)
    counts = ", ".join(
        f"{r.name} {r.contended} of {r.contended + r.steady if policy != 'keep' else r.steady}"
        for r in hit
    )
    total = sum(r.contended for r in hit)
    done = {
        "keep": "analysed all the same (contended: keep)",
        "fail": "the campaign stopped at the first (contended: fail); left out of the analysis",
    }.get(policy, "left out of the analysis (contended: exclude)")
    return (
        f"contended: {total} rounds waited for a CPU longer than "
        f"{100 * threshold:.3g} % of their wall time ({counts}); {done}; another "
        "process shared the CPUs: quiet the machine (docs/contention.md)"
    )


def drift_of(values: np.ndarray, reference: float | None = None) -> dict[str, object] | None:
    """:func:`stats.drift_check` of per-round values in time order (the rounds analysed)
    as a dict with its one-line ``text``, the block levels relative to ``reference`` (the
    estimate's mean, the one the tables show; None: the values' mean); None when the series
    is too short to say anything."""
    d = stats.drift_check(values, reference=reference)
    if d.von_neumann is None:
        return None
    return {**d.to_dict(), "text": d.describe()}


def drift_from(drift: Mapping[str, object] | None) -> DriftResult | None:
    """:attr:`WorkloadResult.drift` (:func:`drift_of`'s dict) as the typed
    :class:`stats.drift.DriftResult`; None without one. A key it lacks, or holds as
    something else than a number, reads as 0/None."""
    if not drift:
        return None
    values = {f.name: _DRIFT_CONVERT[f.name](drift.get(f.name)) for f in fields(DriftResult)}
    return DriftResult(**values)


def _real(v: object) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


#: how each value of :func:`drift_of`'s dict becomes the :class:`DriftResult` field's
_DRIFT_CONVERT: dict[str, Callable[[object], Any]] = {
    **dict.fromkeys(("von_neumann", "p_value", "level_low", "level_high"), _real),
    **dict.fromkeys(("n", "blocks"), lambda v: int(_real(v) or 0)),
    "drifted": bool,
    "alpha": lambda v: _real(v) or 0.0,
}


def drift_line(name: str, drift: Mapping[str, object] | None, paired: bool) -> str | None:
    """The drift line of a workload whose steady rounds drifted (``drift``:
    :attr:`WorkloadResult.drift`), as ``run``, ``show`` and reports print it; None when it
    did not. ``paired``: its comparisons are paired, which cancels a drift the pass shares."""
    check = drift_from(drift)
    if check is None or not check.drifted:
        return None
    tail = (
        "; its comparisons are paired, which cancels a drift shared by the pass" if paired else ""
    )
    return (
        f"drift: {name}: {check.describe()}: its mean describes this period of this machine{tail}"
    )


def workload_results(
    store: Store, campaign: CampaignRow, confidence: float, *, intervals: bool = True
) -> list[WorkloadResult]:
    """Summaries of every workload of ``campaign`` (``intervals``: of
    :func:`describe_rounds`; False leaves the median CI out of ``summary``)."""
    out: list[WorkloadResult] = []
    rounds_by_workload: dict[int, list[RoundRow]] = {}
    for r in store.rounds(campaign.id):
        rounds_by_workload.setdefault(r.workload_id, []).append(r)
    settings = campaign_settings(campaign.settings)
    for w in store.workloads(campaign.id):
        rounds = rounds_by_workload.get(w.id, [])
        values = round_values(w, rounds, settings)
        collected = collect_stored(w, rounds, settings) if values.size else None
        cut = analysed_cut(collected)
        values = values[cut:]  # the rounds analysed: "steady" in every output (issue 27)
        summary = describe_rounds(values, confidence, intervals=intervals) if values.size else None
        failures = [r for r in rounds if r.status != "ok"]
        mean = None if collected is None else collected.mean
        out.append(
            WorkloadResult(
                name=w.name,
                unit=w.unit,
                direction=w.direction,
                rounds=len(rounds),
                steady=int(values.size),
                warmup=sum(1 for r in rounds if r.warmup) + cut,
                failed=len(failures),
                status=w.status,
                status_reason=w.status_reason,
                summary=summary,
                last_failure=(
                    f"round {failures[-1].round_index}: {failures[-1].status}: {failures[-1].reason}"
                    if failures
                    else None
                ),
                collected=None if collected is None else collected.to_dict(),
                drift=drift_of(values, mean),
                contended=contended_count(rounds),
            )
        )
    return out


def workload_states(
    results: list[WorkloadResult], campaign: CampaignRow, events: list[EventRow]
) -> dict[str, str]:
    """What each workload is, by name, for ``show`` and ``status`` readers.

    The store's ``workload.status`` says whether a workload may still get rounds
    (``active``) or was dropped after failures (``stopped``). Combined with the campaign
    and the controller's events (docs/controller.md) that becomes: ``stopped``;
    ``done`` (the controller found its conditions met: a ``workload-done`` event; or a
    fixed-mode campaign ran all its rounds); ``active`` (the campaign is running or
    interrupted); ``unmet`` (an adaptive campaign ended, on a budget or a failure,
    before this workload's conditions were met; the stop reason says which).
    """
    done = {
        str(e.data.get("workload"))
        for e in events
        if e.kind == "workload-done" and isinstance(e.data, dict)
    }
    adaptive = campaign_settings(campaign.settings).adaptive
    out: dict[str, str] = {}
    for r in results:
        if r.status != "active":
            out[r.name] = r.status
        elif r.name in done:
            out[r.name] = "done"
        elif campaign.status in ("running", "interrupted"):
            out[r.name] = "active"
        elif campaign.status == "done" and not adaptive:
            out[r.name] = "done"
        else:
            out[r.name] = "unmet"
    return out


def node_line(name: str, collected: Mapping[str, object] | None, unit: DisplayUnit) -> str | None:
    """The node line of a workload whose steady rounds ran on 2 or more nodes, as ``show``,
    ``run`` and reports print it (docs/methods.md §14); None without a node analysis.

    ``collected``: :attr:`WorkloadResult.collected` (its ``nodes``, read as
    :class:`~runner.results.estimate.NodeAnalysis`); ``unit``: the display unit of the
    workload. "nodes: a: CI from 3 node means: nodes differ, F=685, p=2e-15; n1 100.1 ms
    (6 means), n2 99.8 ms (6), n3 110.2 ms (6); between-node sd 5.8 ms, within 0.4 ms,
    ICC 0.99; 1 mean per node is optimal".
    """
    e = estimate_from(collected)
    nodes = None if e is None else e.node_analysis
    if nodes is None:
        return None
    per = ", ".join(
        f"{n} {unit.text(m)} ({c} mean{'s' if c != 1 else ''})"
        for n, m, c in zip(nodes.nodes, nodes.means, nodes.counts, strict=True)
    )
    sd_b = math.sqrt(max(0.0, nodes.between_variance or 0.0))
    sd_w = math.sqrt(max(0.0, nodes.within_variance or 0.0))
    icc = "" if nodes.icc is None else f", ICC {nodes.icc:.2f}"
    text = (
        f"nodes: {name}: {nodes.text}; {per}; between-node sd {unit.text(sd_b)}, "
        f"within {unit.text(sd_w)}{icc}"
    )
    if nodes.ci_from == "nodes" and nodes.optimal_per_node is not None:
        text += (
            f"; about {nodes.optimal_per_node} mean(s) per node is the cheapest precision, "
            "more nodes narrow the CI"
        )
    return text
