"""Which workloads get rounds next, and how many a comparison still needs.

A workload gets rounds while its own conditions are unmet, or while it waits for an
undecided comparison and holds at least ``allocation_share`` (1/3) of that comparison's
remaining uncertainty, measured as the variance a round removes, ``(s_q²/n_q)/rounds``
(the other side has it all if it is deterministic or out of budget); both sides of an
unfinished paired comparison run in every pass (docs/paired.md). The rounds a comparison
still needs come from the normal approximation at the level of its next look
(:func:`pair_need`, :func:`paired_need`, :func:`own_need`). Past ``max_rounds``, both
sides of a paired comparison that will decide within the time left keep running
(:func:`extended_workloads`). docs/controller.md "The stopping rule".
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from benchrun.runner.control.collector import WorkloadStats
from benchrun.runner.control.core import ControllerCore, Side
from benchrun.runner.control.pairlooks import first_look
from benchrun.stats.paired import paired_growth_needed
from benchrun.stats.sequential import growth_needed

__all__ = [
    "Allocation",
    "Need",
    "allocate",
    "extended_workloads",
    "own_need",
    "pair_need",
    "paired_need",
]


@dataclass(frozen=True)
class Need:
    """Workloads ``names`` wait for the comparison ``what``: ``shares`` of its remaining
    uncertainty per live side, ``more`` rounds it needs (None: no number of rounds can
    decide it), ``paired``: a paired comparison (its sides run together)."""

    names: tuple[str, ...]
    what: str
    shares: Mapping[str, float]
    more: int | None
    paired: bool = False


@dataclass(frozen=True)
class Allocation:
    """What the needs of one pass add up to, per workload: ``waiting`` the comparisons it
    waits for, ``by_share`` whether it holds enough of one's uncertainty to get rounds,
    ``forced`` the sides of an unfinished paired comparison (rounds in every pass),
    ``more`` the most rounds a comparison it gets rounds for still needs."""

    waiting: dict[str, list[str]]
    by_share: dict[str, bool]
    forced: frozenset[str]
    more: dict[str, int]


def allocate(
    c: ControllerCore, needs: Sequence[Need], rounds: Mapping[str, int], can_test: bool
) -> Allocation:
    """Record that each need's workloads wait for its comparison; those holding enough of
    its remaining uncertainty get rounds, unless no number of rounds can decide it
    (``more`` None) or no α is left (``can_test`` False). A paired comparison keeps its
    block whole: both sides run in every pass until it is finished (docs/paired.md)."""
    share_min = c.params.allocation_share - 1e-12
    by_share: dict[str, bool] = {n: False for n in c.names}
    waiting: dict[str, list[str]] = {n: [] for n in c.names}
    pair_more: dict[str, int] = {}
    forced: set[str] = set()  # both sides of an unfinished paired comparison
    for need in needs:
        names, more = need.names, need.more
        for n in names:
            waiting[n].append(need.what)
            if need.paired and not c.out(n, rounds) and not any(c.out(m, rounds) for m in names):
                forced.add(n)
                if more is not None:
                    pair_more[n] = max(pair_more.get(n, 0), more)
            elif can_test and more is not None and need.shares.get(n, 0.0) >= share_min:
                by_share[n] = True
                pair_more[n] = max(pair_more.get(n, 0), more)
    return Allocation(waiting, by_share, frozenset(forced), pair_more)


def extended_workloads(
    c: ControllerCore,
    st: Mapping[str, WorkloadStats | None],
    rounds: Mapping[str, int],
    elapsed_s: float,
) -> set[str]:
    """Workloads past ``max_rounds`` that keep running: both sides of an undecided
    paired comparison (at its own looks) whose estimated passes still needed fit in the
    time left of ``max_time`` at the campaign's pace so far (the budget is time;
    max_rounds does not cut a comparison that is about to decide)."""
    p = c.params
    clock = max(rounds.values())
    c.pace = elapsed_s / clock if clock and elapsed_s > 0 else None
    if not p.extend_rounds or p.max_time is None or c.pace is None or p.pair_looks != "own":
        return set()
    left = p.max_time - elapsed_s
    out: set[str] = set()
    for key, members in c.ranked_groups().items():
        order = c.order.get(key)
        if order is None or set(order) != set(members):
            order = c.rank(members, st)
        for a, b in zip(order, order[1:], strict=False):
            if frozenset((a, b)) in c.verdicts or not c.own_paired(a, b):
                continue
            if max(rounds[a], rounds[b]) < p.max_rounds:
                continue
            if a in c.retired or b in c.retired:
                continue
            more, _ = own_need(c, a, b)
            if more is not None and more * c.pace <= left:
                out.update((a, b))
    for ref, name in c.ref_pairs():
        if name in c.base_verdicts or not c.own_paired(ref, name):
            continue
        if max(rounds[ref], rounds[name]) < p.max_rounds or {ref, name} & set(c.retired):
            continue
        more, _ = own_need(c, ref, name)
        if more is not None and more * c.pace <= left:
            out.update((ref, name))
    return out


def pair_need(
    c: ControllerCore,
    a: str,
    b: str | None,
    sa: Side | None,
    sb: Side | None,
    rounds: Mapping[str, int],
    k: int,
) -> tuple[dict[str, float], int | None, str]:
    """Shares of the remaining uncertainty per live side, rounds needed, note."""
    p = c.params
    if sa is None or sb is None:
        return {}, None, "waiting for enough data on both sides"
    live = {}
    for name, side in ((a, sa), (b, sb)):
        if name is not None and side.rounds and not c.out(name, rounds):
            live[name] = side.var / side.n / side.rounds
    total = sum(live.values())
    shares = {n: (u / total if total > 0 else 1.0 / len(live)) for n, u in live.items()}
    alpha = c.schedule.alpha_estimate()
    fixed = (sa.rounds == 0, sb.rounds == 0)
    sep = growth_needed(sa.sample, sb.sample, p.margin, alpha / max(1, k - 1), fixed=fixed)[0]
    eq = growth_needed(sa.sample, sb.sample, p.margin, alpha, fixed=fixed)[1]
    options = [f for f in (sep, eq) if f is not None]
    if not options:
        return (
            shares,
            None,
            "no number of rounds can decide it (a stored side is too imprecise)",
        )
    f = min(options)
    r_max = max(s.rounds for s in (sa, sb))
    more = math.ceil(r_max * (f - 1.0))
    nxt = c.schedule.next_look()
    clock = max(rounds.values())
    if nxt is not None:
        more = max(more, nxt - clock)
    return shares, max(more, 0), ""


def paired_need(
    c: ControllerCore, a: str, b: str, rounds: Mapping[str, int], k: int
) -> tuple[dict[str, float], int | None, str]:
    """Like :func:`pair_need` for a paired comparison: both sides run (shares 1),
    and the passes needed come from the log-ratio series (normal approximation)."""
    p = c.params
    shares = {a: 1.0, b: 1.0}
    s = c.pair(a, b)
    if c.own_paired(a, b):
        return shares, *own_need(c, a, b)
    if s is None or not c.enough(s, s.rounds):
        need = s.rounds_needed if s is not None and s.rounds_needed else None
        if s is not None and s.enough:  # min_rounds, min_series or min_subsessions
            need = max(1, p.min_rounds - s.rounds, p.min_series - s.n)
        return shares, need, "waiting for enough passes with both workloads"
    assert s.mean is not None and s.s2_q is not None and s.n_q is not None
    alpha = c.schedule.alpha_estimate()
    sep = paired_growth_needed(s.mean, s.s2_q, s.n_q, p.margin, alpha / max(1, k - 1))[0]
    eq = paired_growth_needed(s.mean, s.s2_q, s.n_q, p.margin, alpha)[1]
    options = [f for f in (sep, eq) if f is not None]
    if not options:
        return shares, None, "the log ratio sits on the margin: no number of passes decides it"
    more = math.ceil(s.rounds * (min(options) - 1.0))
    nxt = c.schedule.next_look()
    if nxt is not None:
        more = max(more, nxt - max(rounds.values()))
    return shares, max(more, 0), ""


def own_need(c: ControllerCore, a: str, b: str) -> tuple[int | None, str]:
    """More passes a~b needs at its own looks (normal approximation on its units, at
    the level of its next look), and a note."""
    p = c.params
    s, r = c.pair(a, b), c.pair_result(a, b)
    look = c.pair_looks.get(frozenset((a, b)))
    n = 0 if s is None else s.rounds
    first = (
        look.next
        if look is not None
        else first_look(c.family_alpha(a, b), p.min_rounds, p.pair_first_share)
    )
    if s is None or r is None or r.units < 3:
        return max(1, first - n), "waiting for enough passes with both workloads"
    level = look.sep.nominal() if look is not None and look.sep.info else p.alpha / 4
    sep, eq = paired_growth_needed(r.estimate, r.var, r.units, p.margin, level)
    options = [f for f in (sep, eq) if f is not None]
    if not options:
        return None, "the log ratio sits on the margin: no number of passes decides it"
    more = math.ceil(n * (min(options) - 1.0))
    return max(more, first - n if look is None or not look.looks else look.next - n, 0), ""
