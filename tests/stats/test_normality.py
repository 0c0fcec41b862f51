"""Shapiro-Wilk and Q-Q points (docs/methods.md §5).

References: the W and p values quoted in scipy's own Shapiro-Wilk tests (two 20-point
samples), scipy.stats.shapiro/probplot, and a simulation of the test's size.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats as sps

from benchrun.stats.normality import normality

X1 = [0.11, 7.87, 4.61, 10.14, 7.95, 3.14, 0.46, 4.43, 0.21, 4.75, 0.71, 1.52, 3.24, 0.93,
      0.42, 4.97, 9.53, 4.55, 0.47, 6.66]  # fmt: skip
X2 = [1.36, 1.14, 2.92, 2.55, 1.46, 1.06, 5.27, -1.11, 3.48, 1.10, 0.88, -0.51, 1.46, 0.52,
      6.20, 1.69, 0.08, 3.67, 2.81, 3.49]  # fmt: skip


def test_shapiro_reference_values() -> None:
    r1 = normality(X1)
    assert r1.statistic == pytest.approx(0.90047299861907959, abs=1e-6)
    assert r1.p_value == pytest.approx(0.042089745402336121, abs=1e-6)
    assert r1.normal is False
    r2 = normality(X2)
    assert r2.statistic == pytest.approx(0.9590270, abs=1e-6)
    assert r2.p_value == pytest.approx(0.52460, abs=1e-3)
    assert r2.normal is True
    json.dumps(r2.to_dict())


def test_qq_points_match_scipy_probplot() -> None:
    osm, osr = sps.probplot(X1, dist="norm", fit=False)
    r = normality(X1)
    np.testing.assert_allclose(r.qq_theoretical, osm, rtol=1e-14)
    np.testing.assert_allclose(r.qq_sample, np.sort(X1), rtol=0)
    assert osr.tolist() == sorted(X1)


@pytest.mark.filterwarnings("ignore:scipy.stats.shapiro")
def test_qq_points_are_thinned_for_large_samples() -> None:
    x = np.random.default_rng(1).normal(size=6000)
    r = normality(x, max_points=200)
    assert len(r.qq_sample) == 200
    assert r.qq_sample[0] == x.min() and r.qq_sample[-1] == x.max()
    assert any("5000" in n for n in r.notes)
    assert r.p_value == pytest.approx(sps.shapiro(x).pvalue, rel=1e-12)


def test_small_and_constant_samples() -> None:
    r = normality([1.0, 2.0])
    assert r.p_value is None and r.normal is None and "at least 3" in r.notes[0]
    c = normality([5.0] * 10)
    assert c.p_value is None and "all values equal" in c.notes[0]
    with pytest.raises(ValueError, match="non-finite"):
        normality([1.0, float("nan"), 3.0])


def test_size_of_test_on_normal_data() -> None:
    """Under H0 (normal data), p < 0.05 in about 5 % of samples (500 samples of 30)."""
    rng = np.random.default_rng(2)
    rejects = np.mean([normality(rng.normal(size=30)).p_value < 0.05 for _ in range(500)])
    assert 0.025 <= rejects <= 0.08
    # and it has power against a lognormal
    power = np.mean([normality(rng.lognormal(size=30)).p_value < 0.05 for _ in range(200)])
    assert power > 0.8
