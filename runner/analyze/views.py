"""Terminal views of ``benchrun analyze`` documents (rich tables, verdicts in words).

Each ``render_*`` function takes the JSON-able document a sub-command of
:mod:`runner.commands.analyze` built and prints it; nothing here computes a statistic, so
the table and ``--json`` can never disagree. A group's values are printed in one unit
chosen from its mean (:func:`runner.format.display_unit`); names are printed as they are
(``sum[n=100]`` is a name, not rich markup); subsessions read ``q × n_q`` (n_q means of q
readings), as in ``run``, ``show`` and the report.
"""

from __future__ import annotations

from typing import Literal

from rich.console import Console
from rich.table import Table

from benchrun.runner.analyze.documents import (
    CompareDoc,
    GroupRow,
    Header,
    HptDoc,
    QuantilesDoc,
    ResampleDoc,
    SpeedupDoc,
    SummaryDoc,
    SummaryJson,
)
from benchrun.runner.format import DisplayUnit, display_unit, format_percent
from benchrun.runner.ui.fit import Col, dropped_note, fit_table, output_width
from benchrun.runner.ui.terminal import SafeConsole


def _console() -> Console:
    # no markup: group names such as "sum[n=100]" are names, not rich tags
    # SafeConsole: names escaped for the terminal, rich's colours kept (runner/ui/terminal.py)
    console: Console = SafeConsole(highlight=False, markup=False)
    if not console.is_terminal:  # a file or a pipe: COLUMNS, else a terminal's, else 160
        console = SafeConsole(highlight=False, markup=False, width=output_width())
    return console


