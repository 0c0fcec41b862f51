"""The methods paragraph and Hoefler & Belli's twelve rules, written from what was done.

:func:`methods_paragraph` turns the stored settings, rounds, warm-up and subsession
decisions, tests and timer record into sentences a paper can take as they are
(docs/methods.md §11: "The report turns these into the sentences a paper needs").
:func:`rules_checklist` states for each of the twelve rules of [HOEFLER] (T. Hoefler,
R. Belli, SC 2015) whether this campaign meets it, whether it does not apply, or what is
missing.
"""

from __future__ import annotations

from dataclasses import dataclass

from benchrun.runner.config.experiment import Settings
from benchrun.runner.format import format_percent
from benchrun.runner.machine.facts import SECTIONS, Clock, MachineFacts
from benchrun.runner.machine.noise import noise_warnings
from benchrun.runner.machine.tuning import changes_line
from benchrun.runner.report.analysis import Group, Suite
from benchrun.runner.report.model import CampaignModel, Estimate, WorkloadView
from benchrun.runner.report.panels import display_of, workload_panels
from benchrun.runner.report.verdicts import StoredVerdicts

METHODS_REFERENCES = (
    "[HOEFLER] T. Hoefler, R. Belli. Scientific Benchmarking of Parallel Computing Systems. "
    "SC 2015.",
    "[PILOT] Y. Li, E. L. Miller, D. D. E. Long et al. Pilot: a framework that understands "
    "how to do performance benchmarks the right way. MASCOTS 2016.",
    "[MSER] K. P. White. An effective truncation heuristic for bias reduction in simulation "
    "output. Simulation 69 (1997).",
    "[WELCH] B. L. Welch. Biometrika 34 (1947).",
    "[HOLM] S. Holm. A simple sequentially rejective multiple test procedure. Scandinavian "
    "Journal of Statistics 6 (1979).",
    "[TOST] D. J. Schuirmann. A comparison of the two one-sided tests procedure and the power "
    "approach for assessing the equivalence of average bioavailability. Journal of "
    "Pharmacokinetics and Biopharmaceutics 15 (1987).",
)


def _rounds_cut(e: Estimate | None) -> int:
    """Steady rounds the collector cut as warm-up (one reading per round), 0 otherwise."""
    if e is None or e.series != "rounds":
        return 0
    return int(e.warmup_readings)


def _range(values: list[int]) -> str:
    lo, hi = min(values), max(values)
    return str(lo) if lo == hi else f"{lo} to {hi}"


def _stopping_rule(model: CampaignModel) -> StoredVerdicts | None:
    """The comparisons the adaptive stopping rule decided (stored by the controller), whose
    paired ratio CIs it bounded instead of a workload's own CI; None otherwise (a fixed
    campaign's comparisons, computed when read, bound nothing)."""
    v = model.verdicts
    return v if model.adaptive and v is not None and v.computed is None else None


def _stored_tests(verdicts: StoredVerdicts, s: Settings, c: float) -> list[str]:
    """Sentences on how the campaign's comparisons were made, from the comparisons
    themselves (what was really used; runner/results/comparisons.py): the paired tests on
    per-pass log ratios (docs/methods.md §13, docs/paired.md) and Welch's test (§7), with
    alpha and Holm, spent over the stopping controller's looks (§10) or, for a fixed
    campaign's comparisons computed when read, at one look."""
    alpha = float(verdicts.alpha if verdicts.alpha is not None else s.alpha)
    margin = float(verdicts.margin if verdicts.margin is not None else s.margin)
    total = len(verdicts.comparisons)
    paired = [x for x in verdicts.comparisons if x.test == "paired"]
    welch = [x for x in verdicts.comparisons if x.test != "paired"]
    fixed = verdicts.computed is not None
    out: list[str] = []
    if fixed:
        out.append(
            "As a fixed campaign has no stopping rule, its comparisons were computed after "
            "the last round by the stopping controller's tests, at a single look over every "
            "stored round."
        )
    many = total > 1
    if paired:
        passes = [x.passes for x in paired if x.passes]
        if welch:
            lead = f"In {len(paired)} of the {total} comparisons, the two workloads"
        else:
            lead = "The two workloads of " + ("each comparison" if many else "the comparison")
        out.append(
            f"{lead} were measured in the same passes and compared pass by pass on the log "
            "ratio of the two rounds of each pass (randomised order within the pass), which "
            "cancels a drift of the machine that the two rounds share"
            + (f", over {_range(passes)} passes" if passes else "")
            + ": the log ratios were grouped into subsessions like a workload's readings, a "
            "one-sample t-test on the subsession means of the log ratios tested for a "
            f"difference, and TOST [TOST] within ±{100 * margin:g} % (±ln(1 + {margin:g}) on "
            f"the log scale) for equivalence; the ratio and its {100 * c:g} % CI are exp of the "
            "mean log ratio and of its CI"
            + (
                f"; the stopping rule's target for the half-width of that CI was "
                f"{format_percent(float(s.ci_rel_width), digits=2)} of the ratio (ci_rel_width)."
                if s.ci_rel_width is not None and not fixed
                else "."
            )
        )
    if welch:
        one = len(welch) == 1
        if paired:
            lead = "The other comparison" if one else "The other comparisons"
        else:
            lead = "The comparison" if one else "The comparisons"
        out.append(
            f"{lead} {'were' if len(welch) > 1 else 'was'} made with Welch's t-test [WELCH] on "
            f"the two workloads' own subsession means, and with TOST within ±{100 * margin:g} % "
            "of the better mean."
        )
    holm = "Holm-corrected over the pairs of a group (and over the baselines) tested at the same look [HOLM]."
    if fixed:
        out.append(
            f"Each test spent the whole alpha = {alpha:g} at that one look (a fixed number of "
            f"rounds has no sequential stopping to pay for), {holm}"
        )
    else:
        out.append(
            f"Tests were made only at a geometric schedule of looks with alpha = {alpha:g} spent "
            "over them, so stopping when the data suffice does not inflate the error rate, "
            f"and {holm}"
        )
    return out


