"""What the user sees while a campaign runs: a live rich progress display on stderr.

One line per workload: rounds done of the target, failures, last value, elapsed time.
On a terminal it refreshes in place; elsewhere (CI logs, pipes) it stays quiet and only
the messages (failures, stopped workloads) are printed, one line each.
"""

from __future__ import annotations

import time
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

from benchrun.runner.execute.executor import RoundOutcome
from benchrun.runner.format import format_duration, format_number, format_value
from benchrun.runner.store.database import CampaignRow


class RichDisplay:
    """Live per-workload progress for :func:`runner.campaign.fixed.run_fixed`."""

    def __init__(
        self, units: dict[str, str], console: Console | None = None, quiet: bool = False
    ) -> None:
        self.console = console or Console(stderr=True)
        self.units = units
        self.quiet = quiet
        self.live = self.console.is_terminal and not quiet
        self.progress = Progress(
            TextColumn("[bold]{task.fields[workload]}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[failed]}"),
            TextColumn("{task.fields[last]}"),
            TextColumn("{task.fields[width]}"),
            TextColumn("{task.fields[waiting]}"),
            TimeElapsedColumn(),
            TextColumn("{task.fields[eta]}"),
            console=self.console,
            disable=not self.live,
        )
        self.tasks: dict[str, TaskID] = {}
        self.failed: dict[str, int] = {}
        self.t0 = time.monotonic()

    def start(self, campaign: CampaignRow, targets: dict[str, int], done: dict[str, int]) -> None:
        if not self.quiet:
            resumed = sum(done.values())
            extra = f", resuming after {resumed} stored rounds" if resumed else ""
            self.console.print(
                f"[bold]benchrun[/]: campaign {campaign.id} of [bold]{campaign.name}[/]"
                f" ({len(targets)} workloads{extra})"
            )
        for name, total in targets.items():
            self.failed[name] = 0
            self.tasks[name] = self.progress.add_task(
                name,
                total=total,
                completed=min(done.get(name, 0), total),
                workload=escape(name),
                failed="",
                last="",
                width="",
                waiting="",
                eta="",
            )
        self.progress.start()

    def round_done(
        self, workload: str, outcome: RoundOutcome, value: float | None, warmup: bool
    ) -> None:
        task = self.tasks[workload]
        if outcome.status != "ok":
            self.failed[workload] += 1
        failed = self.failed[workload]
        self.progress.update(
            task,
            advance=1,
            failed=f"[red]{failed} failed[/]" if failed else "",
            last=("warm-up " if warmup else "") + format_value(value, self.units.get(workload, "")),
        )

    def show_decision(self, decision: Any, eta_s: float | None) -> None:
        """After each adaptive pass: per workload the CI half-width now vs its target, the
        undecided pairs it waits for, and the estimated time to finish (runner/campaign/adaptive.py).
        The bar's total becomes rounds done + rounds the controller still expects."""
        eta = "" if eta_s is None else f"~{format_duration(eta_s)} left"
        for name, w in decision.workloads.items():
            task = self.tasks.get(name)
            if task is None:
                continue
            done = self.progress.tasks[self.tasks[name]].completed
            if w.done or not w.active:
                total = done
            else:
                total = done + max(1, w.rounds_needed or 1)
            rel = w.rel_half_width
            width = "" if rel is None else f"CI ±{100 * rel:.2g} %"
            ratios = [
                p for p in decision.pairs
                if name in (p.a, p.b) and p.test == "paired" and p.ratio_low is not None
            ]  # fmt: skip
            if ratios and w.target is None:
                # a paired workload: what the stopping rule bounds is its ratios' CIs
                widest = max((p.ratio_high - p.ratio_low) / 2 / p.ratio for p in ratios)
                width = f"ratio CI ±{100 * widest:.2g} %"
            if w.target is not None and rel is not None:
                mark = "[green]✓[/]" if rel <= w.target else ""
                width += f" / {100 * w.target:.2g} %{mark}"
            waiting = f"[yellow]? {escape(', '.join(w.waiting_for))}[/]" if w.waiting_for else ""
            self.progress.update(
                task,
                total=total,
                width=width,
                waiting=waiting if not w.done else "[green]done[/]",
                eta=eta if w.active else "",
            )

    def message(self, text: str) -> None:
        if not self.quiet:
            self.progress.console.print(f"[yellow]{escape(text)}[/]", soft_wrap=True)

    def stop(self) -> None:
        self.progress.stop()


