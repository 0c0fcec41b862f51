"""Paired comparisons at their own looks (docs/controller.md "Decision efficiency",
docs/paired.md).

A comparison a~b whose workloads share passes is tested on the passes of its own log-ratio
series, when its own next look is due (runner/control/pairlooks.py: first look, spending,
units, the signed-rank or t tests), not at the campaign's looks: separated when the
separation test's p is at most the look's nominal level, equivalent when the TOST's is.
A pair of a ranked group records a pair verdict; a workload against the campaign's
reference a baseline verdict ("slower"/"faster" in its direction, or equivalent).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from benchrun.runner.control.collector import WorkloadStats
from benchrun.runner.control.core import ControllerCore, LastTest
from benchrun.runner.control.decision import Event
from benchrun.runner.control.pairlooks import PairLookState, PairTestResult, first_look
from benchrun.runner.control.pairtests import verdict_text
from benchrun.runner.control.verdictbook import (
    BaselineRecord,
    OwnLook,
    PairRecord,
    as_base_declared,
    as_declared,
)
from benchrun.stats.multi import EQUIVALENT, SEPARATED

__all__ = ["own_looks"]


def own_looks(
    c: ControllerCore, st: Mapping[str, WorkloadStats | None], clock: int, final: bool
) -> list[Event]:
    """Look at every paired comparison whose own next look is due (``final``: a last
    look with all that is left, on a budget stop): docs/controller.md, "Decision
    efficiency". The separation test of a group of k workloads runs at α/C(k, 2)
    (Bonferroni over the pairs the group can form, whichever become adjacent), that of
    a workload against the reference at α/(k - 1) (the comparisons with the reference),
    the equivalence tests at α; boundaries from stats.groupseq."""
    p = c.params
    c.own_next = None
    if p.pair_looks != "own" or c.src is None:
        return []
    events: list[Event] = []
    for key, members in c.ranked_groups().items():
        k = len(members)
        if k < 2 or not any(c.covered.get(n) for n in members):
            continue
        order = c.rank(members, st)
        c.order[key] = order
        for a, b in zip(order, order[1:], strict=False):
            if c.own_paired(a, b) and frozenset((a, b)) not in c.verdicts:
                events.extend(own_step(c, a, b, clock, final, reference=False))
    for ref, name in c.ref_pairs():
        if c.own_paired(ref, name) and name not in c.base_verdicts:
            events.extend(own_step(c, ref, name, clock, final, reference=True))
    return events


def own_step(
    c: ControllerCore, a: str, b: str, clock: int, final: bool, reference: bool
) -> list[Event]:
    """One comparison at its own looks: its look state (made at its first look, at the
    level of its family, :meth:`ControllerCore.family_alpha`), the look if one is due (``final``:
    with all that is left), and its next look in ``own_next``. ``reference``: a is
    the campaign's reference and a verdict goes to the baseline verdicts."""
    p = c.params
    pk = frozenset((a, b))
    s = c.pair(a, b)
    if s is None:
        return []
    n = s.rounds
    look = c.pair_looks.get(pk)
    if look is None:
        level = c.family_alpha(a, b)
        look = PairLookState(
            first_look(level, p.min_rounds, p.pair_first_share),
            level,
            p.alpha,
            p.pair_look_ratio,
            p.pair_first_share,
            p.pair_spend_rho,
        )
        c.pair_looks[pk] = look
    events: list[Event] = []
    if n >= 2 and not look.spent_all and (final or look.due(n)):
        r = c.pair_result(a, b)
        if r is not None:
            lev_sep, lev_eq = look.levels(n, final)
            if reference:
                events = own_base_verdict(c, a, b, r, s, look, lev_sep, lev_eq, n, final)
            else:
                events = own_verdict(c, a, b, r, s, look, lev_sep, lev_eq, n, final)
    decided = b in c.base_verdicts if reference else pk in c.verdicts
    if not decided and not look.spent_all:
        at = clock + max(1, look.next - n)
        c.own_next = at if c.own_next is None else min(c.own_next, at)
    return events


def own_look_event(
    c: ControllerCore,
    a: str,
    b: str,
    look: PairLookState,
    lev_sep: float,
    lev_eq: float,
    n: int,
    final: bool,
) -> Event:
    """The "look" event of a~b at its own passes (its state is filled in by the caller
    once the look's verdict, if any, is recorded)."""
    where = "final look (budget)" if final else f"look {look.looks}"
    return Event(
        "look",
        f"{a}~{b}: {where} after {n} passes: separation at p <= {lev_sep:.3g}, "
        f"equivalence at p <= {lev_eq:.3g}",
        {
            "look": c.schedule.looks,
            "pair": sorted((a, b)),
            "pair_look": look.looks,
            "clock": n,
            "alpha": lev_sep,
            "spent": look.sep.spent[-1],
            "final": final,
            "state": c.state(),
        },
    )