def _uncertified(w: WorkloadView) -> bool:
    """Is ``w``'s interval the uncertified one (docs/methods.md §4.1)?"""
    return w.estimate is not None and w.estimate.uncertified


def _assumes(w: WorkloadView) -> str:
    """``a (tau <= 1.2, 1.1x the i.i.d. width)``: what ``w``'s uncertified interval assumes
    and what that costs, as its mark prints them."""
    e = w.estimate
    assert e is not None
    parts = []
    if e.tau_bound is not None:
        parts.append(f"tau <= {e.tau_bound:.1f}")
    if e.width_factor is not None:
        parts.append(f"{e.width_factor:.1f}x the i.i.d. width")
    return f"{w.name} ({', '.join(parts)})" if parts else w.name


def _uncertified_sentence(views: list[WorkloadView], c: float, paired: set[str]) -> str:
    """The methods sentence on the workloads whose interval is not certified."""
    one = len(views) == 1
    text = (
        f"For {_names([_assumes(w) for w in views])} the readings were too few to certify "
        "that the subsession means are independent (docs/methods.md §3), so "
        + ("its" if one else "each")
        + f" interval is the best one the data support under a stated assumption, marked as "
        f"not certified: the {100 * c:g} % Student-t interval of the mean with the standard "
        "error of a series whose integrated autocorrelation time is at most T readings "
        "(T from Geyer's initial positive sequence estimate, at least 1): the variance of the "
        "mean taken as T/n times that of the n readings, on n/T - 1 degrees of freedom (with several readings per round, the t "
        "interval over the round means where that is wider); the factor says how much wider "
        "that is than the interval for independent readings (docs/methods.md §4.1)."
    )
    if any(w.name in paired for w in views):
        text += (
            " No certified CI of their own was required where the comparisons were all paired: "
            "the stopping rule bounds the ratio CIs of paired comparisons."
        )
    return text


def methods_paragraph(model: CampaignModel, groups: list[Group], suite: Suite | None) -> str:
    """One paragraph describing what was really done (module docstring)."""
    record = MachineFacts.from_stored(model.campaign.metadata)
    return " ".join(
        [
            *_campaign_sentences(model, record),
            *_warmup_sentences(model),
            *_estimate_sentences(model),
            *_test_sentences(model, groups, suite),
            *_measurement_sentences(model, record.timer.clock),
        ]
    )


def _tuning_sentence(record: MachineFacts) -> str | None:
    """What ``settings.tune`` changed for the campaign (its metadata's ``tuning``: the
    changes with their values before and after, docs/tuning.md), or None when nothing."""
    changes = changes_line(record.stored.tuning)
    if changes is None:
        return None
    return (
        "For the campaign benchrun tuned the machine (settings.tune) and restored it "
        f"afterwards: {changes}."
    )


