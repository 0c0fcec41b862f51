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
from typing import Any

from benchrun.runner.format import format_percent
from benchrun.runner.machine.noise import noise_warnings
from benchrun.runner.report.analysis import Group, Suite
from benchrun.runner.report.model import CampaignModel
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


def _range(values: list[int]) -> str:
    lo, hi = min(values), max(values)
    return str(lo) if lo == hi else f"{lo} to {hi}"


def _stored_tests(verdicts: StoredVerdicts, s: dict[str, Any], c: float) -> list[str]:
    """Sentences on how the stopping controller compared workloads: the paired tests on
    per-pass log ratios (docs/methods.md §13, docs/paired.md) and Welch's test (§7), with the
    looks, alpha and Holm (§10); from the stored verdicts (what was really used)."""
    alpha = float(verdicts.alpha if verdicts.alpha is not None else s.get("alpha", 0.01))
    margin = float(verdicts.margin if verdicts.margin is not None else s.get("margin", 0.01))
    total = len(verdicts.comparisons)
    paired = [x for x in verdicts.comparisons if x.test == "paired"]
    welch = [x for x in verdicts.comparisons if x.test != "paired"]
    out: list[str] = []
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
                f"{format_percent(float(s['ci_rel_width']), digits=2)} of the ratio (ci_rel_width)."
                if s.get("ci_rel_width") is not None
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
    out.append(
        f"Tests were made only at a geometric schedule of looks with alpha = {alpha:g} spent "
        "over them, so stopping when the data suffice does not inflate the error rate"
        + ", and Holm-corrected over the pairs of a group (and over the baselines) tested at "
        "the same look [HOLM]."
    )
    return out


