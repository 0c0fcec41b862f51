"""benchmarks/own_ci_efficiency.py (issue 28, item 8), run briefly: its oracle against the
closed form with scipy's normal quantile, each row's mean and long-run sd, a few campaigns
of two rows through the real controller (stopped at the first round whose CI is certified
and narrow enough), the coverage of the collector's CI at a fixed n within binomial
bounds, and the command line (a short run, its errors)."""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import norm

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "own_ci_efficiency.py"


def _load():  # noqa: ANN202 - the script's module
    spec = importlib.util.spec_from_file_location("benchmarks_own_ci_efficiency", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


own = _load()


@pytest.mark.parametrize(
    ("sigma_lr", "mu", "width", "conf"),
    [(0.3, 1.0, 0.05, 0.95), (0.1, 2.0, 0.01, 0.99), (1.5, -3.0, 0.2, 0.9)],
)
def test_oracle_is_the_fixed_n_normal_formula(
    sigma_lr: float, mu: float, width: float, conf: float
) -> None:
    z = norm.ppf(1 - (1 - conf) / 2)
    expected = (z * sigma_lr / (width * abs(mu))) ** 2
    assert own.oracle_rounds(sigma_lr, mu, width, conf) == pytest.approx(expected, rel=1e-12)
    # at n* rounds the known-sd normal CI has half-width exactly w·|μ|
    n = own.oracle_rounds(sigma_lr, mu, width, conf)
    assert z * sigma_lr / math.sqrt(n) == pytest.approx(width * abs(mu), rel=1e-12)
    with pytest.raises(ValueError):
        own.oracle_rounds(sigma_lr, 0.0, width, conf)


@pytest.mark.parametrize("n", [50, 200, 600])
def test_each_effect_has_an_oracle_of_n_rounds(n: int) -> None:
    sigma_lr = own.effect_sigma_lr(f"n{n}", 1.0, 0.05, 0.95)
    assert sigma_lr == pytest.approx(0.05 * math.sqrt(n) / norm.ppf(0.975), rel=1e-12)
    assert own.oracle_rounds(sigma_lr, 1.0, 0.05, 0.95) == pytest.approx(n, rel=1e-12)
    with pytest.raises(ValueError, match="unknown effect"):
        own.effect_sigma_lr("m50", 1.0, 0.05, 0.95)


def test_ar1_tau_is_the_closed_form() -> None:
    assert own.ROWS["ar1-0.3"].tau == pytest.approx(1.3 / 0.7)
    assert own.ROWS["ar1-0.7"].tau == pytest.approx(1.7 / 0.3)


@pytest.mark.parametrize("row", list(own.ROWS))
def test_each_row_has_the_mean_and_long_run_sd_its_oracle_uses(row: str) -> None:
    """Mean μ = 1, marginal sd σ, and the long-run sd σ·√τ from the variance of the
    means of 500-round batches."""
    n, sigma = 500_000, 0.2
    x = own.ROWS[row].make(n, np.random.default_rng([5, len(row)]), sigma)
    tau = own.ROWS[row].tau
    lr = sigma * math.sqrt(tau)
    assert float(x.mean()) == pytest.approx(1.0, abs=5 * lr / math.sqrt(n))
    # t3's sample sd converges slowly (infinite fourth moment)
    assert float(x.std()) == pytest.approx(sigma, rel=0.08 if row == "t3" else 0.02)
    batch = x.reshape(-1, 500).mean(axis=1)
    # 1000 batches: SE of an sd ~2.2 %
    assert float(batch.std(ddof=1)) * math.sqrt(500) == pytest.approx(lr, rel=0.1)


@pytest.mark.parametrize("row", ["normal", "ar1-0.7"])
def test_campaigns_stop_at_the_first_certified_narrow_ci(row: str) -> None:
    """A few campaigns of two rows through the real controller: each meets its conditions,
    stops at a round whose CI is certified and at most ci_rel_width of the mean, and
    the round before did not qualify (the stop is the first chance)."""
    params = own.make_params({})
    w = params.ci_rel_width
    sigma = own.effect_sigma_lr("n50", 1.0, w, params.confidence) / math.sqrt(own.ROWS[row].tau)
    job = own.Job(row, "n50", sigma, params, 3)
    for c in range(3):
        x = own.campaign_data(job, c)
        out = own.run_campaign(x, params)
        assert out.met and out.first_enough is not None
        assert params.min_rounds <= out.first_enough <= out.rounds < params.max_rounds
        at = own._collect(x[: out.rounds, None], params)
        assert at.enough and at.rel_half_width is not None and at.rel_half_width <= w
        assert (at.ci_low, at.ci_high) == (out.ci_low, out.ci_high)
        before = own._collect(x[: out.rounds - 1, None], params)
        assert not (before.enough and (before.rel_half_width or math.inf) <= w)


def test_budget_stop_is_undecided() -> None:
    """A budget too small for the width: stopped at max_rounds, conditions unmet."""
    params = own.make_params({"max_rounds": 60}, width=0.001)
    x = own.ROWS["normal"].make(60, np.random.default_rng(1), 0.2)
    out = own.run_campaign(x, params)
    assert out.rounds == 60 and not out.met
    s = own.summarise([out], [(out.ci_low, out.ci_high)], 1e4, 1.0, 0.001)
    assert s["undecided"] == 1.0 and s["stop_at_certification"] == 0.0


def test_fixed_n_coverage_is_within_binomial_bounds() -> None:
    """The collector's CI over the first n* = 200 rounds of iid normal campaigns covers
    μ at least at 95 % - 3 SE (no sequential stopping; the q/2q envelope may over-cover,
    so no upper bound beyond 100 %)."""
    params = own.make_params({"max_rounds": 200})
    sigma = own.effect_sigma_lr("n200", 1.0, 0.05, 0.95)
    job = own.Job("normal", "n200", sigma, params, 1)
    campaigns = 400
    cis = [own._collect(own.campaign_data(job, c)[:200, None], params) for c in range(campaigns)]
    got = [own._covers(s.ci_low, s.ci_high, 1.0) for s in cis]
    hits = [g for g in got if g is not None]
    assert len(hits) >= 0.95 * campaigns  # iid: certified by 200 rounds
    cov = float(np.mean(hits))
    assert cov >= 0.95 - 3 * math.sqrt(0.95 * 0.05 / len(hits))


def test_short_run_prints_json(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--campaigns", "2", "--jobs", "1", "--only", "lognormal", "--effects", "n50"]
    assert own.main([*argv, "--json", "--width", "0.1"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["params"]["ci_rel_width"] == 0.1 and out["params"]["max_time"] is None
    assert out["params"]["confidence"] == 0.95
    (row,) = out["rows"]
    assert row["campaigns"] == 2 and row["oracle"] == pytest.approx(50)
    assert row["sigma_lr"] == pytest.approx(0.1 * math.sqrt(50) / norm.ppf(0.975))
    assert row["undecided"] == 0.0 and row["rounds_median"] >= row["certified_median"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--only", "normal,ar2"], "unknown rows"),
        (["--effects", "n0"], "unknown effect"),
        (["--campaigns", "0"], "must be >= 1"),
        (["--width", "-0.1"], "settings.ci_rel_width"),
        (["--set", "ci_rel_width=null"], "give a number"),
        (["--set", "ci_rel_widht=0.1"], "not a controller setting"),
    ],
)
def test_bad_arguments_are_clear_errors(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as e:
        own.main(["--jobs", "1", *argv])
    assert e.value.code == 2
    assert message in capsys.readouterr().err


def test_the_scripts_examples_run() -> None:
    import doctest

    result = doctest.testmod(own)
    assert result.attempted >= 2 and result.failed == 0
