"""runner/control/collector.py: the interval fields of WorkloadStats (docs/methods.md §4.1),
the text outputs print, and the controller that must not stop on an uncertified interval.

References: stats.uncertified_mean_ci on the same steady series, scipy's t interval over
round means, and the controller driven pass by pass on i.i.d. rounds (fixed seeds).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats as sps

from benchrun.runner.control.collector import collect
from benchrun.runner.control.controller import Controller, ControllerParams
from benchrun.runner.format import DisplayUnit, estimate_text
from benchrun.runner.results.estimate import estimate_from
from benchrun.stats.uncertified import uncertified_mean_ci


def test_thirty_fixed_rounds_get_a_marked_interval() -> None:
    """The issue's case: 30 one-reading rounds of ~24.7 ms are not certified (the rule
    with the tau upper bound needs more), yet the stats carry the interval, its mark and
    the text "24.73 ms ± ... (independence not certified: ...)" instead of "no CI"."""
    x = np.random.default_rng(1).normal(0.02473, 0.0015, 30)
    s = collect(x[:, None], warmup="none")
    assert not s.enough and not s.certified and s.ci_low is None and s.ci_high is None
    u = uncertified_mean_ci(x)
    assert (s.interval_low, s.interval_high) == pytest.approx((u.ci_low, u.ci_high), rel=1e-12)
    assert s.tau_bound == u.tau_bound and s.width_factor == u.width_factor
    assert s.interval_note == u.note
    d = s.to_dict()
    json.dumps(d, allow_nan=False)
    du = DisplayUnit("s", "ms", 1e-3)
    e = estimate_from(d)
    assert e is not None
    text = e.interval_text("s")  # the stored dict, read back, prints the same
    assert text == f"{du.text(u.mean)} ± {du.text(u.half_width)} ({u.note})"
    assert text.startswith(f"{du.text(u.mean)} ± ") and "no CI" not in text
    assert s.interval_text(du) == text


def test_certified_interval_is_the_ci_and_prints_without_a_mark() -> None:
    x = np.random.default_rng(2).normal(10.0, 1.0, 400)
    s = collect(x[:, None], warmup="none")
    assert s.enough and s.certified and s.interval_note is None and s.tau_bound is None
    assert (s.interval_low, s.interval_high) == (s.ci_low, s.ci_high)
    naive = sps.t.ppf(0.975, 399) * sps.sem(x)
    assert s.width_factor == pytest.approx(s.half_width / naive, rel=1e-12)
    assert s.interval_text("ms") == f"{s.mean:.4g} ms ± {s.half_width:.4g} ms"


def test_round_to_round_variation_widens_the_uncertified_interval() -> None:
    """4 rounds of 30 readings whose round means differ far more than the readings: the
    interval is the t interval over the 4 round means (as the certified CI would be), and
    tau_bound is the τ that makes the i.i.d. variance of the mean equal to it."""
    rng = np.random.default_rng(3)
    rounds = 1.0 + rng.normal(0.0, 0.05, (4, 1)) + rng.normal(0.0, 0.001, (4, 30))
    s = collect(rounds, warmup="none")
    assert not s.certified and s.interval_low is not None and s.interval_high is not None
    m = rounds.mean(axis=1)
    lo, hi = sps.t.interval(0.95, 3, loc=m.mean(), scale=sps.sem(m))
    assert (s.interval_high - s.interval_low) == pytest.approx(hi - lo, rel=1e-9)
    x = rounds.reshape(-1)
    tau = x.size * np.var(m, ddof=1) / 4 / np.var(x, ddof=1)
    assert s.tau_bound == pytest.approx(tau, rel=1e-9) and s.tau_bound > 10
    assert any("round means" in n for n in s.notes)


def test_no_interval_below_three_readings_says_so() -> None:
    s = collect([[1.0], [2.0]], warmup="none")
    assert s.interval_low is None and not s.certified
    assert s.interval_text("s") == "1.5 s (no CI: need ~8 readings, have 2)"
    e = estimate_from(s.to_dict())
    assert e is not None and e.interval_text("s") == "1.5 s (no CI: need ~8 readings, have 2)"
    assert estimate_text("s", None, low=None, high=None, certified=False) == "-"


def test_dicts_stored_before_the_fields_existed_still_print() -> None:
    old = {"mean": 0.5, "ci_low": 0.4, "ci_high": 0.6, "enough": True}
    e = estimate_from(old)
    assert e is not None and e.interval_text("s") == "500 ms ± 100 ms"


def test_the_controller_never_stops_on_an_uncertified_interval() -> None:
    """ci_rel_width 5 % is met by the uncertified interval after a handful of 1 %-noise
    rounds; the controller must go on until the collector certifies the CI."""
    params = ControllerParams(ci_rel_width=0.05, max_time=None, min_rounds=3)
    ctrl = Controller(params, [("w0", "lower_is_better")], None)
    x = 1.0 + 0.01 * np.random.default_rng(4).standard_normal(params.max_rounds)
    uncertified_narrow = 0
    for r in range(1, params.max_rounds + 1):
        s = collect(x[:r, None], warmup="none")
        d = ctrl.decide({"w0": s}, {"w0": r}, 0.0)
        if s.interval_low is not None and not s.certified:
            assert s.interval_high is not None and s.mean is not None
            if (s.interval_high - s.interval_low) / 2 <= 0.05 * abs(s.mean):
                uncertified_narrow += 1
        if d.stop:
            assert s.certified and s.enough
            break
    assert d.stop and uncertified_narrow >= 5
