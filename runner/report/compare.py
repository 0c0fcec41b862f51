"""``benchrun compare A B``: per workload present in both, old vs new (docs/methods.md §6).

Each side is a campaign (directory or ``benchrun.db``: its newest campaign), a benchrun
export (JSON), or an imported hyperfine / pyperf / Google Benchmark / CSV file. A side is
reduced to one :class:`Entry` per workload: mean, s_q² of the independent units, their
count n_q, q and the unit (PILOT "Comparing Results": enough to compare without the raw
data). Campaigns and exports give the stored estimate (runner/control/collector.py). Imported
files that say what a process is (pyperf runs, hyperfine runs, Google Benchmark
repetitions) are summarised by :func:`runner.importers.processes.summarize_processes`:
each process mean is one observation, n_q = the number of processes
(docs/imported-data.md); benchrun's CSV export as the campaign estimated it (the
collector over the analysed readings of each round, runner/results/workloads.py
``estimate_rounds``: the report's mean and CI); other long-form CSV, which has no
processes, with :func:`stats.summarize` (MSER-5 warm-up, subsession means).

For each common workload: the ratio new/old with a delta-method CI on the log scale
(:func:`stats.paired.ratio_of_means_ci`, the function the stopping controller uses too:
``se(ln r)² = s_old²/(n_old m_old²) + s_new²/(n_new m_new²)``, t quantile with the
Welch-Satterthwaite df of those two terms), Welch's two-sided t-test on the summaries with
Holm's correction over all compared workloads (§6.1, §7), and TOST within ±``margin`` of
the old mean (§6.4). Verdict: Holm p < alpha -> ``slower`` or ``faster`` (by the metric's
direction); else TOST equivalent -> ``equivalent``; else ``undecided``, with the reason
(too few processes on a side, or neither test decided and about how many units per side
would). A regression is a ``slower`` verdict whose relative change (in the bad direction)
exceeds the threshold. The headline of a row reads like hyperfine's: ``1.062x [1.041,
1.083] slower (Welch, 10 vs 10 processes)``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from benchrun.runner.config.experiment import Settings
from benchrun.runner.errors import UserError
from benchrun.runner.format import DisplayUnit, display_unit, printable
from benchrun.runner.importers.dataset import Dataset, display_name
from benchrun.runner.importers.processes import plural, summarize_processes
from benchrun.runner.report.exported import ExportDocument
from benchrun.runner.results.campaigns import CampaignMeans
from benchrun.runner.results.conditions import (
    Conditions,
    ConditionsComparison,
    compare_conditions,
    unknown_conditions,
)
from benchrun.runner.results.estimate import Estimate
from benchrun.runner.results.headline import comparison_words
from benchrun.stats.autocorr import subsession_means
from benchrun.stats.campaigns import (
    LogRatioTest,
    between_campaign_sd,
    campaign_level_test,
    double_ratio_test,
)
from benchrun.stats.intervals import Interval
from benchrun.stats.multi import holm
from benchrun.stats.paired import ratio_of_means_ci
from benchrun.stats.resampling import gmean_ratio_ci
from benchrun.stats.results import jsonable
from benchrun.stats.sequential import BaselineTest, Sample, baseline_tests, growth_needed
from benchrun.stats.summary import summarize

if TYPE_CHECKING:
    from benchrun.runner.report.model import CampaignModel

#: the independent unit of a side that has no processes: benchrun's subsession means
SUBSESSION = "subsession mean"


class Uncertified(NamedTuple):
    """The interval an :class:`Entry` shows when it has no certified CI (docs/methods.md
    §4.1): its bounds and its mark; all None with a certified CI or without an interval."""

    interval_low: float | None = None
    interval_high: float | None = None
    interval_note: str | None = None


@dataclass(frozen=True)
class Entry:
    """One workload of one side (values in ``unit``; ``variance`` is s_q², unit²).

    ``n_q`` counts the independent units the tests use and ``word`` names them
    (``"process"``, ``"repetition"`` or ``"subsession mean"``); ``why`` says why there is
    no usable estimate (empty when there is one).
    """

    name: str
    unit: str
    direction: str
    mean: float
    variance: float | None
    n_q: int | None
    q: int | None
    ci_low: float | None
    ci_high: float | None
    #: the independent units' means (subsession or process means), when raw data exist
    means: np.ndarray | None = None
    word: str = SUBSESSION
    why: str = ""
    #: the interval shown when there is no certified CI: the uncertified one
    #: (docs/methods.md §4.1) with its mark ("independence not certified: assumes tau <=
    #: 2.4, 1.6x the i.i.d. width"); empty with a CI, or without any interval
    marked: Uncertified = Uncertified()

    @property
    def interval(self) -> tuple[float | None, float | None]:
        """The interval shown: the CI, else the uncertified interval, else (None, None)."""
        if self.ci_low is not None and self.ci_high is not None:
            return self.ci_low, self.ci_high
        return self.marked.interval_low, self.marked.interval_high

    @property
    def interval_note(self) -> str | None:
        """The mark of the uncertified interval shown (None with a CI or no interval)."""
        return self.marked.interval_note

    @property
    def usable(self) -> bool:
        """True when Welch and TOST can run: a variance over at least two units."""
        return self.variance is not None and (self.n_q or 0) >= 2

    def count(self) -> str:
        """``10 processes``: the n of the tests with its unit, for people."""
        n = int(self.n_q or 0)
        return f"{n} {plural(self.word, n)}"


@dataclass
class Side:
    """One side of a comparison: where it came from and its workloads."""

    label: str
    kind: str
    entries: dict[str, Entry]
    notes: list[str] = field(default_factory=list)
    #: workloads present but without any analysed reading (every round failed, say)
    empty: list[str] = field(default_factory=list)
    #: the conditions the side ran under (runner/results/conditions.py); unknown for data
    #: benchrun did not measure
    conditions: Conditions | None = None
    #: the campaign's settings (``control``); the defaults for imported data
    settings: Settings = field(default_factory=Settings)
    #: per workload, its mean in each repeated campaign of the side's store
    #: (runner/results/campaigns.py); empty with one campaign
    campaigns: dict[str, CampaignMeans] = field(default_factory=dict)


def _uncertified(
    certified: bool, low: float | None, high: float | None, note: str | None
) -> Uncertified:
    """The uncertified interval of an estimate that says whether it is ``certified`` and
    has the interval ``low``..``high`` with its mark ``note`` (the collector's, an
    export's, :func:`stats.summarize`'s); empty when it is certified or has none."""
    if certified or low is None or high is None or not note:
        return Uncertified()
    return Uncertified(low, high, note)


def _not_certified(why: str, marked: Uncertified) -> str:
    """``why`` a side has no certified CI, with the uncertified interval it has instead."""
    note = marked.interval_note
    return f"{why}; its interval: {note}" if note else why


def _why_not(shift: str | None, n: int | None, need: int | None, marked: Uncertified) -> str:
    """Why a campaign's side has no certified CI: its level ``shift`` ("level shift at
    round 18 (+134 %)": no CI across it, docs/methods.md §2.1), else too few readings."""
    if shift:
        return f"{shift}: no CI across it"
    return _not_certified(_short(n, need), marked)


