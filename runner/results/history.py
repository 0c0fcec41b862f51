"""A program followed over its revisions: per workload, one estimate per campaign in
revision order (docs/history.md).

The campaigns come from one or more stores (``benchrun history DIR...``). A *series* is one
workload of one experiment (the measurement fingerprint: the same commands and settings)
on one machine (CPU model, logical CPUs, SMT: runner/results/conditions.py
:class:`Fingerprint`); campaigns of another experiment or machine form series of their
own, listed apart. Each finished campaign gives the collector's estimate of the workload
(as ``benchrun show`` prints it) and its standard error ``sqrt(s2_q / n_q)`` (the
subsession means behind its CI). Campaigns are ordered by revision: the commit order of
the repository (``git rev-list --topo-order``) when every campaign of the series names a
commit of one checkout, else by the time they started.
"""

from __future__ import annotations

import datetime as dt
import math
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from benchrun.runner.errors import UserError
from benchrun.runner.jsonread import JsonFields
from benchrun.runner.machine.revision import SAFE_GIT_OPTIONS, Revision
from benchrun.runner.results.campaigns import DONE
from benchrun.runner.results.conditions import fingerprint_of
from benchrun.runner.results.estimate import Estimate, estimate_from
from benchrun.runner.results.settings import campaign_settings
from benchrun.runner.store.database import Store

if TYPE_CHECKING:
    from benchrun.stats.changepoint import ChangePoints


@dataclass(frozen=True)
class HistoryPoint:
    """One campaign's estimate of one workload.

    ``store``: the store's path; ``campaign``: its id there; ``started``: Unix time the
    campaign was created; ``mean`` and ``se`` (standard error of the mean, from the
    subsession means: ``sqrt(s2_q / n_q)``; None without a CI) in the series' unit;
    ``ci_low``/``ci_high``: the interval every output shows (None without one);
    ``certified``: its independence was checked (else the interval is the marked one,
    docs/methods.md §4.1, and ``se`` its half-width over the normal quantile).
    """

    store: str
    campaign: int
    revision: Revision | None
    started: float
    mean: float
    se: float | None
    ci_low: float | None
    ci_high: float | None
    certified: bool

    @property
    def label(self) -> str:
        """The revision's label, else ``campaign N``."""
        return self.revision.label if self.revision else f"campaign {self.campaign}"

    @property
    def date(self) -> str:
        """``YYYY-MM-DD``: the revision's commit date when known, else the day the
        campaign started (local time)."""
        if self.revision is not None and self.revision.date:
            return str(self.revision.date)[:10]
        return dt.datetime.fromtimestamp(self.started).strftime("%Y-%m-%d")


@dataclass(frozen=True)
class HistorySeries:
    """One workload of one experiment on one machine, its points in revision order.

    ``experiment``: the campaigns' name; ``machine``: ``"CPU model, N CPUs, SMT on"``;
    ``ordered_by``: ``"commit order"`` or ``"start time"``.
    """

    experiment: str
    machine: str
    workload: str
    unit: str
    direction: str
    points: tuple[HistoryPoint, ...]
    ordered_by: str


def change_word(ratio: float, direction: str) -> str:
    """What a ratio new/old means for a metric of ``direction``: ``"slower"`` or
    ``"faster"`` for ``lower_is_better``, else ``"better"`` or ``"worse"``.

    Examples
    --------
    >>> change_word(1.05, "lower_is_better"), change_word(1.05, "higher_is_better")
    ('slower', 'better')
    """
    if direction == "lower_is_better":
        return "slower" if ratio > 1 else "faster"
    return "better" if ratio > 1 else "worse"


def _machine(metadata: Mapping[str, object] | None) -> str:
    f = fingerprint_of(metadata)
    smt = "SMT unknown" if f.smt is None else ("SMT on" if f.smt else "SMT off")
    cpus = "? CPUs" if f.cpu_count is None else f"{f.cpu_count} CPUs"
    return f"{f.cpu_model or 'unknown CPU'}, {cpus}, {smt}"


def _revision(metadata: Mapping[str, object] | None) -> Revision | None:
    """The revision a campaign's metadata record names (runner/machine/revision.py)."""
    return Revision.from_dict((metadata or {}).get("revision"))


