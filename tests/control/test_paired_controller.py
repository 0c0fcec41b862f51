"""Paired comparisons in the controller (docs/paired.md) on campaigns with a known truth.

Every campaign is driven as the adaptive loop drives it: one round per active workload per
pass, the value of workload w in pass p being ``mu_w · f_p · e_wp`` with a drift ``f_p``
shared by the pass (AR(1) in log, phi 0.99, sd 10 %) and iid noise ``e`` (cv 2 %). The
truth (mu) is the simulation's; scipy's one-sample t test on the same log ratios is the
reference for the reported p-values.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pytest
from scipy import stats as sps

from benchrun.runner.control.collector import collect
from benchrun.runner.control.controller import Controller, ControllerParams, Decision
from benchrun.runner.control.pairing import PassSeries, pair_stats

PASSES = 1200


def drift(rng: np.random.Generator, passes: int = PASSES, sd: float = 0.10) -> np.ndarray:
    """exp of a stationary AR(1) with phi 0.99 and marginal sd ``sd`` (log scale)."""
    phi = 0.99
    e = rng.normal(0.0, sd * math.sqrt(1 - phi**2), passes)
    x = np.empty(passes)
    x[0] = rng.normal(0.0, sd)
    for p in range(1, passes):
        x[p] = phi * x[p - 1] + e[p]
    return np.exp(x)


def campaign(
    mus: Sequence[float],
    params: ControllerParams,
    rng: np.random.Generator,
    *,
    cv: float = 0.02,
    sd: float = 0.10,
    reference: str | None = None,
    offset: float = 0.0,
) -> tuple[Decision, dict[str, int], list[Decision], np.ndarray]:
    """One campaign; returns the last decision, steady rounds, all decisions, the data."""
    names = [f"w{i}" for i in range(len(mus))]
    f = drift(rng, sd=sd)
    data = np.asarray(mus)[:, None] * f[None, :] * np.exp(rng.normal(0, cv, (len(mus), PASSES)))
    data = data + offset
    ctrl = Controller(params, [(n, "lower_is_better") for n in names], reference=reference)
    src = PassSeries({}, confidence=params.confidence)
    values: dict[str, dict[int, float]] = {n: {} for n in names}
    stats: dict = {}
    active, history = list(names), []
    for p in range(PASSES):
        for i, n in enumerate(names):
            if n in active:
                values[n][p] = float(data[i, p])
                stats[n] = collect(np.array(list(values[n].values()))[:, None], warmup="none")
                src.update(n, dict(values[n]))
        used = {n: len(values[n]) for n in names}
        d = ctrl.decide(stats, used, 0.0, pairs=src)
        history.append(d)
        if d.stop:
            return d, used, history, data
        active = list(d.active)
    raise AssertionError("the campaign did not stop within the simulated passes")


PARAMS = ControllerParams(max_time=None, max_rounds=400, ci_rel_width=0.05)


def test_drift_two_percent_pair_is_separated_in_the_right_order_with_a_true_ratio_ci() -> None:
    d, used, _, data = campaign([100.0, 102.0], PARAMS, np.random.default_rng(11))
    assert d.met and d.stop
    (pair,) = d.pairs
    assert (pair.a, pair.b, pair.verdict, pair.test) == ("w0", "w1", "separated", "paired")
    assert pair.ratio_low < 1.02 < pair.ratio_high
    # the reported ratio is the median per-pass ratio (Hodges-Lehmann: the median of the
    # Walsh averages of the log ratios of the passes both ran; MSER-5 may cut a prefix)
    passes = min(used.values())
    lr = np.log(data[1, :passes]) - np.log(data[0, :passes])
    i, j = np.triu_indices(lr.size)
    assert pair.ratio == pytest.approx(math.exp(np.median((lr[i] + lr[j]) / 2)), rel=0.003)
    assert pair.passes == passes
    # Welch on the two own series is shown beside the paired verdict when both are
    # trusted: scipy's Welch test on the same subsession summaries
    own = [collect(data[i, : used[f"w{i}"], None], warmup="none") for i in range(2)]
    if all(o.enough for o in own):
        ref = sps.ttest_ind_from_stats(
            *(v for o in own for v in (o.mean, math.sqrt(o.s2_q), o.n_q)), equal_var=False
        )
        assert pair.independent_p == pytest.approx(ref.pvalue, rel=1e-9)
    else:
        assert pair.independent_p is None


def test_independent_rule_on_the_same_drift_needs_far_more_rounds() -> None:
    """The same data under ``comparison: independent``: the drift makes each series
    autocorrelated, and the campaign takes several times the paired passes (or stops on
    its budget undecided)."""
    paired = campaign([100.0, 102.0], PARAMS, np.random.default_rng(5))
    indep = campaign(
        [100.0, 102.0],
        ControllerParams(
            max_time=None, max_rounds=400, ci_rel_width=0.05, comparison="independent"
        ),
        np.random.default_rng(5),
    )
    assert paired[0].met
    assert max(indep[1].values()) >= 3 * max(paired[1].values())
    assert all(p.test == "welch" for p in indep[0].pairs)


def test_equal_pair_under_drift_ends_equivalent() -> None:
    params = ControllerParams(max_time=None, max_rounds=400, margin=0.02, ci_rel_width=0.05)
    d, *_ = campaign([50.0, 50.0], params, np.random.default_rng(3))
    (pair,) = d.pairs
    assert (pair.verdict, pair.test, d.met) == ("equivalent", "paired", True)
    assert pair.ratio_low < 1.0 < pair.ratio_high


def test_both_sides_of_an_unfinished_paired_pair_run_in_every_pass() -> None:
    """A 0.5 % pair under drift takes a while; meanwhile neither side may be left out,
    and the series counts only passes that both ran."""
    params = ControllerParams(max_time=None, max_rounds=120, ci_rel_width=0.5, margin=0.002)
    d, used, history, _ = campaign([100.0, 100.5], params, np.random.default_rng(8))
    for dec in history[:-1]:
        if any(p.verdict == "undecided" for p in dec.pairs):
            assert set(dec.active) == {"w0", "w1"}
    assert used["w0"] == used["w1"]


def test_look_p_value_is_scipy_one_sample_t_on_the_subsession_means() -> None:
    rng = np.random.default_rng(2)
    a = {p: float(v) for p, v in enumerate(100 * np.exp(rng.normal(0, 0.02, 200)))}
    b = {p: float(v) for p, v in enumerate(101 * np.exp(rng.normal(0, 0.02, 200)))}
    s = pair_stats(a, b)
    assert s is not None and s.enough and s.q is not None and s.n_q is not None
    d = np.log(np.array(list(b.values()))) - np.log(np.array(list(a.values())))
    used = d[: s.q * s.n_q].reshape(s.n_q, s.q).mean(axis=1)
    assert s.mean == pytest.approx(used.mean(), rel=1e-12)
    assert s.s2_q == pytest.approx(used.var(ddof=1), rel=1e-9)
    from benchrun.stats.paired import paired_test

    t = paired_test(s.mean, s.s2_q, s.n_q)
    assert t.p_value == pytest.approx(sps.ttest_1samp(used, 0.0).pvalue, rel=1e-9)


def test_non_positive_values_fall_back_to_welch() -> None:
    """Values around 0 have no log ratio: the pair is compared by Welch, and each
    workload must then be certified on its own."""
    params = ControllerParams(max_time=None, max_rounds=300, ci_rel_width=None)
    d, *_ = campaign([1.0, 1.2], params, np.random.default_rng(4), sd=0.0, offset=-1.05)
    assert all(p.test == "welch" for p in d.pairs)


def test_reference_comparisons_are_paired() -> None:
    params = ControllerParams(max_time=None, max_rounds=400, ci_rel_width=0.05)
    d, *_ = campaign([100.0, 103.0, 100.0], params, np.random.default_rng(9), reference="w0")
    by = {b.name: b for b in d.baselines}
    assert by["w1"].test == "paired" and by["w1"].verdict == "slower"
    assert by["w1"].ratio_low < 1.03 < by["w1"].ratio_high
    assert by["w2"].verdict in ("equivalent", "undecided") and by["w2"].test == "paired"


def test_budget_stop_never_reads_all_conditions_met() -> None:
    """max_rounds ends a campaign before its pair is decided; whatever the final look
    then decides, the reason names the budget and Decision.met is False."""
    params = ControllerParams(max_time=None, max_rounds=40, ci_rel_width=0.5, margin=0.001)
    for seed in range(6):
        d, *_ = campaign([100.0, 100.3], params, np.random.default_rng(seed))
        if "max_rounds" in d.reason:
            assert not d.met
            assert "all conditions met" not in d.reason
            break
    else:
        pytest.fail("no campaign ended on its budget")


@pytest.mark.slow
def test_false_separations_of_equal_workloads_under_drift_stay_at_alpha() -> None:
    """120 campaigns of two equal workloads on a drifting machine: at alpha 0.01 the
    number with a separation is Binomial(120, <= 0.01); P(X >= 6) < 0.002 at 0.01."""
    params = ControllerParams(max_time=None, max_rounds=150, ci_rel_width=0.2, margin=0.01)
    rng = np.random.default_rng(20261123)
    wrong = 0
    for _ in range(120):
        d, *_ = campaign([10.0, 10.0], params, rng)
        wrong += any(p.verdict == "separated" for p in d.pairs)
    print(f"{wrong} of 120 campaigns separated two equal workloads")
    assert wrong <= 5
    assert sps.binom.sf(5, 120, 0.01) < 0.002


def test_round_values_by_pass_skips_warmup_and_divides_by_work() -> None:
    from benchrun.runner.control.pairing import round_values_by_pass

    readings = [(9.0, 1.0, 3.0), (9.0, 2.0, 2.0), ()]
    got = round_values_by_pass(readings, [2, 4, 1], [3, 4, 5], per_work=True, skip=1)
    assert got == {3: (1.0 + 3.0) / 2 / 2, 4: (2.0 + 2.0) / 2 / 4}
    assert round_values_by_pass([(1.0,)], [None], [7], per_work=True) == {7: 1.0}
    with pytest.raises(ValueError, match="one entry per round"):
        round_values_by_pass([(1.0,)], [], [1], per_work=False)
    # fewer than 2 shared passes, or a value <= 0: no paired series
    assert pair_stats({1: 1.0, 2: 1.0}, {2: 1.0, 3: 1.0}) is None
    assert pair_stats({1: 1.0, 2: -1.0}, {1: 1.0, 2: 1.0}) is None
    src = PassSeries({"a": {1: 1.0}, "b": {1: 0.0}})
    assert not src.possible("a", "b") and src.possible("a", "c")


def _drive(
    ctrl: Controller,
    data: dict[str, np.ndarray],
    pace: float | None = None,
) -> tuple[Decision, list[Decision], int]:
    """Feed the passes of ``data`` (name -> values) as the adaptive loop does; ``pace``:
    seconds of campaign time per pass (None: no clock). Returns the last decision, every
    decision and the passes fed."""
    src = PassSeries({})
    values: dict[str, dict[int, float]] = {n: {} for n in data}
    stats: dict = {}
    active, history = list(data), []
    passes = len(next(iter(data.values())))
    for p in range(passes):
        for n in data:
            if n in active:
                values[n][p] = float(data[n][p])
                stats[n] = collect(np.array(list(values[n].values()))[:, None], warmup="none")
                src.update(n, dict(values[n]))
        used = {n: len(values[n]) for n in data}
        d = ctrl.decide(stats, used, 0.0 if pace is None else pace * (p + 1), pairs=src)
        history.append(d)
        if d.stop:
            return d, history, p + 1
        active = list(d.active)
    raise AssertionError("the campaign did not stop within the data")


def test_a_pair_is_decided_at_its_own_looks_while_another_workload_still_measures() -> None:
    """Looks per question: the pair a~b (10 % apart, 0.5 % noise) is separated at its own
    first look, long before workload c (alone in its group, 20 % noise against a 1 % CI
    target) has enough data for the campaign's look plan."""
    rng = np.random.default_rng(7)
    n = 400
    data = {
        "a": 100 * np.exp(rng.normal(0, 0.005, n)),
        "b": 110 * np.exp(rng.normal(0, 0.005, n)),
        "c": 50 * np.exp(rng.normal(0, 0.2, n)),
    }
    params = ControllerParams(max_time=None, max_rounds=n, ci_rel_width=0.01)
    ctrl = Controller(
        params,
        [
            ("a", "lower_is_better", "g"),
            ("b", "lower_is_better", "g"),
            ("c", "lower_is_better", "h"),
        ],
    )
    _, history, _ = _drive(ctrl, data)
    first = next(i for i, d in enumerate(history) if any(p.verdict != "undecided" for p in d.pairs))
    verdict = next(e for d in history for e in d.events if e.kind == "pair-verdict")
    assert verdict.data["verdict"] == "separated" and (verdict.data["a"], verdict.data["b"]) == (
        "a",
        "b",
    )
    # the first look: the fewest passes an exact signed-rank test of one sign decides at
    from benchrun.runner.control.pairlooks import first_look

    assert first + 1 == first_look(params.alpha, params.min_rounds)
    plan = [i for i, d in enumerate(history) if any(e.kind == "plan" for e in d.events)]
    assert not plan or plan[0] > first
    assert not verdict.data["certified"] and "not yet checked" in verdict.message