def _estimate_uncertified(e: Estimate) -> Uncertified:
    """:func:`_uncertified` of a typed estimate."""
    return _uncertified(e.certified, e.interval_low, e.interval_high, e.interval_note)


def _is_sqlite(p: Path) -> bool:
    try:
        with p.open("rb") as fh:
            return fh.read(16).startswith(b"SQLite format 3")
    except OSError:
        return False


def _from_campaign(path: Path) -> Side:
    from benchrun.runner.report.model import load_campaign

    model = load_campaign(path, diagnostics=False)
    entries = {}
    empty = []
    for w in model.workloads:
        e = w.estimate
        if e is None:
            empty.append(w.name)
            continue
        marked = _estimate_uncertified(e)
        shift = e.level_shift
        entries[w.name] = Entry(
            name=w.name,
            unit=w.unit,
            direction=w.direction,
            mean=e.mean,
            variance=e.variance,
            n_q=e.n_q,
            q=e.q,
            ci_low=e.ci_low,
            ci_high=e.ci_high,
            means=_means(w.steady, e.q),
            why="" if e.usable else _why_not(shift, e.n, e.readings_needed, marked),
            marked=marked,
        )
    label = f"{model.campaign.name} (campaign {model.campaign.id})"
    conditions, campaigns = _store_facts(model, label)
    return Side(
        label,
        "campaign",
        entries,
        empty=empty,
        conditions=conditions,
        settings=model.settings,
        campaigns=campaigns,
    )


def _store_facts(model: CampaignModel, label: str) -> tuple[Conditions, dict[str, CampaignMeans]]:
    """The conditions of the model's campaign and, when its store holds repeated
    campaigns of the same experiment, each workload's mean per campaign."""
    from benchrun.runner.results.campaigns import campaign_means, repeated_campaigns
    from benchrun.runner.results.conditions import conditions_of
    from benchrun.runner.store.database import Store

    with Store.open(model.database) as store:
        campaign = model.campaign
        conditions = conditions_of(
            campaign,
            store.workloads(campaign.id),
            store.rounds(campaign.id),
            {w.name: w.collected for w in model.workloads},
            {w.name: w.drift for w in model.workloads},
            label,
        )
        repeated = repeated_campaigns(store, campaign)
        campaigns = campaign_means(store, campaign) if len(repeated) > 1 else {}
    return conditions, campaigns


def _from_export(export: ExportDocument) -> Side:
    """One side from a checked benchrun export: per workload its exported estimate (with
    the subsession means of its analysed readings when the export has its rounds), else
    :func:`stats.summarize` of those readings, else a note that it has no result."""
    entries = {}
    notes = []
    for w in export.workloads:
        # names and units from the file, escaped like an imported dataset's
        # (runner/importers/dataset.py): the table and the JSON show what was written
        name, unit = printable(w.name), printable(w.unit)
        e = w.estimate
        if e is not None:
            marked = _estimate_uncertified(e)
            entries[name] = Entry(
                name=name,
                unit=unit,
                direction=w.direction,
                mean=e.mean,
                variance=e.variance,
                n_q=e.n_q,
                q=e.q,
                ci_low=e.ci_low,
                ci_high=e.ci_high,
                means=_means(w.readings, e.q),
                why="" if e.enough else _why_not(w.level_shift, e.n, e.readings_needed, marked),
                marked=marked,
            )
        elif w.readings is not None:
            if w.readings.size:
                entries[name] = _summarised(name, w.readings, unit, w.direction, "none")
        else:
            notes.append(f"{name}: no result in the export")
    label = printable(f"{export.campaign_name} (export)")
    return Side(label, "export", entries, notes, conditions=_export_conditions(export, label))


def _export_conditions(export: ExportDocument, label: str) -> Conditions:
    """The conditions an export says: the fingerprint and load of its campaign's metadata,
    the contended share of its rounds, the level shift of each result; unknown without
    metadata."""
    from benchrun.runner.results.conditions import (
        WorkloadConditions,
        fingerprint_of,
        start_load,
    )

    if export.metadata is None:
        return unknown_conditions(label)
    per = []
    for w in export.workloads:
        rounds = [r for r in w.rounds if r.counted]
        per.append(
            WorkloadConditions(
                name=w.name,
                rounds=len(rounds),
                contended=sum(r.contended for r in rounds),
                level_shift_at=w.level_shift_at,
                python=w.python,
            )
        )
    return Conditions(
        label=label,
        known=True,
        fingerprint=fingerprint_of(export.metadata),
        load=start_load(export.metadata),
        rounds=sum(w.rounds for w in per),
        contended=sum(w.contended for w in per),
        workloads=tuple(per),
        campaign_id=export.campaign_id,
    )