def _se(e: Estimate) -> float | None:
    """The standard error of the mean: ``sqrt(s2_q / n_q)`` of a certified CI, else the
    half-width of the interval every output shows (uncertified, docs/methods.md §4.1) over
    the normal quantile of its confidence; None without either."""
    s2, n = e.variance, e.n_q
    if e.ci_low is not None and s2 is not None and n is not None and n >= 2 and s2 >= 0:
        value = math.sqrt(s2 / n)
        return value if math.isfinite(value) else None
    low, high = e.interval_low, e.interval_high
    if low is not None and high is not None and high >= low:
        from statistics import NormalDist

        value = (high - low) / 2 / NormalDist().inv_cdf((1 + (e.confidence or 0.95)) / 2)
        return value if math.isfinite(value) else None
    return None


def _point(
    e: Estimate, store: str, campaign: int, revision: Revision | None, started: float
) -> HistoryPoint | None:
    """The :class:`HistoryPoint` of one workload of one campaign from its estimate as stored
    or exported: the CI when certified, else the interval every output shows; None when
    its mean is not finite."""
    if not math.isfinite(e.mean):
        return None
    return HistoryPoint(
        store=store,
        campaign=campaign,
        revision=revision,
        started=started,
        mean=e.mean,
        se=_se(e),
        ci_low=e.ci_low or e.interval_low,
        ci_high=e.ci_high or e.interval_high,
        certified=e.ci_low is not None,
    )


#: a series' key: (experiment, fingerprint, machine, workload, unit, direction)
SeriesKey = tuple[str, str, str, str, str, str]


def _points(db: Path) -> dict[SeriesKey, list[HistoryPoint]]:
    """Per series (:data:`SeriesKey`), the finished campaigns' points of the store ``db``."""
    from benchrun.runner.results.workloads import workload_results

    out: dict[SeriesKey, list[HistoryPoint]] = {}
    with Store.open(db) as store, store.snapshot():
        for c in store.campaigns():
            if c.status != DONE:
                continue
            revision = _revision(c.metadata)
            machine = _machine(c.metadata)
            confidence = float(campaign_settings(c.settings).confidence)
            for r in workload_results(store, c, confidence):
                e = r.estimate
                point = None if e is None else _point(e, str(db), c.id, revision, c.created_at)
                if point is not None:
                    key = (c.name, c.fingerprint, machine, r.name, r.unit, r.direction)
                    out.setdefault(key, []).append(point)
    return out


@dataclass(frozen=True)
class ExportedWorkload:
    """What history reads of one workload of a benchrun export (docs/export-format.md):
    its name, unit and direction, and its estimate (the ``collected`` object; None
    without one, or without a mean)."""

    name: str
    unit: str
    direction: str
    estimate: Estimate | None

    @classmethod
    def from_json(cls, raw: object) -> ExportedWorkload | None:
        """The workload of one entry of an export's ``workloads`` array; None when the
        entry is not an object."""
        if not isinstance(raw, Mapping):
            return None
        f = JsonFields(raw, "workload")
        collected = f.value("collected")
        return cls(
            name=f.loose("name", str) or "?",
            unit=f.loose("unit", str) or "",
            direction=f.loose("direction", str) or "lower_is_better",
            estimate=estimate_from(collected) if isinstance(collected, Mapping) else None,
        )


@dataclass(frozen=True)
class ExportedCampaign:
    """What history reads of the ``campaign`` object of a benchrun export: its name, the
    measurement fingerprint (before issue 31 exports had none: ``name:NAME``), status, id
    and start (Unix time; 0 when not a number), and its metadata record (None without
    one)."""

    name: str
    fingerprint: str
    status: str | None
    id: int
    created_at: float
    metadata: Mapping[str, object] | None

    @classmethod
    def from_json(cls, raw: Mapping[str, object]) -> ExportedCampaign:
        """The campaign of an export's ``campaign`` object (values of another type read as
        missing)."""
        f = JsonFields(raw, "campaign")
        name, metadata = f.loose("name", str), f.value("metadata")
        campaign = cls(
            name="?" if name is None else name,
            fingerprint=f.loose("fingerprint", str) or "",
            status=f.loose("status", str),
            id=f.loose("id", int) or 0,
            created_at=f.loose("created_at", float) or 0.0,
            metadata=metadata if isinstance(metadata, Mapping) else None,
        )
        if not campaign.fingerprint:
            return replace(campaign, fingerprint=f"name:{campaign.name}")
        return campaign

    @property
    def revision(self) -> Revision | None:
        """The revision its metadata names (runner/machine/revision.py)."""
        return _revision(self.metadata)