def _campaign_sentences(model: CampaignModel, record: MachineFacts) -> list[str]:
    """The campaign: workloads, rounds, pinning, containment (from the stored machine
    ``record``), order and how it ended."""
    s = model.settings
    views = model.workloads
    out: list[str] = []
    mode = "adaptive" if model.adaptive else "fixed"
    out.append(
        f"We measured {len(views)} workload{'s' if len(views) != 1 else ''} with benchrun "
        f"{model.campaign.benchrun_version} in {'an' if model.adaptive else 'a'} {mode} campaign of "
        f"{sum(w.rounds for w in views)} rounds, each round a fresh process"
        + (f" pinned to CPU {', '.join(model.cpus)}" if model.cpus else " (not pinned to CPUs)")
        + "."
    )
    contained = record.stored.containment.kind
    if contained == "cgroup":
        out.append(
            "Each round ran in its own cgroup, and whatever it left running was killed "
            "before the next round started."
        )
    elif contained == "process group":
        out.append(
            "Each round ran in its own process group, killed at the end of the round "
            "(no cgroup was available, so a descendant that left the group could outlive it)."
        )
    tuned = _tuning_sentence(record)
    if tuned:
        out.append(tuned)
    order = s.order
    out.append(
        "Workloads ran in a seeded random interleaved order"
        + (f" (seed {s.seed})" if s.seed is not None else "")
        if order == "interleaved"
        else "Workloads ran one after the other"
    )
    out[-1] += f"; the campaign ended {model.campaign.status}: {model.campaign.stop_reason or '-'}"
    budget = model.adaptive and model.verdicts is not None and model.verdicts.budget_stop
    out[-1] += (
        " (on a budget, before every condition of the stopping rule was met)." if budget else "."
    )
    return out


def _warmup_sentences(model: CampaignModel) -> list[str]:
    """Warm-up: the rounds discarded, MSER-5's readings and the level shifts."""
    s = model.settings
    views = model.workloads
    out: list[str] = []
    steady = [w.steady_rounds for w in views if w.steady_rounds]
    # the rounds the collector's MSER-5 cut count as warm-up in warmup_rounds (issue 27);
    # here they are the "remaining transient" sentence's, not the first rounds'
    cut = {w.name: _rounds_cut(w.estimate) for w in views}
    warm = sum(w.warmup_rounds - w.calibration_rounds - cut[w.name] for w in views)
    calib = sum(w.calibration_rounds for w in views)
    if steady:
        out.append(
            f"Each workload has {_range(steady)} steady rounds; the first "
            f"{s.warmup_rounds} round(s) of each workload ({warm} in total) were run, "
            "stored and discarded as warm-up"
            + (
                f", after {calib} calibration rounds that chose the work amount per round."
                if calib
                else "."
            )
        )
    within = sum(w.estimate.warmup_readings for w in views if w.estimate)
    fixed_w = s.warmup_readings
    if fixed_w is not None:
        out.append(f"The first {fixed_w} readings of every round were discarded (fixed).")
    else:
        out.append(
            "A remaining warm-up transient was detected with MSER-5 [MSER]"
            + (f", which discarded {within} readings in total." if within else "; it found none.")
        )
    shifts = [
        f"{w.name} ({w.estimate.level_shift})"
        for w in views
        if w.estimate is not None and w.estimate.level_shift
    ]
    if shifts:
        out.append(
            "A level shift (a start better than the rest, or a step; docs/methods.md §2.1, "
            "change-point test of Shao & Zhang 2010) left without a CI: " + ", ".join(shifts) + "."
        )
    return out


