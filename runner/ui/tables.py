"""The tables ``benchrun run`` ends with and ``benchrun show`` prints, fitted to the width.

Each is a rich renderable that lays itself out when printed, at the console's width
(:func:`runner.ui.fit.fit_table`): at 160 columns every column, at 80 the essential ones
with a line saying which were left out; long notes (why there is no CI, an interval whose
independence is not certified, a calibrated ``{work}``, the last failure) go under the
table instead of stretching a cell.

Every value of a workload's row is shown in its one display unit
(:attr:`runner.results.workloads.WorkloadResult.display`, chosen from the estimate's
mean), so "37.59 ms ± 1.991 ms" never sits beside a unit column saying "s".
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rich.console import Console, ConsoleOptions, RenderResult
from rich.markup import escape
from rich.text import Text

from benchrun.runner.format import (
    DisplayUnit,
    display_unit,
    format_number,
    format_percent,
    level_shift_words,
)
from benchrun.runner.results.estimate import Description
from benchrun.runner.results.metrics import MetricSummary
from benchrun.runner.results.verdicts import TEST_NAMES, StoredVerdicts, verdicts_from_dict
from benchrun.runner.results.workloads import WorkloadResult
from benchrun.runner.store.database import EventRow, RoundRow, WorkloadRow
from benchrun.runner.ui.fit import KEEP, Col, dropped_note, fit_table, natural_width, wrap_lines

#: ``{work}`` in a command, a hook or an environment value (``{{work}}`` is literal text)
_WORK = re.compile(r"(?<!\{)\{work\}(?!\})")

#: where the left-out columns are, said under a table that left some out
MORE = "COLUMNS=160 or --json shows them"


def group_digits(n: int, space: str = " ") -> str:
    """``10850778`` -> ``"10 850 778"`` (``space`` between groups of three digits)."""
    return f"{n:,}".replace(",", space)


@dataclass(frozen=True)
class WorkInfo:
    """The work amount (``{work}``) a workload's rounds ran with.

    Attributes
    ----------
    work : int
        The amount of its latest steady round (of any round when none is steady).
    file : int or None
        The experiment file's ``work:``.
    calibrated : bool
        ``work`` was chosen by calibration (a "calibrated" event: runner/campaign/calibrate.py).
    target_s : float or None
        The round time calibration aimed at, seconds.
    reached : bool or None
        Whether calibration reached ``target_s`` (None without calibration).
    low, high : int
        The smallest and largest amount of the steady rounds (equal unless it varied).
    """

    work: int
    file: int | None
    calibrated: bool
    target_s: float | None = None
    reached: bool | None = None
    low: int = 0
    high: int = 0

    def note(self, name: str) -> str | None:
        """The line under the results table when the work differs from the file's (a
        calibration) or varied between rounds; None when it is the file's value."""
        varied = ""
        if self.low != self.high:
            varied = f"; from {_num(self.low)} to {_num(self.high)} over the rounds"
        file = "no work: in the file" if self.file is None else f"file said {_num(self.file)}"
        used = f"{name}: work {_num(self.work)}"
        if self.calibrated:
            aim = f" for rounds of >= {self.target_s:.3g} s" if self.target_s else ""
            short = ", target not reached" if self.reached is False else ""
            if self.work == self.file and not varied and not short:
                return None  # calibration kept the file's amount: nothing to say
            return f"{used} (calibrated{aim}{short}; {file}{varied})"
        if varied or self.work != self.file:
            return f"{used} ({file}{varied})"
        return None

    def to_dict(self) -> dict[str, int | float | bool | None]:
        """JSON form: the amount used, the file's, whether calibrated and its target (s)."""
        return {
            "work": self.work,
            "file": self.file,
            "calibrated": self.calibrated,
            "target_s": self.target_s,
            "reached": self.reached,
            "low": self.low,
            "high": self.high,
        }


def _num(n: int) -> str:
    """A work amount in a note: digit groups joined by spaces it is never wrapped at."""
    return group_digits(n, KEEP)


