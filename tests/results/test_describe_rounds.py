"""``describe_rounds``: a workload's descriptive statistics, with the median CI (every
output's ``summary``) or without it (the tables of ``benchrun show``, which then import
no ``scipy.stats``); the values are numpy's, computed here on the same series."""

from __future__ import annotations

import numpy as np
import pytest

from benchrun.runner.results.workloads import DESCRIPTIVE_KEYS, describe_rounds


@pytest.mark.parametrize("n", [2, 7, 40, 301])
def test_without_intervals_the_values_are_numpys_and_the_full_summarys(n: int) -> None:
    rng = np.random.default_rng(n)
    values = rng.lognormal(np.log(0.03), 0.1, n)  # seconds, like a round's wall time
    light = describe_rounds(values, 0.95, intervals=False)
    full = describe_rounds(values, 0.95)
    assert light["rounds"] == full["rounds"] == n
    assert light["median"] == float(np.median(values))
    assert light["min"] == float(values.min()) and light["max"] == float(values.max())
    std = float(np.std(values, ddof=1))
    assert light["std"] == pytest.approx(std, rel=1e-12)
    assert light["cov"] == pytest.approx(std / abs(float(values.mean())), rel=1e-12)
    # the same values as the summary every other output prints, bit for bit, less the CI
    assert "median_ci_low" not in light and "median_ci_high" not in light
    assert "median_ci_low" in full and "median_ci_high" in full
    assert {k: v for k, v in full.items() if not k.startswith("median_ci")} == light
    assert set(light) == {"rounds", "notes", *DESCRIPTIVE_KEYS} - {
        "median_ci_low",
        "median_ci_high",
    }