def _summarised(name: str, x: np.ndarray, unit: str, direction: str, warmup: str) -> Entry:
    try:
        s = summarize(x, warmup=warmup)  # type: ignore[arg-type]
    except ValueError as exc:
        raise UserError(f"{name}: cannot summarise ({exc})") from None
    means = _means(x[s.warmup_readings :], s.subsession_size) if s.enough_data else None
    why = ""
    marked = _uncertified(s.certified, s.interval_low, s.interval_high, s.interval_note)
    if not s.enough_data:
        why = _not_certified(_short(s.n, s.readings_needed), marked)
    return Entry(
        name=name,
        unit=unit,
        direction=direction,
        mean=float(s.mean),
        variance=s.subsession_variance,
        n_q=s.n_subsessions,
        q=s.subsession_size,
        ci_low=s.ci_low,
        ci_high=s.ci_high,
        means=means,
        why=why,
        marked=marked,
    )


def _from_processes(
    name: str, processes: list[np.ndarray], unit: str, direction: str, word: str
) -> Entry:
    """An imported group whose file says what a process is: the process means are the
    observations (runner/importers/processes.py, docs/imported-data.md)."""
    try:
        ps = summarize_processes(processes, word=word)
    except ValueError as exc:
        raise UserError(f"{name}: cannot summarise ({exc})") from None
    return Entry(
        name=name,
        unit=unit,
        direction=direction,
        mean=ps.mean,
        variance=ps.variance,
        n_q=ps.n,
        q=ps.values_per_process,
        ci_low=ps.ci_low,
        ci_high=ps.ci_high,
        means=ps.means if ps.enough else None,
        word=word,
        why=ps.why_not(),
    )


def _from_rounds(name: str, rounds: list[np.ndarray], unit: str, direction: str) -> Entry:
    """A group of benchrun's own export with its rounds: the campaign's estimate
    (:func:`runner.results.workloads.estimate_rounds`), so the mean and CI are the report's."""
    from benchrun.runner.results.workloads import estimate_means, estimate_rounds

    try:
        s = estimate_rounds(rounds, 0.95)
    except ValueError as exc:
        raise UserError(f"{name}: cannot summarise ({exc})") from None
    if s is None or s.mean is None:  # pragma: no cover - a group has readings
        raise UserError(f"{name}: no analysed reading")
    why = ""
    marked = _uncertified(s.certified, s.interval_low, s.interval_high, s.interval_note)
    if not s.enough:
        why = _not_certified(_short(s.n, s.readings_needed), marked)
    return Entry(
        name=name,
        unit=unit,
        direction=direction,
        mean=float(s.mean),
        variance=s.s2_q,
        n_q=s.n_q,
        q=s.q,
        ci_low=s.ci_low,
        ci_high=s.ci_high,
        means=estimate_means(rounds, s),
        why=why,
        marked=marked,
    )


def _short(n: int | None, need: int | None) -> str:
    """``30 readings, about 32 needed``: why a side has no certified CI."""
    return f"{n} readings" + (f", about {need} needed" if need else "")


def _means(x: np.ndarray | None, q: int | None) -> np.ndarray | None:
    """Subsession means of q readings (docs/methods.md §3); None without data or q."""
    if x is None or not q or x.size < 2 * q:
        return None
    return subsession_means(x, int(q))


def load_side(path: str | Path) -> Side:
    """A campaign directory/DB, a benchrun export, or an imported file (module docstring)."""
    p = Path(path).expanduser()
    if p.is_dir() or (p.is_file() and _is_sqlite(p)):
        return _from_campaign(p)
    if not p.exists():
        raise UserError(f"{p}: no such campaign directory, database or data file")
    from benchrun.runner.importers.benchrun_export import looks_like_export
    from benchrun.runner.importers.detect import from_document, from_text
    from benchrun.runner.importers.jsontext import parse_json
    from benchrun.runner.importers.readfile import read_import_text

    text = read_import_text(p)  # within the import size cap (docs/limits.md)
    if text.lstrip()[:1] not in ("{", "["):
        return side_from_dataset(from_text(text, str(p)), p.name)
    doc = parse_json(text, str(p))
    del text  # read and parsed once; the document is what the rest needs
    if looks_like_export(doc):
        return _from_export(ExportDocument.from_json(doc, str(p)))
    return side_from_dataset(from_document(doc, str(p)), p.name)


def side_from_dataset(ds: Dataset, label: str) -> Side:
    """One side from imported data: per group, the campaign's estimate for benchrun's own
    export (its rounds), the process means when the file says what a process is
    (:func:`runner.importers.processes.summarize_processes`), else :func:`stats.summarize`
    of the readings (MSER-5 warm-up, subsession means).

    Parameters
    ----------
    ds
        The imported data (:func:`runner.importers.load`).
    label
        How the side is named for people (the file name).

    Returns
    -------
    Side
        One :class:`Entry` per group, named by the group's display name.
    """
    entries = {}
    for key, values in ds.groups.items():
        name = display_name(key)
        split = ds.process_values(key)
        by_round = ds.round_values(key)
        if by_round is not None:
            entries[name] = _from_rounds(name, by_round, ds.unit, ds.direction)
        elif split is not None:
            entries[name] = _from_processes(name, split, ds.unit, ds.direction, ds.process_word)
        else:
            entries[name] = _summarised(name, np.asarray(values), ds.unit, ds.direction, "mser5")
    notes = list(ds.notes)
    if ds.processes:
        notes.append(f"{label}: each {ds.process_word} is one observation (its mean)")
    name = f"{label} ({ds.source_format})"
    return Side(name, ds.source_format, entries, notes, conditions=unknown_conditions(name))


