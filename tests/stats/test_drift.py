"""stats.drift: the von Neumann ratio against its closed-form moments, error rates by simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from benchrun.stats.drift import drift_check, von_neumann_ratio


def test_ratio_by_hand_and_bad_input() -> None:
    x = np.array([3.0, 1.0, 4.0, 1.0, 5.0])
    num = sum((x[i + 1] - x[i]) ** 2 for i in range(4))
    den = sum((v - x.mean()) ** 2 for v in x)
    assert von_neumann_ratio(x) == pytest.approx(num / den)
    assert math.isnan(von_neumann_ratio([2.0, 2.0, 2.0]))
    with pytest.raises(ValueError):
        von_neumann_ratio([1.0, 2.0])
    with pytest.raises(ValueError, match="finite"):
        drift_check([1.0] * 9 + [math.inf])
    short = drift_check([1.0, 2.0, 3.0])
    assert not short.drifted and short.von_neumann is None


def test_moments_match_von_neumann_1941_by_simulation() -> None:
    rng = np.random.default_rng(1)
    n = 40
    x = rng.standard_normal((20000, n))
    vn = np.sum(np.diff(x, axis=1) ** 2, axis=1) / np.sum(
        (x - x.mean(axis=1, keepdims=True)) ** 2, axis=1
    )
    assert vn.mean() == pytest.approx(2.0, abs=0.01)
    assert vn.var() == pytest.approx(4 * (n - 2) / ((n + 1) * (n - 1)), rel=0.05)


def test_false_alarms_at_alpha_and_power_on_a_drift() -> None:
    rng = np.random.default_rng(2)
    iid = [drift_check(rng.lognormal(0, 0.03, 100)).drifted for _ in range(3000)]
    assert np.mean(iid) <= 0.01 + 3 * math.sqrt(0.01 * 0.99 / 3000)
    # a ramp of 10 % over the campaign under 3 % noise
    ramp = np.linspace(0.95, 1.05, 100)
    hits = [drift_check(ramp * rng.lognormal(0, 0.03, 100)).drifted for _ in range(500)]
    assert np.mean(hits) > 0.95
    r = drift_check(ramp * rng.lognormal(0, 0.001, 100), blocks=5)
    # closed form: block means of a linear ramp are 0.96, 0.98, 1.00, 1.02, 1.04
    assert r.level_low == pytest.approx(-0.04, abs=0.002)
    assert r.level_high == pytest.approx(0.04, abs=0.002)
    assert "level moved" in r.describe()
