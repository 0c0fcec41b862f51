"""Contention marking of a stored round (docs/contention.md).

An ok round that waited for a CPU longer than ``settings.contended_threshold`` of its wall
time is flagged ``contended`` when it is stored; with ``contended: fail`` a steady one
stops the campaign, with the message :func:`contended_stop` builds. The wait itself is
measured by the executor (runner/execute/contention.py).
"""

from __future__ import annotations

import dataclasses

from benchrun.runner.config.experiment import Settings
from benchrun.runner.execute.contention import CONTENDED_FLAG, add_flag, is_contended
from benchrun.runner.execute.executor import RoundOutcome
from benchrun.runner.format import format_percent, format_value


def contended_stop(name: str, round_index: int, outcome: RoundOutcome, settings: Settings) -> str:
    """Why a campaign with ``contended: fail`` stops: the contended round, its wait and
    wall time, the share against ``contended_threshold`` (``settings``: the Settings)."""
    wait, wall = outcome.wait_ns or 0, outcome.wall_ns
    return (
        f"{name} round {round_index} was contended: it waited {format_value(wait / 1e9, 's')} "
        f"of its {format_value(wall / 1e9, 's')} for a CPU "
        f"({format_percent(wait / wall if wall else None, digits=2)} > contended_threshold "
        f"{format_percent(settings.contended_threshold, digits=2)}; {outcome.wait_source}) "
        "and contended: fail is set; quiet the machine or set contended: exclude"
    )


def mark_contended(
    name: str,
    round_index: int,
    outcome: RoundOutcome,
    flags: str,
    warmup: bool,
    settings: Settings,
) -> tuple[str, RoundOutcome, str | None]:
    """An ok round that waited for a CPU longer than ``settings.contended_threshold`` of its
    wall time (docs/contention.md): its ``flags`` with ``contended`` added, the outcome
    marked for the display, and why the campaign stops (``contended: fail``, a steady
    round); otherwise the three unchanged and None."""
    if not (
        outcome.status == "ok"
        and is_contended(outcome.wait_ns, outcome.wall_ns, settings.contended_threshold)
    ):
        return flags, outcome, None
    marked = dataclasses.replace(outcome, extra={**outcome.extra, CONTENDED_FLAG: True})
    stop = (
        contended_stop(name, round_index, outcome, settings)
        if settings.contended == "fail" and not warmup
        else None
    )
    return add_flag(flags, CONTENDED_FLAG), marked, stop