@dataclass(frozen=True)
class ControlRatio:
    """A workload's ratio divided by the control's (``settings.control``): the double
    ratio's test (stats/campaigns.py), the control's name, and whether the verdicts use it
    (``--normalise-by-control``)."""

    test: LogRatioTest
    control: str
    used: bool

    def to_dict(self) -> dict[str, object]:
        """``LogRatioTest.to_dict()`` with ``control`` and ``used``."""
        return {**self.test.to_dict(), "control": self.control, "used": self.used}


@dataclass(frozen=True)
class OverallRatio:
    """The ratio of geometric means new/old with its bootstrap CI (:func:`overall_ratio`)
    and the workloads it is over."""

    interval: Interval
    workloads: tuple[str, ...]

    def to_dict(self) -> dict[str, object]:
        """The interval's ``to_dict()`` with ``workloads``."""
        return {**self.interval.to_dict(), "workloads": list(self.workloads)}


@dataclass(frozen=True)
class CampaignVariation:
    """The between-campaign sd (of the log means, relative) of one workload measured in
    one side's store over ``campaigns`` repeated campaigns (docs/conditions.md)."""

    workload: str
    side: str
    campaigns: int
    sd: float


@dataclass
class Row:
    """One compared workload: old and new estimates, ratio new/old with CI, tests, verdict."""

    name: str
    unit: str
    direction: str
    old_mean: float
    old_ci: tuple[float | None, float | None]
    new_mean: float
    new_ci: tuple[float | None, float | None]
    ratio: float | None
    ratio_low: float | None
    ratio_high: float | None
    change: float | None  # relative change in the bad direction: > 0 is worse
    welch_p: float | None
    welch_p_holm: float | None
    tost_p: float | None
    verdict: str
    regression: bool = False
    note: str = ""
    #: the n of the tests on each side and what they count (process, repetition, ...)
    old_n: int | None = None
    new_n: int | None = None
    old_unit: str = SUBSESSION
    new_unit: str = SUBSESSION
    #: why the verdict is ``undecided`` or ``not comparable`` (empty otherwise)
    reason: str = ""
    #: ``1.062x [1.041, 1.083] slower (Welch, 10 vs 10 processes)``
    headline: str = ""
    #: the unit both sides of the workload are shown in (chosen from the old mean, else the
    #: new one; JSON ``{"label": "ms", "factor": 0.001}``); the means stay in ``unit``
    display_unit: DisplayUnit | None = None
    #: the interval each side shows: ``old_ci``/``new_ci`` when certified, else its
    #: uncertified interval (docs/methods.md §4.1), whose mark is ``*_interval_note``
    old_interval: tuple[float | None, float | None] = (None, None)
    new_interval: tuple[float | None, float | None] = (None, None)
    old_interval_note: str | None = None
    new_interval_note: str | None = None
    #: the ratio divided by the control workload's ratio (stats/campaigns.py); None
    #: without a control
    control_ratio: ControlRatio | None = None
    #: the test on one mean per campaign when the verdict is at the campaign level
    #: (``--campaign-level``); None otherwise
    campaign_level: LogRatioTest | None = None

    @property
    def normalised(self) -> dict[str, object] | None:
        """:attr:`control_ratio` in its JSON form (``LogRatioTest.to_dict()`` plus
        ``control`` and ``used``); None without a control."""
        return None if self.control_ratio is None else self.control_ratio.to_dict()

    def to_dict(self) -> dict[str, object]:
        """The row in ``compare --json``: every field in order, JSON-safe, the display unit
        as ``{"label", "factor"}`` (``{}`` before it is chosen), the control's test as
        ``normalised`` and the campaign-level test as its dict."""
        out: dict[str, object] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "display_unit":
                du = self.display_unit
                value = {} if du is None else {"label": du.label, "factor": du.factor}
            elif f.name == "control_ratio":
                out["normalised"] = self.normalised
                continue
            elif f.name == "campaign_level":
                value = None if self.campaign_level is None else self.campaign_level.to_dict()
            out[f.name] = jsonable(value)
        return out

    def estimate_text(self, side: str, mark: str | None = None) -> str:
        """One side's estimate as every output prints it, in :attr:`display`: "37.59 ms ±
        1.991 ms", the uncertified interval with its mark (``mark`` in place of the full
        note, e.g. "uncertified" in a table cell), or the mean alone."""
        mean = self.old_mean if side == "old" else self.new_mean
        lo, hi = self.old_interval if side == "old" else self.new_interval
        note = self.old_interval_note if side == "old" else self.new_interval_note
        if mean != mean:  # NaN: no data on this side
            return "-"
        du = self.display
        if lo is None or hi is None:
            return du.text(mean)
        text = f"{du.text(mean)} ± {du.text((hi - lo) / 2)}"
        return f"{text} ({mark or note})" if note else text

    @property
    def display(self) -> DisplayUnit:
        """:attr:`display_unit`, else the stored unit."""
        du = self.display_unit
        return DisplayUnit(self.unit, self.unit) if du is None else du