def _export_points(doc: object, source: str) -> dict[SeriesKey, list[HistoryPoint]]:
    """The points of one benchrun export (docs/export-format.md) as :func:`_points` gives
    them for a store: the campaign's estimate of each workload (its ``collected``), its
    revision and machine from ``campaign.metadata``; a campaign that did not finish gives
    none. An export without ``campaign.fingerprint`` (before issue 31) is keyed by its
    experiment's name."""
    f = JsonFields(doc, source) if isinstance(doc, Mapping) else None
    raw = None if f is None else f.value("campaign")
    if f is None or not isinstance(raw, Mapping):
        raise UserError(f"{source}: not a benchrun export (no campaign object)")
    workloads = f.value("workloads")
    if not isinstance(workloads, list):
        raise UserError(f"{source}: not a benchrun export (no workloads list)")
    c = ExportedCampaign.from_json(raw)
    out: dict[SeriesKey, list[HistoryPoint]] = {}
    if c.status != DONE:
        return out
    machine, revision = _machine(c.metadata), c.revision
    for w in map(ExportedWorkload.from_json, workloads):
        point = (
            None
            if w is None or w.estimate is None
            else _point(w.estimate, source, c.id, revision, c.created_at)
        )
        if w is not None and point is not None:
            key = (c.name, c.fingerprint, machine, w.name, w.unit, w.direction)
            out.setdefault(key, []).append(point)
    return out