def _estimate_sentences(model: CampaignModel) -> list[str]:
    """The estimates: subsessions, the CIs' widths and the workloads without a CI."""
    s = model.settings
    views = model.workloads
    c = model.confidence
    out: list[str] = []
    qs = [w.estimate.q for w in views if w.estimate and w.estimate.q and w.estimate.usable]
    nq = [w.estimate.n_q for w in views if w.estimate and w.estimate.n_q and w.estimate.usable]
    rel = [
        w.estimate.rel_half_width
        for w in views
        if w.estimate and w.estimate.rel_half_width is not None
    ]
    if qs and nq:
        out.append(
            f"Consecutive readings were grouped into subsessions of {_range(qs)} readings, "
            "chosen so that subsession means are approximately independent (lag-1 "
            "autocorrelation of the means and the integrated autocorrelation time, following "
            f"[PILOT]); with {_range(nq)} subsession means per workload, each mean is reported "
            f"with its {100 * c:g} % Student-t confidence interval over subsession means, "
            "widened where needed to contain the interval over subsessions twice as long."
        )
    by_rule = _stopping_rule(model)
    paired_names = {w.name for w in views if by_rule is not None and by_rule.all_paired(w.name)}
    if rel:
        target = s.ci_rel_width
        reached = f"The relative CI half-widths reached {format_percent(min(rel), digits=2)} to {format_percent(max(rel), digits=2)}"
        if target is not None:
            reached += f" of the mean (target {format_percent(float(target), digits=2)}"
            if not model.adaptive:
                reached += ", not enforced)."
            elif paired_names:
                reached += ", the stopping condition for workloads not compared paired)."
            else:
                reached += ", the stopping condition)."
        else:
            reached += " of the mean."
        out.append(reached)
    missing = [w.name for w in views if not (w.estimate and w.estimate.usable)]
    marked = {w.name: w for w in views if w.name in missing and _uncertified(w)}
    unpaired_missing = [n for n in missing if n not in paired_names and n not in marked]
    paired_missing = [n for n in missing if n in paired_names and n not in marked]
    if marked:
        out.append(_uncertified_sentence(list(marked.values()), c, paired_names))
    if unpaired_missing:
        out.append(f"No CI could be given for {', '.join(unpaired_missing)} (not enough data).")
    if paired_missing:
        out.append(
            f"{', '.join(paired_missing)} had no CI of {'its' if len(paired_missing) == 1 else 'their'} "
            "own (not enough data); none was required, since "
            + ("its" if len(paired_missing) == 1 else "their")
            + " comparisons were all paired and the stopping rule bounds the ratio CIs of "
            "paired comparisons; such a mean describes the period measured."
        )
    return out


def _test_sentences(model: CampaignModel, groups: list[Group], suite: Suite | None) -> list[str]:
    """The tests: stored comparisons or the ranking's neighbours, and a suite's methods."""
    s = model.settings
    c = model.confidence
    out: list[str] = []
    verdicts = model.verdicts
    if verdicts is not None and verdicts.comparisons:
        out.extend(_stored_tests(verdicts, s, c))
    elif any(len(g.rows) > 1 and g.compared for g in groups):
        k = max(len(g.rows) for g in groups)
        out.append(
            f"Neighbouring workloads in the ranking were compared with Welch's t-test [WELCH] at "
            f"alpha = {s.alpha:g}"
            + (", Holm-corrected over the adjacent pairs" if k > 2 else "")
            + f", and with a TOST equivalence test within ±{100 * float(s.margin):g} %"
            " of the better mean."
        )
        if model.adaptive:
            out.append(
                "Tests were made only at a geometric schedule of looks with the significance "
                "level spent over them, so stopping when the data suffice does not inflate the "
                "error rate."
            )
    if suite is not None:
        out.append(
            f"Systems ({', '.join(suite.systems)}) were compared over {len(suite.benchmarks)} "
            "benchmarks with Hierarchical Performance Testing (Chen et al.), the Speedup-Test "
            "(Touati et al.) and a within-benchmark bootstrap CI of the ratio of geometric means."
        )
    return out


def _measurement_sentences(model: CampaignModel, timer: Clock) -> list[str]:
    """The ``timer`` of the machine record (its smallest measured step and the cost of one
    call, ns) and how costs and rates are summarised (Hoefler & Belli's rule 3)."""
    views = model.workloads
    out: list[str] = []
    if timer.clock:
        res, over = timer.measured_resolution_ns, timer.overhead_ns
        out.append(
            f"Times come from {timer.clock} ({timer.implementation or '-'})"
            + (f", smallest measured step {res:g} ns" if res is not None else "")
            + (f", {over:.0f} ns per call" if over is not None else "")
            + "."
        )
    costs = sorted({w.unit or "-" for w in views if w.direction == "lower_is_better"})
    rates = sorted({w.unit or "-" for w in views if w.direction == "higher_is_better"})
    summary = []
    if costs:
        summary.append(f"costs ({', '.join(costs)}) by their arithmetic mean")
    if rates:
        summary.append(
            f"rates ({', '.join(rates)}) by the arithmetic mean of the readings, shown beside "
            "their harmonic mean (a rate's honest average is total work over total time)"
        )
    out.append(
        "Following [HOEFLER] Rule 3 we summarise "
        + " and ".join(summary)
        + "; outliers were counted with Tukey's fences (k = 1.5) and not removed."
    )
    return out


@dataclass(frozen=True)
class RuleStatus:
    """One of the twelve rules: its number, text, status (met/n/a/missing) and detail."""

    number: int
    rule: str
    status: str
    detail: str

    def to_dict(self) -> dict[str, int | str]:
        """The JSON form (the report's ``rules``)."""
        return {
            "rule": self.number,
            "text": self.rule,
            "status": self.status,
            "detail": self.detail,
        }


