"""What the user sees while a campaign runs: live progress on stderr.

On a terminal, a table that refreshes in place (:class:`RichDisplay`): one row per
workload with its rounds (``12/31`` in fixed mode; ``12/~49`` in adaptive mode, where
the total is the controller's estimate of the rounds it still needs and may move), its
CI half-width against the target, what it waits for and its last value, fitted to the
terminal's width like the results (runner/ui/fit.py); under it the elapsed time, the
estimated time left and the undecided pairs. It is redrawn by the runner between rounds,
at most every :data:`REFRESH_EVERY_S` (never by a thread of its own while a round runs,
whose rendering would hold the interpreter when the round ends and delay its measured
end). Elsewhere (a pipe, a CI log, the daemon's log) a plain line every
:data:`PLAIN_EVERY_S` seconds: elapsed time, rounds stored, what is still unmet, the time
left; and the messages (failures, verdicts, stopped workloads), one line each.

The end-of-run tables are runner/ui/tables.py's (re-exported here).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.live import Live
from rich.markup import escape
from rich.progress_bar import ProgressBar
from rich.text import Text

from benchrun.runner.execute.contention import CONTENDED_FLAG
from benchrun.runner.execute.executor import RoundOutcome
from benchrun.runner.format import display_unit, format_duration, format_percent
from benchrun.runner.ui.fit import Col, fit_table, output_width
from benchrun.runner.ui.terminal import SafeConsole, stdout_console

if TYPE_CHECKING:
    from benchrun.runner.control.decision import Decision
    from benchrun.runner.store.database import CampaignRow
    from benchrun.runner.ui.tables import (
        WorkInfo,
        counts_table,
        print_prose,
        results_table,
        verdicts_table,
        workload_works,
    )

#: names re-exported from runner/ui/tables.py, imported when first asked for: the tables
#: need the statistics (scipy), which `benchrun run` must not import before its first round
_TABLES = (
    "WorkInfo",
    "counts_table",
    "print_prose",
    "results_table",
    "verdicts_table",
    "workload_works",
)


def __getattr__(name: str) -> Any:
    if name in _TABLES:
        from benchrun.runner.ui import tables

        return getattr(tables, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "PLAIN_EVERY_S",
    "RichDisplay",
    "WorkInfo",
    "counts_table",
    "print_prose",
    "results_table",
    "stdout_console",
    "verdicts_table",
    "workload_works",
]

#: seconds between two plain progress lines when stderr is not a terminal
PLAIN_EVERY_S = 5.0
#: seconds between two redraws of the live table (4 a second), done between rounds
REFRESH_EVERY_S = 0.25
#: undecided pairs named under the live table (the others are counted)
SHOWN_PAIRS = 3


@dataclass
class _Row:
    """One workload's live state."""

    name: str
    unit: str
    done: int = 0  # rounds stored (warm-up and calibration included)
    total: int = 0  # the target: exact in fixed mode, the controller's estimate otherwise
    failed: int = 0
    #: rounds flagged contended (waited for a CPU, docs/contention.md)
    contended: int = 0
    last_value: float | None = None  # formatted when shown (not at every round)
    last_warmup: bool = False
    width: str = ""  # "±2.7 % / 10 % ✓"
    waiting: int = 0  # undecided pairs it is in
    finished: bool = False  # its conditions are met (or it was retired)

    @property
    def last(self) -> str:
        """The last value in its display unit ("warm-up 1.2 ms" for a warm-up round)."""
        if self.last_value is None:
            return ""
        text = display_unit(self.unit, self.last_value).text(self.last_value)
        return ("warm-up " if self.last_warmup else "") + text

    def rounds(self, estimate: bool) -> str:
        """``12/31``; ``12/~49`` for an estimated total; ``37`` once finished (adaptive)."""
        if estimate and self.finished:
            return str(self.done)
        return f"{self.done}/{'~' if estimate else ''}{max(self.total, self.done)}"


