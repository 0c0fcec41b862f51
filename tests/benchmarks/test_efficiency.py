"""benchmarks/efficiency.py (issue 28's yardstick), run briefly: its oracle against the
closed form with scipy's normal quantiles, a huge effect separated in the right order by
the real controller, the skip to the next look giving the same campaign as a call after
every pass, and the command line (a short run, ``--set`` errors, the replay's truth)."""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import norm

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "efficiency.py"


def _load():  # noqa: ANN202 - the script's module
    spec = importlib.util.spec_from_file_location("benchmarks_efficiency", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


eff = _load()


@pytest.mark.parametrize(("sigma", "delta"), [(0.079, 0.011), (0.02, 0.005), (0.3, -0.1)])
def test_oracle_is_the_fixed_sample_normal_formula(sigma: float, delta: float) -> None:
    for alpha in (0.01, 0.05):
        z = norm.ppf(1 - alpha / 2) + norm.ppf(0.8)
        assert eff.oracle_passes(sigma, delta, alpha, 0.01) == pytest.approx(
            (z * sigma / delta) ** 2, rel=1e-12
        )


def test_oracle_at_zero_is_the_tost_formula() -> None:
    z = norm.ppf(0.99) + norm.ppf(0.9)
    assert eff.oracle_passes(0.08, 0.0, 0.01, 0.01) == pytest.approx(
        (z * 0.08 / math.log(1.01)) ** 2, rel=1e-12
    )


@pytest.mark.parametrize("n", [50, 200, 600])
def test_effect_n_has_an_oracle_of_n_passes(n: int) -> None:
    delta = eff.effect_delta(f"n{n}", 0.08, 0.01, 0.01, 0.0)
    assert delta == pytest.approx((norm.ppf(0.995) + norm.ppf(0.8)) * 0.08 / math.sqrt(n))
    assert eff.oracle_passes(0.08, delta, 0.01, 0.01) == pytest.approx(n)


@pytest.mark.parametrize("delta", [0.4, -0.4])
def test_a_huge_effect_is_separated_in_the_right_order(delta: float) -> None:
    params = eff.make_params({})
    rng = np.random.default_rng(7)
    for _ in range(3):
        a, b = eff.ROWS["normal"].make(delta, 2 * params.max_rounds, rng, 0.08, "")
        out = eff.run_campaign(a, b, params)
        faster = "a" if delta > 0 else "b"
        assert out.pair[2] == "separated" and out.pair[0] == faster
        assert all(v == "separated" and x == faster for x, _, v in out.declared)
        assert out.passes < 100  # the first look decides it
        # b/a as reported (slower over faster): exp(|δ|) within 5 sd of its mean's estimate
        assert out.ratio == pytest.approx(
            math.exp(abs(delta)), rel=5 * 0.08 / math.sqrt(out.passes)
        )


def test_skipping_to_the_next_look_gives_the_same_campaign() -> None:
    params = eff.make_params({})
    for row, effect, campaigns in (("t3", "n50", 2), ("drift-in-pass", "n200", 1)):
        sigma = eff.ROWS[row].sigma(0.08, "")
        delta = eff.effect_delta(effect, sigma, params.alpha, params.margin, 0.0)
        job = eff.Job(row, effect, delta, params, 3, 0.08, "", check_skip=True)
        for c in range(campaigns):
            eff.one(job, c)  # raises on any difference


def test_short_run_prints_json(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--campaigns", "2", "--jobs", "1", "--only", "laplace", "--effects", "n50"]
    assert eff.main([*argv, "--json", "--set", "spending=pocock"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["params"]["spending"] == "pocock" and out["params"]["ci_rel_width"] is None
    (row,) = out["rows"]
    assert row["campaigns"] == 2 and row["oracle"] == pytest.approx(50)
    assert 0 < row["passes_median"] <= out["params"]["max_rounds"]


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ("paired_tset=rank", "not a controller setting"),
        ("alpha", "expected key=value"),
        ("alpha=0.7", "settings.alpha"),
    ],
)
def test_bad_set_is_a_clear_error(
    item: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as e:
        eff.main(["--campaigns", "1", "--set", item])
    assert e.value.code == 2
    assert message in capsys.readouterr().err


def test_replay_truth_and_shift(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    a = 1e7 * np.exp(0.05 * rng.standard_normal(300))
    b = a * np.exp(0.02 + 0.06 * rng.standard_normal(300))
    csv = tmp_path / "passes.csv"
    csv.write_text(
        "pass,a_ns,b_ns\n"
        + "".join(
            f"{i},{float(x)!r},{float(y)!r}\n" for i, (x, y) in enumerate(zip(a, b, strict=True))
        )
    )
    d = np.log(b / a)
    mean, sd = eff.replay_truth(str(csv))
    assert mean == pytest.approx(d.mean()) and sd == pytest.approx(d.std())
    ra, rb = eff.ROWS["replay"].make(0.0, 20000, rng, 0.08, str(csv))
    assert np.log(rb / ra).mean() == pytest.approx(0.0, abs=4 * sd / math.sqrt(20000))
    with pytest.raises(ValueError, match="no file"):
        eff.load_replay(str(tmp_path / "missing.csv"))


@pytest.mark.parametrize("row", ["normal", "t3", "laplace", "contaminated", "shared-drift",
                                 "drift-in-pass", "ar1"])  # fmt: skip
def test_each_row_has_the_mean_and_sd_its_oracle_uses(row: str) -> None:
    """The generated d has mean δ and the sd σ the oracle is computed with (for ar1: the
    long-run sd, from the variance of means of 200-pass batches)."""
    n, s, delta = 200_000, 0.08, 0.02
    a, b = eff.ROWS[row].make(delta, n, np.random.default_rng([11, len(row)]), s, "")
    d = np.log(b / a)
    sigma = eff.ROWS[row].sigma(s, "")
    if row == "ar1":
        batch = d.reshape(-1, 200).mean(axis=1)
        sd = float(batch.std(ddof=1) * math.sqrt(200))
        assert sigma == pytest.approx(s * math.sqrt(1.3 / 0.7))
        assert sd == pytest.approx(sigma, rel=0.1)  # 1000 batches: SE of an sd ~2.2 %
    else:
        assert float(d.std()) == pytest.approx(sigma, rel=0.03)
        assert abs(float(np.corrcoef(d[:-1], d[1:])[0, 1])) < 0.015  # iid d: SE 0.0022
    assert float(d.mean()) == pytest.approx(delta, abs=5 * sigma / math.sqrt(n / 10))


def test_contaminated_sigma_is_the_closed_form() -> None:
    """d = δ + (e_b - e_a) + ln 1.5·(B_b - B_a), B ~ Bernoulli(0.05) independent."""
    var = 0.08**2 + 2 * math.log(1.5) ** 2 * 0.05 * 0.95
    assert eff.ROWS["contaminated"].sigma(0.08, "") == pytest.approx(math.sqrt(var))


def test_the_scripts_examples_run() -> None:
    import doctest

    result = doctest.testmod(eff)
    assert result.attempted >= 2 and result.failed == 0