def own_base_verdict(
    c: ControllerCore,
    ref: str,
    name: str,
    r: PairTestResult,
    s: WorkloadStats,
    look: PairLookState,
    lev_sep: float,
    lev_eq: float,
    n: int,
    final: bool,
) -> list[Event]:
    """Record a look of ``name`` against the reference ``ref`` at their own passes and
    the verdict it reaches: slower or faster than the reference (in ``name``'s
    direction), or equivalent; ``r.estimate`` estimates ln(name/ref)."""
    rel = math.expm1(r.estimate)
    c.latest["base:" + name] = LastTest(
        welch_p=r.p,
        welch_p_holm=r.p,
        tost_p=r.tost_p,
        test="paired",
        level=lev_sep,
    )
    events = [own_look_event(c, ref, name, look, lev_sep, lev_eq, n, final)]
    lower = c.direction[name] == "lower_is_better"
    if r.p <= lev_sep:
        verdict = "slower" if (r.estimate > 0) == lower else "faster"
    elif r.tost_p <= lev_eq:
        verdict = EQUIVALENT
    else:
        return events
    rec = BaselineRecord(
        name=name,
        baseline=ref,
        verdict=as_base_declared(verdict),
        look=look.looks,
        alpha=lev_sep if verdict != EQUIVALENT else lev_eq,
        relative_change=rel,
        welch_p_holm=r.p,
        tost_p=r.tost_p,
        test="paired",
        own=own_look(c, r, n, s),
    )
    c.base_verdicts[name] = rec
    p_name = "signed-rank p" if c.params.paired_test == "rank" else "t p"
    mark = (
        ""
        if s.enough
        else "; independence of the passes not yet checked (a certified series needs more passes)"
    )
    events.append(
        Event(
            "baseline-verdict",
            f"{name} vs {ref}: {verdict} ({name}/{ref} {1 + rel:.4g}; paired, {p_name} "
            f"{r.p:.3g}, TOST p {r.tost_p:.3g}) at its look {look.looks} after {n} passes, "
            f"level {rec.alpha:.3g}{mark}",
            rec.to_json(),
        )
    )
    events[0].data["state"] = c.state()
    return events


def own_look(c: ControllerCore, r: PairTestResult, n: int, s: WorkloadStats) -> OwnLook:
    """What a verdict at an own look records of its test: the per-pass test, estimand,
    passes ``n``, units, passes per unit and whether the series ``s`` is certified."""
    return OwnLook(
        paired_test=c.params.paired_test,
        estimand=r.estimand,
        passes=n,
        units=r.units,
        q=r.q,
        certified=bool(s.enough),
    )


def own_verdict(
    c: ControllerCore,
    a: str,
    b: str,
    r: PairTestResult,
    s: WorkloadStats,
    look: PairLookState,
    lev_sep: float,
    lev_eq: float,
    n: int,
    final: bool,
) -> list[Event]:
    """Record a look of a~b at its own passes and the verdict it reaches, if any."""
    pk = frozenset((a, b))
    if c.b_ahead(a, r.estimate):
        a, b, est = b, a, -r.estimate
    else:
        est = r.estimate
    rel = math.expm1(est)
    c.latest["pair:" + "|".join(sorted(pk))] = LastTest(
        welch_p=r.p,
        welch_p_holm=r.p,
        tost_p=r.tost_p,
        rel=rel,
        test="paired",
        level=lev_sep,
    )
    events = [own_look_event(c, a, b, look, lev_sep, lev_eq, n, final)]
    if r.p <= lev_sep:
        verdict = SEPARATED
    elif r.tost_p <= lev_eq:
        verdict = EQUIVALENT
    else:
        return events
    new = PairRecord(
        a=a,
        b=b,
        verdict=as_declared(verdict),
        look=look.looks,
        alpha=lev_sep if verdict == SEPARATED else lev_eq,
        welch_p_holm=r.p,
        tost_p=r.tost_p,
        relative_difference=rel,
        test="paired",
        own=own_look(c, r, n, s),
    )
    c.verdicts[pk] = new
    events.append(Event("pair-verdict", verdict_text(c, new), new.to_json()))
    events[0].data["state"] = c.state()
    return events