def test_ten_passes_of_a_fifteen_percent_difference_are_separated() -> None:
    """sleep 10 ms vs 12 ms, ~0.3 % noise, a budget of 10 rounds: the final look spends the
    whole alpha, and 10 passes of one sign give the exact p 2/2^10 < 0.01."""
    rng = np.random.default_rng(1)
    data = {
        "a": 10.1 * np.exp(rng.normal(0, 0.003, 10)),
        "b": 11.7 * np.exp(rng.normal(0, 0.003, 10)),
    }
    params = ControllerParams(max_time=None, max_rounds=10, min_rounds=5, ci_rel_width=None)
    ctrl = Controller(params, [("a", "lower_is_better"), ("b", "lower_is_better")])
    d, _, fed = _drive(ctrl, data)
    (pair,) = d.pairs
    assert fed == 10 and (pair.a, pair.b, pair.verdict) == ("a", "b", "separated")
    assert pair.welch_p_holm == pytest.approx(2 / 2**10)
    assert not d.met and "max_rounds" in d.reason  # a budget stop never reads "met"


def _slow_pair(seed: int, n: int = 2000) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {
        "a": 100 * np.exp(rng.normal(0, 0.03, n)),
        "b": 101.5 * np.exp(rng.normal(0, 0.03, n)),
    }