@dataclass(frozen=True)
class Calibration:
    """What a "calibrated" event says (runner/campaign/adaptive.py): the workload, the work
    amount calibration chose, the round time it aimed at (seconds; None when not stored)
    and whether it reached it (None in events stored before that was recorded)."""

    workload: str
    work: int
    target_s: float | None
    reached: bool | None

    @classmethod
    def from_event(cls, data: object) -> Calibration | None:
        """The calibration of a stored event's data; None when it holds no work amount."""
        if not isinstance(data, Mapping) or "work" not in data:
            return None
        target = data.get("target_s")
        reached = data.get("reached")
        return cls(
            workload=str(data.get("workload")),
            work=int(data["work"]),
            target_s=float(target) if isinstance(target, int | float) else None,
            reached=None if reached is None else bool(reached),
        )


def _uses_work(spec: Mapping[str, object]) -> bool:
    """Whether a stored workload spec has ``{work}`` in its command, hooks or environment."""
    parts: list[object] = [spec.get("command"), spec.get("env")]
    parts += [spec.get(kind) for kind in ("setup", "prepare", "cleanup")]
    return bool(_WORK.search(repr(parts)))


def workload_works(
    workloads: Sequence[WorkloadRow], rounds: Iterable[RoundRow], events: Iterable[EventRow]
) -> dict[str, WorkInfo]:
    """The work amount of every workload of a campaign that has ``{work}`` (by name):
    read from its stored rounds (``round.work``), its spec's ``work`` (the file's value)
    and the "calibrated" events the adaptive loop stores (runner/campaign/adaptive.py)."""
    calibrated: dict[str, Calibration] = {}
    for e in events:
        if e.kind == "calibrated" and (cal := Calibration.from_event(e.data)) is not None:
            calibrated[cal.workload] = cal
    by_id: dict[int, list[RoundRow]] = {}
    for r in rounds:
        if r.work is not None and "calibration" not in r.flags.split(","):
            by_id.setdefault(r.workload_id, []).append(r)
    out: dict[str, WorkInfo] = {}
    for w in workloads:
        cal = calibrated.get(w.name)
        if cal is None and not _uses_work(w.spec):
            continue
        mine = by_id.get(w.id, [])
        steady = [r for r in mine if r.status == "ok" and not r.warmup] or mine
        file = w.spec.get("work")
        file = int(file) if isinstance(file, int) and not isinstance(file, bool) else None
        if steady:
            works = [int(r.work) for r in steady if r.work is not None]
            last = max(steady, key=lambda r: r.seq).work
            work = int(last) if last is not None else works[-1]
        elif cal is not None:
            works = [cal.work]
            work = works[0]
        elif file is not None:
            works, work = [file], file
        else:
            continue
        out[w.name] = WorkInfo(
            work=work,
            file=file,
            calibrated=cal is not None,
            target_s=cal.target_s if cal else None,
            reached=cal.reached if cal else None,
            low=min(works),
            high=max(works),
        )
    return out


def estimate_cell(r: WorkloadResult, du: DisplayUnit) -> tuple[str, str | None]:
    """(the mean ± half-width cell in ``du``, the note that goes under the table or None).

    The cell is :func:`runner.format.estimate_text` without its parenthesis:
    "24.73 ms ± 0.61 ms", marked " *" when the interval's independence is not certified
    (the note says what it assumes) or when it is the CI from node means (the note says
    so, with the F test), "24.73 ms (no CI)" without an interval (the note says how many
    readings it needs)."""
    e = r.estimate
    if e is None:
        return "-", None
    mean, lo, hi = e.mean, e.interval_low, e.interval_high
    if lo is None or hi is None:
        shift = level_shift_words(e.level_shift_at, e.level_shift_change)
        if shift:
            return (
                f"{du.text(mean)} (no CI)",
                f"{r.name}: no CI: {shift}; the mean spans both levels (docs/methods.md §2.1)",
            )
        need = e.readings_needed
        why = f"need ~{need} readings, have {e.n}" if need else "not enough data"
        return f"{du.text(mean)} (no CI)", f"{r.name}: no CI: {why}"
    cell = f"{du.text(mean)} ± {du.text((hi - lo) / 2.0)}"
    note = e.interval_note
    if not e.certified and note:
        return cell + " *", f"* {r.name}: {note}"
    nodes = e.nodes
    if nodes and nodes.get("ci_from") == "nodes" and nodes.get("text"):
        return cell + " *", f"* {r.name}: {nodes['text']} (docs/methods.md §14)"
    return cell, None


