"""A ranked group's pairs and a suite's comparisons as typed records (report/analysis.py):
their JSON forms are the ones the report wrote when they were dicts."""

from __future__ import annotations

import numpy as np

from benchrun.runner.report.analysis import QuantileFit, RankedPair, SuiteComparison
from benchrun.runner.results.verdicts import verdicts_from_dict
from benchrun.stats.multi import rank_results
from benchrun.stats.quantreg import quantile_regression

#: the keys of a stored pair in the report JSON, in order (the controller's dict before)
STORED_KEYS = [
    "a", "b", "verdict", "test", "headline", "ratio", "ratio_low", "ratio_high", "passes",
    "welch_p", "welch_p_holm", "tost_p", "relative_difference", "look", "alpha",
    "rounds_needed", "independent_p", "effect_size", "required_n", "controller", "rank",
]  # fmt: skip


def _ranking():
    return rank_results(
        [
            {
                "name": "fast",
                "mean": 1.0,
                "variance": 0.01,
                "n": 10,
                "direction": "lower_is_better",
            },
            {
                "name": "slow",
                "mean": 2.0,
                "variance": 0.01,
                "n": 10,
                "direction": "lower_is_better",
            },
        ],
        alpha=0.01,
        margin=0.01,
        confidence=0.95,
    )


def test_a_computed_pair_is_written_as_rank_results_writes_it() -> None:
    ranking = _ranking()
    (p,) = ranking.pairs
    pair = RankedPair.of_ranking(p, 1)
    assert (pair.a, pair.b, pair.verdict) == ("fast", "slow", "separated")
    assert pair.relative_difference == 1.0  # (2 - 1) / 1
    want = {**ranking.to_dict()["pairs"][0], "rank": 1}
    assert pair.to_dict() == want and list(pair.to_dict()) == list(want)


def test_a_stored_pair_keeps_the_controllers_fields() -> None:
    doc = {"a": "fast", "b": "slow", "verdict": "separated", "test": "welch", "ratio": 2.0,
           "welch_p": 0.001, "welch_p_holm": 0.002, "tost_p": 0.9, "passes": 12}  # fmt: skip
    (c,) = verdicts_from_dict({"pairs": [doc]}).pairs
    (computed,) = _ranking().pairs
    pair = RankedPair.of_stored(c, 3, computed)
    out = pair.to_dict()
    assert list(out) == STORED_KEYS
    assert (out["welch_p"], out["welch_p_holm"], out["tost_p"]) == (0.001, 0.002, 0.9)
    assert out["controller"] is True and out["rank"] == 3 and out["passes"] == 12
    # Cohen's d describes a Welch comparison: taken from the computed pair
    assert out["effect_size"] == computed.effect_size is not None
    (paired,) = verdicts_from_dict({"pairs": [{**doc, "test": "paired"}]}).pairs
    assert RankedPair.of_stored(paired, 1, computed).effect_size is None


def test_a_quantile_fit_and_a_suite_comparison_as_json() -> None:
    rng = np.random.default_rng(3)
    fit = quantile_regression(rng.normal(1, 0.1, 40), rng.normal(2, 0.1, 40), n_boot=100, seed=1)
    out = QuantileFit("x", "y", "s", fit).to_dict()
    assert list(out)[-3:] == ["a", "b", "unit"] and (out["a"], out["b"], out["unit"]) == (
        "x",
        "y",
        "s",
    )
    assert out["effect"] == fit.to_dict()["effect"]
    empty = SuiteComparison("new", "old").to_dict()
    assert empty == {"a": "new", "b": "old", "hpt": None, "r_speedup": None,
                     "speedup_test": None, "gmean_ratio": None}  # fmt: skip