def test_max_rounds_does_not_cut_a_pair_that_decides_within_the_time_left() -> None:
    """A 1.5 % pair with 4 % noise on d needs about 100-200 passes. With max_rounds 40 and
    an hour of max_time at 0.1 s a pass the campaign goes on past 40 and separates it;
    without a time budget max_rounds stops it at 40, and the reason gives the passes
    still needed."""
    names = [("a", "lower_is_better"), ("b", "lower_is_better")]
    timed = ControllerParams(max_time=3600.0, max_rounds=40, ci_rel_width=None, extend_rounds=True)
    d, _, fed = _drive(Controller(timed, names), _slow_pair(3), pace=0.1)
    (pair,) = d.pairs
    assert fed > 40 and pair.verdict == "separated" and (pair.a, pair.b) == ("a", "b")
    rounds_only = ControllerParams(max_time=None, max_rounds=40, ci_rel_width=None)
    d, _, fed = _drive(Controller(rounds_only, names), _slow_pair(3))
    assert fed == 40 and "max_rounds 40 reached" in d.reason
    capped = ControllerParams(max_time=3600.0, max_rounds=40, ci_rel_width=None)  # a set cap
    d, _, fed = _drive(Controller(capped, names), _slow_pair(3), pace=0.1)
    assert fed == 40 and "max_rounds 40 reached" in d.reason
    # extend_rounds left unset follows the cap: on at the default max_rounds only
    assert ControllerParams().extend_rounds is True and capped.extend_rounds is False


