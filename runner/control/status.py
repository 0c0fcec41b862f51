"""What the controller reports after each pass: the status of every workload, adjacent
pair and baseline comparison, and what is still unmet (docs/controller.md "The loop").

:func:`campaign_status` builds one row per comparison (its status, what it asks of the
allocation, what is unmet about it), hands the needs to
:func:`runner.control.allocation.allocate`, then one status per workload (its own
conditions: :func:`own_conditions`). The ratio of a comparison now with its CI:
:func:`ratio_now`; a paired one's ratio CI against ``ci_rel_width``: :func:`wide_ci`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from benchrun.runner.control.allocation import Allocation, Need, allocate, pair_need, paired_need
from benchrun.runner.control.collector import WorkloadStats
from benchrun.runner.control.core import NOT_TESTED, ControllerCore, LastTest, Side, known
from benchrun.runner.control.decision import (
    BaselineStatus,
    BaselineVerdict,
    PairStatus,
    TestKind,
    WorkloadStatus,
)
from benchrun.runner.control.pairtests import baseline_side
from benchrun.runner.format import format_duration, format_percent
from benchrun.stats.compare import welch_from_summary
from benchrun.stats.multi import UNDECIDED
from benchrun.stats.paired import ratio_of_means_ci

__all__ = ["Status", "campaign_status", "own_conditions", "ratio_now", "wide_ci"]

Ratio = tuple[float | None, float | None, float | None, int | None]


@dataclass(frozen=True)
class Status:
    """What :func:`campaign_status` found at one pass: every workload's, pair's and
    baseline's status, the workloads that get a round next, and what is still unmet."""

    workloads: dict[str, WorkloadStatus]
    pairs: list[PairStatus]
    baselines: list[BaselineStatus]
    active: list[str]
    all_done: bool
    unmet: list[str]
    can_test: bool


@dataclass(frozen=True)
class PairRow:
    """One adjacent pair's status, what it asks of the allocation (None: nothing) and
    what is unmet about it (None: nothing)."""

    status: PairStatus
    need: Need | None
    unmet: str | None


@dataclass(frozen=True)
class BaselineRow:
    """One baseline comparison's status, its need and what is unmet about it."""

    status: BaselineStatus
    need: Need | None
    unmet: str | None


@dataclass(frozen=True)
class BaselineView:
    """What the status of the baseline comparison of ``name`` is made of: the ``label``
    ("@stored" or the reference's name) and its text, the baseline's side (None without
    enough data) and the workload's (None without enough data), its statistics, the last test results, both means and the
    relative change between them, whether it is paired, and the ratio with its CI."""

    name: str
    label: str
    label_text: str
    base: Side | None
    mine: Side | None
    s: WorkloadStats | None
    latest: LastTest
    base_mean: float | None
    cur_mean: float | None
    rel: float | None
    paired: bool
    ratio: Ratio


def campaign_status(
    c: ControllerCore,
    st: Mapping[str, WorkloadStats | None],
    rounds: Mapping[str, int],
    enough: Mapping[str, bool],
    realloc: bool,
) -> Status:
    """Every workload's, pair's and baseline's status, the active set and unmet list.

    Rounds for undecided pairs go to the sides that hold >= ``allocation_share`` of the
    pair's remaining uncertainty, chosen at a look and kept until the next one (or until
    a chosen side runs out of budget), so allocation does not flap between looks.
    """
    can_test = c.schedule.plan is None or c.schedule.remaining() > 0
    if c.pair_active is not None and any(c.out(n, rounds) for n in c.pair_active):
        realloc = True
    side = {n: (c.side(known(st[n]), rounds[n]) if enough[n] else None) for n in c.names}
    pair_rows = [
        pair_row(c, a, b, len(order), st, rounds, side)
        for order in ranked_orders(c, st)
        for a, b in zip(order, order[1:], strict=False)
    ]
    base_rows = [
        baseline_row(c, baseline_view(c, name, label, st, rounds, side), rounds)
        for name, label in c.baseline_pairs()
    ]
    rows: list[PairRow | BaselineRow] = [*pair_rows, *base_rows]
    alloc = allocate(c, [r.need for r in rows if r.need is not None], rounds, can_test)
    if realloc or c.pair_active is None:
        c.pair_active = {n for n, v in alloc.by_share.items() if v}
    pair_active = {
        n: (n in c.pair_active and bool(alloc.waiting[n])) or n in alloc.forced for n in c.names
    }
    workloads, active, unmet_own = workload_rows(c, st, rounds, enough, alloc, pair_active)
    return Status(
        workloads=workloads,
        pairs=[r.status for r in pair_rows],
        baselines=[r.status for r in base_rows],
        active=active,
        all_done=all(w.done for w in workloads.values()),
        unmet=unmet_own + [r.unmet for r in rows if r.unmet is not None],
        can_test=can_test,
    )