RULES = (
    "Report the base case of any speedup and its absolute performance.",
    "Say why only a subset of benchmarks or resources is reported.",
    "Use the arithmetic mean only for costs, the harmonic mean for rates.",
    "Avoid summarising ratios; if unavoidable use the geometric mean.",
    "Report whether measurements are deterministic; give CIs for non-deterministic data.",
    "Do not assume normality without diagnostic checking.",
    "Compare non-deterministic data in a statistically sound way.",
    "Check whether the mean or median is the right measure; consider other percentiles.",
    "Document all varying factors and the complete experimental setup.",
    "Report all measurement, synchronisation and summarisation techniques.",
    "If possible, show upper performance bounds.",
    "Plot as much information as needed; connect points only where interpolation is valid.",
)

MET, NA, MISSING = "met", "not applicable", "missing"


#: Shapiro-Wilk p below this rejects normal subsession means (rule 6)
SHAPIRO_ALPHA = 0.05


def _names(names: list[str], most: int = 6) -> str:
    """``a, b, c`` (at most ``most`` names, then "and N more")."""
    if len(names) <= most:
        return ", ".join(names)
    return ", ".join(names[:most]) + f" and {len(names) - most} more"


def _count(n: int, word: str) -> str:
    """``1 pair``, ``2 pairs``."""
    return f"{n} {word}" + ("" if n == 1 else "s")


def _ranked(groups: list[Group]) -> list[Group]:
    """The groups whose workloads have ratios to the best (two or more ranked rows)."""
    return [g for g in groups if g.compared and sum(r.ratio is not None for r in g.rows) > 1]


def _rule_base_case(
    model: CampaignModel, groups: list[Group], suite: Suite | None
) -> tuple[str, str]:
    """Rule 1: every ratio's base (the best of its group) has its absolute estimate and CI."""
    ranked = _ranked(groups)
    if not ranked and suite is None:
        return NA, "no speedup or ratio is reported"
    no_ci: list[str] = []
    marked: list[str] = []
    paired: list[str] = []
    bases: list[str] = []
    for g in ranked:
        best = g.rows[0]
        view = model.view(best.name)
        du = display_of(view)
        bases.append(f"{best.name} ({du.text(best.mean)})")
        if best.ci_low is None or best.ci_high is None:
            if best.note:
                paired.append(best.name)
            elif _uncertified(view):
                marked.append(_assumes(view))
            else:
                no_ci.append(best.name)
    if no_ci or marked:
        parts = []
        if marked:
            parts.append(
                f"the interval of the base of the ratios is not certified: {_names(marked)}; "
                "its absolute estimate is shown with that interval, marked (docs/methods.md §4.1)"
            )
        if no_ci:
            parts.append(
                f"the base of the ratios has no CI of its own: {_names(no_ci)} (not enough "
                "data); its absolute estimate is shown without one"
            )
        return MISSING, "; ".join(parts)
    parts = []
    if bases:
        parts.append(
            "ratios are relative to the best workload of each group, whose absolute estimate "
            f"and CI are in the same table: {_names(bases)}"
        )
    if paired:
        parts.append(
            f"{_names(paired)} had no CI of its own, by design: compared paired, the ratio "
            "CIs bound the comparison"
        )
    if suite is not None:
        parts.append(
            f"the suite's speedups are relative to {suite.systems[0]}, whose per-benchmark "
            "medians are in the HPT table"
        )
    return MET, "; ".join(parts)


def _rule_subset(views: list[WorkloadView]) -> tuple[str, str]:
    """Rule 2: a workload without a result (no estimate, or stopped early) is listed with
    the reason (its stored status reason or last failure)."""
    why: list[str] = []
    unknown: list[str] = []
    for w in views:
        if w.status == "active" and w.estimate is not None:
            continue  # reported (a workload without a CI is rule 5's)
        if w.status_reason or w.last_failure:
            why.append(f"{w.name}: {w.status_reason or w.last_failure}")
        elif w.status != "active":
            unknown.append(f"{w.name} ({w.status})")
        else:
            why.append(f"{w.name}: no steady reading")
    if unknown:
        return MISSING, f"no reason is stored for the end of {_names(unknown)}"
    if not why:
        return MET, f"every workload of the campaign ({len(views)}) is reported with a result"
    return MET, "workloads without a result are listed with the reason: " + "; ".join(why)


