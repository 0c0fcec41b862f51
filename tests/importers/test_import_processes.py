"""The process as the unit (runner/importers/processes.py): warm-up, drift, the summary.

Expected values come from scipy/numpy on the same process means, or from simulations
whose truth is known (a transient of known length, an AR(1) drift).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps

from benchrun.runner.cli import main
from benchrun.runner.importers.processes import as_summary, summarize_processes

DATA = Path(__file__).resolve().parents[1] / "data"


def _procs(means: np.ndarray, per: int, rng: np.random.Generator) -> list[np.ndarray]:
    return [m + rng.normal(0.0, 0.001, per) for m in means]


def test_mean_variance_and_ci_are_those_of_the_process_means() -> None:
    rng = np.random.default_rng(3)
    procs = [rng.normal(1.0 + 0.05 * rng.standard_normal(), 0.01, 3) for _ in range(12)]
    means = np.array([p.mean() for p in procs])
    ps = summarize_processes(procs, 0.95)
    assert ps.n == 12 and ps.values_per_process == 3 and ps.warmup_processes == 0
    assert ps.mean == pytest.approx(means.mean(), rel=1e-12)
    assert ps.variance == pytest.approx(means.var(ddof=1), rel=1e-12)
    low, high = sps.t.interval(0.95, 11, means.mean(), sps.sem(means))
    assert (ps.ci_low, ps.ci_high) == (pytest.approx(low), pytest.approx(high))
    s = as_summary(ps)
    assert (s.n, s.n_subsessions, s.subsession_size) == (36, 12, 3)
    assert s.subsession_variance == pytest.approx(means.var(ddof=1), rel=1e-12)
    assert s.normality_p == pytest.approx(sps.shapiro(means).pvalue, rel=1e-9)
    values = np.concatenate(procs)
    assert s.std == pytest.approx(values.std(ddof=1), rel=1e-12)
    assert s.median == pytest.approx(np.median(values), rel=1e-12)
    assert s.enough_data


def test_one_process_is_not_enough_and_says_why() -> None:
    ps = summarize_processes([np.array([1.0, 1.1])], word="repetition")
    assert not ps.enough and ps.ci_low is None and ps.variance is None
    assert ps.why_not() == "1 repetition, at least 2 are needed"
    assert not as_summary(ps).enough_data


def test_leading_warm_up_processes_are_dropped_only_with_enough_processes() -> None:
    rng = np.random.default_rng(7)
    truth = 5  # the first 5 processes run 10 sd slower: a transient of known length
    means = rng.normal(1.0, 0.01, 60)
    means[:truth] += 0.10
    ps = summarize_processes(_procs(means, 2, rng))
    assert ps.warmup_processes == truth and ps.warmup_values == 2 * truth
    assert ps.n == 60 - truth
    assert any("first 5 processes were still warming up" in n for n in ps.notes)
    short = summarize_processes(_procs(means[:15], 2, rng))  # < 20 processes: no detection
    assert short.warmup_processes == 0
    none = summarize_processes(_procs(means, 2, rng), warmup="none")
    assert none.warmup_processes == 0 and none.n == 60
    fixed = summarize_processes(_procs(means, 2, rng), warmup=3)
    assert fixed.warmup_processes == 3 and fixed.n == 57
    with pytest.raises(ValueError, match="leaves nothing"):
        summarize_processes(_procs(means[:3], 2, rng), warmup=3)
    with pytest.raises(ValueError, match="warmup must be"):
        summarize_processes(_procs(means, 2, rng), warmup="later")


def test_iid_processes_show_no_transient_in_most_series() -> None:
    rng = np.random.default_rng(11)
    cut = [summarize_processes(_procs(rng.normal(1, 0.01, 40), 2, rng)).warmup_processes
           for _ in range(200)]  # fmt: skip
    assert np.mean(np.array(cut) > 0) < 0.05  # the significance check keeps noise


def test_drifting_processes_get_a_note() -> None:
    rng = np.random.default_rng(5)
    n, rho = 60, 0.8  # AR(1) process means: strong drift, known truth
    x = np.empty(n)
    x[0] = rng.standard_normal()
    for i in range(1, n):
        x[i] = rho * x[i - 1] + math.sqrt(1 - rho**2) * rng.standard_normal()
    drift = summarize_processes(_procs(1.0 + 0.02 * x, 2, rng), warmup="none")
    assert any("drift" in note for note in drift.notes)
    d = drift.means - drift.means.mean()
    assert drift.lag1 == pytest.approx(float(d[:-1] @ d[1:] / (d @ d)), rel=1e-9)
    iid = summarize_processes(_procs(rng.normal(1, 0.02, n), 2, rng), warmup="none")
    assert not any("drift" in note for note in iid.notes)


def test_analyze_compare_uses_the_process_means_like_compare(capsys) -> None:
    files = [str(DATA / "pyperf_30pct_old.json"), str(DATA / "pyperf_30pct_new.json")]
    assert main(["analyze", "compare", *files, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    means = {}
    for name in ("pyperf_30pct_old", "pyperf_30pct_new"):
        runs = json.loads((DATA / f"{name}.json").read_text())["benchmarks"][0]["runs"]
        means[f"{name}/command"] = np.array([np.mean(r["values"]) for r in runs])
    (pair,) = doc["ranking"]["pairs"]
    expected = sps.ttest_ind(means[pair["a"]], means[pair["b"]], equal_var=False).pvalue
    assert pair["welch_p"] == pytest.approx(expected, rel=1e-9)
    assert pair["verdict"] == "separated"
    rows = {row["name"]: row for row in doc["groups"]}
    for name, m in means.items():
        assert rows[name]["processes"] == 10 and rows[name]["unit_of_observation"] == "process"
        assert rows[name]["summary"]["n_subsessions"] == 10
        assert rows[name]["summary"]["mean"] == pytest.approx(m.mean(), rel=1e-12)