def results_table(results: list, confidence: float):  # list[WorkloadResult] -> rich Table
    """The end-of-run table: one row per workload (see runner/results/workloads.py).

    Mean ± half-width of the t-interval at ``confidence`` over subsession means (docs/methods.md
    §3-4; ``collected``), the subsession size q x the count n_q, and descriptive
    statistics of the per-round values (``summary``): median, coefficient of variation,
    min, max; counts and the unit.
    """
    from rich.table import Table

    pct = f"{confidence * 100:g} %"
    table = Table(title=None, header_style="bold")
    table.add_column("workload")
    table.add_column("steady", justify="right")
    table.add_column(f"mean ± {pct} CI", justify="right")
    table.add_column("q × n_q", justify="right")
    table.add_column("median", justify="right")
    table.add_column("CoV", justify="right")
    table.add_column("min", justify="right")
    table.add_column("max", justify="right")
    table.add_column("failed", justify="right")
    table.add_column("unit")
    for r in results:
        s = r.summary or {}
        c = getattr(r, "collected", None) or {}
        unit = r.unit
        mean = c.get("mean", s.get("mean"))
        subsessions = "-"
        if mean is None:
            ci = "-"
        elif c.get("ci_low") is not None and c.get("ci_high") is not None:
            half = (c["ci_high"] - c["ci_low"]) / 2
            ci = f"{format_value(mean, unit)} ± {format_value(half, unit)}"
            subsessions = f"{c['q']} × {c['n_q']}"
        else:
            need = c.get("readings_needed")
            why = f"need ~{need} readings, have {c.get('n')}" if need else "not enough data"
            ci = f"{format_value(mean, unit)} (no CI: {why})"
        cov = s.get("cov")
        table.add_row(
            escape(r.name) + ("" if r.status == "active" else f" [red]({r.status})[/]"),
            str(r.steady),
            ci,
            subsessions,
            format_value(s.get("median"), unit),
            "-" if cov is None else f"{cov * 100:.2f} %",
            format_value(s.get("min"), unit),
            format_value(s.get("max"), unit),
            f"[red]{r.failed}[/]" if r.failed else "0",
            unit,
        )
    return table


def verdicts_table(doc: dict[str, Any]):  # -> rich Table, or None when there is nothing
    """Comparisons of an adaptive campaign (the stored "verdicts" event: docs/methods.md §7,
    §6.4; docs/paired.md; runner/campaign/adaptive.py): the ratio with its CI first, then the verdict, the
    test that decided (paired or Welch) and its p-values."""
    from rich.table import Table

    from benchrun.runner.results.headline import pair_headline

    pairs, baselines = doc.get("pairs") or [], doc.get("baselines") or []
    if not pairs and not baselines:
        return None
    conf = doc.get("confidence")
    ci = f"{100 * conf:g} % CI" if conf else "CI"
    table = Table(header_style="bold", title="comparisons")
    for col in (f"ratio [{ci}]", "verdict", "test", "Holm p", "TOST p", "note"):
        table.add_column(col)

    units, directions = doc.get("units") or {}, doc.get("directions") or {}
    style = {"separated": "green", "equivalent": "cyan", "faster": "green", "slower": "red"}
    for p in list(pairs) + list(baselines):
        v = p["verdict"]
        note = "; ".join(p.get("notes") or [])
        if v == "undecided" and p.get("rounds_needed"):
            note = f"~{p['rounds_needed']} more rounds"
        if v == "equivalent" and doc.get("margin") is not None:
            note = f"within {100 * doc['margin']:g} %"
        if p.get("independent_p") is not None:
            note = "; ".join(x for x in (note, f"Welch p {p['independent_p']:.3g}") if x)
        table.add_row(
            escape(pair_headline(p, units, directions)),
            f"[{style.get(v, 'yellow')}]{v}[/]",
            {"paired": "paired", "welch": "Welch"}.get(p.get("test") or "", "-"),
            format_number(p.get("welch_p_holm")),
            format_number(p.get("tost_p")),
            note,
        )
    return table


def stdout_console() -> Console:
    """A console for results on stdout: the terminal's width, or 160 columns in a pipe or
    log file (rich's 80-column default would wrap every row of a results table)."""
    console = Console()
    if not console.is_terminal:
        console = Console(width=160)
    return console