def print_prose(console: Console, text: str) -> None:
    """Print a sentence (a drift line, how the campaign stopped): on a terminal wrapped at
    spaces to its width with a hanging indent; elsewhere (a pipe, a log) on one line, so
    that each stays one line for grep."""
    if console.is_terminal:
        for line in wrap_lines(text, console.width):
            console.print(line, markup=False, highlight=False, no_wrap=True, crop=False)
    else:
        console.print(text, markup=False, highlight=False, soft_wrap=True)


def note_lines(notes: Iterable[str], width: int) -> Iterator[Text]:
    """The notes under a table, each wrapped to ``width`` with a hanging indent."""
    for note in notes:
        for line in wrap_lines(note, width):
            yield Text(line, no_wrap=True)


class ResultsTable:
    """The end-of-run results: one row per workload (:func:`results_table`)."""

    def __init__(
        self,
        results: Sequence[WorkloadResult],
        confidence: float,
        works: Mapping[str, WorkInfo] | None = None,
    ) -> None:
        self.results = list(results)
        self.confidence = confidence
        self.works = dict(works or {})

    def layout(self, console: Console, width: int) -> tuple[Any, list[str]]:
        """The fitted table and the lines under it, for ``width`` columns."""
        pct = f"{self.confidence * 100:g} %"
        any_failed = any(r.failed for r in self.results)
        any_contended = any(r.contended for r in self.results)
        cols = [Col("workload", fold=True), Col(f"mean ± {pct} CI", "right")]
        if self.works:
            cols.append(Col("work", "right", drop=2))
        cols += [Col("q × n_q", "right", drop=5), Col("steady", "right", drop=4)]
        if any_failed:
            cols.append(Col("failed", "right", drop=3))
        if any_contended:
            cols.append(Col("contended", "right", drop=3))
        cols += [
            Col("median", "right", drop=7),
            Col("CoV", "right", drop=6),
            Col("min", "right", drop=9),
            Col("max", "right", drop=8),
        ]
        rows: list[list[str]] = []
        notes: list[str] = []
        for r in self.results:
            s = r.description or Description()
            e = r.estimate
            du = r.display
            cell, note = estimate_cell(r, du)
            if note:
                notes.append(note)
            cov = s.cov
            q, n_q = (e.q, e.n_q) if e is not None else (None, None)
            status = "" if r.status == "active" else f" [red]({escape(r.status)})[/]"
            row = [escape(r.name) + status, cell]
            if self.works:
                info = self.works.get(r.name)
                row.append("-" if info is None else group_digits(info.work))
            row += [
                f"{q} × {n_q}" if q is not None and n_q and cell != "-" else "-",
                str(r.steady),
            ]
            if any_failed:
                row.append(f"[red]{r.failed}[/]" if r.failed else "0")
            if any_contended:
                row.append(f"[yellow]{r.contended}[/]" if r.contended else "0")
            row += [
                du.text(s.median),
                "-" if cov is None else f"{cov * 100:.2f} %",
                du.text(s.min),
                du.text(s.max),
            ]
            rows.append(row)
        for r in self.results:
            info = self.works.get(r.name)
            line = None if info is None else info.note(r.name)
            if line:
                notes.append(line)
        table, dropped = fit_table(console, width, cols, rows)
        left_out = dropped_note(dropped, width, MORE)
        shown = {c.header for c in cols} - set(dropped)
        terms = [t for key, t in RESULTS_GLOSSARY if key in shown]
        glossary = [("; ".join(terms))] if terms else []
        return table, notes + ([left_out] if left_out else []) + glossary

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        table, notes = self.layout(console, options.max_width)
        yield table
        yield from note_lines(notes, options.max_width)


#: what the results table's less obvious columns mean, one line under it (issue 32)
RESULTS_GLOSSARY = (
    ("q × n_q", "q × n_q: the CI is over n_q means of q consecutive readings each (subsessions)"),
    ("steady", "steady: rounds analysed, after warm-up"),
)


def results_table(
    results: Sequence[WorkloadResult],
    confidence: float,
    works: Mapping[str, WorkInfo] | None = None,
) -> ResultsTable:
    """The end-of-run table: one row per workload (see runner/results/workloads.py).

    Mean ± half-width of the interval at ``confidence`` over subsession means
    (docs/methods.md §3-4; ``collected``), the work amount of workloads with ``{work}``
    (``works``, :func:`workload_works`), the subsession size q × the count n_q, the steady
    rounds, failures (when any), and descriptive statistics of the per-round values
    (``summary``): median, coefficient of variation, min, max. Every value in the
    workload's one display unit. Left out first at a narrow width: min, max, median, CoV,
    q × n_q, steady, failed, work (a line says which); the notes under the table say why
    an estimate has no CI, which intervals are not certified and which work amounts were
    calibrated.
    """
    return ResultsTable(results, confidence, works)