def test_an_undecided_ending_states_the_time_it_needs() -> None:
    names = [("a", "lower_is_better"), ("b", "lower_is_better")]
    params = ControllerParams(max_time=3.0, max_rounds=500, ci_rel_width=None)
    d, _, fed = _drive(Controller(params, names), _slow_pair(4), pace=0.1)
    assert d.reason.startswith("max_time 3 s reached")
    (pair,) = d.pairs
    if pair.verdict == "undecided":
        assert "more rounds (~" in d.reason and "at this pace)" in d.reason


def test_reference_comparisons_decide_at_their_own_looks() -> None:
    """Each workload against the reference is a comparison with its own looks, at alpha
    over the comparisons with the reference (2 here): w1, 3 % slower, is decided on its
    passes with a ratio CI holding the true 1.03, before w2 (equal to the reference)."""
    params = ControllerParams(max_time=None, max_rounds=400, ci_rel_width=0.05)
    d, _, history, _ = campaign(
        [100.0, 103.0, 100.0], params, np.random.default_rng(9), reference="w0"
    )
    events = [e for h in history for e in h.events]
    (w1,) = [e.data for e in events if e.kind == "baseline-verdict" and e.data["name"] == "w1"]
    assert (w1["verdict"], w1["test"], w1["baseline"]) == ("slower", "paired", "w0")
    looks = [e.data for e in events if e.kind == "look" and e.data.get("pair") == ["w0", "w1"]]
    assert looks and all(x["alpha"] <= params.alpha / 2 for x in looks)
    assert looks[-1]["clock"] == w1["passes"] < max(h.workloads["w2"].rounds for h in history)
    by = {b.name: b for b in d.baselines}
    assert by["w1"].ratio_low < 1.03 < by["w1"].ratio_high