def ranked_orders(c: ControllerCore, st: Mapping[str, WorkloadStats | None]) -> list[list[str]]:
    """Each ranked group in its order of the last look (ranked now when it has none)."""
    orders = []
    for key, members in c.ranked_groups().items():
        order = c.order.get(key)
        if order is None or set(order) != set(members):
            order = c.rank(members, st)
        orders.append(order)
    return orders


def pair_row(
    c: ControllerCore,
    a: str,
    b: str,
    k: int,
    st: Mapping[str, WorkloadStats | None],
    rounds: Mapping[str, int],
    side: Mapping[str, Side | None],
) -> PairRow:
    """The adjacent pair a~b of a group of ``k``: decided (its verdict; a paired one still
    waits while its ratio CI is wider than ``ci_rel_width``) or undecided (the rounds it
    needs, who gets them, the last test results)."""
    pk = frozenset((a, b))
    rec = c.verdicts.get(pk)
    latest = c.latest.get("pair:" + "|".join(sorted(pk)), NOT_TESTED)
    paired = c.paired(a, b)
    if rec is not None:
        pair_ratio = ratio_now(c, rec.a, rec.b, st, rounds)
        wide = wide_ci(c, rec.a, rec.b) if paired else None
        need = unmet = None
        if wide is not None:
            need = Need((a, b), f"{a}~{b} ratio CI", {}, wide[1], paired=True)
            unmet = f"pair {a}~{b}: {wide[0]}"
        status = PairStatus(
            a=rec.a,
            b=rec.b,
            verdict=rec.verdict,
            look=rec.look,
            alpha=rec.alpha,
            welch_p=latest.welch_p,
            welch_p_holm=rec.welch_p_holm,
            tost_p=rec.tost_p,
            relative_difference=rec.relative_difference,
            rounds_needed=None,
            test=rec.test,
            **_ratio_fields(pair_ratio),
            independent_p=independent_p(a, b, side) if paired else None,
            estimand=estimand(c, a, b),
        )
        return PairRow(status, need, unmet)
    if paired:
        shares, more, note = paired_need(c, a, b, rounds, k)
    else:
        shares, more, note = pair_need(c, a, b, side[a], side[b], rounds, k)
    need = Need((a, b), f"{a}~{b}", shares, more, paired=paired)
    status = PairStatus(
        a=a,
        b=b,
        verdict=UNDECIDED,
        look=None,
        alpha=None,
        welch_p=latest.welch_p,
        welch_p_holm=latest.welch_p_holm,
        tost_p=latest.tost_p,
        relative_difference=latest.rel,
        rounds_needed=more,
        test="paired" if paired else "welch",
        **_ratio_fields(ratio_now(c, a, b, st, rounds)),
        independent_p=independent_p(a, b, side) if paired else None,
        estimand=estimand(c, a, b),
    )
    detail = (
        f"Holm p {latest.welch_p_holm:.3g}, TOST p {latest.tost_p:.3g} at the last look"
        if latest.test is not None
        else note or "not tested yet"
    )
    est = f", about {more} more rounds" if more is not None else ""
    if more is not None and paired and c.pace is not None:
        est += f" (~{format_duration(more * c.pace)} at this pace)"
    return PairRow(status, need, f"pair {a}~{b} undecided ({detail}{est})")


