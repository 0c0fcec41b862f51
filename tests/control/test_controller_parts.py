"""The parts of the stopping controller on their own (runner/control/looks.py, allocation.py,
pairtests.py), against the rules docs/controller.md states and closed forms: the look
schedule of stats.sequential's documented example, Bonferroni's α/K per look and Σ α_j = α,
the allocation rule's 1/3 share, the inverse of a ratio."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from benchrun.runner.control.allocation import Need, allocate
from benchrun.runner.control.collector import collect
from benchrun.runner.control.core import ControllerCore
from benchrun.runner.control.looks import CampaignLooks
from benchrun.runner.control.pairtests import RawTest, flip
from benchrun.runner.control.params import ControllerParams

#: look_schedule(8, 500) at ratio 1.5, the example of its docstring (n_{j+1} = ⌈1.5 n_j⌉)
SCHEDULE = (8, 12, 18, 27, 41, 62, 93, 140, 210, 315, 473, 500)


def test_campaign_looks_spend_alpha_over_k_at_each_scheduled_look() -> None:
    params = ControllerParams(alpha=0.05, min_rounds=8, max_rounds=500, max_time=None)
    looks = CampaignLooks(params)
    assert looks.next_look() is None and looks.due(8) is None  # no plan yet
    # before a plan, the level a pair will likely get is alpha over the K looks from now
    assert looks.alpha_estimate() == pytest.approx(0.05 / len(SCHEDULE))
    plan = looks.start(8)
    assert plan.schedule == SCHEDULE
    seen = []
    for clock in range(8, 501):
        alpha = looks.due(clock)
        if alpha is None:
            assert clock not in SCHEDULE
            continue
        assert alpha == pytest.approx(0.05 / len(SCHEDULE), rel=1e-12)  # Bonferroni
        looks.spend(alpha)
        seen.append(clock)
        nxt = looks.next_look()
        assert nxt == (SCHEDULE[len(seen)] if len(seen) < len(SCHEDULE) else None)
    assert tuple(seen) == SCHEDULE
    assert looks.looks == len(SCHEDULE)
    assert math.isclose(looks.spent, 0.05, rel_tol=1e-12)
    assert looks.remaining() == 0.0 and looks.due(500) is None


def test_a_look_after_skipped_points_spends_their_alpha_together() -> None:
    params = ControllerParams(alpha=0.05, min_rounds=8, max_rounds=500, max_time=None)
    looks = CampaignLooks(params)
    looks.start(8)
    looks.spend(looks.due(8) or 0.0)
    # rounds 12, 18 and 27 passed unseen: one look at 30 with their three shares of alpha
    alpha = looks.due(30)
    assert alpha == pytest.approx(3 * 0.05 / len(SCHEDULE), rel=1e-12)
    looks.spend(alpha or 0.0)
    assert looks.next_look() == 41
    # the state survives JSON (a resumed campaign) and gives the same answers
    again = CampaignLooks(params)
    again.restore(json.loads(json.dumps(looks.state())))
    assert (again.next_look(), again.looks) == (41, 2)
    assert again.remaining() == pytest.approx(0.05 * (1 - 4 / len(SCHEDULE)), rel=1e-12)


def _core(max_rounds: int = 10) -> ControllerCore:
    params = ControllerParams(min_rounds=2, max_rounds=max_rounds, max_time=None)
    return ControllerCore(params, [("a", "lower_is_better"), ("b", "lower_is_better")])


def test_rounds_go_to_the_side_holding_a_third_of_the_uncertainty() -> None:
    core = _core()
    rounds = {"a": 5, "b": 5}
    got = allocate(core, [Need(("a", "b"), "a~b", {"a": 0.7, "b": 0.3}, 6)], rounds, True)
    assert got.by_share == {"a": True, "b": False}
    assert got.waiting == {"a": ["a~b"], "b": ["a~b"]}
    assert got.more == {"a": 6} and not got.forced
    # exactly 1/3 is enough (">= allocation_share")
    got = allocate(core, [Need(("a", "b"), "a~b", {"a": 2 / 3, "b": 1 / 3}, 6)], rounds, True)
    assert got.by_share == {"a": True, "b": True}
    # no number of rounds can decide it, or no alpha is left: nobody gets rounds for it
    got = allocate(core, [Need(("a", "b"), "a~b", {"a": 0.5, "b": 0.5}, None)], rounds, True)
    assert got.by_share == {"a": False, "b": False} and got.more == {}
    assert got.waiting == {"a": ["a~b"], "b": ["a~b"]}
    got = allocate(core, [Need(("a", "b"), "a~b", {"a": 0.5, "b": 0.5}, 6)], rounds, False)
    assert got.by_share == {"a": False, "b": False}


def test_a_paired_comparison_runs_both_sides_until_one_is_out_of_budget() -> None:
    core = _core(max_rounds=10)
    need = Need(("a", "b"), "a~b", {}, 4, paired=True)
    got = allocate(core, [need], {"a": 5, "b": 5}, False)  # even with no alpha left
    assert got.forced == frozenset({"a", "b"}) and got.more == {"a": 4, "b": 4}
    # b has used max_rounds: the block is broken, and a paired need has no shares
    got = allocate(core, [need], {"a": 5, "b": 10}, True)
    assert not got.forced and got.by_share == {"a": False, "b": False}
    # several needs: each workload waits for all of them, "more" is the largest
    needs = [need, Need(("a",), "a vs stored baseline", {"a": 1.0}, 9)]
    got = allocate(core, needs, {"a": 5, "b": 5}, True)
    assert got.waiting["a"] == ["a~b", "a vs stored baseline"] and got.more["a"] == 9


def test_flip_sees_a_test_of_a_b_as_one_of_b_a() -> None:
    rng = np.random.default_rng(3)
    s = collect([[v] for v in np.log(1.25) + 0.01 * rng.standard_normal(64)], warmup="none")
    assert s.mean is not None and s.ci_low is not None and s.ci_high is not None
    r = RawTest("paired", 1e-6, 0.9, 0.25, s.mean, s)
    f = flip(r)
    assert f.rel == pytest.approx(1 / 1.25 - 1, rel=1e-12)  # a/b - 1 when b/a = 1.25
    assert f.mean_d == -s.mean and (f.p, f.tost_p, f.test) == (r.p, r.tost_p, r.test)
    assert f.stats is not None
    assert (f.stats.mean, f.stats.ci_low, f.stats.ci_high) == (-s.mean, -s.ci_high, -s.ci_low)
    back = flip(f)  # flipping twice is the identity (exactly for the log ratio)
    assert back.rel == pytest.approx(0.25, rel=1e-12) and back.mean_d == r.mean_d
    assert back.stats is not None and (back.stats.ci_low, back.stats.ci_high) == (
        s.ci_low,
        s.ci_high,
    )
    # a ratio of 0 (rel -1) has no inverse
    assert flip(RawTest("welch", 0.5, 0.5, -1.0, -3.0)).rel is None