def num(value: float | bool | None, unit: str = "") -> str:
    """A number with 4 significant digits and its unit; '-' when missing."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        text = str(value)
    else:
        text = f"{value:.4g}"
    return f"{text} {unit}".rstrip() if unit else text


def shown(value: float | None, du: DisplayUnit, unit: bool = False) -> str:
    """A value of the data (in its file's unit) in the display unit ``du``: 4 significant
    digits, with the unit's label when ``unit``; '-' when missing."""
    if value is None:
        return "-"
    return du.text(value) if unit else num(du.scale(value))


def subsessions(q: int | None, n_q: int | None) -> str:
    """``q × n_q`` (n_q subsession means of q readings each), '-' without a choice."""
    return f"{q} × {n_q}" if q is not None and n_q is not None else "-"


def _display(doc: Header, row: GroupRow) -> DisplayUnit:
    """The display unit of one group (its row's ``display_unit``, chosen from its mean)."""
    du = row["display_unit"]
    return DisplayUnit(doc["unit"], du["label"], du["factor"])


def pval(value: float | None) -> str:
    """A p-value: 3 significant digits, '<1e-4' below that."""
    if value is None:
        return "-"
    return "<1e-4" if value < 1e-4 else f"{value:.3g}"


def peq(value: float | None) -> str:
    """'p = 0.0123' or 'p < 1e-4' for running text."""
    if value is None:
        return "p = -"
    return "p < 1e-4" if value < 1e-4 else f"p = {value:.3g}"


def interval(low: float | None, high: float | None, unit: str = "") -> str:
    """'[low, high] unit', or '-' when a bound is missing."""
    if low is None or high is None:
        return "-"
    return f"[{num(low)}, {num(high)}]" + (f" {unit}" if unit else "")


def _title(doc: Header, what: str) -> str:
    unit = f"measured in {doc['unit']}" if doc["unit"] else "no unit"
    better = "lower is better" if doc["direction"] == "lower_is_better" else "higher is better"
    return f"{what} - {doc['source']} ({doc['format']}, {unit}, {better})"


#: a terminal table of more rows shows its first and last MAX_TABLE_ROWS / 2 only
MAX_TABLE_ROWS = 40
#: notes and verdict sentences printed at most (the rest are counted)
MAX_LINES = 40
_ALL = "--json prints all of them"


def _visible(n: int, limit: int = MAX_TABLE_ROWS) -> tuple[list[int], int]:
    """Indices of the rows a terminal table shows (the first and last halves of ``limit``)
    and the number of rows left out between them."""
    if n <= limit:
        return list(range(n)), 0
    half = limit // 2
    return [*range(half), *range(n - half, n)], n - 2 * half


def _elision_cells(index: int, n: int, elided: int, width: int, at: int = 0) -> list[str] | None:
    """The marker row in place of the rows left out, due before row ``index`` (the first
    of the tail), of ``width`` cells: column ``at`` says how many, the others hold '...';
    None before any other row."""
    if not (elided and index == n - (n - elided) // 2):
        return None
    cells = ["..."] * width
    cells[at] = f"... {elided} more"
    return cells


def _elision_row(table: Table, index: int, n: int, elided: int, at: int = 0) -> None:
    """:func:`_elision_cells` added to ``table`` where it is due."""
    cells = _elision_cells(index, n, elided, len(table.columns), at)
    if cells is not None:
        table.add_row(*cells)


def _elision_note(console: Console, elided: int, n: int, what: str) -> None:
    if elided:
        console.print(f"  {elided} of {n} {what} not shown ({_ALL})")


def _lines(console: Console, lines: list[str], prefix: str, what: str) -> None:
    """Print at most :data:`MAX_LINES` of ``lines``, then how many were left out; each on
    one line of output (the terminal wraps it), so a long note does not grow the output."""
    for line in lines[:MAX_LINES]:
        console.print(f"{prefix}{line}", soft_wrap=True)
    if len(lines) > MAX_LINES:
        console.print(f"{prefix}... {len(lines) - MAX_LINES} more {what} ({_ALL})")


def _notes(console: Console, notes: list[str]) -> None:
    _lines(console, notes, "  note: ", "notes")


# ------------------------------------------------------------------------- speedup
def render_speedup(doc: SpeedupDoc) -> None:
    """Speedup-Test per benchmark, then overall speedup, gain and share (TOUATI §3-§4)."""
    console = _console()
    res = doc["result"]
    unit = doc["unit"]
    base, cand = doc["baseline"], doc["candidate"]
    table = Table(title=_title(doc, f"Speedup-Test: {cand} vs baseline {base}"))
    for column in (
        "benchmark",
        "n",
        f"mean {base}",
        f"mean {cand}",
        "speedup (mean)",
        "mean verdict",
        "speedup (median)",
        "median verdict",
        "speedup (min, observed)",
    ):
        table.add_column(column, justify="left" if "verdict" in column else "right")
    for name, r in res["benchmarks"].items():
        du = display_unit(unit, r["mean_x"])
        table.add_row(
            name,
            f"{r['n_x']}/{r['n_y']}",
            shown(r["mean_x"], du, unit=True),
            shown(r["mean_y"], du, unit=True),
            num(r["speedup_mean"]),
            _verdict(r["mean_verdict"], r["mean_warning"], r["mean_p"]),
            num(r["speedup_median"]),
            _verdict(r["median_verdict"], r["median_warning"], r["median_p"]),
            num(r["speedup_min"]),
        )
    console.print(table)
    console.print(
        f"Overall speedup of means {num(res['overall_speedup_mean'])} "
        f"(gain {format_percent(res['gain_mean'])}); of medians {num(res['overall_speedup_median'])} "
        f"(gain {format_percent(res['gain_median'])})"
        + (" with weights from " + doc["weights_file"] if doc["weights_file"] else "")
    )
    for key in ("share_mean", "share_median"):
        s = res[key]
        console.print(
            f"Significantly accelerated ({s['statistic']}): {s['a']} of {s['b']} benchmarks "
            f"= {format_percent(s['proportion'])}, {format_percent(s['confidence'])} CI "
            f"[{format_percent(s['ci_low'])}, {format_percent(s['ci_high'])}]"
            + ("" if s["valid"] else " (CI may not be valid: a(1-a/b) <= 5)")
            + f"; {s['benchmarks_needed']} benchmarks needed for +/- {format_percent(s['precision'])}"
        )
    console.print(
        f"alpha = {res['alpha']}; the speedup of the minimum is observed only, never tested "
        "(TOUATI)."
    )
    _notes(console, doc["notes"])


def _verdict(verdict: str, warning: bool, p: float | None) -> str:
    text = verdict
    if p is not None and verdict != "not enough data":
        text += f" ({peq(p)})"
    if warning:
        text += " *confidence may not hold*"
    return text


# ----------------------------------------------------------------------------- HPT
def render_hpt(doc: HptDoc) -> None:
    """HPT per-benchmark table, confidence, r-speedup and gmean speedup (CHEN §IV)."""
    console = _console()
    res, rs = doc["hpt"], doc["r_speedup"]
    unit = doc["unit"]
    a, b = doc["a"], doc["b"]
    names = {"A": a, "B": b, "tie": "tie"}
    table = Table(title=_title(doc, f"HPT: does {a} outperform {b}?"))
    for column in (
        "benchmark",
        "runs",
        f"median {a}",
        f"median {b}",
        "rank-sum p",
        "winner",
        "d (score)",
        "rank",
    ):
        table.add_column(column, justify="left" if column == "winner" else "right")
    for row in res["benchmarks"]:
        du = display_unit(unit, row["median_a"])
        table.add_row(
            row["benchmark"],
            f"{row['n_a']}/{row['n_b']}",
            shown(row["median_a"], du, unit=True),
            shown(row["median_b"], du, unit=True),
            pval(row["p_value"]) + f" ({row['method']})",
            names.get(row["winner"], row["winner"]),
            num(row["d"]),
            num(row["rank"]),
        )
    console.print(table)
    level = 1 - res["alpha"]
    if res["winner"] == "A":
        verdict = f"{a} outperforms {b} with confidence {res['confidence']:.4f}"
    elif res["winner"] == "B":
        verdict = f"{b} outperforms {a} with confidence {res['confidence_b']:.4f}"
    else:
        verdict = f"neither system outperforms the other at confidence {level:g}"
    console.print(f"Verdict: {verdict}.")
    console.print(
        f"Confidence that {a} outperforms {b}: {res['confidence']:.4f} "
        f"({b} over {a}: {res['confidence_b']:.4f}); R_A = {num(res['r_a'])}, "
        f"R_B = {num(res['r_b'])}, signed-rank {res['method']}; "
        f"{res['wins_a']} wins for {a}, {res['wins_b']} for {b}, {res['ties']} ties; "
        f"scores: {res['score']}."
    )
    if rs["gamma"] is not None:
        console.print(
            f"r-speedup: {a} is at least {rs['gamma_grid']:.2f}x better than {b} with "
            f"confidence {rs['r']:g} (0.01 grid; bisection {rs['gamma']:.6g} "
            f"+/- {num(rs['precision'])})."
        )
    else:
        console.print(f"r-speedup: none at confidence {rs['r']:g}.")
    console.print(
        f"Geometric-mean speedup of medians: {num(rs['gmean_speedup'])}x, which HPT "
        f"supports only with confidence {rs['gmean_confidence']:.4f} (CHEN Table IV: the "
        "single number overclaims when this is low)."
    )
    _notes(console, doc["notes"] + res["notes"] + rs["notes"])


# ------------------------------------------------------------------------ resample
def render_resample(doc: ResampleDoc) -> None:
    """Randomization test, bootstrap CI of the gmean ratio, runs for a width (WANG)."""
    console = _console()
    a, b = doc["a"], doc["b"]
    test, ci, size = doc["randomization"], doc["gmean_ratio_ci"], doc["runs_for_ci_width"]
    console.print(_title(doc, f"Resampling: {a} vs {b}"), style="bold")
    console.print(f"Benchmarks: {', '.join(doc['benchmarks'])}")
    ratio = ci["estimate"]
    meaning = ""
    if ratio is not None:
        larger = ratio > 1
        if doc["direction"] == "lower_is_better":
            meaning = f" ({a} {'slower' if larger else 'faster'} than {b})"
        else:
            meaning = f" ({a} {'better' if larger else 'worse'} than {b})"
    console.print(
        f"Ratio of geometric means of {doc['center']}s, {a}/{b}: {num(ratio)}{meaning}; "
        f"{format_percent(ci['confidence'])} CI "
        + (
            interval(ci["low"], ci["high"])
            if ci["low"] is not None and ci["high"] is not None
            else "not available (see notes)"
        )
        + f" ({ci['method']})"
    )
    kind = "exact" if test["exact"] else f"{test['n_permutations']} random permutations"
    same = "differ" if test["p_value"] < 1 - doc["confidence"] else "cannot be told apart"
    console.print(
        f"Randomization test (labels permuted within each benchmark, {kind}): "
        f"{peq(test['p_value'])} -> {a} and {b} {same} at level "
        f"{1 - doc['confidence']:.3g}"
    )
    if size is not None:
        if size["m"] is not None:
            console.print(
                f"Runs per benchmark and system for a CI no wider than {size['width']:g}: "
                f"{size['m']} (first crossing; {size['m_available']} available)"
            )
        else:
            extra = (
                f"; about {size['extrapolated_m']} estimated by the 1/sqrt(m) law"
                if size["extrapolated_m"]
                else ""
            )
            console.print(
                f"Width {size['width']:g} not reached with the {size['m_available']} runs "
                f"available{extra}"
            )
    notes = doc["notes"] + test["notes"] + ci["notes"]
    if size is not None:
        notes += size["notes"]
    _notes(console, notes)


def _overflow(column: str) -> Literal["fold", "ellipsis"]:
    """How a cell too wide for the terminal is shown: group and pair names fold onto more
    lines (cut with an ellipsis, ``sum[n=1000000]`` and ``sum[n=1000001]`` would look
    alike); other cells keep rich's ellipsis."""
    return "fold" if column in ("group", "pair") else "ellipsis"


# ------------------------------------------------------------------------- summary


def _ci_verdict(s: SummaryJson) -> str:
    """What the Diagnostics table says of a group's CI: certified (its subsession means were
    shown independent), shown but not certified (the interval marked *, widened for the
    correlation time it assumes), or none."""
    if s["enough_data"] and s["ci_low"] is not None:
        return "certified"
    if s["interval_low"] is not None:
        return "not certified (*)"
    return "none: too few readings"


def _summary_columns(conf: str) -> tuple[list[Col], list[Col]]:
    """The summary table's columns and the diagnostics table's, by priority (at a narrow
    width the least needed are left out and named, runner/ui/fit.py); ``conf``: the
    confidence as text."""
    cols = [
        Col("group", "left", fold=True),
        Col("n", "right"),
        Col("warm-up", "right", 9),
        Col("mean", "right"),
        Col(f"{conf} CI of mean", "right"),
        Col("median", "right", 4),
        Col(f"{conf} CI of median", "right", 10),
        Col("std", "right", 5),
        Col("CoV", "right", 3),
        Col("min", "right", 8),
        Col("q1", "right", 11),
        Col("q3", "right", 11),
        Col("max", "right", 8),
        Col("p90", "right", 11),
        Col("p99", "right", 12),
        Col("unit", "left"),
    ]
    dcols = [
        Col("group", "left", fold=True),
        Col("q × n_q", "right"),
        Col("lag-1 r", "right", 4),
        Col("ESS", "right", 3),
        Col("Shapiro-Wilk p", "right", 5),
        Col("Tukey outliers", "right", 6),
        Col("deterministic", "right", 7),
        Col("CI", "left"),
    ]
    return cols, dcols


def _summary_cells(
    doc: SummaryDoc, row: GroupRow, s: SummaryJson
) -> tuple[list[str], list[str], bool]:
    """One group's cells in the summary and the diagnostics tables (``s``: its summary),
    and whether its interval is starred (not certified: docs/methods.md §4.1)."""
    marked = False
    du = _display(doc, row)

    def v(value: float | None) -> str:
        return shown(value, du)

    ci = interval(du.scale(s["ci_low"]), du.scale(s["ci_high"]))
    if s["ci_low"] is None and s["interval_low"] is not None:
        # the interval every output prints without a certified CI (docs/methods.md §4.1)
        ci = interval(du.scale(s["interval_low"]), du.scale(s["interval_high"])) + " *"
        marked = True
    name = row["name"]
    row_cells = [
        name,
        str(s["n"]),
        str(s["warmup_readings"]),
        v(s["mean"]),
        ci,
        v(s["median"]),
        interval(du.scale(s["median_ci_low"]), du.scale(s["median_ci_high"])),
        v(s["std"]),
        format_percent(s["cov"]),
        v(s["min"]),
        v(s["q1"]),
        v(s["q3"]),
        v(s["max"]),
        v(s["p90"]),
        v(s["p99"]),
        du.label or "-",
    ]
    row_dcells = [
        name,
        subsessions(s["subsession_size"], s["n_subsessions"]),
        num(s["autocorrelation_lag1"]),
        num(s["ess"]),
        pval(s["normality_p"]),
        num(s["outliers"]),
        num(s["deterministic"]),
        _ci_verdict(s),
    ]
    return row_cells, row_dcells, marked


def render_summary(doc: SummaryDoc) -> None:
    """Location with CIs, spread and diagnostics per group (docs/methods.md §1-§5)."""
    console = _console()
    conf = format_percent(doc["confidence"])
    cols, dcols = _summary_columns(conf)
    cells: list[list[str]] = []
    dcells: list[list[str]] = []
    notes: list[str] = []
    marked = False
    rows = doc["groups"]
    visible_rows, elided = _visible(len(rows))
    visible = set(visible_rows)
    for i, row in enumerate(rows):
        s = row["summary"]
        if s is None:
            notes.append(f"{row['name']}: {row['error']}")
        else:
            notes.extend(f"{row['name']}: {note}" for note in s["notes"])
        if i not in visible:
            continue
        marker = _elision_cells(i, len(rows), elided, len(cols))
        if marker is not None:
            cells.append(marker)
            dcells.append(marker[: len(dcols)])
        name = row["name"]
        if s is None:
            cells.append([name, str(row["readings"]), *["-"] * 14])
            dcells.append([name, *["-"] * 7])
            continue
        row_cells, row_dcells, starred = _summary_cells(doc, row, s)
        cells.append(row_cells)
        dcells.append(row_dcells)
        marked = marked or starred
    width = console.width
    table, dropped = fit_table(console, width, cols, cells, title=_title(doc, "Summary"))
    diag, ddropped = fit_table(console, width, dcols, dcells, title="Diagnostics")
    console.print(table)
    console.print(diag)
    for note in (dropped_note(dropped + ddropped, width, "--json shows them"),):
        if note:
            console.print(note, soft_wrap=True)
    _elision_note(console, elided, len(rows), "groups")
    console.print(
        f"Warm-up: {doc['warmup']}. CIs of the mean are Student t over subsession means "
        "(q × n_q: n_q means of q readings each); median CIs are order-statistic intervals. "
        "Each group's values are in its unit column."
        + (
            " *: independence not certified: the interval assumes the correlation time "
            "the notes name (docs/methods.md §4.1)."
            if marked
            else ""
        )
    )
    _notes(console, doc["notes"] + notes)


# ------------------------------------------------------------------------- compare
_VERDICT_WORDS = {
    "separated": "{b} is {rel} {worse} than {a}: separated",
    "equivalent": "{a} and {b} are equivalent within the margin",
    "undecided": "{a} vs {b}: undecided, need about {n} subsession means each",
}


def _print_ranking(console: Console, doc: CompareDoc, units: dict[str, DisplayUnit]) -> None:
    """The ranking table of ``analyze compare`` (best first), long rankings elided."""
    rank = doc["ranking"]
    conf = format_percent(doc["confidence"])
    table = Table(title=_title(doc, "Ranking, best first"))
    for column in ("#", "group", "mean", f"{conf} CI", "q × n_q"):
        table.add_column(
            column, justify="left" if column == "group" else "right", overflow=_overflow(column)
        )
    # the ranked groups are those with a summary
    groups = {row["name"]: s for row in doc["groups"] if (s := row["summary"]) is not None}
    n_ranked = len(rank["names"])
    ranked, elided = _visible(n_ranked)
    for i in ranked:
        _elision_row(table, i, n_ranked, elided, at=1)
        name, s = rank["names"][i], groups[rank["names"][i]]
        du = units[name]
        table.add_row(
            str(i + 1),
            name,
            shown(rank["estimates"][i], du, unit=True),
            interval(du.scale(rank["ci_low"][i]), du.scale(rank["ci_high"][i]), du.label),
            subsessions(s["subsession_size"], s["n_subsessions"]),
        )
    console.print(table)
    _elision_note(console, elided, n_ranked, "groups")


def render_compare(doc: CompareDoc) -> None:
    """Ranking (best first), adjacent-pair verdicts and the omnibus tests (§6-§7)."""
    console = _console()
    rank = doc["ranking"]
    units = {row["name"]: _display(doc, row) for row in doc["groups"]}
    _print_ranking(console, doc, units)
    pairs = Table(title="Adjacent pairs")
    for column in (
        "pair",
        "verdict",
        "difference",
        "Welch p",
        "Holm p",
        "TOST p",
        "CIs overlap",
        "effect size d [CI]",
        "n needed",
    ):
        pairs.add_column(
            column,
            justify="left" if column in ("pair", "verdict") else "right",
            overflow=_overflow(column),
        )
    worse = "slower/costlier" if doc["direction"] == "lower_is_better" else "lower"
    sentences: list[str] = []
    n_pairs = len(rank["pairs"])
    pairs_shown, pairs_elided = _visible(n_pairs)
    for i in pairs_shown:
        p = rank["pairs"][i]
        es = p["effect_size_ci"]
        _elision_row(pairs, i, n_pairs, pairs_elided)
        pairs.add_row(
            f"{p['a']} vs {p['b']}",
            p["verdict"],
            shown(p["difference"], units[p["a"]], unit=True)
            + (
                f" ({format_percent(p['relative_difference'])})"
                if p["relative_difference"] is not None
                else ""
            ),
            pval(p["welch_p"]),
            pval(p["welch_p_holm"]),
            pval(p["tost_p"]),
            num(p["ci_overlap"]),
            "-"
            if p["effect_size"] is None
            else f"{num(p['effect_size'])} {interval(es['d_ci_low'], es['d_ci_high'])}",
            num(p["required_n"]),
        )
    for p in rank["pairs"]:
        rel = (
            format_percent(abs(p["relative_difference"]))
            if p["relative_difference"] is not None
            else ""
        )
        sentences.append(
            _VERDICT_WORDS[p["verdict"]].format(
                a=p["a"], b=p["b"], rel=rel, worse=worse, n=num(p["required_n"])
            )
        )
    console.print(pairs)
    _elision_note(console, pairs_elided, n_pairs, "pairs")
    _lines(console, sentences, "  ", "verdicts")
    console.print(
        f"alpha = {doc['alpha']} (Welch, Holm-corrected over {len(rank['pairs'])} adjacent "
        f"pairs); equivalence margin +/- {format_percent(doc['margin'])} of the better mean (TOST)."
    )
    om = doc["omnibus"]
    for key in ("anova", "kruskal_wallis"):
        o = om[key]
        stat = "F" if key == "anova" else "H"
        console.print(
            f"{o['test']} on {om['on']}: {stat} = {num(o['statistic'])}, "
            f"{peq(o['p_value'])} over {o['k']} groups"
        )
    notes = list(doc["notes"]) + list(rank["notes"])
    notes += [f"{e['name']} left out: {e['reason']}" for e in doc["excluded"]]
    notes += [f"{p['a']} vs {p['b']}: {n}" for p in rank["pairs"] for n in p["notes"]]
    notes += [f"{om[k]['test']}: {n}" for k in ("anova", "kruskal_wallis") for n in om[k]["notes"]]
    _notes(console, notes)


# ----------------------------------------------------------------------- quantiles
def render_quantiles(doc: QuantilesDoc) -> None:
    """Per benchmark: B - A at each quantile with its bootstrap CI (HOEFLER Rule 8)."""
    console = _console()
    unit = doc["unit"]
    a, b = doc["a"], doc["b"]
    lower = doc["direction"] == "lower_is_better"
    notes = list(doc["notes"])
    for item in doc["benchmarks"]:
        r = item["result"]
        title = _title(doc, f"Quantile regression, {item['benchmark']}: {b} minus {a}")
        table = Table(title=title)
        known = [v for v in r["intercept"] if v is not None]
        du = display_unit(unit, known[len(known) // 2] if known else None)
        for column in (
            "quantile",
            f"{a}",
            f"{b} - {a}",
            f"{format_percent(r['confidence'])} CI",
            "relative",
            "reading",
        ):
            table.add_column(column, justify="left" if column == "reading" else "right")
        for q, base, eff, lo, hi in zip(
            r["quantiles"], r["intercept"], r["effect"], r["ci_low"], r["ci_high"], strict=True
        ):
            if lo is not None and hi is not None and (lo > 0 or hi < 0):
                up = lo > 0
                word = ("slower" if up else "faster") if lower else ("higher" if up else "lower")
                reading = f"{b} {word}"
            else:
                reading = "no clear shift"
            rel = format_percent(eff / base) if base not in (None, 0) and eff is not None else "-"
            table.add_row(
                f"{q:g}",
                shown(base, du, unit=True),
                shown(eff, du, unit=True),
                interval(du.scale(lo), du.scale(hi), du.label),
                rel,
                reading,
            )
        console.print(table)
        notes += [f"{item['benchmark']}: {n}" for n in r["notes"]]
        method = r["method"]
    console.print(
        f"Fits: {method}; CIs: percentile bootstrap with {doc['benchmarks'][0]['result']['n_boot']}"
        f" resamples (seed {doc['seed']})."
    )
    _notes(console, notes)