class RichDisplay:
    """Progress of a campaign (module docstring) for runner/campaign/fixed.py and
    runner/campaign/adaptive.py: the :class:`runner.campaign.session.Display` protocol.

    Parameters
    ----------
    units : dict of str to str
        The unit of each workload's values (its last value is shown in the unit
        :func:`runner.format.display_unit` picks for it).
    console : rich.console.Console, optional
        Where to write (default: stderr).
    quiet : bool
        Print nothing.
    clock : callable, optional
        Monotonic seconds (tests pass a fake one).
    every : float
        Seconds between two plain progress lines when the console is not a terminal.
    """

    def __init__(
        self,
        units: dict[str, str],
        console: Console | None = None,
        quiet: bool = False,
        *,
        clock: Callable[[], float] = time.monotonic,
        every: float = PLAIN_EVERY_S,
    ) -> None:
        self.console = stderr_console() if console is None else console
        self.units = units
        self.quiet = quiet
        self.interactive = self.console.is_terminal and not quiet
        self.clock = clock
        self.every = every
        self.rows: dict[str, _Row] = {}
        self.estimate = False  # adaptive: totals are estimates
        self.t0 = clock()
        self.last_line = self.t0
        self.eta_s: float | None = None
        self.undecided: list[str] = []
        self.unmet: str | None = None
        self.live: Live | None = None
        self.last_refresh = self.t0
        self.start_done = 0  # rounds stored before this run (a resume)

    # ------------------------------------------------------------------ protocol
    def start(self, campaign: CampaignRow, targets: dict[str, int], done: dict[str, int]) -> None:
        self.t0 = self.last_line = self.clock()
        from benchrun.runner.results.settings import campaign_settings

        self.estimate = bool(campaign_settings(campaign.settings).adaptive)
        self.start_done = sum(done.values())
        if not self.quiet:
            resumed = sum(done.values())
            extra = f", resuming after {resumed} stored rounds" if resumed else ""
            self.console.print(
                f"[bold]benchrun[/]: campaign {campaign.id} of [bold]{escape(campaign.name)}[/]"
                f" ({len(targets)} workloads{extra})"
            )
        for name, total in targets.items():
            self.rows[name] = _Row(name, self.units.get(name, ""), done.get(name, 0), total)
        if self.interactive:
            # refreshed by this thread between rounds (_refresh), never by rich's own thread
            # while a round runs: a render holding the GIL would delay the runner's wake-up
            # at the child's exit, and so the round's measured end
            self.live = Live(
                _LiveView(self), console=self.console, auto_refresh=False, transient=False
            )
            self.live.start(refresh=True)
            self.last_refresh = self.clock()

    def round_done(
        self, workload: str, outcome: RoundOutcome, value: float | None, warmup: bool
    ) -> None:
        row = self.rows.get(workload)
        if row is None:
            row = self.rows[workload] = _Row(workload, self.units.get(workload, ""))
        row.done += 1
        if outcome.status != "ok":
            row.failed += 1
        if outcome.extra.get(CONTENDED_FLAG):  # set by the campaign (runner/campaign/session.py)
            row.contended += 1
        if value is not None:
            row.last_value, row.last_warmup = value, warmup
        if self.live is not None:
            self._refresh()
        elif not self.quiet:
            self._tick()

    def show_decision(self, decision: Decision, eta_s: float | None) -> None:
        """After each adaptive pass (runner/campaign/adaptive.py): per workload the CI
        half-width now vs its target, the undecided pairs it waits for, the controller's
        estimate of its total rounds, and the estimated time to finish."""
        self.estimate = True
        self.eta_s = eta_s
        for name, w in decision.workloads.items():
            row = self.rows.get(name)
            if row is None:
                continue
            row.finished = bool(w.done or not w.active)
            row.total = row.done if row.finished else row.done + max(1, w.rounds_needed or 1)
            rel = w.rel_half_width
            width = "" if rel is None else f"±{100 * rel:.2g} %"
            # (low, high, ratio) of the paired comparisons with a ratio CI
            ratios = [
                (lo, hi, r)
                for p in decision.pairs
                if name in (p.a, p.b) and p.test == "paired"
                if (lo := p.ratio_low) is not None
                and (hi := p.ratio_high) is not None
                and (r := p.ratio) is not None
            ]
            if ratios and w.target is None:
                # a paired workload: what the stopping rule bounds is its ratios' CIs
                widest = max((hi - lo) / 2 / r for lo, hi, r in ratios)
                width = f"ratio ±{100 * widest:.2g} %"
            if w.target is not None and rel is not None:
                width += f" / {100 * w.target:.2g} %" + (" ✓" if rel <= w.target else "")
            row.width = width
            row.waiting = len(w.waiting_for) if not w.done else 0
        self.undecided = [f"{p.a}~{p.b}" for p in decision.pairs if p.verdict == "undecided"]
        reason = str(getattr(decision, "reason", "") or "")
        self.unmet = reason.removeprefix("continue: ") if not decision.stop else None
        if self.live is not None:
            self._refresh()
        else:
            self._tick()

    def message(self, text: str) -> None:
        if self.quiet:
            return
        if self.live is not None:
            self.live.console.print(f"[yellow]{escape(text)}[/]", soft_wrap=True)
        else:
            self.console.print(text, markup=False, highlight=False, soft_wrap=True)

    def stop(self) -> None:
        if self.live is not None:
            self.live.refresh()
            self.live.stop()
            self.live = None

    def _refresh(self, force: bool = False) -> None:
        """Redraw the live table, at most :data:`REFRESH_EVERY_S` after the last redraw."""
        now = self.clock()
        if self.live is not None and (force or now - self.last_refresh >= REFRESH_EVERY_S):
            self.last_refresh = now
            self.live.refresh()

    # ------------------------------------------------------------------ plain lines
    def _tick(self) -> None:
        """Print the plain progress line when the console is not a terminal and
        :attr:`every` seconds passed since the last one (or since the start)."""
        if self.quiet or self.interactive:
            return
        now = self.clock()
        if now - self.last_line < self.every:
            return
        self.last_line = now
        self.console.print(self.plain_line(now), markup=False, highlight=False, soft_wrap=True)

    def plain_line(self, now: float | None = None) -> str:
        """One line of progress for logs: "progress 0:15: 124 rounds stored (2 failed);
        unmet: ...; ~12s left" (adaptive) or "... 42 of 62 rounds stored; still to run:
        a 10, b 10; ~7s left" (fixed)."""
        now = self.clock() if now is None else now
        elapsed = now - self.t0
        rows = list(self.rows.values())
        done = sum(r.done for r in rows)
        failed = sum(r.failed for r in rows)
        contended = sum(r.contended for r in rows)
        parts = [f"progress {_clock(elapsed)}: {done} rounds stored"]
        eta = self.eta_s
        if not self.estimate:
            total = sum(max(r.total, r.done) for r in rows)
            parts[0] = f"progress {_clock(elapsed)}: {done} of {total} rounds stored"
            left = [r for r in rows if r.done < r.total]
            if left:
                shown = ", ".join(f"{r.name} {r.total - r.done}" for r in left[:4])
                more = f" and {len(left) - 4} more workloads" if len(left) > 4 else ""
                parts.append(f"still to run: {shown}{more}")
            ran = done - self.start_done  # rounds of this run (not of the one resumed)
            if ran > 0 and elapsed > 0:
                eta = max(0, total - done) * elapsed / ran
        elif self.unmet:
            parts.append(f"unmet: {self.unmet}")
        notes = [f"{failed} failed"] if failed else []
        if contended:
            notes.append(f"{contended} contended, {contended_share(contended, done)}")
        if notes:
            parts[0] += f" ({'; '.join(notes)})"
        if eta is not None:
            parts.append(f"~{format_duration(eta)} left (estimate)")
        return "; ".join(parts)