class CountsTable:
    """``show``'s rounds per workload; long statuses and the last failure under it."""

    def __init__(self, results: Sequence[WorkloadResult], states: Mapping[str, str]) -> None:
        self.results = list(results)
        self.states = dict(states)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = options.max_width
        cols = [
            Col("workload", fold=True),
            Col("rounds", "right", drop=1),
            Col("warm-up", "right", drop=3),
            Col("steady", "right", drop=2),
            Col("failed", "right"),
        ]
        any_contended = any(r.contended for r in self.results)
        if any_contended:
            cols.append(Col("contended", "right", drop=2))
        cols.append(Col("status"))
        rows = []
        notes = []
        for r in self.results:
            rows.append(
                [
                    escape(r.name),
                    str(r.rounds),
                    str(r.warmup),
                    str(r.steady),
                    f"[red]{r.failed}[/]" if r.failed else "0",
                    *([f"[yellow]{r.contended}[/]" if r.contended else "0"] * any_contended),
                    escape(self.states.get(r.name, r.status)),
                ]
            )
            if r.status_reason:
                notes.append(f"{r.name}: {self.states.get(r.name, r.status)}: {r.status_reason}")
            if r.last_failure:
                notes.append(f"{r.name}: last failure: {r.last_failure}")
        table, dropped = fit_table(console, width, cols, rows)
        yield table
        left_out = dropped_note(dropped, width, MORE)
        yield from note_lines(notes + ([left_out] if left_out else []), width)


def counts_table(results: Sequence[WorkloadResult], states: Mapping[str, str]) -> CountsTable:
    """``show``'s table of rounds per workload: rounds stored, warm-up, steady, failed and
    what each workload is (``states``: :func:`runner.results.workloads.workload_states`);
    the reason a workload stopped and its last failure go under the table."""
    return CountsTable(results, states)


class MetricsTable:
    """Every metric of each workload's ``metric:`` list side by side (docs/metrics.md)."""

    def __init__(self, summaries: Sequence[MetricSummary]) -> None:
        self.summaries = list(summaries)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = options.max_width
        cols = [
            Col("workload", fold=True),
            Col("metric"),
            Col("median", "right"),
            Col("mean", "right", drop=2),
            Col("CoV", "right", drop=1),
            Col("rounds", "right", drop=3),
            Col("source", fold=True, drop=1),
            Col("scope", fold=True, drop=2),
        ]
        rows = []
        for m in self.summaries:
            du = display_unit(m.unit, m.median)
            rows.append(
                [
                    escape(m.workload),
                    escape(m.metric + (" *" if m.deciding else "")),
                    escape(du.text(m.median)),
                    escape(du.text(m.mean)),
                    format_percent(m.cov, digits=2),
                    str(m.n),
                    escape(m.source),
                    escape(m.scope),
                ]
            )
        table, dropped = fit_table(console, width, cols, rows)
        yield Text("metrics (every metric of each workload's list; * decides)")
        yield table
        left_out = dropped_note(dropped, width, MORE)
        yield from note_lines([left_out] if left_out else [], width)


def metrics_table(summaries: Sequence[MetricSummary]) -> MetricsTable | None:
    """``show``'s and ``run``'s table of every metric of a ``metric:`` list (median, mean,
    CoV over the analysed rounds, source, scope); None when no round stored any (no
    workload has a list or a counter metric)."""
    return MetricsTable(summaries) if summaries else None


@dataclass(frozen=True)
class _Comparison:
    headline: str
    verdict: str
    test: str
    holm: str
    tost: str
    note: str


_STYLE = {"separated": "green", "equivalent": "cyan", "faster": "green", "slower": "red"}


#: the line under the comparisons: what its columns mean (issue 32: "Holm p", "TOST p 1"
#: appeared without a word)
VERDICT_GLOSSARY = (
    "p: the p-value of the test that separates the pair (a paired pair at its own looks: "
    "the signed-rank test on its per-pass ratios; else Welch's, Holm-adjusted over the "
    "group); TOST p: the equivalence test's (small: equivalent within the margin; near 1: "
    "far from it); each is compared with the level of the look that decided it"
)