def baseline_view(
    c: ControllerCore,
    name: str,
    label: str,
    st: Mapping[str, WorkloadStats | None],
    rounds: Mapping[str, int],
    side: Mapping[str, Side | None],
) -> BaselineView:
    """The numbers of the baseline comparison of ``name`` with ``label`` now (the ratio:
    ``name``/baseline, delta method for a stored baseline)."""
    base = baseline_side(c, label, st, rounds, name)
    s = st[name]
    latest = c.latest.get("base:" + name, NOT_TESTED)
    base_mean = (
        base.mean if base is not None else (known(st[label]).mean if st.get(label) else None)
    )
    cur_mean = s.mean if s is not None else None
    rel = (
        (cur_mean - base_mean) / abs(base_mean)
        if cur_mean is not None and base_mean not in (None, 0)
        else None
    )
    label_text = "stored baseline" if label == "@stored" else label
    paired = label != "@stored" and c.paired(label, name)
    if label == "@stored":
        ratio: Ratio = (None, None, None, None)
        mine = side[name]
        if mine is not None and base is not None:
            ratio = (
                *ratio_of_means_ci(
                    base.mean, base.var, base.n, mine.mean, mine.var, mine.n, c.params.confidence
                ),
                None,
            )
    else:
        ratio = ratio_now(c, label, name, st, rounds)
    return BaselineView(
        name,
        label,
        label_text,
        base,
        side[name],
        s,
        latest,
        base_mean,
        cur_mean,
        rel,
        paired,
        ratio,
    )


def baseline_row(c: ControllerCore, v: BaselineView, rounds: Mapping[str, int]) -> BaselineRow:
    """The baseline comparison ``v``: decided (its verdict; a paired one still waits while
    its ratio CI is wider than ``ci_rel_width``) or undecided (the rounds it needs)."""
    name, label, label_text, latest = v.name, v.label, v.label_text, v.latest
    rec = c.base_verdicts.get(name)
    if rec is not None:
        wide = wide_ci(c, label, name) if v.paired else None
        need = unmet = None
        if wide is not None:
            need = Need((name, label), f"{name} vs {label_text} ratio CI", {}, wide[1], True)
            unmet = f"{name} vs {label_text}: {wide[0]}"
        status = BaselineStatus(
            name=name,
            baseline=label_text,
            verdict=rec.verdict,
            look=rec.look,
            alpha=rec.alpha,
            mean=v.cur_mean,
            baseline_mean=v.base_mean if v.base_mean is not None else float("nan"),
            relative_change=rec.relative_change,
            welch_p=latest.welch_p,
            welch_p_holm=rec.welch_p_holm,
            tost_p=rec.tost_p,
            rounds_needed=None,
            notes=(),
            test=rec.test,
            **_ratio_fields(v.ratio),
        )
        return BaselineRow(status, need, unmet)
    return undecided_baseline(c, v, rounds)


def undecided_baseline(
    c: ControllerCore, v: BaselineView, rounds: Mapping[str, int]
) -> BaselineRow:
    """An undecided baseline comparison: the rounds it needs (paired: on the log-ratio
    series; else by Welch's growth) and the last test results."""
    name, label, label_text, latest, s = v.name, v.label, v.label_text, v.latest, v.s
    if v.paired:
        shares, more, note = paired_need(c, label, name, rounds, 2)
    else:
        shares, more, note = pair_need(
            c, name, None if label == "@stored" else label, v.mine, v.base, rounds, 2
        )
    sides = (name,) if label == "@stored" else (name, label)
    need = Need(sides, f"{name} vs {label_text}", shares, more, paired=v.paired)
    has_data = (s is not None and s.mean is not None) if v.paired else v.mine is not None
    verdict: BaselineVerdict = UNDECIDED if has_data else "no data"
    notes = (note,) if note else ()
    test: TestKind = "paired" if v.paired else "welch"
    status = BaselineStatus(
        name=name,
        baseline=label_text,
        verdict=verdict,
        look=None,
        alpha=None,
        mean=v.cur_mean,
        baseline_mean=v.base_mean if v.base_mean is not None else float("nan"),
        relative_change=v.rel,
        welch_p=latest.welch_p,
        welch_p_holm=latest.welch_p_holm,
        tost_p=latest.tost_p,
        rounds_needed=more,
        notes=notes,
        test=test,
        **_ratio_fields(v.ratio),
    )
    est = f", about {more} more rounds" if more is not None else (f" ({note})" if note else "")
    return BaselineRow(status, need, f"{name} vs {label_text} undecided{est}")