@dataclass
class Comparison:
    """Result of :func:`compare_sides`."""

    old: Side
    new: Side
    rows: list[Row]
    only_old: list[str]
    only_new: list[str]
    alpha: float
    margin: float
    confidence: float
    threshold: float | None
    #: ratio of geometric means new/old over the compared workloads with a bootstrap CI
    geomean: OverallRatio | None = None
    #: both sides' conditions and their differences (runner/results/conditions.py)
    conditions: ConditionsComparison | None = None
    #: --allow-different-conditions: material differences are stated, verdicts stand
    allow_different_conditions: bool = False
    #: the control workload (settings.control) and whether the verdicts use the double
    #: ratio (--normalise-by-control); why there is no normalisation when asked
    control: str | None = None
    normalise_by_control: bool = False
    control_note: str | None = None
    #: verdicts on one mean per campaign (--campaign-level)
    campaign_level: bool = False
    #: the campaign-to-campaign variation measured in each side's store, per workload and
    #: side
    campaign_variation: list[CampaignVariation] = field(default_factory=list)

    @property
    def overall(self) -> dict[str, object] | None:
        """:attr:`geomean` in its JSON form (the interval's ``to_dict()`` and
        ``workloads``); None without one."""
        return None if self.geomean is None else self.geomean.to_dict()

    @property
    def not_comparable(self) -> list[Row]:
        """Rows whose verdict is ``not comparable`` because of their conditions."""
        return [r for r in self.rows if r.reason.startswith(NOT_COMPARABLE)]

    def assumption(self) -> str:
        """What the verdicts assume about campaign-to-campaign variation (docs/conditions.md)."""
        if self.campaign_level:
            return "campaign level: one mean per campaign, Welch on the per-campaign log means"
        text = "one campaign per side: no campaign-to-campaign variation assumed"
        if self.campaign_variation:
            shown = ", ".join(
                f"{v.workload} {100 * v.sd:.2g} % ({v.campaigns} campaigns, {v.side})"
                for v in self.campaign_variation
            )
            text += f"; between-campaign sd measured on the stores: {shown}"
        return text

    @property
    def regressions(self) -> list[Row]:
        """Rows whose verdict is ``slower`` beyond the threshold."""
        return [r for r in self.rows if r.regression]

    @property
    def undecided(self) -> list[Row]:
        """Compared rows without a decision: ``undecided`` or ``not comparable``."""
        return [r for r in self.rows if r.verdict in ("undecided", "not comparable")]

    def to_dict(self) -> dict[str, object]:
        """The JSON form (``benchrun compare --json``)."""
        return {
            "old": {"label": self.old.label, "kind": self.old.kind, "notes": self.old.notes},
            "new": {"label": self.new.label, "kind": self.new.kind, "notes": self.new.notes},
            "alpha": self.alpha,
            "margin": self.margin,
            "confidence": self.confidence,
            "fail_on_regression": self.threshold,
            "workloads": [r.to_dict() for r in self.rows],
            "only_in_old": self.only_old,
            "only_in_new": self.only_new,
            "regressions": [r.name for r in self.regressions],
            "undecided": [{"name": r.name, "reason": r.reason} for r in self.undecided],
            "overall": self.overall,
            "conditions": None if self.conditions is None else self.conditions.to_dict(),
            "allow_different_conditions": self.allow_different_conditions,
            "not_comparable": [{"name": r.name, "reason": r.reason} for r in self.not_comparable],
            "control": self.control,
            "normalise_by_control": self.normalise_by_control,
            "control_note": self.control_note,
            "campaign_level": self.campaign_level,
            "campaign_assumption": self.assumption(),
            "campaign_variation": [asdict(v) for v in self.campaign_variation],
        }


def _side_reason(a: Entry, b: Entry) -> str:
    """Why a common workload cannot be tested: which side lacks data, and what it has."""
    bad = [(side, e) for side, e in (("old", a), ("new", b)) if not e.usable]
    parts = []
    for side, e in bad:
        if e.word != SUBSESSION:
            parts.append(f"only {e.count()} on the {side} side, at least 2 are needed")
        else:
            what = "no certified CI" if e.interval_note else "not enough data"
            parts.append(f"{what} on the {side} side ({e.why or 'no CI'})")
    return "; ".join(parts)


def _undecided_reason(row: Row, a: Entry, b: Entry, alpha: float, margin: float) -> str:
    """Why a tested workload is undecided, and roughly how much more data would decide it:
    the growth factor of :func:`stats.sequential.growth_needed` (power 0.8, normal
    approximation) for a separation or for equivalence, whichever needs less."""
    assert row.welch_p_holm is not None and a.variance is not None and b.variance is not None
    assert a.n_q and b.n_q
    text = (
        f"neither different (Holm p {row.welch_p_holm:.3g} >= {alpha:g}) nor within "
        f"±{100 * margin:g} % (TOST p {row.tost_p:.3g})"
    )
    sep, eq = growth_needed(
        Sample(a.mean, a.variance, a.n_q), Sample(b.mean, b.variance, b.n_q), margin, alpha
    )
    options = [
        (f, what) for f, what in ((sep, "separate them"), (eq, "show equivalence")) if f is not None
    ]
    if not options:
        return text
    f, what = min(options)
    na, nb = max(math.ceil(f * a.n_q), a.n_q + 1), max(math.ceil(f * b.n_q), b.n_q + 1)
    word = a.word if a.word == b.word else "unit"
    count = (
        f"{na} {plural(word, na)} per side" if na == nb else f"{na} old and {nb} new {plural(word)}"
    )
    return f"{text}; about {count} would {what}"


def _x(r: float) -> str:
    """A ratio for people: 3 decimals near 1, 3 significant digits far from it."""
    return f"{r:.3f}" if 0.01 <= abs(r) < 1000 else f"{r:.3g}"


def headline(row: Row, margin: float) -> str:
    """The ratio new/old with its CI, the verdict and the tests' n, read like hyperfine:
    ``1.062x [1.041, 1.083] slower (Welch, 10 vs 10 processes)``."""
    if row.old_n is None or row.new_n is None:
        counts = ""
    elif row.old_unit == row.new_unit:
        counts = f"{row.old_n} vs {row.new_n} {plural(row.old_unit)}"
    else:
        counts = (
            f"{row.old_n} {plural(row.old_unit, row.old_n)} vs "
            f"{row.new_n} {plural(row.new_unit, row.new_n)}"
        )
    word = row.verdict
    if row.verdict == "equivalent":
        word = f"equivalent within ±{100 * margin:g} %"
    if row.ratio is None:
        return f"{word}: {row.reason}" if row.reason else word
    ratio, low, high = row.ratio, row.ratio_low, row.ratio_high
    if row.verdict != "equivalent" and ratio < 1:  # as `run` says it: factor >= 1, direction
        ratio, low, high = 1.0 / ratio, (1.0 / high if high else None), (1.0 / low if low else None)
    text = ("new/old " if row.verdict == "equivalent" else "") + f"{_x(ratio)}x"
    if row.verdict not in ("equivalent", "slower", "faster") and not row.reason.startswith(
        NOT_COMPARABLE
    ):
        more, less = comparison_words(row.unit, row.direction)
        word = f"{more if row.ratio >= 1 else less}, {row.verdict}"
    if low is not None and high is not None:
        text += f" [{_x(low)}, {_x(high)}]"
    if row.reason.startswith(NOT_COMPARABLE):
        return f"{text}, {row.reason}"
    test = "TOST" if row.verdict == "equivalent" else "Welch"
    if row.control_ratio is not None and row.control_ratio.used:
        test = f"{test} on the ratio divided by control {row.control_ratio.control}'s"
    return f"{text} {word} ({test}, {counts})" if counts else f"{text} {word}"


