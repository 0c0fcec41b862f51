"""What the controller says after each pass: the one-line reason (stop or go on, and why)
and the events for what changed since the last pass (docs/controller.md "The loop")."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from benchrun.runner.control.core import NODES_DIFFER, ControllerCore
from benchrun.runner.control.decision import Event, WorkloadStatus
from benchrun.runner.control.status import Status
from benchrun.runner.format import format_percent
from benchrun.stats.multi import EQUIVALENT, SEPARATED

__all__ = ["change_events", "stop_reason"]


def stop_reason(
    c: ControllerCore,
    status: Status,
    rounds: Mapping[str, int],
    time_out: bool,
    elapsed: float,
    budget: bool = False,
    unmet_before: Sequence[str] = (),
) -> str:
    """One line: all conditions met, the budget that ended the campaign and what was
    unmet, or what the campaign still waits for. A budget stop never reads "met", even
    when the final look then decided every pair (it says so)."""
    p = c.params
    clock = max(rounds.values())
    unmet = status.unmet
    if budget and status.all_done:
        unmet = [
            f"{u} (before the final look, which then decided every pair)" for u in unmet_before
        ]
    if status.all_done and not budget:
        pairs = status.pairs
        n_sep = sum(1 for x in pairs if x.verdict == SEPARATED)
        n_eq = sum(1 for x in pairs if x.verdict == EQUIVALENT)
        width = (
            f" and CI half-width <= {format_percent(p.ci_rel_width, missing='n/a')}"
            if p.ci_rel_width is not None
            else ""
        )
        covered = [n for n in c.names if c.covered.get(n)]
        if covered and len(covered) == len(c.names):
            text = f"all conditions met after {clock} rounds: every comparison is paired, has enough passes{width.replace('CI', 'ratio CI')}"
        elif covered:
            text = f"all conditions met after {clock} rounds: every comparison and every unpaired workload has enough data{width}"
        else:
            text = f"all conditions met after {clock} rounds: every workload has enough data{width}"
        if pairs:
            n_paired = sum(1 for x in pairs if x.test == "paired")
            how = f", {n_paired} paired" if n_paired else ""
            text += f"; {len(pairs)} adjacent pair(s) decided ({n_sep} separated, {n_eq} equivalent within {format_percent(p.margin, missing='n/a')}{how})"
        if status.baselines:
            text += "; baseline comparisons decided"
        return text
    listing = "; ".join(unmet) if unmet else "nothing left that more rounds can decide"
    if time_out:
        return f"max_time {p.max_time:g} s reached after {elapsed:.0f} s; unmet: {listing}"
    if not status.active:
        out = [n for n in c.names if rounds[n] >= p.max_rounds]
        gone = [f"{n} ({why})" for n, why in c.retired.items()]
        if gone:
            listing = f"stopped: {', '.join(gone)}; {listing}"
        if out:
            return f"max_rounds {p.max_rounds} reached ({', '.join(out)}); unmet: {listing}"
        if any(why.startswith(NODES_DIFFER) for why in c.retired.values()):
            return f"no workload can make progress; unmet: {listing}"
        if not status.can_test:
            return f"alpha {p.alpha:g} spent at the final look; unmet: {listing}"
        return f"no workload can make progress; unmet: {listing}"
    nxt = c.schedule.next_look()
    at = f"; next look after {nxt} rounds" if nxt is not None else ""
    shown = "; ".join(unmet[:4]) + (f"; and {len(unmet) - 4} more" if len(unmet) > 4 else "")
    return f"continue: {shown}{at}"


def change_events(
    c: ControllerCore, status: Status, stop: bool, reason: str, early: bool
) -> list[Event]:
    """Events for what changed since the last call: data first (``early``, listed before
    any look of this call), then done/reopened workloads, allocation and the stop."""
    prev = c.prev
    events: list[Event] = []
    wl: Mapping[str, WorkloadStatus] = status.workloads
    if early:
        for n, w in wl.items():
            was = prev.enough.get(n, False)
            if w.enough and not was:
                msg = f"{n}: enough data (q = {w.q}, {w.n_q} subsession means of {w.n} readings)"
                events.append(Event("enough-data", msg, {"workload": n, "q": w.q, "n_q": w.n_q}))
            elif was and not w.enough:
                msg = f"{n}: no longer enough data ({'; '.join(w.unmet)})"
                events.append(Event("not-enough-data", msg, {"workload": n}))
        prev.enough = {n: w.enough for n, w in wl.items()}
        return events
    for n, w in wl.items():
        was_done = prev.done.get(n, False)
        if w.done and not was_done:
            how = (
                "its comparisons are paired and finished"
                if c.covered.get(n)
                else f"CI half-width {format_percent(w.rel_half_width, missing='n/a')}"
            )
            msg = f"{n}: done after {w.rounds} rounds ({how})"
            events.append(Event("workload-done", msg, {"workload": n, "rounds": w.rounds}))
        elif was_done and not w.done:
            why = "; ".join(list(w.unmet) + [f"{x} undecided" for x in w.waiting_for])
            msg = f"{n}: needs more data again ({why})"
            events.append(Event("workload-reopened", msg, {"workload": n}))
    active = [] if stop else list(status.active)
    if not stop and active != prev.active:
        idle = [n for n in c.names if n not in active]
        msg = f"rounds go to {', '.join(active)}" + (f" (not {', '.join(idle)})" if idle else "")
        events.append(Event("allocation", msg, {"active": active}))
    if stop and not prev.stopped:
        events.append(Event("stop", reason, {"state": c.state()}))
    prev.done = {n: w.done for n, w in wl.items()}
    prev.active = active
    prev.stopped = stop
    return events
