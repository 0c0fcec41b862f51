"""What a duet campaign's checks found, from its events (docs/duet.md): the asymmetry
check (``duet-asymmetry``) and a side that used more than one CPU (``duet-multi-cpu``),
for ``show``, ``run --json`` and the report."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from benchrun.runner.control.duet_asymmetry import ASYMMETRY_EVENT, MULTI_CPU_EVENT
from benchrun.runner.store.database import EventRow

__all__ = ["duet_summary", "duet_lines"]


def duet_summary(events: Sequence[EventRow]) -> dict[str, Any] | None:
    """The newest asymmetry check (its event's data and ``message``) and every
    multi-CPU stop or warning of the campaign; None when it has neither (no duet, or one
    without solo passes that ran through)."""
    check = None
    multi = []
    for e in events:
        if e.kind == ASYMMETRY_EVENT:
            check = {**(e.data or {}), "message": e.message}
        elif e.kind == MULTI_CPU_EVENT:
            multi.append({**(e.data or {}), "message": e.message})
    if check is None and not multi:
        return None
    return {"asymmetry": check, "multi_cpu": multi}


def duet_lines(summary: dict[str, Any] | None) -> list[str]:
    """Lines saying what :func:`duet_summary` holds: the asymmetry check's sentence, and
    when the duet verdict was refused (``asymmetry: refuse``) that it is invalid and what
    the solo passes give instead."""
    if not summary:
        return []
    lines = [str(m["message"]) + " (the campaign stopped here)" for m in summary["multi_cpu"]]
    check = summary.get("asymmetry")
    if check:
        lines.append(str(check["message"]))
        if check.get("verdict_valid") is False:
            a, b = check["pair"]
            lines.append(
                f"duet verdict INVALID (duet asymmetry: refuse): the pair interferes "
                f"asymmetrically; alone, in the solo passes, {b}/{a} = "
                f"{check['solo_ratio']:.4g} [{check['solo_low']:.4g}, "
                f"{check['solo_high']:.4g}] ({check['n_solo']} passes)"
            )
    return lines