def _rule_means(views: list[WorkloadView]) -> tuple[str, str]:
    """Rule 3: costs by their arithmetic mean; a rate's arithmetic mean is met only where
    its harmonic mean lies inside the arithmetic mean's CI (so the choice changes nothing)."""
    rates = [w for w in views if w.direction == "higher_is_better" and w.estimate is not None]
    if not rates:
        return MET, "all metrics are costs, summarised by their arithmetic mean"
    off, inside = [], []
    for w in rates:
        e = w.estimate
        assert e is not None
        h = w.harmonic_mean
        du = display_of(w)
        if h is not None and e.ci_low is not None and e.ci_high is not None:
            if e.ci_low <= h <= e.ci_high:
                inside.append(w.name)
                continue
        text = "no harmonic mean (a reading <= 0)" if h is None else f"harmonic mean {du.text(h)}"
        off.append(f"{w.name} (arithmetic mean {du.text(e.mean)}, {text})")
    if off:
        return MISSING, (
            "rates summarised by the arithmetic mean of their readings where the harmonic mean "
            f"(total work / total time) differs beyond the CI: {_names(off)}; the harmonic "
            "mean is in each workload's table"
        )
    return MET, (
        f"rates ({_names(inside)}): the harmonic mean lies inside the CI of the arithmetic "
        "mean, so the summary does not depend on the choice; costs by their arithmetic mean"
    )


def _rule_ratios(suite: Suite | None) -> tuple[str, str]:
    """Rule 4: benchrun averages no ratio; a suite's summary is a ratio of geometric means."""
    if suite is None:
        return MET, "no ratio is averaged: each ratio compares two workloads"
    done = [c for c in suite.comparisons if c.gmean_ratio is not None]
    if done:
        return MET, (
            "no ratio is averaged; the suite's summary is the ratio of geometric means, "
            "labelled as such, with a hierarchical bootstrap CI"
        )
    return MET, "no ratio is averaged (the suite's ratio of geometric means was not computed)"


def _rule_cis(model: CampaignModel) -> tuple[str, str]:
    """Rule 5: a CI for every workload whose comparisons are not all paired; the
    deterministic ones (CoV below 0.1 %) named."""
    views = model.workloads
    no_ci = [w.name for w in views if not (w.estimate and w.estimate.ci_low is not None)]
    verdicts = _stopping_rule(model)
    paired_no_ci = [n for n in no_ci if verdicts is not None and verdicts.all_paired(n)]
    no_ci = [n for n in no_ci if n not in paired_no_ci]
    marked = [_assumes(model.view(n)) for n in no_ci if _uncertified(model.view(n))]
    no_ci = [n for n in no_ci if not _uncertified(model.view(n))]
    det = [w.name for w in views if w.description.deterministic]
    if no_ci or marked:
        parts = []
        if marked:
            parts.append(
                f"intervals not certified for {_names(marked)}: too few readings to certify "
                "independence, each shown with the bound on tau it assumes and the width that "
                "costs (docs/methods.md §4.1)"
            )
        if no_ci:
            parts.append(f"no CI for {_names(no_ci)} (not enough data)")
        return MISSING, "; ".join(parts)
    detail = "CIs over subsession means for every workload"
    if paired_no_ci:
        detail = (
            "CIs over subsession means for every workload except "
            + _names(paired_no_ci)
            + ", whose comparisons are paired: their ratios have CIs instead"
        )
    if det:
        detail += f"; deterministic (CoV below 0.1 %): {_names(det)}"
    return MET, detail