def commit_order(
    repository: str, commits: Sequence[str], timeout: float = 10.0
) -> list[str] | None:
    """``commits`` in the repository's topological order, oldest first (``git rev-list
    --topo-order --reverse`` over all of them), or None when git cannot say (a commit it
    does not know, no repository)."""
    wanted = set(commits)
    try:
        proc = subprocess.run(
            ["git", *SAFE_GIT_OPTIONS, "-C", repository, "rev-list", "--topo-order", "--reverse",
             *sorted(wanted)],
            capture_output=True, text=True, timeout=timeout, check=False,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return None
    order = [line for line in proc.stdout.split() if line in wanted]
    return order if set(order) == wanted else None


def _ordered(points: list[HistoryPoint]) -> tuple[tuple[HistoryPoint, ...], str]:
    by_time = sorted(points, key=lambda p: (p.started, p.campaign))
    revs = [p.revision for p in by_time]
    repos = {r.repository for r in revs if r is not None}
    if revs and all(r is not None and r.commit for r in revs) and len(repos) == 1:
        (repo,) = repos
        order = commit_order(str(repo), [r.commit for r in revs if r and r.commit])
        if order is not None:
            rank = {c: i for i, c in enumerate(order)}
            # campaigns of one commit stay in time order (repeats of one revision)
            keyed = sorted(
                enumerate(by_time),
                key=lambda ip: (rank[ip[1].revision.commit], ip[0]),  # type: ignore[union-attr,index]
            )
            return tuple(p for _, p in keyed), "commit order"
    return tuple(by_time), "start time"


def load_history(
    paths: Sequence[Path], exports: Sequence[tuple[str, object]] = ()
) -> list[HistorySeries]:
    """Every series of the stores ``paths`` name (campaign directories or their
    ``benchrun.db``) and of the benchrun ``exports`` (``(source, parsed JSON document)``),
    longest first; a campaign exported and stored is counted once (its store's).

    Raises
    ------
    UserError
        A path holds no store, an export is not one, or nothing holds a finished campaign.
    """
    merged: dict[SeriesKey, list[HistoryPoint]] = {}
    for path in paths:
        db = path if path.is_file() else path / "benchrun.db"
        if not db.is_file():
            raise UserError(f"{path}: no benchrun campaign here (looked for benchrun.db)")
        for key, pts in _points(db).items():
            merged.setdefault(key, []).extend(pts)
    for source, doc in exports:
        for key, pts in _export_points(doc, source).items():
            have = {(p.revision, p.started, p.mean) for p in merged.get(key, [])}
            merged.setdefault(key, []).extend(
                p for p in pts if (p.revision, p.started, p.mean) not in have
            )
    if not merged:
        raise UserError(
            f"no finished campaign in {', '.join(map(str, paths))}: history needs campaigns "
            "that ended (status done)"
        )
    series = []
    for (name, _, machine, workload, unit, direction), pts in merged.items():
        ordered, how = _ordered(pts)
        series.append(HistorySeries(name, machine, workload, unit, direction, ordered, how))
    series.sort(key=lambda s: (-len(s.points), s.experiment, s.machine, s.workload))
    return series


@dataclass(frozen=True)
class LatestCheck:
    """The latest revision against the level of the revisions before it (the CI gate of
    ``benchrun history --fail-on-change``).

    ``change``: the relative change of the latest estimate from that level in the worse
    direction (+ = worse; 0.05 = 5 % slower for times); ``upper``: the one-sided upper
    bound of that change at ``1 - alpha``; ``p_value``: one-sided, "not worse" as the null;
    ``level_revisions``: how many revisions the level holds; ``verdict``: ``"regression"``
    (significantly worse by more than the threshold), ``"ok"`` (the upper bound is within
    the threshold, or significantly worse by less) or ``"cannot tell"`` (neither: too few
    revisions, or a change that might exceed the threshold without being shown to).
    """

    revision: str
    change: float | None
    upper: float | None
    p_value: float | None
    level_revisions: int
    verdict: str
    reason: str


def check_latest(
    series: HistorySeries,
    level_start: int,
    tau: float,
    threshold: float,
    alpha: float = 0.01,
) -> LatestCheck:
    """Is the latest point of ``series`` worse than the level of the points from
    ``level_start`` up to the one before it by more than ``threshold``?

    On the log scale: the level's weighted mean ``m`` (weights ``1/(e_r² + tau²)``, ``e_r``
    the relative standard error of point r), the latest value's difference ``d = ln x_n -
    m`` with variance ``e_n² + tau² + 1/W``; a one-sided normal test of "not worse" and
    the upper bound of the change at ``1 - alpha`` (docs/history.md, "In CI"). ``tau``:
    the between-campaign sd (relative) the change-point search used.
    """
    from statistics import NormalDist

    pts = series.points
    last = pts[-1]
    level = [p for p in pts[level_start:-1] if p.mean > 0 and p.se is not None]
    if len(pts) < 2 or not level or last.mean <= 0 or last.se is None:
        why = (
            "one campaign: nothing to compare the latest with"
            if len(pts) < 2
            else "no CI for the latest campaign or the level before it"
        )
        return LatestCheck(last.label, None, None, None, len(level), "cannot tell", why)
    w = [1.0 / ((p.se / p.mean) ** 2 + tau**2) for p in level]  # type: ignore[operator]
    big_w = math.fsum(w)
    m = math.fsum(wi * math.log(p.mean) for wi, p in zip(w, level, strict=True)) / big_w
    d = math.log(last.mean) - m
    se = math.sqrt((last.se / last.mean) ** 2 + tau**2 + 1.0 / big_w)
    worse = d if series.direction == "lower_is_better" else -d
    nd = NormalDist()
    p = 1.0 - nd.cdf(worse / se) if se > 0 else (0.0 if worse > 0 else 1.0)
    change = math.expm1(worse)
    upper = math.expm1(worse + nd.inv_cdf(1.0 - alpha) * se)
    if p <= alpha and change > threshold:
        verdict, reason = "regression", "significantly worse than the level before it"
    elif upper <= threshold or p <= alpha:
        verdict, reason = (
            "ok",
            (
                "worse, but by no more than the threshold"
                if p <= alpha
                else "no change beyond the threshold"
            ),
        )
    else:
        verdict, reason = (
            "cannot tell",
            f"the change may exceed the threshold (up to {100 * upper:+.2g} %) without "
            "being significant: run the revision again",
        )
    return LatestCheck(last.label, change, upper, p, len(level), verdict, reason)


def find_series_changes(
    series: HistorySeries,
    tau: float | None = None,
    alpha: float = 0.01,
    min_change: float = 0.0,
) -> ChangePoints | None:
    """The change points of ``series`` (stats/changepoint.py :func:`find_changes` on its
    estimates and standard errors; ``tau``: the campaign-to-campaign sd, None to estimate
    it), or None when they cannot be looked for: fewer than 3 campaigns, or one without a
    CI or with an estimate <= 0 (the search works on the log scale)."""
    from benchrun.stats.changepoint import find_changes

    usable = [p for p in series.points if p.mean > 0 and p.se is not None]
    if len(usable) < 3 or len(usable) != len(series.points):
        return None
    return find_changes(
        [p.mean for p in series.points],
        [float(p.se or 0.0) for p in series.points],
        tau=tau,
        alpha=alpha,
        min_change=min_change,
    )