def contended_share(contended: int, stored: int) -> str:
    """``"12 % of rounds"``: the contended rounds as a share of the rounds stored."""
    return f"{format_percent(contended / stored if stored else None, digits=2)} of rounds"


def _clock(seconds: float) -> str:
    """``0:15``, ``12:03``, ``1:02:03``."""
    s = max(0, int(seconds))
    h, rest = divmod(s, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class _LiveView:
    """The live table of a :class:`RichDisplay`, laid out at each refresh for the
    terminal's width (runner/ui/fit.py): workload and rounds always, then the CI
    width, what it waits for, a bar and the last value as the width allows."""

    def __init__(self, display: RichDisplay) -> None:
        self.display = display

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        d = self.display
        width = options.max_width
        cols = [
            Col("workload", fold=True),
            Col("rounds", "right"),
            Col("CI half-width", drop=1),
            Col("", drop=2),
            Col("", drop=4),
            Col("last", "right", drop=3),
        ]
        rows: list[list[RenderableType]] = []
        for r in d.rows.values():
            if r.finished:
                state = "[green]done[/]"
            elif r.waiting:
                state = f"[yellow]waits: {r.waiting} pair{'s' if r.waiting > 1 else ''}[/]"
            else:
                state = ""
            if r.contended:
                share = contended_share(r.contended, r.done)
                state = f"[yellow]{r.contended} contended ({share})[/]" + (
                    f" {state}" if state else ""
                )
            if r.failed:
                state = f"[red]{r.failed} failed[/]" + (f" {state}" if state else "")
            total = max(r.total, r.done, 1)
            rows.append(
                [
                    escape(r.name),
                    r.rounds(d.estimate),
                    escape(r.width),
                    state,
                    ProgressBar(total=total, completed=min(r.done, total), width=12),
                    escape(r.last),
                ]
            )
        table, _ = fit_table(console, width, cols, rows)
        yield table
        foot = f"elapsed {_clock(d.clock() - d.t0)}"
        if d.eta_s is not None:
            foot += f", ~{format_duration(d.eta_s)} left (estimate)"
        if d.estimate:
            foot += "; rounds N/~T: T is the controller's estimate"
        contended = sum(r.contended for r in d.rows.values())
        if contended:
            done = sum(r.done for r in d.rows.values())
            share = contended_share(contended, done)
            foot += f"; {contended} rounds contended ({share}: they waited for a CPU)"
        yield Text(foot, style="dim")
        if d.undecided:
            more = len(d.undecided) - SHOWN_PAIRS
            shown = ", ".join(d.undecided[:SHOWN_PAIRS]) + (f" and {more} more" if more > 0 else "")
            yield Text(f"undecided: {shown}", style="yellow")


def stderr_console() -> Console:
    """A console for messages on stderr: the terminal's, or in a pipe or a file one that
    never wraps a line (``soft_wrap``), so a long path stays whole where it is pasted from;
    names in it are shown escaped (runner/ui/terminal.py :class:`SafeConsole`)."""
    console: Console = SafeConsole(stderr=True)
    if not console.is_terminal:
        console = SafeConsole(stderr=True, width=output_width(), soft_wrap=True)
    return console