def _rule_normality(views: list[WorkloadView]) -> tuple[str, str]:
    """Rule 6: the t CI assumes approximately normal subsession means; met when the
    Shapiro-Wilk test does not reject them (p >= :data:`SHAPIRO_ALPHA`) for every
    workload with a CI that is not deterministic."""
    with_ci = [w for w in views if w.estimate is not None and w.estimate.ci_low is not None]
    # a deterministic workload's CI (CoV below 0.1 %) is as narrow as its readings: its
    # width does not depend on the shape of their distribution
    det = [w.name for w in with_ci if w.description.deterministic]
    with_ci = [w for w in with_ci if w.name not in det]
    if not with_ci:
        marked = [w.name for w in views if _uncertified(w)]
        if marked and not det:
            return NA, (
                "no certified CI relies on normal subsession means: the intervals of "
                f"{_names(marked)} are not certified (docs/methods.md §4.1)"
            )
        return NA, "no CI relies on normal subsession means: " + (
            f"the workloads with one are deterministic ({_names(det)})"
            if det
            else "none was computed"
        )
    p_of = {w.name: (w.normality or {}).get("p_value") for w in with_ci}
    untested = [n for n, p in p_of.items() if p is None]
    rejected = sorted(((p, n) for n, p in p_of.items() if p is not None and p < SHAPIRO_ALPHA))
    parts = []
    if rejected:
        parts.append(
            "Shapiro-Wilk rejects normal subsession means (p < "
            f"{SHAPIRO_ALPHA:g}) for "
            + _names([f"{n} (p = {p:.2g})" for p, n in rejected])
            + ": their t CIs may be off; see the Q-Q plots, and the median CIs (which do not "
            "assume normality) in the tables, or use longer subsessions"
        )
    if untested:
        parts.append(
            f"normality of the subsession means not checked for {_names(untested)} (fewer "
            "than 3 distinct subsession means)"
        )
    if parts:
        return MISSING, "; ".join(parts)
    low, name = min((p, n) for n, p in p_of.items() if p is not None)
    return MET, (
        f"Shapiro-Wilk p >= {SHAPIRO_ALPHA:g} for the subsession means of every workload with a "
        f"CI (lowest p = {low:.2g}, {name}); a Q-Q plot per workload"
        + (f"; not needed for the deterministic {_names(det)}" if det else "")
    )


def _rule_compare(model: CampaignModel, groups: list[Group]) -> tuple[str, str]:
    """Rule 7: every workload of a comparison group was compared by a test; the ones left
    out (no CI, no data) are named."""
    compared = [g for g in groups if g.compared and len(g.members) > 1]
    if not compared:
        return (
            NA,
            "no two workloads are compared (each is alone in its metric and unit, or compare: compares it with nothing)",
        )
    left = [f"{n} ({why})" for g in compared for n, why in g.excluded]
    tested = sum(len(g.pairs) for g in compared)
    verdicts = model.verdicts
    if verdicts is not None:
        tested = max(tested, len(verdicts.comparisons))
    if left:
        return MISSING, f"left out of the comparisons: {_names(left)}"
    if tested == 0:
        return MISSING, "no pair of the comparison groups was tested"
    if verdicts is not None and verdicts.comparisons:
        # the campaign's comparisons (runner/results/comparisons.py): name the tests they used
        looks = (
            "alpha spent over looks" if verdicts.computed is None else "one look at the whole alpha"
        )
        if verdicts.paired:
            welch = any(x.test != "paired" for x in verdicts.comparisons)
            how = (
                "workloads measured in the same passes compared on per-pass log ratios "
                "(one-sample t, TOST)" + (", others with Welch's t-test" if welch else "")
            )
        else:
            how = "Welch's t-test on each workload's own subsession means, TOST"
        return MET, (
            f"{_count(tested, 'comparison')}: {how}; Holm, {looks}; every comparison with its "
            "ratio and CI"
        )
    return MET, (
        f"{_count(tested, 'neighbour pair')} compared with Welch's t-test (Holm), TOST equivalence and "
        "non-overlapping CIs"
    )


def _with_duet(model: CampaignModel, status: tuple[str, str]) -> tuple[str, str]:
    """Rule 7 of a duet campaign (docs/duet.md): the asymmetry check's sentence added; a
    pair found to interfere asymmetrically (its duet ratio is biased) or a side on more
    than one CPU makes the rule missing."""
    from benchrun.runner.results.duet import duet_lines, duet_summary

    summary = duet_summary(model.events)
    if summary is None:
        return status
    check = summary.get("asymmetry") or {}
    bad = bool(summary["multi_cpu"]) or bool(check.get("flagged"))
    return (MISSING if bad else status[0], status[1] + "; " + "; ".join(duet_lines(summary)))


def _rule_percentiles(views: list[WorkloadView], groups: list[Group]) -> tuple[str, str]:
    """Rule 8: median, quartiles and tail percentiles for every workload with readings; the
    workloads whose mean lies outside their median's CI (skewed) are named."""
    with_data = [w for w in views if w.steady.size]
    lacking = [w.name for w in with_data if w.description.median is None]
    if lacking:
        return MISSING, f"no median or percentiles for {_names(lacking)}"
    if not with_data:
        return NA, "no steady readings to summarise"
    skewed = []
    for w in with_data:
        s = w.description
        lo, hi = s.median_ci_low, s.median_ci_high
        if w.estimate is not None and lo is not None and hi is not None:
            if not lo <= w.estimate.mean <= hi:
                du = display_of(w)
                skewed.append(
                    f"{w.name} (mean {du.text(w.estimate.mean)}, median {du.text(s.median)})"
                )
    fits = sum(len(g.quantiles) for g in groups)
    detail = "median with its CI, quartiles, p90/p99 and a histogram per workload"
    if fits:
        detail += (
            f"; quantile regression from the 5th to the 95th percentile for {_count(fits, 'pair')}"
        )
    if skewed:
        detail += (
            "; the mean lies outside the median's CI (a skewed distribution: the median "
            f"describes a typical run better) for {_names(skewed)}"
        )
    return MET, detail