def compare_sides(
    old: Side,
    new: Side,
    *,
    alpha: float = 0.01,
    margin: float = 0.01,
    confidence: float = 0.95,
    threshold: float | None = None,
    allow_different_conditions: bool = False,
    normalise_by_control: bool = False,
    campaign_level: bool = False,
) -> Comparison:
    """Compare every workload present on both sides (module docstring).

    Parameters
    ----------
    old, new
        The two sides (:func:`load_side`).
    alpha
        Level of Welch's test (Holm over the compared workloads) and of TOST.
    margin
        Equivalence margin, a fraction of the old mean.
    confidence
        Level of the CI of the ratio new/old.
    threshold
        ``--fail-on-regression``: a ``slower`` workload whose change exceeds this fraction
        is a regression (None: no gate).
    allow_different_conditions
        State material differences of the conditions but keep the verdicts (otherwise a
        workload they concern is ``not comparable``; docs/conditions.md).
    normalise_by_control
        Decide on each workload's ratio divided by the control's (``settings.control``);
        without it the double ratio is reported beside the verdict.
    campaign_level
        Decide on one mean per campaign (Welch on the per-campaign log means of each
        side's repeated campaigns) instead of the newest campaign's estimate.

    Returns
    -------
    Comparison
        One :class:`Row` per workload (ratio with CI, p-values, verdict, reason, headline),
        the one-sided workloads and the overall ratio of geometric means.
    """
    common = [n for n in new.entries if n in old.entries]
    only_old = [n for n in old.entries if n not in new.entries and n not in new.empty]
    only_new = [n for n in new.entries if n not in old.entries and n not in old.empty]
    rows = _one_sided_rows(old, new)
    tested: list[int] = []
    pairs: list[tuple[Sample, Sample]] = []
    lower: list[bool] = []
    for name in common:
        a, b = old.entries[name], new.entries[name]
        row, testable = _common_row(name, a, b, confidence)
        if testable:
            assert a.variance is not None and b.variance is not None and a.n_q and b.n_q
            tested.append(len(rows))
            pairs.append((Sample(b.mean, b.variance, b.n_q), Sample(a.mean, a.variance, a.n_q)))
            lower.append(b.direction == "lower_is_better")
        rows.append(row)
    # one implementation of the baseline verdict: the controller's (stats/sequential.py)
    results = baseline_tests(pairs, alpha, margin, lower) if pairs else []
    for i, res in zip(tested, results, strict=True):
        _apply_test(rows[i], res, old, new, alpha, margin, threshold)
    if campaign_level:
        _campaign_level(rows, old, new, alpha, margin, confidence, threshold)
    control, control_note = _control(
        rows, old, new, alpha, margin, confidence, threshold, normalise_by_control
    )
    conditions = _conditions(rows, old, new, common, allow_different_conditions)
    for row in rows:
        _finish_row(row, old, new, margin)
    cmp = Comparison(
        old=old,
        new=new,
        rows=rows,
        only_old=only_old,
        only_new=only_new,
        alpha=alpha,
        margin=margin,
        confidence=confidence,
        threshold=threshold,
        conditions=conditions,
        allow_different_conditions=allow_different_conditions,
        control=control,
        normalise_by_control=normalise_by_control and control is not None,
        control_note=control_note,
        campaign_level=campaign_level,
        campaign_variation=[] if campaign_level else _variation(old, new, common),
    )
    cmp.geomean = overall_ratio(
        old, new, [r.name for r in rows if r.welch_p is not None], confidence
    )
    return cmp


def _one_sided_rows(old: Side, new: Side) -> list[Row]:
    """A ``not comparable`` row for each workload with entries on one side and no
    analysed reading on the other."""
    rows: list[Row] = []
    for name in [n for n in old.entries if n in new.empty] + [
        n for n in new.entries if n in old.empty
    ]:
        e = old.entries.get(name) or new.entries[name]
        side = "new" if name in new.empty else "old"
        why = f"no analysed reading on the {side} side"
        row = Row(
            name=name, unit=e.unit, direction=e.direction,
            old_mean=math.nan, old_ci=(None, None), new_mean=math.nan, new_ci=(None, None),
            ratio=None, ratio_low=None, ratio_high=None, change=None,
            welch_p=None, welch_p_holm=None, tost_p=None,
            verdict="not comparable", note=why, reason=why,
        )  # fmt: skip
        if side == "old":
            row.new_mean, row.new_ci = e.mean, (e.ci_low, e.ci_high)
        else:
            row.old_mean, row.old_ci = e.mean, (e.ci_low, e.ci_high)
        rows.append(row)
    return rows