class VerdictsTable:
    """The comparisons of a campaign (:func:`verdicts_table`)."""

    def __init__(self, doc: StoredVerdicts) -> None:
        self.doc = doc
        self.items: list[_Comparison] = []
        # baselines first, as in every output (the report's headline, the exports)
        for p in doc.baselines + doc.pairs:
            v = p.verdict
            note = "; ".join(p.notes)
            if v == "undecided" and p.rounds_needed:
                note = f"~{p.rounds_needed} more rounds"
            low, high = p.ratio_low, p.ratio_high
            if v == "undecided" and low is not None and high is not None and (low > 1 or high < 1):
                # the CI is at the campaign's confidence, the verdict's test at alpha spread
                # over the looks (docs/controller.md): say why they can disagree
                conf = doc.confidence
                level = f"{100 * conf:g} % " if conf else ""
                alpha = doc.alpha
                strict = f"alpha {alpha:g} over all looks" if alpha else "a stricter level"
                note = "; ".join(
                    x
                    for x in (
                        note,
                        f"the {level}CI excludes 1, but the test decides at {strict}",
                    )
                    if x
                )
            if v == "equivalent" and doc.margin is not None:
                note = f"within {100 * doc.margin:g} %"
            if p.independent_p is not None:
                note = "; ".join(x for x in (note, f"Welch p {p.independent_p:.3g}") if x)
            self.items.append(
                _Comparison(
                    headline=p.headline,
                    verdict=v,
                    test=TEST_NAMES.get(p.test or "", "-"),
                    holm=format_number(p.p_holm),
                    tost=format_number(p.tost_p),
                    note=note,
                )
            )

    def _table(self) -> Any:
        from rich.table import Table

        conf = self.doc.confidence
        ci = f"{100 * conf:g} % CI" if conf else "CI"
        table = Table(header_style="bold", title="comparisons")
        for col in (f"ratio [{ci}]", "verdict", "test", "p", "TOST p", "note"):
            table.add_column(col, no_wrap=True)
        for c in self.items:
            table.add_row(
                escape(c.headline),
                f"[{_STYLE.get(c.verdict, 'yellow')}]{c.verdict}[/]",
                c.test,
                c.holm,
                c.tost,
                escape(c.note),
            )
        return table

    def lines(self, width: int) -> Iterator[Text]:
        """The narrow form: a title, then per comparison its verdict and headline (wrapped
        at spaces to ``width``) and its test, p-values and note on the next line."""
        yield Text("comparisons:", style="bold")
        for c in self.items:
            first = True
            for line in wrap_lines(f"{c.verdict}: {c.headline}", width - 2, indent=2):
                text = Text("  ", no_wrap=True)
                if first:
                    text.append(c.verdict, style=_STYLE.get(c.verdict, "yellow"))
                    text.append(line[len(c.verdict) :])
                else:
                    text.append(line)
                first = False
                yield text
            detail = [f"{c.test} test" if c.test != "-" else "", f"p {c.holm}"]
            detail += [f"TOST p {c.tost}" if c.tost != "-" else "", c.note]
            for line in wrap_lines("; ".join(d for d in detail if d), width - 4, indent=2):
                yield Text("    " + line, no_wrap=True)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        table = self._table()
        if natural_width(console, table) <= options.max_width:
            yield table
        else:
            yield from self.lines(options.max_width)
        yield from note_lines([VERDICT_GLOSSARY], options.max_width)


def verdicts_table(doc: StoredVerdicts | Mapping[str, object]) -> VerdictsTable | None:
    """Comparisons of a campaign (the stored "verdicts" event, or a fixed campaign's
    computed ones: docs/methods.md §7, §6.4; docs/paired.md): the ratio headline with its
    CI first, then the verdict, the test that decided (paired or Welch) and its
    p-values; None when there is nothing to compare. Where the table is wider than the
    console, each comparison takes two lines instead (verdict and headline; test,
    p-values and note). ``doc``: the typed comparisons, or their stored form (read with
    :func:`runner.results.verdicts.verdicts_from_dict`)."""
    typed = doc if isinstance(doc, StoredVerdicts) else verdicts_from_dict(doc)
    if not typed.comparisons:
        return None
    return VerdictsTable(typed)