def _rule_setup(model: CampaignModel, record: MachineFacts) -> tuple[str, str]:
    """Rule 9: the machine record (hardware, software, timer, environment: the sections
    the stored ``record`` holds) and the experiment file are stored."""
    absent = [k for k in SECTIONS if k not in record.stored.sections]
    if not record.stored.present:
        return MISSING, "no machine record was stored with this campaign"
    if not model.campaign.config_text.strip():
        absent.append("the experiment file")
    if absent:
        return MISSING, f"not recorded: {', '.join(absent)}"
    gone = record.stored.unreadable
    return MET, (
        "hardware, software, timer, environment and the full experiment file are recorded"
        + (f" ({gone} facts unreadable on this machine, listed)" if gone else "")
    )


def _rule_techniques(timer: Clock) -> tuple[str, str]:
    """Rule 10: the timer (from the machine record) and the subsession sizes are stated."""
    if not timer.clock:
        return MISSING, "the timer is not recorded (no machine record of it)"
    return MET, (
        f"timer ({timer.clock}), pinning, warm-up rule, subsession size and summary "
        "statistics are stated in the methods paragraph; each round is one process, no "
        "synchronisation across processes is involved"
    )


def _rule_plots(views: list[WorkloadView]) -> tuple[str, str]:
    """Rule 12: every reading is plotted; a workload whose distribution cannot be plotted
    (fewer than two steady readings) is named, and so are the panels left out."""
    readings = sum(int(w.all_values.size) for w in views)
    bare = [
        f"{w.name} ({p.why})"
        for w in views
        if w.all_values.size
        for p in workload_panels(w)
        if p.key == "distribution" and not p.shown
    ]
    if bare:
        return MISSING, f"no distribution can be plotted for {_names(bare)}"
    hidden = [
        f"{w.name}: {', '.join(p.title for p in workload_panels(w) if not p.shown)}"
        for w in views
        if any(not p.shown for p in workload_panels(w))
    ]
    return MET, (
        f"every reading ({readings}) is plotted in launch order with its flags, with each "
        "workload's distribution and the distributions of compared workloads overlaid; lines "
        "join only the CI-width curve and the quantile-regression percentiles "
        "(autocorrelations are stems)"
        + (f"; panels left out for lack of data: {'; '.join(hidden)}" if hidden else "")
    )


def rules_checklist(
    model: CampaignModel, groups: list[Group], suite: Suite | None
) -> list[RuleStatus]:
    """[HOEFLER]'s twelve rules with this campaign's status for each (module docstring).

    Each status is derived from the figures its detail cites: a rule is ``met`` only when
    they show it (rule 6, for instance, only when Shapiro-Wilk does not reject normal
    subsession means for any workload with a CI), else ``missing`` with what is missing,
    or ``not applicable``. Rule 11 (upper bounds) is always missing: benchrun does not know
    the machine's peak.
    """
    views = model.workloads
    record = MachineFacts.from_stored(model.campaign.metadata)
    out = [
        _rule_base_case(model, groups, suite),
        _rule_subset(views),
        _rule_means(views),
        _rule_ratios(suite),
        _rule_cis(model),
        _rule_normality(views),
        _with_duet(model, _rule_compare(model, groups)),
        _rule_percentiles(views, groups),
        _rule_setup(model, record),
        _rule_techniques(record.timer.clock),
        (
            MISSING,
            "benchrun does not know this machine's peak; add an upper bound (peak "
            "bandwidth, FLOP/s, an empty loop) by hand if one exists",
        ),
        _rule_plots(views),
    ]
    return [RuleStatus(i + 1, RULES[i], st, d) for i, (st, d) in enumerate(out)]


def machine_warnings(record: MachineFacts) -> list[dict[str, str]]:
    """The noise warnings of ``benchrun system`` (runner/machine/noise.py) for a campaign's
    stored ``record``; none when no record was stored."""
    if not record.stored.present:
        return []
    return [w.to_dict() for w in noise_warnings(record)]