def _common_row(name: str, a: Entry, b: Entry, confidence: float) -> tuple[Row, bool]:
    """The row of a workload on both sides (old ``a``, new ``b``): its ratio new/old with
    its CI at ``confidence`` and its relative change in the better direction, and whether
    it goes to the tests (False: units differ, a side is not usable, or the old mean is
    0; the row then says why)."""
    row = Row(
        name=name, unit=b.unit, direction=b.direction,
        old_mean=a.mean, old_ci=(a.ci_low, a.ci_high), new_mean=b.mean, new_ci=(b.ci_low, b.ci_high),
        ratio=None, ratio_low=None, ratio_high=None, change=None,
        welch_p=None, welch_p_holm=None, tost_p=None, verdict="undecided",
        old_n=a.n_q, new_n=b.n_q, old_unit=a.word, new_unit=b.word,
    )  # fmt: skip
    if a.unit != b.unit or a.direction != b.direction:
        row.verdict, row.note = "not comparable", f"units differ: {a.unit!r} vs {b.unit!r}"
        row.reason = row.note
        return row, False
    if not (a.usable and b.usable):
        row.reason = row.note = _side_reason(a, b)
        return row, False
    assert a.variance is not None and b.variance is not None and a.n_q and b.n_q
    if a.mean == 0:  # no ratio, no relative change: a gate cannot weigh it
        row.verdict = "not comparable"
        row.reason = row.note = (
            f"the old mean is 0: no ratio or relative change (new {b.mean:.4g}"
            f"{' ' + b.unit if b.unit else ''}); "
            "`benchrun analyze compare` tests the difference"
        )
        return row, False
    if a.mean > 0 and b.mean > 0:  # a ratio and its CI need both means > 0
        row.ratio, row.ratio_low, row.ratio_high = ratio_of_means_ci(
            a.mean, a.variance, a.n_q, b.mean, b.variance, b.n_q, confidence
        )
    rel = (b.mean - a.mean) / abs(a.mean)
    row.change = rel if b.direction == "lower_is_better" else -rel
    return row, True


def _apply_test(
    row: Row,
    res: BaselineTest,
    old: Side,
    new: Side,
    alpha: float,
    margin: float,
    threshold: float | None,
) -> None:
    """Put the baseline test's result ``res`` (:func:`baseline_tests`) on ``row``: its
    p-values, verdict and reason, and whether it is a regression beyond ``threshold``."""
    row.welch_p, row.welch_p_holm, row.tost_p = res.welch_p, res.welch_p_holm, res.tost_p
    row.note = "; ".join(res.notes)
    if res.verdict != "undecided":
        row.verdict = res.verdict
        if row.ratio is None:  # a mean <= 0: the change relative to |old| instead
            unit = f" {row.unit}" if row.unit else ""
            row.reason = (
                f"a mean is not > 0, so no ratio: new - old = "
                f"{row.new_mean - row.old_mean:+.4g}{unit}, "
                f"{100 * (row.new_mean - row.old_mean) / abs(row.old_mean):+.3g} % of |old| (Welch)"
            )
    else:
        row.reason = _undecided_reason(
            row, old.entries[row.name], new.entries[row.name], alpha, margin
        )
    row.regression = bool(
        threshold is not None and row.verdict == "slower" and (row.change or 0.0) > threshold
    )


def _finish_row(row: Row, old: Side, new: Side, margin: float) -> None:
    """Each side's interval kind, the headline and the display unit of ``row``."""
    for side, entries in (("old", old.entries), ("new", new.entries)):
        found = entries.get(row.name)
        if found is not None:
            setattr(row, f"{side}_interval", found.interval)
            setattr(row, f"{side}_interval_note", found.interval_note)
    row.headline = headline(row, margin)
    typical = row.old_mean if math.isfinite(row.old_mean) else row.new_mean
    du = display_unit(row.unit, typical if math.isfinite(typical) else None)
    row.display_unit = DisplayUnit(row.unit, du.label, du.factor)


def _conditions(
    rows: list[Row], old: Side, new: Side, common: list[str], allow: bool
) -> ConditionsComparison | None:
    """Both sides' conditions compared over the ``common`` workloads (docs/conditions.md),
    applied to ``rows`` (a material difference makes a row not comparable unless
    ``allow``); None when neither side knows its conditions."""
    if old.conditions is None and new.conditions is None:
        return None
    conditions = compare_conditions(
        old.conditions or unknown_conditions(old.label),
        new.conditions or unknown_conditions(new.label),
        common,
    )
    _apply_conditions(rows, conditions, allow)
    return conditions


#: the start of a row's reason when its conditions make it not comparable
NOT_COMPARABLE = "not comparable:"

#: the word for one campaign as the unit of a campaign-level test
CAMPAIGN = "campaign"


def _verdict(test: LogRatioTest, p_holm: float, alpha: float, lower: bool) -> str:
    """``slower``/``faster`` when Holm's p < alpha (by the metric's direction), else
    ``equivalent`` when TOST's p < alpha, else ``undecided``."""
    if p_holm < alpha:
        return "slower" if (test.log_ratio > 0) == lower else "faster"
    return "equivalent" if test.tost_p < alpha else "undecided"


def _set_test(
    row: Row, test: LogRatioTest, p_holm: float, alpha: float, threshold: float | None
) -> None:
    """Put a log-scale test's ratio, CI, p-values and verdict into ``row``."""
    lower = row.direction == "lower_is_better"
    row.ratio, row.ratio_low, row.ratio_high = test.ratio, test.low, test.high
    row.welch_p, row.welch_p_holm, row.tost_p = test.p_value, p_holm, test.tost_p
    row.change = test.ratio - 1 if lower else 1 - test.ratio
    row.verdict = _verdict(test, p_holm, alpha, lower)
    row.reason = (
        ""
        if row.verdict != "undecided"
        else (
            f"neither different (Holm p {p_holm:.3g} >= {alpha:g}) nor equivalent "
            f"(TOST p {test.tost_p:.3g})"
        )
    )
    row.regression = bool(
        threshold is not None and row.verdict == "slower" and row.change > threshold
    )


