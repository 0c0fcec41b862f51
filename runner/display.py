"""What the user sees while a campaign runs: a live rich progress display on stderr.

One line per workload: rounds done of the target, failures, last value, elapsed time.
On a terminal it refreshes in place; elsewhere (CI logs, pipes) it stays quiet and only
the messages (failures, stopped workloads) are printed, one line each.
"""

from __future__ import annotations

import time

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

from runner.executor import RoundOutcome
from runner.store import CampaignRow


def format_value(value: float | None, unit: str) -> str:
    """A reading with its unit, seconds shown in s/ms/µs/ns (4 significant digits)."""
    if value is None:
        return "-"
    if unit == "s":
        a = abs(value)
        for scale, name in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns")):
            if a >= scale or scale == 1e-9:
                return f"{value / scale:.4g} {name}"
    return f"{value:.4g} {unit}".rstrip()


class RichDisplay:
    """Live per-workload progress for :func:`runner.campaign.run_fixed`."""

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
            TimeElapsedColumn(),
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
                workload=name,
                failed="",
                last="",
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

    def message(self, text: str) -> None:
        if not self.quiet:
            self.progress.console.print(f"[yellow]{text}[/]")

    def stop(self) -> None:
        self.progress.stop()


def results_table(results: list, confidence: float):  # list[WorkloadResult] -> rich Table
    """The end-of-run table: one row per workload (see runner/results.py).

    Mean ± half-width of the t-interval at ``confidence`` over subsession means of rounds
    (METHODS.md §3-4), median, coefficient of variation, min, max, counts and the unit.
    """
    from rich.table import Table

    pct = f"{confidence * 100:g} %"
    table = Table(title=None, header_style="bold")
    table.add_column("workload")
    table.add_column("steady", justify="right")
    table.add_column(f"mean ± {pct} CI", justify="right")
    table.add_column("median", justify="right")
    table.add_column("CoV", justify="right")
    table.add_column("min", justify="right")
    table.add_column("max", justify="right")
    table.add_column("failed", justify="right")
    table.add_column("unit")
    for r in results:
        s = r.summary or {}
        unit = r.unit
        mean = s.get("mean")
        if mean is None:
            ci = "-"
        elif s.get("ci_low") is not None and s.get("ci_high") is not None:
            half = (s["ci_high"] - s["ci_low"]) / 2
            ci = f"{format_value(mean, unit)} ± {format_value(half, unit)}"
        else:
            ci = f"{format_value(mean, unit)} (no CI)"
        cov = s.get("cov")
        table.add_row(
            r.name + ("" if r.status == "active" else f" [red]({r.status})[/]"),
            str(r.steady),
            ci,
            format_value(s.get("median"), unit),
            "-" if cov is None else f"{cov * 100:.2f} %",
            format_value(s.get("min"), unit),
            format_value(s.get("max"), unit),
            f"[red]{r.failed}[/]" if r.failed else "0",
            unit,
        )
    return table


def stdout_console() -> Console:
    """A console for results on stdout: the terminal's width, or 160 columns in a pipe or
    log file (rich's 80-column default would wrap every row of a results table)."""
    console = Console()
    if not console.is_terminal:
        console = Console(width=160)
    return console