def workload_rows(
    c: ControllerCore,
    st: Mapping[str, WorkloadStats | None],
    rounds: Mapping[str, int],
    enough: Mapping[str, bool],
    alloc: Allocation,
    pair_active: Mapping[str, bool],
) -> tuple[dict[str, WorkloadStatus], list[str], list[str]]:
    """Every workload's status, the workloads that get a round next (own conditions
    unmet, or rounds for a comparison: ``pair_active``) and their unmet own conditions."""
    p = c.params
    workloads: dict[str, WorkloadStatus] = {}
    active: list[str] = []
    unmet_own: list[str] = []
    for n in c.names:
        s, r = st[n], rounds[n]
        own, own_more = own_conditions(c, n, s, r)
        exhausted = c.out(n, rounds)
        done = not own and not alloc.waiting[n]
        is_active = not exhausted and (bool(own) or pair_active[n])
        if is_active:
            active.append(n)
        unmet_own.extend(f"{n}: {u}" for u in own)
        more = max([v for v in (own_more, alloc.more.get(n)) if v is not None], default=None)
        workloads[n] = WorkloadStatus(
            name=n,
            rounds=r,
            n=s.n if s else 0,
            q=s.q if s else None,
            n_q=s.n_q if s else None,
            mean=s.mean if s else None,
            ci_low=s.ci_low if s else None,
            ci_high=s.ci_high if s else None,
            rel_half_width=s.rel_half_width if s else None,
            target=None if c.covered.get(n) else p.ci_rel_width,
            enough=enough[n],
            width_ok=c.width_ok(s) or bool(c.covered.get(n)),
            done=done,
            active=is_active,
            exhausted=exhausted,
            rounds_needed=None if done else more,
            unmet=tuple(own),
            waiting_for=tuple(alloc.waiting[n]),
        )
    return workloads, active, unmet_own


def own_conditions(
    c: ControllerCore, name: str, s: WorkloadStats | None, r: int
) -> tuple[list[str], int | None]:
    """(unmet own conditions as text, estimated more rounds) of one workload."""
    p = c.params
    unmet: list[str] = []
    need: list[int] = []
    if r < p.min_rounds:
        unmet.append(f"{r} of min_rounds {p.min_rounds} steady rounds")
        need.append(p.min_rounds - r)
    if s is None or s.mean is None:
        unmet.append("no steady readings yet")
        need.append(max(1, p.subsessions - r))
    elif c.covered.get(name):
        pass  # its data and width conditions are its paired comparisons' (docs/paired.md)
    elif s.level_shift_at is not None:
        change = s.level_shift_change
        size = "" if change is None else f" ({100 * change:+.0f} %)"
        unmet.append(
            f"level shift at round {s.level_shift_at + 1}{size}: no CI across it "
            "(docs/methods.md §2.1)"
        )
    elif not s.enough:
        more = s.rounds_needed
        unmet.append(
            f"not enough data for its correlation time (tau {max(s.tau, 1.0):.3g} readings) yet, "
            f"about {more} more rounds"
            if s.tau is not None
            else f"not enough data yet, about {more} more rounds"
        )
        if more is not None:
            need.append(more)
    elif s.n < p.min_series:
        per_round = s.n / max(1, s.rounds)
        more = max(1, math.ceil((p.min_series - s.n) / per_round))
        unmet.append(f"{s.n} of min_series {p.min_series} readings, about {more} more rounds")
        need.append(more)
    elif (s.n_q or 0) < p.subsessions:
        unmet.append(f"{s.n_q} of min_subsessions {p.subsessions} subsession means")
        need.append(math.ceil(r * (p.subsessions / max(1, s.n_q or 1) - 1)) + 1)
    floor = c.node_limited(s)
    if floor is not None and s is not None and not c.covered.get(name):
        unmet.append(
            f"CI from {(s.nodes or {}).get('k')} node means, half-width "
            f"{format_percent(s.rel_half_width, missing='n/a')} > target "
            f"{format_percent(p.ci_rel_width, missing='n/a')}: the nodes differ, and "
            f"with any number of rounds it stays >= {format_percent(floor)}"
        )
    elif p.ci_rel_width is not None and not c.width_ok(s) and not c.covered.get(name):
        if s is not None and s.rel_half_width is not None and s.enough:
            more = max(1, math.ceil(r * ((s.rel_half_width / p.ci_rel_width) ** 2 - 1)))
            unmet.append(
                f"CI half-width {format_percent(s.rel_half_width, missing='n/a')} > target "
                f"{format_percent(p.ci_rel_width, missing='n/a')}, about {more} more rounds"
            )
            need.append(more)
        elif s is not None and s.enough:
            unmet.append("mean is 0: the relative CI width is undefined")
    return unmet, (max(need) if need else None)