def _campaign_level(
    rows: list[Row],
    old: Side,
    new: Side,
    alpha: float,
    margin: float,
    confidence: float,
    threshold: float | None,
) -> None:
    """Replace each tested row's verdict by the campaign-level one (Welch on per-campaign
    log means, Holm over the workloads; stats/campaigns.py); a row with fewer than two
    campaigns on a side becomes undecided, saying so."""
    tests: list[tuple[Row, LogRatioTest]] = []
    for row in rows:
        if row.verdict == "not comparable":
            continue
        a, b = old.campaigns.get(row.name), new.campaigns.get(row.name)
        ka, kb = (a.k if a else 1), (b.k if b else 1)
        row.old_n, row.new_n, row.old_unit, row.new_unit = ka, kb, CAMPAIGN, CAMPAIGN
        if a is None or b is None or ka < 2 or kb < 2:
            row.ratio = row.ratio_low = row.ratio_high = None
            row.welch_p = row.welch_p_holm = row.tost_p = None
            row.verdict, row.regression = "undecided", False
            row.reason = (
                f"campaign level: {ka} old and {kb} new campaigns of this experiment in the "
                "stores, at least 2 per side are needed"
            )
            continue
        test = campaign_level_test(a.means, b.means, margin=margin, confidence=confidence)
        row.campaign_level = test
        tests.append((row, test))
    adjusted = holm([t.p_value for _, t in tests]) if tests else ()
    for (row, test), p_holm in zip(tests, adjusted, strict=True):
        _set_test(row, test, float(p_holm), alpha, threshold)
        row.note = ""


def _control(
    rows: list[Row],
    old: Side,
    new: Side,
    alpha: float,
    margin: float,
    confidence: float,
    threshold: float | None,
    use: bool,
) -> tuple[str | None, str | None]:
    """The double ratio of every tested row by the control (``settings.control`` of the
    new side, else the old); with ``use`` the verdicts are decided on it (Holm over the
    workloads). Returns the control's name and, when there is none to use, why."""
    name = new.settings.control or old.settings.control
    if not name:
        return None, "no control workload (settings.control)" if use else None
    a_c, b_c = old.entries.get(name), new.entries.get(name)
    if a_c is None or b_c is None or not (a_c.usable and b_c.usable):
        return name, f"control {name} has no usable estimate on both sides"
    assert a_c.variance is not None and b_c.variance is not None and a_c.n_q and b_c.n_q
    if not (a_c.mean > 0 and b_c.mean > 0):
        return name, f"control {name} has a mean <= 0"
    tests: list[tuple[Row, LogRatioTest]] = []
    for row in rows:
        a, b = old.entries.get(row.name), new.entries.get(row.name)
        if (
            row.name == name
            or row.welch_p is None
            or a is None
            or b is None
            or a.unit != b.unit
            or not (a.usable and b.usable and a.mean > 0 and b.mean > 0)
        ):
            continue
        assert a.variance is not None and b.variance is not None and a.n_q and b.n_q
        test = double_ratio_test(
            (a.mean, a.variance, a.n_q),
            (b.mean, b.variance, b.n_q),
            (a_c.mean, a_c.variance, a_c.n_q),
            (b_c.mean, b_c.variance, b_c.n_q),
            margin=margin,
            confidence=confidence,
        )
        row.control_ratio = ControlRatio(test, name, use)
        tests.append((row, test))
    if use:
        for row in rows:
            if row.name == name:  # its ratio is the machine's change: never the gate's verdict
                row.regression = False
                row.note = "the control: its ratio is divided out of the others'"
        adjusted = holm([t.p_value for _, t in tests]) if tests else ()
        for (row, test), p_holm in zip(tests, adjusted, strict=True):
            _set_test(row, test, float(p_holm), alpha, threshold)
            row.note = f"divided by control {name}'s ratio"
    return name, None


def _apply_conditions(rows: list[Row], cc: ConditionsComparison, allow: bool) -> None:
    """Each row its material differences concern becomes ``not comparable: <reasons>``
    (never a regression); with ``allow`` the reasons are only noted."""
    for row in rows:
        reasons = cc.reasons(row.name)
        if not reasons:
            continue
        text = "; ".join(reasons)
        if allow:
            extra = f"conditions differ (allowed): {text}"
            row.note = f"{row.note}; {extra}" if row.note else extra
            continue
        row.verdict, row.regression = "not comparable", False
        row.reason = f"{NOT_COMPARABLE} {text}"


def _variation(old: Side, new: Side, names: list[str]) -> list[CampaignVariation]:
    """The between-campaign sd of the log means of each compared workload, in each side's
    store that holds two or more repeated campaigns of it."""
    out: list[CampaignVariation] = []
    for name in names:
        for side, label in ((old, "old"), (new, "new")):
            series = side.campaigns.get(name)
            sd = None if series is None else between_campaign_sd(series.means)
            k = series.k if series else 0
            if sd is not None and not any(  # the same store on both sides: once
                v.workload == name and v.campaigns == k and v.sd == sd for v in out
            ):
                out.append(CampaignVariation(name, label, k, sd))
    return out


#: bootstrap resamples of the overall ratio (docs/methods.md §4: B >= 10 000)
OVERALL_RESAMPLES = 10_000


def overall_ratio(old: Side, new: Side, names: list[str], confidence: float) -> OverallRatio | None:
    """Ratio of geometric means new/old over ``names`` (docs/methods.md §9, [WANG]) with the
    hierarchical bootstrap CI, resampling each workload's independent units: its
    *subsession means* (§3), or its *process means* for imported files that have processes
    (docs/imported-data.md); raw readings would be correlated and give a too narrow CI.
    Needs two or more workloads with raw data and positive values on both sides; None
    otherwise."""
    a: dict[str, np.ndarray] = {}
    b: dict[str, np.ndarray] = {}
    for n in names:
        m_old, m_new = old.entries[n].means, new.entries[n].means
        if m_old is None or m_new is None or m_old.size < 2 or m_new.size < 2:
            continue
        if float(m_old.min()) > 0 and float(m_new.min()) > 0:
            a[n], b[n] = m_new, m_old
    if len(a) < 2:
        return None
    try:
        ci = gmean_ratio_ci(a, b, confidence=confidence, n_resamples=OVERALL_RESAMPLES, seed=1)
    except ValueError:
        return None
    return OverallRatio(ci, tuple(a))
