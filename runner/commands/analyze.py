"""``benchrun analyze``: the statistics of benchrun on data it did not measure.

Reads long-form CSV or the JSON exports of hyperfine, pyperf and Google Benchmark
(:mod:`runner.importers`), calls the ``stats`` functions (this module computes no
statistic itself) and prints either rich tables with verdicts in words or, with
``--json``, one JSON document. Each sub-command builds a JSON-able document first; the
terminal view (:mod:`runner.analyze.views`) only renders that document, so both outputs
always say the same thing.

Sub-commands: ``summary`` (docs/methods.md §1-§5), ``compare`` (§6.1, §6.4, §7), ``speedup``
(§6.2), ``hpt`` (§8), ``resample`` (§9), ``quantiles`` (§7 quantile regression).

When a file says what a process is (pyperf runs, hyperfine runs, Google Benchmark
repetitions), ``summary`` and ``compare`` take each process mean as one observation, as
``benchrun compare`` does (runner/importers/processes.py, docs/imported-data.md): the
subsessions of the summary are the processes. benchrun's own exports (JSON or CSV) are
analysed as the campaign analysed them: only the readings it analysed (warm-up and
failed rounds left out by their flags), estimated by the collector over their rounds
(runner/results/workloads.py ``estimate_rounds``), so the mean, CI, q and n_q are the
report's. The other sub-commands take the values.

Every group's values are shown in one unit chosen from its mean
(:func:`runner.format.display_unit`); the JSON keeps the file's unit (``unit``) and names
the shown one per group (``display_unit``). Subsessions read ``q × n_q``: n_q means of q
readings, as in ``run``, ``show`` and the report.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, TypeVar

import numpy as np

from benchrun.runner.analyze import views as views
from benchrun.runner.analyze.documents import (
    BenchrunSummaryJson,
    CompareDoc,
    DisplayUnitJson,
    ExcludedJson,
    GroupKey,
    GroupRow,
    Header,
    HptDoc,
    OmnibusJson,
    QuantileItem,
    QuantilesDoc,
    RankingJson,
    ResampleDoc,
    SpeedupDoc,
    SummaryDoc,
    SummaryJson,
)
from benchrun.runner.analyze.support import (
    OneLineParser,
    add_common,
    add_two_sides,
    add_warmup_option,
    as_dict,
    call_stats,
    level,
    pair_count,
    positive,
    quantile_list,
    stats_function,
    stats_module,
)
from benchrun.runner.errors import UserError
from benchrun.runner.importers import Dataset, load_many
from benchrun.runner.importers.dataset import display_name as views_name
from benchrun.runner.importers.weights import read_weights
from benchrun.stats.results import jsonable

if TYPE_CHECKING:
    from benchrun.stats.summary import Summary

#: an analyze document (runner/analyze/documents.py)
D = TypeVar("D", bound=Mapping[str, object])

#: default of ``compare --max-pairs``: all pairwise effect sizes up to 141 groups
MAX_EFFECT_PAIRS = 10_000

#: units that are times: a value <= 0 in one of them is suspicious (clock or subtraction)
TIME_UNITS = {"s", "ms", "us", "µs", "ns", "sec", "seconds", "second"}


# ------------------------------------------------------------------------ helpers
def load_dataset(args: argparse.Namespace) -> Dataset:
    """Read the DATA files named on the command line and apply the direction override."""
    time_field: Literal["real_time", "cpu_time"] = (
        "cpu_time" if args.gbench_time == "cpu" else "real_time"
    )
    ds = load_many(args.data, fmt=args.format, gbench_time=time_field)
    if args.direction is not None:
        ds = ds.with_direction(args.direction)
    return ds


def _header(ds: Dataset, command: str, args: argparse.Namespace) -> Header:
    notes = list(ds.notes)
    if ds.unit.lower() in TIME_UNITS or ds.source_format in ("hyperfine", "pyperf", "gbench"):
        bad = [name for name, v in ds.named().items() if v.size and float(v.min()) <= 0]
        if bad:
            notes.append(
                f"times <= 0 in {', '.join(bad)}: a clock or subtraction error? (kept as they are)"
            )
    return {
        "command": command,
        "source": ds.source,
        "format": ds.source_format,
        "unit": ds.unit,
        "direction": ds.direction,
        "confidence": args.confidence,
        "notes": notes,
    }


def _emit(doc: D, args: argparse.Namespace, render: Callable[[D], None]) -> int:
    """Print ``doc`` as JSON (``--json``) or through its terminal view ``render``; both
    read the document made JSON-safe (numpy scalars as numbers, NaN as null)."""
    safe: D = jsonable(doc)
    if args.json:
        sys.stdout.write(json.dumps(safe, indent=2, allow_nan=False) + "\n")
    else:
        render(safe)
    return 0


def _times_for_speedup(ds: Dataset, values: np.ndarray) -> np.ndarray:
    """Times for the Speedup-Test: rates (higher is better) become 1/x, time per unit."""
    return 1.0 / values if ds.direction == "higher_is_better" else values


#: the warm-up of a benchrun export's groups: the campaign's, flagged in the file
CAMPAIGN_WARMUP = "the campaign's (readings flagged warm-up are left out)"


def _warmup_for(ds: Dataset, warmup: str | int) -> str | int:
    """``auto``: pyperf stores warm-ups apart (already excluded), so none; else MSER-5.

    For data with processes the rule applies to whole processes (``auto``/``mser5``: the
    process-level MSER-5 of runner/importers/processes.py; N: the first N processes). A
    benchrun export's warm-up is the campaign's (:data:`CAMPAIGN_WARMUP`)."""
    if ds.rounds:
        return CAMPAIGN_WARMUP
    if ds.processes:
        return "mser5 over process means" if warmup in ("auto", "mser5") else warmup
    if warmup == "auto":
        return "none" if ds.source_format == "pyperf" else "mser5"
    return warmup


def _benchrun_summary(
    rounds: list[np.ndarray], confidence: float
) -> tuple[BenchrunSummaryJson, np.ndarray | None]:
    """The summary of one group of a benchrun export: descriptive statistics of its
    analysed readings (``stats.summarize`` without warm-up) with the estimate replaced by
    the campaign's (runner/results/workloads.py ``estimate_rounds``: mean, CI, q, n_q,
    s_q², tau and the collector's notes), the normality of its subsession means; and those
    means (None without a trusted estimate)."""
    from benchrun.runner.results.workloads import estimate_means, estimate_rounds

    x = np.concatenate(rounds)
    doc: BenchrunSummaryJson = as_dict(
        stats_function("summarize")(x, confidence=confidence, warmup="none")
    )
    c = estimate_rounds(rounds, confidence)
    if c is None:  # pragma: no cover - an export's groups have readings
        return doc, None
    means = estimate_means(rounds, c)
    normality = stats_module("normality", "normality")
    norm = normality(means) if means is not None and means.size >= 3 else None
    described = stats_function("describe")(x)
    doc.update(
        {
            "n": c.n,
            "warmup_readings": 0,
            "subsession_size": c.q,
            "n_subsessions": c.n_q,
            "mean": c.mean,
            "ci_low": c.ci_low,
            "ci_high": c.ci_high,
            "subsession_variance": c.s2_q,
            "ess": c.ess,
            "enough_data": c.enough,
            "readings_needed": c.readings_needed,
            "tau": c.tau,
            "certified": c.certified,
            "interval_low": c.interval_low,
            "interval_high": c.interval_high,
            "tau_bound": c.tau_bound,
            "width_factor": c.width_factor,
            "interval_note": c.interval_note,
            "normality_p": None if norm is None else norm.p_value,
            "notes": [*described.notes, *c.notes],
            "estimate": f"benchrun's collector over {len(rounds)} rounds (the campaign's estimate)",
        }
    )
    return doc, means


@dataclass(frozen=True)
class Group:
    """One group of ``summary`` and ``compare``: its JSON row (:class:`GroupRow`) and what
    ``compare``'s omnibus tests need beside it: the ``stats`` summary (None for a benchrun
    export's group, estimated by the collector, and for a group refused), the group's
    values and its independent means (the process or round-subsession means; None when
    the subsession means of the summary are the ones)."""

    row: GroupRow
    result: Summary | None = None
    values: np.ndarray | None = None
    means: np.ndarray | None = None

    @property
    def summary(self) -> SummaryJson | None:
        return self.row["summary"]


def _display_json(unit: str, summary: SummaryJson | None) -> DisplayUnitJson:
    """The unit a group is shown in, chosen from its mean (runner/format.py)."""
    from benchrun.runner.format import display_unit

    du = display_unit(unit, None if summary is None else summary["mean"])
    return {"label": du.label, "factor": du.factor}


def _group(
    ds: Dataset,
    key: tuple[str | None, str | None, str | None],
    args: argparse.Namespace,
    warmup: str | int,
) -> Group:
    """The :class:`Group` of one key of ``ds``: summarised by the collector (a benchrun
    export's rounds), over its processes (runner/importers/processes.py), or by
    ``stats.summarize``; a ValueError of the statistics becomes the row's ``error``."""
    # scipy.stats costs ~0.6 s to import: only when analysing, not for `benchrun --help`
    from benchrun.runner.importers.processes import as_summary, summarize_processes

    values = ds.groups[key]
    system, benchmark, workload = key
    head: GroupKey = {
        "name": views_name(key),
        "system": system,
        "benchmark": benchmark,
        "workload": workload,
        "readings": int(values.size),
    }
    split = ds.process_values(key)
    by_round = ds.round_values(key)
    try:
        if by_round is not None:
            doc, means = _benchrun_summary(by_round, args.confidence)
            row: GroupRow = {
                **head,
                "summary": doc,
                "error": None,
                "rounds": len(by_round),
                "display_unit": _display_json(ds.unit, doc),
            }
            return Group(row, None, values, means)
        if split is not None:
            ps = summarize_processes(
                split,
                args.confidence,
                "mser5" if warmup == "mser5 over process means" else warmup,
                ds.process_word,
            )
            result = as_summary(ps)
            summary: SummaryJson = as_dict(result)
            row = {
                **head,
                "unit_of_observation": ds.process_word,
                "processes": ps.n,
                "summary": summary,
                "error": None,
                "display_unit": _display_json(ds.unit, summary),
            }
            return Group(row, result, values, ps.means)
        result = stats_function("summarize")(values, confidence=args.confidence, warmup=warmup)
        summary = as_dict(result)
    except ValueError as exc:
        row = {
            **head,
            "summary": None,
            "error": str(exc),
            "display_unit": _display_json(ds.unit, None),
        }
        return Group(row)
    row = {
        **head,
        "summary": summary,
        "error": None,
        "display_unit": _display_json(ds.unit, summary),
    }
    return Group(row, result, values)


def _summaries(ds: Dataset, args: argparse.Namespace) -> list[Group]:
    """Every group of ``ds`` summarised (:func:`_group`); a UserError when none could be."""
    warmup = _warmup_for(ds, args.warmup)
    groups = [_group(ds, key, args, warmup) for key in ds.groups]
    if all(g.row["error"] for g in groups):
        first = groups[0].row
        raise UserError(
            f"{ds.source}: no group could be summarised ({first['name']}: {first['error']})"
        )
    return groups


# ---------------------------------------------------------------- sub-commands
def cmd_summary(args: argparse.Namespace) -> int:
    """Per group: warm-up, subsession means, CIs, quantiles, normality (docs/methods.md §1-§5)."""
    ds = load_dataset(args)
    doc = _header(ds, "summary", args)
    if ds.rounds and args.warmup != "auto":
        doc["notes"].append(
            f"--warmup {args.warmup} does not apply to a benchrun export: its warm-up is the "
            "campaign's, flagged in the file"
        )
    groups = _summaries(ds, args)
    summary: SummaryDoc = {
        **doc,
        "warmup": _warmup_for(ds, args.warmup),
        "groups": [g.row for g in groups],
    }
    return _emit(summary, args, views.render_summary)


def cmd_compare(args: argparse.Namespace) -> int:
    """Rank the groups and decide each adjacent pair; ANOVA and Kruskal-Wallis (§6-§7)."""
    ds = load_dataset(args)
    doc = _header(ds, "compare", args)
    rows = _summaries(ds, args)
    usable: list[tuple[Group, SummaryJson]] = []
    excluded: list[ExcludedJson] = []
    for g in rows:
        s = g.summary
        if s is None or not s["enough_data"] or s["subsession_variance"] is None:
            why = g.row["error"] or "; ".join(
                n for n in (s["notes"] if s else []) if "not enough" in n or "readings" in n
            )
            excluded.append({"name": g.row["name"], "reason": why or "not enough data"})
        else:
            usable.append((g, s))
    if len(usable) < 2:
        detail = "; ".join(f"{e['name']}: {e['reason']}" for e in excluded)
        raise UserError(
            f"{ds.source}: compare needs at least two groups with enough data for a CI "
            f"({len(usable)} usable){'; ' + detail if detail else ''}"
        )
    # stats.compare.rank_results' input: one summary per group
    results = [
        {
            "name": g.row["name"],
            "mean": s["mean"],
            "variance": s["subsession_variance"],
            "n": s["n_subsessions"],
            "ci_low": s["ci_low"],
            "ci_high": s["ci_high"],
            "direction": ds.direction,
        }
        for g, s in usable
    ]
    ranking = call_stats(
        "compare",
        "rank_results",
        results,
        alpha=args.alpha,
        margin=args.margin,
        confidence=args.confidence,
    )
    ranking_doc: RankingJson = as_dict(ranking)
    by_name = {r["name"]: r for r in results}
    effect = stats_module("compare", "effect_size_from_summary")
    for pair in ranking_doc["pairs"]:
        a, b = by_name[pair["a"]], by_name[pair["b"]]
        es = effect(
            b["mean"],
            b["variance"],
            b["n"],
            a["mean"],
            a["variance"],
            a["n"],
            confidence=args.confidence,
        )
        pair["effect_size_ci"] = as_dict(es)
    # omnibus tests on the subsession means (the approximately independent values, §3)
    subsession_means = stats_function("subsession_means")
    k = len(usable)
    all_pairs = k * (k - 1) // 2
    if all_pairs > args.max_pairs:  # E for the ranking's neighbours: k - 1, not k(k-1)/2
        order = {name: i for i, name in enumerate(ranking_doc["names"])}
        usable = sorted(usable, key=lambda gs: order[gs[0].row["name"]])
        doc["notes"].append(
            f"omnibus effect sizes E only for the {k - 1} neighbours of the ranking: all "
            f"{all_pairs} pairs of {k} groups exceed --max-pairs {args.max_pairs} "
            f"(--max-pairs {all_pairs} gives them all)"
        )
    groups: dict[str, np.ndarray] = {}
    for g, _ in usable:
        if g.means is not None:  # the process or round means (module docstring)
            groups[g.row["name"]] = g.means
            continue
        assert g.result is not None and g.values is not None  # stats.summarize's group
        steady = g.values[g.result.warmup_readings :]
        groups[g.row["name"]] = subsession_means(steady, g.result.subsession_size)
    omnibus: OmnibusJson = {
        "on": "subsession means",
        "anova": as_dict(call_stats("ANOVA", "anova", groups, max_pairs=args.max_pairs)),
        "kruskal_wallis": as_dict(
            call_stats("Kruskal-Wallis", "kruskal_wallis", groups, max_pairs=args.max_pairs)
        ),
    }
    compared: CompareDoc = {
        **doc,
        "warmup": _warmup_for(ds, args.warmup),
        "alpha": args.alpha,
        "margin": args.margin,
        "groups": [g.row for g in rows],
        "excluded": excluded,
        "ranking": ranking_doc,
        "omnibus": omnibus,
    }
    return _emit(compared, args, views.render_compare)


def cmd_speedup(args: argparse.Namespace) -> int:
    """Touati's Speedup-Test per benchmark and over the suite (docs/methods.md §6.2)."""
    ds = load_dataset(args)
    doc = _header(ds, "speedup", args)
    pairing = ds.pair(args.baseline, args.candidate)
    benchmarks = {
        name: (_times_for_speedup(ds, x), _times_for_speedup(ds, y))
        for name, x, y in zip(pairing.benchmarks, pairing.a, pairing.b, strict=True)
    }
    if ds.direction == "higher_is_better":
        doc["notes"].append(
            f"values are rates ({ds.unit or 'higher is better'}): the Speedup-Test ran on "
            "1/value (time per unit of work)"
        )
    weights = None
    if args.weights:
        weights = read_weights(args.weights)
        unknown = sorted(set(weights) - set(benchmarks))
        missing = sorted(set(benchmarks) - set(weights))
        if unknown or missing:
            raise UserError(
                f"{args.weights}: weights must name exactly the benchmarks in the data"
                + (f"; missing: {', '.join(missing)}" if missing else "")
                + (f"; unknown: {', '.join(unknown)}" if unknown else "")
            )
    suite = call_stats(
        "speedup",
        "speedup_suite",
        benchmarks,
        weights=weights,
        alpha=args.alpha,
        confidence=args.confidence,
        precision=args.precision,
    )
    speedup: SpeedupDoc = {
        **doc,
        "baseline": args.baseline,
        "candidate": args.candidate,
        "alpha": args.alpha,
        "precision": args.precision,
        "weights_file": args.weights,
        "result": as_dict(suite),
    }
    return _emit(speedup, args, views.render_speedup)


def _suites(ds: Dataset, a: str, b: str) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """A's and B's readings as benchmark -> runs dicts (same keys, same order)."""
    pairing = ds.pair(a, b)
    return (
        dict(zip(pairing.benchmarks, pairing.a, strict=True)),
        dict(zip(pairing.benchmarks, pairing.b, strict=True)),
    )


def cmd_hpt(args: argparse.Namespace) -> int:
    """Hierarchical Performance Testing and r-speedup of A over B (docs/methods.md §8)."""
    ds = load_dataset(args)
    doc = _header(ds, "hpt", args)
    suite_a, suite_b = _suites(ds, args.a, args.b)
    higher = ds.direction == "higher_is_better"
    result = call_stats(
        "hpt", "hpt", suite_a, suite_b, higher, args.alpha_benchmark, alpha=args.alpha
    )
    speedup = call_stats(
        "r-speedup",
        "r_speedup",
        suite_a,
        suite_b,
        r=args.r,
        higher_is_better=higher,
        alpha_benchmark=args.alpha_benchmark,
    )
    hpt: HptDoc = {
        **doc,
        "a": args.a,
        "b": args.b,
        "r": args.r,
        "hpt": as_dict(result),
        "r_speedup": as_dict(speedup),
    }
    return _emit(hpt, args, views.render_hpt)


def cmd_resample(args: argparse.Namespace) -> int:
    """Randomization test, bootstrap CI of the gmean ratio, runs for a CI width (§9)."""
    ds = load_dataset(args)
    doc = _header(ds, "resample", args)
    suite_a, suite_b = _suites(ds, args.a, args.b)
    test = call_stats(
        "randomization test",
        "randomization_test",
        suite_a,
        suite_b,
        n_permutations=args.resamples,
        seed=args.seed,
        center=args.center,
    )
    ci = call_stats(
        "bootstrap CI",
        "gmean_ratio_ci",
        suite_a,
        suite_b,
        confidence=args.confidence,
        n_resamples=args.resamples,
        seed=args.seed,
        center=args.center,
    )
    size = None
    if args.ci_width is not None:
        size = call_stats(
            "runs for CI width",
            "runs_for_ci_width",
            suite_a,
            suite_b,
            args.ci_width,
            confidence=args.confidence,
            seed=args.seed,
            center=args.center,
        )
    resampled: ResampleDoc = {
        **doc,
        "a": args.a,
        "b": args.b,
        "center": args.center,
        "seed": args.seed,
        "benchmarks": list(suite_a),
        "randomization": as_dict(test),
        "gmean_ratio_ci": as_dict(ci),
        "runs_for_ci_width": None if size is None else as_dict(size),
    }
    return _emit(resampled, args, views.render_resample)


def cmd_quantiles(args: argparse.Namespace) -> int:
    """Quantile regression of B vs A at the 5th..95th percentiles, per benchmark (§7)."""
    ds = load_dataset(args)
    doc = _header(ds, "quantiles", args)
    pairing = ds.pair(args.a, args.b)
    quantiles = {} if args.quantiles is None else {"quantiles": args.quantiles}
    results: list[QuantileItem] = []
    for name, xa, xb in zip(pairing.benchmarks, pairing.a, pairing.b, strict=True):
        fit = call_stats(
            f"quantile regression ({name})",
            "quantile_regression",
            xa,
            xb,
            seed=args.seed,
            confidence=args.confidence,
            n_boot=args.resamples,
            **quantiles,
        )
        results.append({"benchmark": name, "result": as_dict(fit)})
    fitted: QuantilesDoc = {
        **doc,
        "a": args.a,
        "b": args.b,
        "seed": args.seed,
        "benchmarks": results,
    }
    return _emit(fitted, args, views.render_quantiles)


# ------------------------------------------------------------------- parser
def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``benchrun analyze`` and its sub-commands."""
    parser = subparsers.add_parser(
        "analyze",
        help="statistics on data benchrun did not measure (CSV, hyperfine, pyperf, gbench)",
        description="Run benchrun's statistics on imported measurements. The input format "
        "is detected: long-form CSV (one reading per row, in time order), hyperfine "
        "--export-json, pyperf JSON, Google Benchmark --benchmark_format=json, or "
        "`benchrun export` (JSON or CSV: each workload estimated as its campaign's report "
        "estimated it). Each group's values are shown in one unit chosen from its mean; "
        "subsessions read q × n_q (n_q means of q readings).",
    )
    sub = parser.add_subparsers(dest="analysis", metavar="ANALYSIS", parser_class=OneLineParser)
    parser.set_defaults(func=lambda args: _no_analysis(parser))
    _register_summary(sub)
    _register_compare(sub)
    _register_speedup(sub)
    _register_hpt(sub)
    _register_resample(sub)
    _register_quantiles(sub)


def _register_summary(sub: argparse._SubParsersAction) -> None:
    """Add ``benchrun analyze summary``."""
    p = sub.add_parser("summary", help="per group: mean and median with CIs, spread, warm-up")
    add_common(p)
    add_warmup_option(p)
    p.set_defaults(func=cmd_summary)


def _register_compare(sub: argparse._SubParsersAction) -> None:
    """Add ``benchrun analyze compare``."""
    p = sub.add_parser("compare", help="rank the groups; is each neighbour really different?")
    add_common(p)
    add_warmup_option(p)
    p.add_argument(
        "--alpha", type=level, default=0.01, help="level of the Welch tests (default 0.01)"
    )
    p.add_argument(
        "--margin",
        type=positive,
        default=0.01,
        help="equivalence margin, relative to the better mean (default 0.01 = 1 %%)",
    )
    p.add_argument(
        "--max-pairs",
        type=pair_count,
        default=MAX_EFFECT_PAIRS,
        metavar="N",
        help="most pairwise effect sizes of the omnibus tests (JSON); with more pairs of "
        f"groups, only the ranking's neighbours (default {MAX_EFFECT_PAIRS})",
    )
    p.set_defaults(func=cmd_compare)


def _register_speedup(sub: argparse._SubParsersAction) -> None:
    """Add ``benchrun analyze speedup``."""
    p = sub.add_parser("speedup", help="Touati's Speedup-Test: is the candidate faster?")
    add_common(p)
    p.add_argument("--baseline", required=True, help="system of the initial version")
    p.add_argument("--candidate", required=True, help="system of the optimised version")
    p.add_argument("--alpha", type=level, default=0.05, help="risk level (default 0.05)")
    p.add_argument("--weights", metavar="FILE", help="CSV benchmark,weight for the overall speedup")
    p.add_argument(
        "--precision",
        type=level,
        default=0.05,
        help="half-width r wanted for the share of accelerated benchmarks (default 0.05)",
    )
    p.set_defaults(func=cmd_speedup)


def _register_hpt(sub: argparse._SubParsersAction) -> None:
    """Add ``benchrun analyze hpt``."""
    p = sub.add_parser("hpt", help="Hierarchical Performance Testing of A vs B (Chen et al.)")
    add_common(p)
    add_two_sides(p)
    p.add_argument(
        "--r", type=level, default=0.95, help="confidence wanted for the r-speedup (0.95)"
    )
    p.add_argument(
        "--alpha", type=level, default=0.05, help="level of the HPT verdict (default 0.05)"
    )
    p.add_argument(
        "--alpha-benchmark",
        type=level,
        default=None,
        help="level of the per-benchmark rank-sum tests (default 0.05, 0.10 below 5 runs)",
    )
    p.set_defaults(func=cmd_hpt)


def _register_resample(sub: argparse._SubParsersAction) -> None:
    """Add ``benchrun analyze resample``."""
    p = sub.add_parser(
        "resample", help="randomization test and bootstrap CI of the ratio of geometric means"
    )
    add_common(p)
    add_two_sides(p)
    p.add_argument(
        "--ci-width",
        type=positive,
        default=None,
        metavar="D",
        help="also find the runs per benchmark for a CI of the ratio no wider than D",
    )
    p.add_argument(
        "--center",
        choices=("mean", "median"),
        default="mean",
        help="per-benchmark statistic inside the geometric mean (default mean)",
    )
    p.add_argument(
        "--resamples", type=int, default=10_000, help="permutations / bootstrap resamples"
    )
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0: reproducible)")
    p.set_defaults(func=cmd_resample)


def _register_quantiles(sub: argparse._SubParsersAction) -> None:
    """Add ``benchrun analyze quantiles``."""
    p = sub.add_parser(
        "quantiles", help="quantile regression: how B shifts each percentile of A (5th..95th)"
    )
    add_common(p)
    add_two_sides(p)
    p.add_argument(
        "--quantiles",
        type=quantile_list,
        default=None,
        metavar="Q1,Q2,...",
        help="quantiles to fit (default 0.05,0.10,...,0.95)",
    )
    p.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples (1000)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0: reproducible)")
    p.set_defaults(func=cmd_quantiles)


def _no_analysis(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return 2
