"""runner/control/controller.py: the adaptive stopping rule (docs/methods.md §10), on synthetic campaigns.

Campaigns are simulated with known truth (iid normal round values, fixed seeds) and driven
exactly as the campaign loop will: one round per active workload per pass, then
``collect`` + ``decide``. References: the truth of the simulation, closed forms (the α of
each look, Σ α_j <= α), and a naive peeking loop on the same data (scipy's Welch test
after every round), which must fail where the controller must not.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence

import numpy as np
import pytest
from scipy import stats as sps

from benchrun.runner.config.experiment import Settings
from benchrun.runner.control.collector import TAU_UPPER, collect
from benchrun.runner.control.controller import Controller, ControllerParams, Decision
from benchrun.runner.errors import UserError


def run(
    means: Sequence[float],
    params: ControllerParams,
    rng: np.random.Generator,
    cv: float = 0.01,
    *,
    baseline: Mapping[str, tuple[float, float, int, int]] | None = None,
    reference: str | None = None,
    direction: str = "lower_is_better",
    clock_s: float = 0.0,
) -> tuple[Decision, dict[str, int], list[Decision], np.ndarray]:
    """Drive one campaign; returns the last decision, rounds used, all decisions, data."""
    names = [f"w{i}" for i in range(len(means))]
    data = np.asarray(means)[:, None] * (
        1 + cv * rng.standard_normal((len(means), params.max_rounds))
    )
    ctrl = Controller(params, [(n, direction) for n in names], baseline, reference=reference)
    used = dict.fromkeys(names, 0)
    stats: dict = {}
    active = list(names)
    history = []
    elapsed = 0.0
    while True:
        for i, n in enumerate(names):
            if n in active:
                used[n] += 1
                stats[n] = collect(data[i, : used[n], None], warmup="none")
                elapsed += clock_s
        d = ctrl.decide(stats, used, elapsed)
        history.append(d)
        if d.stop:
            return d, used, history, data
        assert d.active, "a campaign that does not stop must name workloads to run"
        active = list(d.active)


def test_params_from_settings_and_validation() -> None:
    p = ControllerParams.from_settings(Settings(alpha=0.05, max_rounds=100))
    assert (p.alpha, p.max_rounds, p.margin, p.ci_rel_width) == (0.05, 100, 0.01, 0.05)
    with pytest.raises(UserError, match="alpha"):
        ControllerParams(alpha=0.7)
    with pytest.raises(UserError, match="max_rounds"):
        ControllerParams(min_rounds=10, max_rounds=5)
    with pytest.raises(UserError, match=r"pair_lag1_shift: must be in \[0, 5\], got -1"):
        ControllerParams(pair_lag1_shift=-1.0)
    with pytest.raises(ValueError, match="direction"):
        Controller(p, [("a", "faster")])
    with pytest.raises(ValueError, match="unknown workload"):
        Controller(p, [("a", "lower_is_better")]).decide({"b": None}, {"b": 0})


@pytest.mark.slow
def test_equal_workloads_end_equivalent_and_rarely_separated() -> None:
    """300 campaigns of two truly equal workloads (cv 1 %, margin 1.5 %, alpha 0.05).

    Share called "separated" <= alpha + 3 simulation SE; most end "equivalent"; a naive
    loop (scipy Welch after every round of the same data, stop at the first p < alpha)
    calls far more of them different, so this simulation can tell honest from peeking.
    """
    params = ControllerParams(alpha=0.05, margin=0.015, max_rounds=150, max_time=None)
    rng = np.random.default_rng(4242)
    separated = equivalent = naive = 0
    campaigns = 300
    k = np.arange(1, params.max_rounds + 1)
    for _ in range(campaigns):
        d, used, _, data = run([1.0, 1.0], params, rng)
        verdict = d.pairs[0].verdict
        separated += verdict == "separated"
        equivalent += verdict == "equivalent"
        # naive: Welch's test (scipy's t distribution) after every round from the 3rd on
        m = np.cumsum(data, axis=1)[:, 2:] / k[2:]
        v = (np.cumsum(data**2, axis=1)[:, 2:] - k[2:] * m**2) / (k[2:] - 1)
        va, vb = v / k[2:]
        p = 2 * sps.t.sf(
            np.abs(m[0] - m[1]) / np.sqrt(va + vb),
            (va + vb) ** 2 / (va**2 / (k[2:] - 1) + vb**2 / (k[2:] - 1)),
        )
        naive += bool(np.any(p < params.alpha))
    bound = params.alpha + 3 * math.sqrt(params.alpha * (1 - params.alpha) / campaigns)
    assert separated / campaigns <= bound
    assert equivalent / campaigns >= 0.9
    assert naive / campaigns > bound


def test_ten_percent_is_separated_at_the_first_look() -> None:
    params = ControllerParams(max_time=None)
    rng = np.random.default_rng(7)
    longest = []
    for _ in range(30):
        d, used, history, _ = run([1.0, 1.1], params, rng)
        assert d.pairs[0].verdict == "separated" and (d.pairs[0].a, d.pairs[0].b) == ("w0", "w1")
        assert d.pairs[0].look == 1
        assert "all conditions met" in d.reason
        longest.append(max(used.values()))
    # the first look waits until 8 subsessions of q_min fit, with q_min from the upper
    # bound on tau (collector.TAU_UPPER): for iid rounds (tau-hat <= 1, Sokal window M of
    # 5..8 lags) that is the smallest n with n // (1 + ceil(5 (tau_u - 1))) >= 8,
    # tau_u = 1 + z sqrt(2 (2M + 1) / n); computed here from the closed form
    z = sps.norm.ppf(TAU_UPPER)

    def n_min(m: int) -> int:
        n = 8
        while n // (1 + math.ceil(5 * z * math.sqrt(2 * (2 * m + 1) / n) - 1e-9)) < 8:
            n += 1
        return n

    assert n_min(5) <= np.median(longest) <= n_min(8) + 16
    assert max(longest) <= 3 * n_min(8)


def test_higher_is_better_ranks_the_larger_first() -> None:
    d, *_ = run([1.0, 1.1], ControllerParams(max_time=None), np.random.default_rng(8),
                direction="higher_is_better")  # fmt: skip
    assert (d.pairs[0].a, d.pairs[0].b, d.pairs[0].verdict) == ("w1", "w0", "separated")


def test_alpha_spent_over_looks_never_exceeds_alpha() -> None:
    params = ControllerParams(alpha=0.01, margin=0.002, max_rounds=60, max_time=None)
    d, used, history, _ = run([1.0, 1.0], params, np.random.default_rng(9))
    looks = [e for h in history for e in h.events if e.kind == "look"]
    plans = [e for h in history for e in h.events if e.kind == "plan"]
    assert len(plans) == 1
    k = len(plans[0].data["plan"]["schedule"])
    alphas = [e.data["alpha"] for e in looks]
    assert math.fsum(alphas) <= 0.01 * (1 + 1e-12)
    # uniform split: every look that did not skip a schedule point spends alpha/K
    assert min(alphas) == pytest.approx(0.01 / k, rel=1e-12)
    assert d.alpha_spent == pytest.approx(math.fsum(alphas), rel=1e-12)


def test_budget_stop_names_the_undecided_pair_and_more_rounds() -> None:
    # 60 rounds: enough data from about 40 (8 subsessions, §3); 0.9 % apart at cv 2 % can
    # be neither separated (~160 rounds) nor shown within the 1 % margin in 60
    params = ControllerParams(max_rounds=60, max_time=None)
    d, used, history, _ = run([1.0, 1.009], params, np.random.default_rng(10), cv=0.02)
    assert d.stop and max(used.values()) == 60
    assert d.reason.startswith("max_rounds 60 reached")
    assert "pair w0~w1 undecided" in d.reason or "pair w1~w0 undecided" in d.reason
    assert "more rounds" in d.reason
    assert d.pairs[0].verdict == "undecided" and d.pairs[0].rounds_needed > 0
    # the final look spent everything that was left
    assert d.alpha_spent == pytest.approx(params.alpha, rel=1e-9)
    assert any(e.kind == "stop" for e in d.events)


def test_time_budget_and_width_condition_are_named() -> None:
    params = ControllerParams(ci_rel_width=1e-4, max_time=30.0)
    d, used, *_ = run([1.0], params, np.random.default_rng(11), clock_s=0.25)
    assert d.stop and d.reason.startswith("max_time 30 s reached") and used["w0"] == 120
    assert "w0: CI half-width" in d.reason and "> target 0.01 %" in d.reason
    assert d.workloads["w0"].width_ok is False and d.workloads["w0"].rounds_needed > 0


def test_width_only_campaign_stops_when_the_ci_is_narrow() -> None:
    params = ControllerParams(ci_rel_width=0.002, max_time=None)
    d, used, *_ = run([1.0], params, np.random.default_rng(12))
    w = d.workloads["w0"]
    assert d.stop and w.done and w.rel_half_width <= 0.002
    # the oracle n for a 0.2 % half-width at cv 1 %: (1.96 * 0.01 / 0.002)^2 ~ 96
    assert 60 <= used["w0"] <= 200


def test_allocation_stops_spending_on_finished_workloads() -> None:
    """w2 is 30 % away from a close pair (w0, w1 0.4 % apart, margin 0.2 %): once w2 is
    separated and its CI is narrow it must get no more rounds while the pair goes on."""
    params = ControllerParams(max_rounds=300, max_time=None, margin=0.002)
    d, used, history, _ = run([1.0, 1.004, 1.3], params, np.random.default_rng(13))
    done_at = next(i for i, h in enumerate(history) if h.workloads["w2"].done)
    assert all("w2" not in h.active for h in history[done_at:])
    assert used["w2"] <= 80 and max(used["w0"], used["w1"]) > 2 * used["w2"]
    assert any(e.kind == "allocation" and "not w2" in e.message for h in history for e in h.events)


def test_stored_baseline_verdicts() -> None:
    rng = np.random.default_rng(14)
    base = {"w0": (1.0, 1e-6, 30, 1), "w1": (1.0, 1e-6, 30, 1), "w2": (1.0, 1e-6, 30, 1)}
    d, *_ = run([1.05, 0.95, 1.0], ControllerParams(max_time=None), rng, 0.005, baseline=base)
    got = {b.name: b.verdict for b in d.baselines}
    assert got == {"w0": "slower", "w1": "faster", "w2": "equivalent"}
    assert d.baselines[0].relative_change == pytest.approx(0.05, abs=0.005)
    d2, *_ = run([1.05], ControllerParams(max_time=None), rng, 0.005,
                 baseline={"w0": (1.0, 1e-6, 30, 1)}, direction="higher_is_better")  # fmt: skip
    assert d2.baselines[0].verdict == "faster"


def test_reference_workload_comparisons() -> None:
    d, *_ = run([1.0, 1.08, 1.0], ControllerParams(max_time=None), np.random.default_rng(15),
                reference="w0")  # fmt: skip
    got = {(b.name, b.baseline): b.verdict for b in d.baselines}
    assert got == {("w1", "w0"): "slower", ("w2", "w0"): "equivalent"}


def test_state_round_trip_keeps_spent_alpha_and_verdicts() -> None:
    params = ControllerParams(max_time=None, margin=0.003)
    rng = np.random.default_rng(16)
    data = np.array([1.0, 1.1, 1.1])[:, None] * (1 + 0.01 * rng.standard_normal((3, 500)))
    names = ["a", "b", "c"]
    ctrl = Controller(params, [(n, "lower_is_better") for n in names])
    used = dict.fromkeys(names, 0)
    stats: dict = {}
    for _ in range(60):
        for i, n in enumerate(names):
            used[n] += 1
            stats[n] = collect(data[i, : used[n], None], warmup="none")
        d = ctrl.decide(stats, used)
    state = json.loads(json.dumps(ctrl.state()))
    again = Controller(params, [(n, "lower_is_better") for n in names], state=state)
    d2 = again.decide(stats, used)
    assert d2.alpha_spent == pytest.approx(d.alpha_spent, rel=1e-12) and d2.look is None
    assert {(p.a, p.b, p.verdict) for p in d2.pairs} == {(p.a, p.b, p.verdict) for p in d.pairs}
    assert any(p.verdict == "separated" for p in d2.pairs)


def test_decision_to_dict_is_json() -> None:
    d, *_ = run([1.0, 1.02], ControllerParams(max_time=None), np.random.default_rng(17),
                baseline={"w0": (1.0, 1e-6, 30, 1)})  # fmt: skip
    doc = d.to_dict()
    json.dumps(doc, allow_nan=False)
    assert doc["stop"] is True and set(doc["workloads"]) == {"w0", "w1"}
    assert all(isinstance(e["message"], str) for e in doc["events"])