@pytest.mark.slow
def test_reference_comparisons_keep_their_family_error_rate() -> None:
    """Two workloads equal to the reference, 100 campaigns of at most 50 passes: the
    family (either declared slower or faster) errs in Binomial(100, <= 0.01) campaigns;
    P(X >= 5) < 0.004."""
    params = ControllerParams(max_time=None, max_rounds=50, ci_rel_width=None)
    rng = np.random.default_rng(20261128)
    wrong = 0
    for _ in range(100):
        d, *_ = campaign([10.0, 10.0, 10.0], params, rng, reference="w0")
        wrong += any(b.verdict in ("slower", "faster") for b in d.baselines)
    print(f"{wrong} of 100 campaigns declared a workload equal to the reference different")
    assert wrong <= 4
    assert sps.binom.sf(4, 100, 0.01) < 0.004


def test_the_lag1_allowance_setting_reaches_the_pair_looks() -> None:
    """``pair_lag1_shift`` (standard errors added to the units' lag-1 before it sets the
    variance allowance, runner/control/pairlooks.py ``look_units``) decides how soon an
    iid pair 2 % apart is separated: with no allowance beyond the estimate sooner than with
    three standard errors, the same data fed to both."""
    rng = np.random.default_rng(5)
    n = 1500
    data = {
        "a": 100 * np.exp(rng.normal(0, 0.05, n)),
        "b": 102 * np.exp(rng.normal(0, 0.05, n)),
    }
    fed = {}
    for shift in (0.0, 3.0):
        params = ControllerParams(
            max_time=None, max_rounds=n, ci_rel_width=None, pair_lag1_shift=shift
        )
        ctrl = Controller(params, [("a", "lower_is_better"), ("b", "lower_is_better")])
        d, _, fed[shift] = _drive(ctrl, data)
        assert (d.pairs[0].a, d.pairs[0].verdict) == ("a", "separated")
    assert fed[0.0] < fed[3.0]
