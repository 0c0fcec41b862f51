"""The tests at the campaign's looks (docs/methods.md §6, §7, §10; docs/paired.md).

At a look of level α (runner/control/looks.py) every adjacent pair of each ranked group and
every baseline comparison not decided at its own looks (runner/control/ownlooks.py) is
tested: a group of Welch pairs is ranked by :func:`stats.multi.rank_results`; a group with
paired series is tested pair by pair on the per-pass log ratios (Welch where it cannot
be), Holm over the group; baselines with Holm over them. A separation must also hold with
subsessions of 2q. New verdicts are recorded in the controller's verdict book with their
events; the text of a verdict is :func:`verdict_text`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from benchrun.runner.control.collector import WorkloadStats
from benchrun.runner.control.core import ControllerCore, LastTest, Side, known
from benchrun.runner.control.decision import Event, TestKind
from benchrun.runner.control.verdictbook import (
    BaselineRecord,
    PairRecord,
    as_base_declared,
    as_declared,
)
from benchrun.runner.format import format_percent
from benchrun.stats.compare import tost_from_summary, welch_from_summary
from benchrun.stats.multi import EQUIVALENT, SEPARATED, UNDECIDED, holm, rank_results
from benchrun.stats.paired import confirm_paired, paired_test
from benchrun.stats.sequential import Sample, baseline_tests, confirm_separations

__all__ = [
    "RawTest",
    "baseline_side",
    "campaign_look",
    "coarse_ok",
    "flip",
    "raw_test",
    "verdict_text",
]


@dataclass(frozen=True)
class RawTest:
    """One comparison's test at a look, before Holm: ``test`` "paired" (the log ratios'
    summary, ``stats`` their series) or "welch" (the two sides' subsession means);
    ``p`` two-sided p of "no difference", ``tost_p`` TOST p of equivalence within the
    margin, ``rel`` the relative excess b/a - 1 (None for a mean of 0), ``mean_d`` the
    difference b - a in the scale tested (log ratio or the metric's units)."""

    test: TestKind
    p: float
    tost_p: float
    rel: float | None
    mean_d: float
    stats: WorkloadStats | None = None


def campaign_look(
    c: ControllerCore,
    st: Mapping[str, WorkloadStats | None],
    rounds: Mapping[str, int],
    alpha: float,
    clock: int,
    final: bool,
) -> list[Event]:
    """Test every adjacent pair and baseline at level ``alpha``; record new verdicts."""
    p = c.params
    look = c.schedule.spend(alpha)
    events: list[Event] = []
    for key, members in c.ranked_groups().items():
        if len(members) < 2:
            c.order[key] = list(members)
            continue
        if any(c.covered.get(n) for n in members):
            events.extend(look_paired(c, key, members, st, rounds, alpha, look))
            continue
        events.extend(look_welch(c, key, members, st, alpha, look))
    events.extend(look_baselines(c, st, rounds, alpha, look))
    where = "final look (budget)" if final else f"look {look}"
    events.insert(
        0,
        Event(
            "look",
            f"{where} after {clock} rounds: tests at alpha {alpha:.3g} "
            f"(spent {c.schedule.spent:.3g} of {p.alpha:g})",
            {
                "look": look,
                "clock": clock,
                "alpha": alpha,
                "spent": c.schedule.spent,
                "final": final,
                "state": c.state(),
            },
        ),
    )
    return events


def look_welch(
    c: ControllerCore,
    key: tuple[str, str],
    members: Sequence[str],
    st: Mapping[str, WorkloadStats | None],
    alpha: float,
    look: int,
) -> list[Event]:
    """A look at one group whose comparisons are all Welch (no paired series): rank the
    group (CIs at the Bonferroni level, Welch and TOST with Holm: stats.multi), confirm
    separations at 2q, record new verdicts and revised orders."""
    p = c.params
    events: list[Event] = []
    k = len(members)
    rows = [
        {
            "name": n,
            "mean": known(st[n]).mean,
            "variance": known(st[n]).s2_q,
            "n": known(st[n]).n_q,
            "direction": c.direction[n],
        }
        for n in members
    ]
    # CIs at the Bonferroni level, so "CIs disjoint" never bypasses Holm (§7)
    conf = 1 - alpha / (k - 1)
    if conf >= 1.0 - 1e-15:  # a look with (numerically) no alpha decides nothing
        c.order[key] = sorted(members, key=lambda n: c.sort_key(n, st[n]))
        return events
    ranking = rank_results(rows, alpha=alpha, margin=p.margin, confidence=conf)
    c.order[key] = list(ranking.names)
    confirmed = (
        coarse_ok(c, [(x.a, x.b) for x in ranking.pairs], st, alpha)
        if p.check_2q
        else [True] * len(ranking.pairs)
    )
    for pair, ok_2q in zip(ranking.pairs, confirmed, strict=True):
        pk = frozenset((pair.a, pair.b))
        c.latest["pair:" + "|".join(sorted(pk))] = LastTest(
            welch_p=pair.welch_p,
            welch_p_holm=pair.welch_p_holm,
            tost_p=pair.tost_p,
            rel=pair.relative_difference,
            test="welch",
        )
        if pair.verdict == UNDECIDED:
            continue
        if pair.verdict == SEPARATED and not ok_2q:
            continue  # not confirmed by the subsessions of 2q (§3 robustness)
        old = c.verdicts.get(pk)
        new = PairRecord(
            a=pair.a,
            b=pair.b,
            verdict=as_declared(pair.verdict),
            look=look,
            alpha=alpha,
            welch_p_holm=pair.welch_p_holm,
            tost_p=pair.tost_p,
            relative_difference=pair.relative_difference,
            test="welch",
        )
        if old is None:
            c.verdicts[pk] = new
            events.append(Event("pair-verdict", verdict_text(c, new), new.to_json()))
        elif old.verdict == SEPARATED and pair.verdict == SEPARATED and old.a != pair.a:
            c.verdicts[pk] = new
            events.append(
                Event(
                    "pair-revised",
                    f"{pair.a} and {pair.b} were separated in the other order at look "
                    f"{old.look}; look {look} separates them this way",
                    new.to_json(),
                )
            )
    return events


def raw_test(
    c: ControllerCore,
    a: str,
    b: str,
    st: Mapping[str, WorkloadStats | None],
    rounds: Mapping[str, int],
    alpha: float,
) -> RawTest | None:
    """Raw test of a~b at a look: paired on the log ratios when the pair is paired and
    its series has enough data (docs/paired.md), else Welch and TOST on the two sides'
    subsession means (§6.1, §6.4) when both have enough; None when neither can run.
    ``rel`` = b/a - 1 (the ratio's excess; a positive rel means b is larger)."""
    p = c.params
    if c.paired(a, b):
        s = c.pair(a, b)
        if s is None or not c.enough(s, s.rounds):
            return None
        assert s.mean is not None and s.s2_q is not None and s.n_q is not None
        pt = paired_test(s.mean, s.s2_q, s.n_q, margin=p.margin, alpha=alpha)
        return RawTest("paired", pt.p_value, pt.tost_p, pt.ratio - 1.0, s.mean, s)
    sa, sb = st[a], st[b]
    if not (c.enough(sa, rounds[a]) and c.enough(sb, rounds[b])):
        return None
    assert sa is not None and sb is not None
    assert sa.mean is not None and sb.mean is not None
    assert sa.s2_q is not None and sa.n_q is not None  # enough: a CI, hence both
    assert sb.s2_q is not None and sb.n_q is not None
    w = welch_from_summary(sa.mean, sa.s2_q, sa.n_q, sb.mean, sb.s2_q, sb.n_q)
    t = tost_from_summary(
        sa.mean,
        sa.s2_q,
        sa.n_q,
        sb.mean,
        sb.s2_q,
        sb.n_q,
        margin=p.margin,
        relative=sa.mean != 0,
        alpha=alpha,
    )
    rel = (sb.mean - sa.mean) / abs(sa.mean) if sa.mean != 0 else None
    return RawTest("welch", w.p_value, t.p_value, rel, sb.mean - sa.mean, None)


def confirm_2q(
    c: ControllerCore,
    tests: Sequence[tuple[str, str, RawTest]],
    st: Mapping[str, WorkloadStats | None],
    alpha: float,
) -> list[bool]:
    """ "Pass at q and 2q" (§3) for separations "a better than b": paired ones on the
    2q summary of their log ratios (sign checked), Welch ones by :func:`coarse_ok`;
    Holm within each kind."""
    if not c.params.check_2q:
        return [True] * len(tests)
    out = [False] * len(tests)
    paired = [i for i, (_, _, r) in enumerate(tests) if r.test == "paired"]
    welch = [i for i, (_, _, r) in enumerate(tests) if r.test != "paired"]
    summaries: list[tuple[float, float, int]] = []
    for i in paired:
        s = known(tests[i][2].stats)  # a paired test has its series
        if s.mean_2q is not None and s.s2_2q is not None and s.n_2q is not None:
            summaries.append((s.mean_2q, s.s2_2q, s.n_2q))
        else:  # no 2q summary: cannot be confirmed
            summaries.append((0.0, 1.0, 2))
    for i, good in zip(paired, confirm_paired(summaries, alpha), strict=True):
        a, b, r = tests[i]
        s = known(r.stats)
        out[i] = good and s.mean_2q is not None and c.b_ahead(b, -s.mean_2q)
    for i, good in zip(
        welch,
        coarse_ok(c, [(tests[i][0], tests[i][1]) for i in welch], st, alpha),
        strict=True,
    ):
        out[i] = good
    return out


def look_paired(
    c: ControllerCore,
    key: tuple[str, str],
    members: Sequence[str],
    st: Mapping[str, WorkloadStats | None],
    rounds: Mapping[str, int],
    alpha: float,
    look: int,
) -> list[Event]:
    """A look at one group whose comparisons are paired (docs/paired.md): order the
    group, test each adjacent pair (paired, or Welch where it cannot be), Holm over
    the group's tests, confirm separations at 2q, record new verdicts."""
    order = c.rank(members, st)
    c.order[key] = order
    tests = []
    for a, b in zip(order, order[1:], strict=False):
        if c.own_paired(a, b):
            continue  # tested at its own looks (runner/control/ownlooks.py)
        r = raw_test(c, a, b, st, rounds, alpha)
        if r is not None:
            tests.append((a, b, r))
    adjusted = holm([r.p for _, _, r in tests]) if tests else ()
    seps = [
        (a, b, r) if not c.b_ahead(a, r.mean_d) else (b, a, flip(r))
        for (a, b, r), ph in zip(tests, adjusted, strict=True)
    ]
    confirmed = confirm_2q(c, seps, st, alpha)
    events: list[Event] = []
    for (a, b, r), ph, ok_2q in zip(seps, adjusted, confirmed, strict=True):
        pk = frozenset((a, b))
        c.latest["pair:" + "|".join(sorted(pk))] = LastTest(
            welch_p=r.p,
            welch_p_holm=ph,
            tost_p=r.tost_p,
            rel=r.rel,
            test=r.test,
        )
        if ph < alpha and ok_2q:
            verdict = SEPARATED
        elif r.tost_p < alpha:
            verdict = EQUIVALENT
        else:
            continue
        old = c.verdicts.get(pk)
        new = PairRecord(
            a=a,
            b=b,
            verdict=as_declared(verdict),
            look=look,
            alpha=alpha,
            welch_p_holm=ph,
            tost_p=r.tost_p,
            relative_difference=r.rel,
            test=r.test,
        )
        if old is None:
            c.verdicts[pk] = new
            events.append(Event("pair-verdict", verdict_text(c, new), new.to_json()))
        elif old.verdict == SEPARATED and verdict == SEPARATED and old.a != a:
            c.verdicts[pk] = new
            events.append(
                Event(
                    "pair-revised",
                    f"{a} and {b} were separated in the other order at look {old.look}; "
                    f"look {look} separates them this way",
                    new.to_json(),
                )
            )
    return events


def flip(r: RawTest) -> RawTest:
    """The raw test of a~b seen as b~a (log ratio and relative excess inverted)."""
    rel = r.rel
    if r.rel is not None:
        rel = 1.0 / (1.0 + r.rel) - 1.0 if r.rel > -1 else None
    stats = r.stats
    if r.stats is not None:
        s = r.stats
        stats = replace(
            s,
            mean=-s.mean if s.mean is not None else None,
            mean_2q=-s.mean_2q if s.mean_2q is not None else None,
            ci_low=-s.ci_high if s.ci_high is not None else None,
            ci_high=-s.ci_low if s.ci_low is not None else None,
        )
    return replace(r, mean_d=-r.mean_d, rel=rel, stats=stats)


def coarse_ok(
    c: ControllerCore,
    pairs: Sequence[tuple[str, str]],
    st: Mapping[str, WorkloadStats | None],
    alpha: float,
    fixed: Mapping[str, Side] | None = None,
) -> list[bool]:
    """Do the separations (a better than b) hold with subsessions of 2q? (§3 robustness,
    :func:`stats.sequential.confirm_separations`); ``fixed``: stored sides by label."""

    def coarse(n: str) -> Sample | None:
        if fixed is not None and n in fixed:
            return fixed[n].sample
        x = st.get(n)
        if x is None or x.n_2q is None or x.s2_2q is None or x.mean_2q is None:
            return None
        return Sample(x.mean_2q, x.s2_2q, x.n_2q)

    sides = [(coarse(a), coarse(b)) for a, b in pairs]
    usable = [i for i, (x, y) in enumerate(sides) if x is not None and y is not None]
    lower = [
        (c.direction.get(pairs[i][0]) or c.direction[pairs[i][1]]) == "lower_is_better"
        for i in usable
    ]
    ok = confirm_separations([sides[i] for i in usable], alpha, lower)  # type: ignore[misc]
    out = [False] * len(pairs)
    for i, v in zip(usable, ok, strict=True):
        out[i] = v
    return out


def baseline_side(
    c: ControllerCore,
    label: str,
    st: Mapping[str, WorkloadStats | None],
    rounds: Mapping[str, int],
    name: str,
) -> Side | None:
    """The baseline side of ``name``: its stored results (label "@stored") or the
    reference workload ``label``'s summary when it has enough data (else None)."""
    if label == "@stored":
        return c.baseline[name]
    s = st.get(label)
    return c.side(s, rounds[label]) if c.enough(s, rounds[label]) else None


def baseline_raw_tests(
    c: ControllerCore,
    st: Mapping[str, WorkloadStats | None],
    rounds: Mapping[str, int],
    alpha: float,
) -> list[tuple[str, str, Side, RawTest]]:
    """(workload, baseline label, baseline side, raw test) of every baseline comparison
    that can be tested at this look: on the paired series with a reference of this
    campaign when the pair is paired (not at its own looks), else Welch/TOST on the two
    sides' summaries (:func:`stats.sequential.baseline_tests`)."""
    todo: list[tuple[str, str, Side, RawTest]] = []
    for name, label in c.baseline_pairs():
        if label != "@stored" and c.own_paired(label, name):
            continue  # tested at its own looks (runner/control/ownlooks.py)
        if label != "@stored" and c.paired(label, name):
            r = raw_test(c, label, name, st, rounds, alpha)
            if r is not None:
                todo.append((name, label, Side(0.0, 0.0, 2, 0), r))
            continue
        s, base = st.get(name), baseline_side(c, label, st, rounds, name)
        if base is not None and c.enough(s, rounds[name]):
            cur = c.side(s, rounds[name])
            raw = baseline_tests(
                [(cur.sample, base.sample)],
                alpha,
                c.params.margin,
                [c.direction[name] == "lower_is_better"],
            )[0]
            todo.append(
                (
                    name,
                    label,
                    base,
                    RawTest(
                        "welch", raw.welch_p, raw.tost_p, raw.relative_change, cur.mean - base.mean
                    ),
                )
            )
    return todo


def baseline_confirmed(
    c: ControllerCore,
    name: str,
    label: str,
    base: Side,
    r: RawTest,
    verdict: str,
    st: Mapping[str, WorkloadStats | None],
    alpha: float,
) -> bool:
    """Does the baseline verdict "slower"/"faster" of ``name`` hold with subsessions of 2q
    at level ``alpha`` (§3)? Paired: the 2q summary of the log ratios, same sign; Welch:
    :func:`coarse_ok` (a stored baseline's side as it is)."""
    if r.test == "paired":
        x = r.stats
        return bool(
            x is not None
            and x.mean_2q is not None
            and x.s2_2q is not None
            and x.n_2q is not None
            and confirm_paired([(x.mean_2q, x.s2_2q, x.n_2q)], alpha)[0]
            and (x.mean_2q > 0) == (r.mean_d > 0)
        )
    pair = (label, name) if verdict == "slower" else (name, label)
    fixed = {label: base} if label == "@stored" else None
    return coarse_ok(c, [pair], st, alpha, fixed)[0]


def look_baselines(
    c: ControllerCore,
    st: Mapping[str, WorkloadStats | None],
    rounds: Mapping[str, int],
    alpha: float,
    look: int,
) -> list[Event]:
    """Test every baseline comparison at level ``alpha`` (Holm over them); record
    verdicts. A reference workload of this campaign is compared on the paired series
    when the pair is paired (docs/paired.md); stored baselines by Welch/TOST."""
    todo = baseline_raw_tests(c, st, rounds, alpha)
    if not todo:
        return []
    adjusted = holm([r.p for *_, r in todo])
    events = []
    for (name, label, base, r), ph in zip(todo, adjusted, strict=True):
        c.latest["base:" + name] = LastTest(
            welch_p=r.p,
            welch_p_holm=ph,
            tost_p=r.tost_p,
            test=r.test,
        )
        if name in c.base_verdicts:
            continue
        lower = c.direction[name] == "lower_is_better"
        if ph < alpha:
            verdict = "slower" if (r.mean_d > 0) == lower else "faster"
        elif r.tost_p < alpha:
            verdict = EQUIVALENT
        else:
            continue
        if verdict != EQUIVALENT and c.params.check_2q:
            if not baseline_confirmed(c, name, label, base, r, verdict, st, alpha / len(todo)):
                continue  # not confirmed with subsessions of 2q (§3)
        rec = BaselineRecord(
            name=name,
            baseline=label,
            verdict=as_base_declared(verdict),
            look=look,
            alpha=alpha,
            relative_change=r.rel,
            welch_p_holm=ph,
            tost_p=r.tost_p,
            test=r.test,
        )
        c.base_verdicts[name] = rec
        base_name = "its stored baseline" if label == "@stored" else label
        test = "paired" if r.test == "paired" else "Welch"
        events.append(
            Event(
                "baseline-verdict",
                f"{name} vs {base_name}: {verdict} ({format_percent(r.rel, missing='n/a')}; {test}, Holm p "
                f"{ph:.3g}, TOST p {r.tost_p:.3g}, level {alpha:.3g} at look {look})",
                rec.to_json(),
            )
        )
    return events


def verdict_text(c: ControllerCore, v: PairRecord) -> str:
    """One line for a declared pair verdict ``v`` (a record of the verdict book)."""
    test = "paired" if v.test == "paired" else "Welch"
    own = v.own
    p_name = (
        "signed-rank p"
        if own is not None and own.paired_test == "rank"
        else ("t p" if own is not None else "Holm p")
    )
    if v.verdict == SEPARATED:
        rel = v.relative_difference
        apart = (
            f"b/a {1 + rel:.4g}"
            if test == "paired" and rel is not None
            else f"{format_percent(rel, missing='n/a')} apart"
        )
        what = f"{v.a} is better than {v.b} ({apart}; {test}, {p_name} {v.welch_p_holm:.3g})"
    else:
        what = (
            f"{v.a} and {v.b} are equivalent within {format_percent(c.params.margin, missing='n/a')} "
            f"({test}, TOST p {v.tost_p:.3g})"
        )
    if own is not None:
        mark = (
            ""
            if own.certified
            else "; independence of the passes not yet checked (a certified series needs "
            "more passes)"
        )
        return f"{what} at its look {v.look} after {own.passes} passes, level {v.alpha:.3g}{mark}"
    return f"{what} at look {v.look}, level {v.alpha:.3g}"
