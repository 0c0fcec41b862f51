"""Hoefler & Belli's twelve rules (runner/report/methods.py): each status is derived from the
figures its detail cites (issue 17: rule 6 was "met" beside Shapiro-Wilk p = 0.0001).

One campaign shows every rule it can (all met but rule 11); each other test changes one
thing (the data, the stored status, the machine record) so that one derived check fails,
and the rule must then say "missing" with the figure that fails it. Expected figures are
computed here from the readings the test wrote (scipy's Shapiro-Wilk on numpy subsession
means, numpy's harmonic mean).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats as sps
from synthetic import METADATA, store_campaign

from benchrun.runner.report.document import Report, build_report
from benchrun.runner.report.methods import rules_checklist
from benchrun.runner.report.model import load_campaign
from benchrun.runner.store.database import Store

ROUNDS = 121  # the first is the warm-up


def _normal(mean: float, seed: int, n: int = ROUNDS, cov: float = 0.01) -> list[list[float]]:
    rng = np.random.default_rng(seed)
    return [[float(v)] for v in mean * (1 + cov * rng.standard_normal(n))]


def _report(tmp_path: Path, rounds: dict[str, Any], **kwargs: Any) -> Report:
    db = store_campaign(tmp_path / "c" / "benchrun.db", rounds, **kwargs)
    return build_report(load_campaign(db), with_plots=False)


def _rules(report: Report) -> dict[int, tuple[str, str]]:
    return {r.number: (r.status, r.detail) for r in report.rules}


@pytest.fixture(scope="module")
def good(tmp_path_factory: pytest.TempPathFactory) -> Report:
    """Two compared cost workloads, 1 % Gaussian noise, a full machine record."""
    db = tmp_path_factory.mktemp("good") / "c" / "benchrun.db"
    store_campaign(db, {"a": _normal(0.010, 1), "b": _normal(0.012, 2)})
    return build_report(load_campaign(db), with_plots=False)


def _shapiro_p(x: np.ndarray, q: int) -> float:
    """Shapiro-Wilk p of the means of consecutive batches of q readings (tail dropped)."""
    k = x.size // q
    return float(sps.shapiro(x[: k * q].reshape(k, q).mean(axis=1)).pvalue)


def test_a_campaign_that_shows_each_rule_meets_it(good: Report) -> None:
    rules = _rules(good)
    assert {n: s for n, (s, _) in rules.items() if s != "met"} == {11: "missing"}
    ps = {}
    for w in good.model.workloads:
        assert w.estimate is not None and w.estimate.q
        ps[w.name] = _shapiro_p(w.steady, w.estimate.q)
    assert min(ps.values()) >= 0.05  # the data: normal subsession means
    low = min(ps, key=ps.__getitem__)
    assert f"lowest p = {ps[low]:.2g}, {low}" in rules[6][1]
    assert "a (" in rules[1][1]  # the base of the ratios, with its estimate
    assert "time.perf_counter_ns" in rules[10][1]
    assert f"every reading ({2 * ROUNDS})" in rules[12][1]


def test_rule_6_is_missing_where_shapiro_wilk_rejects_normal_means(tmp_path: Path) -> None:
    # 1 % noise, and 8 % of the readings 5 times as long: the subsession means that hold
    # one are far above the others, which no normal distribution does
    rng = np.random.default_rng(4)
    x = 0.012 * (1 + 0.01 * rng.standard_normal(ROUNDS))
    x[rng.random(ROUNDS) < 0.08] *= 5
    heavy = [[float(v)] for v in x]
    report = _report(tmp_path, {"a": _normal(0.010, 1), "heavy": heavy})
    w = report.model.view("heavy")
    assert w.estimate is not None and w.estimate.q
    p = _shapiro_p(w.steady, w.estimate.q)
    assert p < 0.05
    status, detail = _rules(report)[6]
    assert status == "missing"
    assert f"heavy (p = {p:.2g})" in detail and "a (p" not in detail
    # the long readings pull the mean above the median: rule 8 names the skewed workload
    status, detail = _rules(report)[8]
    assert status == "met" and "heavy (mean" in detail and "a (mean" not in detail


def test_rules_6_and_5_without_a_ci(tmp_path: Path) -> None:
    # 3 rounds (2 steady readings): a mean, no interval at all; nothing relies on
    # normality, and rule 5 names the workload
    report = _report(tmp_path, {"short": _normal(0.010, 1, n=3)})
    assert report.model.view("short").estimate.interval_low is None
    rules = _rules(report)
    assert rules[6][0] == "not applicable"
    assert rules[5] == ("missing", "no CI for short (not enough data)")


def test_rule_5_with_an_uncertified_interval(tmp_path: Path) -> None:
    # 4 rounds (3 steady readings): too few to certify independence, so the interval is
    # the uncertified one (docs/methods.md §4.1): rule 5 says it is not certified, with
    # what it assumes (T = 1 when Geyer's tau of 3 readings is below 1: the i.i.d. width)
    rounds = _normal(0.010, 1, n=4)
    report = _report(tmp_path, {"short": rounds})
    e = report.model.view("short").estimate
    x = np.array([r[0] for r in rounds[1:]])
    d = x - x.mean()
    r1 = float(d[:-1] @ d[1:]) / float(d @ d)
    tau = max(1.0, -1.0 + 2.0 * (1.0 + r1)) if 1.0 + r1 > 0 else 1.0
    assert not e.certified and e.tau_bound == pytest.approx(tau, rel=1e-9)
    rules = _rules(report)
    assert rules[6][0] == "not applicable" and "not certified" in rules[6][1]
    assert rules[5] == (
        "missing",
        f"intervals not certified for short (tau <= {tau:.1f}, {e.width_factor:.1f}x the i.i.d. "
        "width): too few readings to certify independence, each shown with the bound on tau "
        "it assumes and the width that costs (docs/methods.md §4.1)",
    )


def test_rule_6_does_not_ask_normality_of_a_deterministic_workload(tmp_path: Path) -> None:
    # every reading 10 ms: the CI is a point, whatever the distribution's shape
    report = _report(tmp_path, {"const": [[0.010]] * ROUNDS})
    assert report.model.view("const").estimate.ci_low is not None
    rule = _rules(report)[6]
    assert rule == ("not applicable", "no CI relies on normal subsession means: the "
                    "workloads with one are deterministic (const)")  # fmt: skip


def test_rule_7_names_a_workload_left_out_of_the_comparisons(tmp_path: Path) -> None:
    # c ran its warm-up round only: no steady reading, no estimate to compare
    report = _report(tmp_path, {"a": _normal(0.010, 1), "b": _normal(0.012, 2),
                                "c": _normal(0.011, 3, n=1)})  # fmt: skip
    (group,) = report.groups
    assert [n for n, _ in group.excluded] == ["c"]
    status, detail = _rules(report)[7]
    assert (status, detail) == ("missing", "left out of the comparisons: c (no data)")


def test_rule_1_is_missing_when_the_base_of_the_ratios_has_no_ci(good: Report) -> None:
    groups = [
        dataclasses.replace(g, rows=[dataclasses.replace(g.rows[0], ci_low=None, ci_high=None),
                                     *g.rows[1:]])
        for g in good.groups
    ]  # fmt: skip
    rule = rules_checklist(good.model, groups, None)[0]
    assert rule.status == "missing" and "no CI of its own: a (not enough data)" in rule.detail


def test_rule_2_is_missing_when_a_stopped_workload_has_no_reason(tmp_path: Path) -> None:
    db = store_campaign(tmp_path / "c" / "benchrun.db",
                        {"a": _normal(0.010, 1), "b": _normal(0.012, 2)})  # fmt: skip
    with Store.open(db) as st:
        ids = {w.name: w.id for w in st.workloads(st.campaign(None).id)}
        st.set_workload_status(ids["b"], "stopped", None)
    rules = _rules(build_report(load_campaign(db), with_plots=False))
    assert rules[2] == ("missing", "no reason is stored for the end of b (stopped)")
    with Store.open(db) as st:
        st.set_workload_status(ids["b"], "stopped", "failed 3 rounds in a row")
    rules = _rules(build_report(load_campaign(db), with_plots=False))
    assert rules[2][0] == "met" and "b: failed 3 rounds in a row" in rules[2][1]


def test_rule_3_checks_a_rates_harmonic_mean_against_its_ci(tmp_path: Path) -> None:
    # a rate alternating 1 and 100 ops/s: arithmetic mean 50.5, harmonic 1.98
    alternating = [[1.0 if i % 2 else 100.0] for i in range(ROUNDS)]
    report = _report(tmp_path / "x", {"r": alternating}, unit="ops/s", metric="rate",
                     direction="higher_is_better")  # fmt: skip
    w = report.model.view("r")
    h = w.steady.size / float(np.sum(1.0 / w.steady))
    assert h == pytest.approx(2 / (1 + 1 / 100), rel=0.01)
    status, detail = _rules(report)[3]
    assert status == "missing" and f"harmonic mean {h:.4g} ops/s" in detail
    steady = _report(tmp_path / "y", {"r": _normal(50.0, 5)}, unit="ops/s", metric="rate",
                     direction="higher_is_better")  # fmt: skip
    assert _rules(steady)[3][0] == "met"


def test_rule_8_is_missing_without_percentiles(good: Report) -> None:
    views = [dataclasses.replace(w, summary=None) if w.name == "b" else w
             for w in good.model.workloads]  # fmt: skip
    model = dataclasses.replace(good.model, workloads=views)
    rule = rules_checklist(model, good.groups, None)[7]
    assert (rule.status, rule.detail) == ("missing", "no median or percentiles for b")


@pytest.mark.parametrize(
    ("metadata", "rule9", "rule10"),
    [
        (None, "no machine record was stored with this campaign", "the timer is not recorded"),
        ({k: v for k, v in METADATA.items() if k != "timer"}, "not recorded: timer",
         "the timer is not recorded"),
        ({k: v for k, v in METADATA.items() if k != "environment"},
         "not recorded: environment", None),
    ],
)  # fmt: skip
def test_rules_9_and_10_follow_the_machine_record(
    tmp_path: Path, metadata: dict | None, rule9: str, rule10: str | None
) -> None:
    rules = _rules(_report(tmp_path, {"a": _normal(0.010, 1)}, metadata=metadata))
    assert rules[9] == ("missing", rule9)
    if rule10 is None:
        assert rules[10][0] == "met"
    else:
        assert rules[10][0] == "missing" and rules[10][1].startswith(rule10)


def test_rule_12_is_missing_for_a_workload_whose_distribution_cannot_be_drawn(
    tmp_path: Path,
) -> None:
    # 2 rounds: the warm-up and one steady reading
    report = _report(tmp_path, {"a": _normal(0.010, 1), "one": _normal(0.010, 2, n=2)})
    status, detail = _rules(report)[12]
    assert status == "missing"
    assert detail == "no distribution can be plotted for one (only 1 steady reading (2 needed))"