def ratio_now(
    c: ControllerCore,
    a: str,
    b: str,
    st: Mapping[str, WorkloadStats | None],
    rounds: Mapping[str, int],
) -> tuple[float | None, float | None, float | None, int | None]:
    """b/a now, its CI at the campaign's confidence and the passes behind it: from the
    paired series when the pair is paired (at its own looks: exp of the estimate and CI
    of :meth:`ControllerCore.pair_result`; else exp of its mean and CI), else the ratio of
    the two means (delta method; :func:`stats.paired.ratio_of_means_ci`)."""
    if c.own_paired(a, b):
        s, res = c.pair(a, b), c.pair_result(a, b)
        if s is None or res is None:
            return None, None, None, None
        n = s.rounds
        if res.low is None or res.high is None or not s.enough:
            # no CI before the series' independence is certified (docs/methods.md
            # §4.1): outputs show the marked interval instead
            return math.exp(res.estimate), None, None, n
        return math.exp(res.estimate), math.exp(res.low), math.exp(res.high), n
    if c.paired(a, b):
        s = c.pair(a, b)
        if s is None or s.mean is None:
            return None, None, None, None
        if s.ci_low is None or s.ci_high is None or not c.enough(s, s.rounds):
            return math.exp(s.mean), None, None, s.rounds
        return math.exp(s.mean), math.exp(s.ci_low), math.exp(s.ci_high), s.rounds
    sa, sb = st.get(a), st.get(b)
    if not (c.enough(sa, rounds[a]) and c.enough(sb, rounds[b])):
        return None, None, None, None
    assert sa is not None and sb is not None
    assert sa.mean is not None and sa.s2_q is not None and sa.n_q is not None
    assert sb.mean is not None and sb.s2_q is not None and sb.n_q is not None
    r, lo, hi = ratio_of_means_ci(
        sa.mean, sa.s2_q, sa.n_q, sb.mean, sb.s2_q, sb.n_q, c.params.confidence
    )
    return r, lo, hi, None


def estimand(c: ControllerCore, a: str, b: str) -> str | None:
    """What the ratio of a~b estimates (None for Welch: the ratio of the two means)."""
    if c.own_paired(a, b) and c.params.paired_test == "rank":
        return "median per-pass ratio"
    return "geometric-mean ratio" if c.paired(a, b) else None


def independent_p(a: str, b: str, side: Mapping[str, Side | None]) -> float | None:
    """Welch's two-sided p on the two sides' own subsession means, when both are
    trusted (shown beside a paired verdict; it decides nothing)."""
    sa, sb = side.get(a), side.get(b)
    if sa is None or sb is None:
        return None
    return welch_from_summary(sa.mean, sa.var, sa.n, sb.mean, sb.var, sb.n).p_value


def wide_ci(c: ControllerCore, a: str, b: str) -> tuple[str, int] | None:
    """Is the ratio CI of the paired comparison a~b wider than ``ci_rel_width``?
    (half-width of the CI of ln(b/a), which is the ratio's relative half-width to
    first order). Returns (what is unmet, more passes) or None when it is met."""
    target = c.params.ci_rel_width
    s = c.pair(a, b)
    if target is None or s is None:
        return None
    if c.own_paired(a, b):
        r = c.pair_result(a, b)
        if r is None or r.low is None or r.high is None or not s.enough:
            more = max(1, s.rounds_needed or 0, c.params.min_rounds - s.rounds)
            return f"no certified ratio CI yet, about {more} more passes", more
        hw = (r.high - r.low) / 2.0
    elif not c.enough(s, s.rounds):
        return None
    else:
        assert s.ci_low is not None and s.ci_high is not None
        hw = (s.ci_high - s.ci_low) / 2.0
    if hw <= target:
        return None
    more = max(1, math.ceil(s.rounds * ((hw / target) ** 2 - 1)))
    return (
        f"ratio CI ±{format_percent(hw, missing='n/a')} > target {format_percent(target, missing='n/a')}, about {more} more passes",
        more,
    )


def _ratio_fields(
    ratio: tuple[float | None, float | None, float | None, int | None],
) -> dict[str, Any]:
    """``(ratio, low, high, passes)`` as the keyword fields of ``PairStatus`` and
    ``BaselineStatus`` (the ratio b/a with its CI, and the passes of a paired one)."""
    return dict(zip(("ratio", "ratio_low", "ratio_high", "passes"), ratio, strict=True))