def methods_paragraph(model: CampaignModel, groups: list[Group], suite: Suite | None) -> str:
    """One paragraph describing what was really done (module docstring)."""
    s = model.settings
    views = model.workloads
    c = model.confidence
    out: list[str] = []
    mode = "adaptive" if model.adaptive else "fixed"
    out.append(
        f"We measured {len(views)} workload{'s' if len(views) != 1 else ''} with benchrun "
        f"{model.campaign.benchrun_version} in {'an' if model.adaptive else 'a'} {mode} campaign of "
        f"{sum(w.rounds for w in views)} rounds, each round a fresh process"
        + (f" pinned to CPU {', '.join(model.cpus)}" if model.cpus else " (not pinned to CPUs)")
        + "."
    )
    contained = ((model.campaign.metadata or {}).get("containment") or {}).get("kind")
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
    order = s.get("order", "interleaved")
    out.append(
        "Workloads ran in a seeded random interleaved order"
        + (f" (seed {s.get('seed')})" if s.get("seed") is not None else "")
        if order == "interleaved"
        else "Workloads ran one after the other"
    )
    out[-1] += f"; the campaign ended {model.campaign.status}: {model.campaign.stop_reason or '-'}"
    budget = model.adaptive and model.verdicts is not None and model.verdicts.budget_stop
    out[-1] += (
        " (on a budget, before every condition of the stopping rule was met)." if budget else "."
    )
    steady = [w.steady_rounds for w in views if w.steady_rounds]
    warm = sum(w.warmup_rounds - w.calibration_rounds for w in views)
    calib = sum(w.calibration_rounds for w in views)
    if steady:
        out.append(
            f"Each workload has {_range(steady)} steady rounds; the first "
            f"{s.get('warmup_rounds', 1)} round(s) of each workload ({warm} in total) were run, "
            "stored and discarded as warm-up"
            + (
                f", after {calib} calibration rounds that chose the work amount per round."
                if calib
                else "."
            )
        )
    within = sum(w.estimate.warmup_readings for w in views if w.estimate)
    fixed_w = s.get("warmup_readings")
    if fixed_w is not None:
        out.append(f"The first {fixed_w} readings of every round were discarded (fixed).")
    else:
        out.append(
            "A remaining warm-up transient was detected with MSER-5 [MSER]"
            + (f", which discarded {within} readings in total." if within else "; it found none.")
        )
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
    verdicts = model.verdicts if model.adaptive else None
    paired_names = {w.name for w in views if verdicts is not None and verdicts.all_paired(w.name)}
    if rel:
        target = s.get("ci_rel_width")
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
    unpaired_missing = [n for n in missing if n not in paired_names]
    paired_missing = [n for n in missing if n in paired_names]
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
    if verdicts is not None and verdicts.comparisons:
        out.extend(_stored_tests(verdicts, s, c))
    elif any(len(g.rows) > 1 and g.compared for g in groups):
        k = max(len(g.rows) for g in groups)
        out.append(
            f"Neighbouring workloads in the ranking were compared with Welch's t-test [WELCH] at "
            f"alpha = {s.get('alpha', 0.01):g}"
            + (", Holm-corrected over the adjacent pairs" if k > 2 else "")
            + f", and with a TOST equivalence test within ±{100 * float(s.get('margin', 0.01)):g} %"
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
    timer = (model.campaign.metadata or {}).get("timer") or {}
    if timer.get("clock"):
        res = timer.get("measured_resolution_ns")
        over = timer.get("overhead_ns")
        out.append(
            f"Times come from {timer.get('clock')} ({timer.get('implementation') or '-'})"
            + (f", smallest measured step {res:g} ns" if isinstance(res, int | float) else "")
            + (f", {over:.0f} ns per call" if isinstance(over, int | float) else "")
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
    return " ".join(out)


@dataclass(frozen=True)
class RuleStatus:
    """One of the twelve rules: its number, text, status (met/n/a/missing) and detail."""

    number: int
    rule: str
    status: str
    detail: str

    def to_dict(self) -> dict[str, Any]:
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


def rules_checklist(
    model: CampaignModel, groups: list[Group], suite: Suite | None
) -> list[RuleStatus]:
    """[HOEFLER]'s twelve rules with this campaign's status for each (module docstring)."""
    views = model.workloads
    multi = any(len(g.rows) > 1 and g.compared for g in groups)
    out: list[tuple[str, str]] = []
    # 1
    if multi or suite is not None:
        out.append((MET, "ratios are relative to the best workload (or the first system), whose "
                         "absolute estimate and CI are in the same table"))  # fmt: skip
    else:
        out.append((NA, "no speedup or ratio is reported"))
    # 2
    dropped = [w for w in views if w.status != "active" or not (w.estimate and w.estimate.usable)]
    if not dropped:
        out.append((MET, "every workload of the experiment is reported"))
    else:
        why = [
            f"{w.name}: {w.status_reason or w.last_failure or 'not enough data'}" for w in dropped
        ]
        out.append(
            (MET, "workloads without a result are listed with the reason: " + "; ".join(why))
        )
    # 3
    rates = [w.name for w in views if w.direction == "higher_is_better"]
    if rates:
        out.append((MISSING, f"{', '.join(rates)}: rates summarised by the arithmetic mean of "
                             "readings; the harmonic mean is shown beside it, prefer it or "
                             "total work / total time"))  # fmt: skip
    else:
        out.append((MET, "all metrics are costs, summarised by the arithmetic mean"))
    # 4
    out.append((MET, "no ratio is averaged" + (
        "; the suite's ratio of geometric means is labelled as such, with a bootstrap CI"
        if suite is not None else "")))  # fmt: skip
    # 5
    no_ci = [w.name for w in views if not (w.estimate and w.estimate.ci_low is not None)]
    verdicts = model.verdicts if model.adaptive else None
    paired_no_ci = [n for n in no_ci if verdicts is not None and verdicts.all_paired(n)]
    no_ci = [n for n in no_ci if n not in paired_no_ci]
    det = [w.name for w in views if (w.summary or {}).get("deterministic")]
    detail = "CIs over subsession means for every workload"
    if paired_no_ci:
        detail = (
            "CIs over subsession means for every workload except "
            + ", ".join(paired_no_ci)
            + ", whose comparisons are paired: their ratios have CIs instead"
        )
    if det:
        detail += f"; deterministic (CoV below 0.1 %): {', '.join(det)}"
    out.append((MISSING, "no CI for " + ", ".join(no_ci)) if no_ci else (MET, detail))
    # 6
    out.append((MET, "Shapiro-Wilk p and a Q-Q plot of the subsession means per workload; the CI "
                     "relies on the means being approximately normal, which the plot shows"))  # fmt: skip
    # 7
    if verdicts is not None and verdicts.paired:
        out.append((MET, "workloads measured in the same passes compared on per-pass log "
                         "ratios (one-sample t, TOST), others with Welch's t-test; Holm, alpha "
                         "spent over looks; every comparison with its ratio and CI"))  # fmt: skip
    elif multi:
        out.append((MET, "neighbours compared with Welch's t-test (Holm), TOST equivalence and "
                         "non-overlapping CIs"))  # fmt: skip
    else:
        out.append((NA, "a single workload per metric: nothing to compare"))
    # 8
    out.append((MET, "median, quartiles, p90/p99 and a histogram per workload; quantile "
                     "regression of neighbour differences from the 5th to the 95th percentile"
                if multi else "median, quartiles, p90/p99 and a histogram per workload"))  # fmt: skip
    # 9
    meta = model.campaign.metadata
    if not meta:
        out.append((MISSING, "no machine record was stored with this campaign"))
    else:
        gone = sum(len((meta.get(k) or {}).get("_unavailable") or {}) for k in
                   ("hardware", "software", "timer", "environment"))  # fmt: skip
        out.append((MET, "hardware, software, timer, environment and the full experiment file "
                         f"are recorded ({gone} facts unreadable on this machine, listed)"))  # fmt: skip
    # 10
    out.append((MET, "timer, pinning, warm-up rule, subsession size and summary statistics are "
                     "stated in the methods paragraph; each round is one process, no "
                     "synchronisation across processes is involved"))  # fmt: skip
    # 11
    out.append((MISSING, "benchrun does not know this machine's peak; add an upper bound (peak "
                         "bandwidth, FLOP/s, an empty loop) by hand if one exists"))  # fmt: skip
    # 12
    out.append((MET, "every reading is plotted in launch order; lines join only time-ordered "
                     "readings and the CI-width curve"))  # fmt: skip
    return [RuleStatus(i + 1, RULES[i], st, d) for i, (st, d) in enumerate(out)]


def machine_warnings(model: CampaignModel) -> list[dict[str, str]]:
    """The noise warnings of ``benchrun system`` for the stored record (runner/metadata_noise)."""
    meta = model.campaign.metadata
    if not meta:
        return []
    return [w.to_dict() for w in noise_warnings(meta)]
