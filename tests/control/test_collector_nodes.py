"""The collector's node analysis (runner/control/nodelevel.py, docs/methods.md §14).

References computed here, apart from the code under test: the grouping by node done by
hand with numpy, scipy's one-way ANOVA and t interval.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps

from benchrun.runner.control.collector import collect
from benchrun.runner.control.nodelevel import POOLING_ALPHA, node_groups, node_level, node_note

NODES = ("n1", "n2", "n3")


def test_node_groups_never_mix_nodes() -> None:
    values = np.arange(12, dtype=float)
    labels = ["b", "a", "c"] * 4  # alternating, as passes spread over nodes are
    groups, dropped = node_groups(values, labels, 2)
    assert dropped == 0 and list(groups) == ["a", "b", "c"]
    # a's values are 1, 4, 7, 10: subsessions (1, 4) and (7, 10)
    assert groups["a"].tolist() == [2.5, 8.5]
    groups, dropped = node_groups(values, labels, 5)
    assert groups == {} and dropped == 3
    with pytest.raises(ValueError):
        node_groups(values, labels[:-1], 2)


def test_several_readings_per_round_are_grouped_by_their_round_node() -> None:
    rng = np.random.default_rng(2)
    speed = {"n1": 1.0, "n2": 1.0, "n3": 1.1}
    nodes = [NODES[i % 3] for i in range(90)]
    rounds = [list(speed[n] * rng.normal(1.0, 0.01, 4)) for n in nodes]
    s = collect(rounds, nodes=nodes, warmup="none")
    info = s.nodes
    assert info is not None and info["k"] == 3 and info["ci_from"] == "nodes"
    # reference: per node, its readings (rounds in order, 4 readings each) in
    # subsessions of q, or its round means when the collector took rounds as subsessions
    if info["grouping"].startswith("round means"):
        per = {n: [np.mean(r) for r, m in zip(rounds, nodes, strict=True) if m == n] for n in NODES}
        groups = [np.array(per[n]) for n in NODES]
    else:
        q = int(s.q or 1)
        groups = []
        for n in NODES:
            x = np.concatenate([r for r, m in zip(rounds, nodes, strict=True) if m == n])
            h = x.size // q
            groups.append(x[: h * q].reshape(h, q).mean(axis=1))
    ref = sps.f_oneway(*groups)
    assert info["f"] == pytest.approx(float(ref.statistic), rel=1e-9)
    means = np.array([g.mean() for g in groups])
    lo, hi = sps.t.interval(0.95, df=2, loc=means.mean(), scale=sps.sem(means))
    assert (s.ci_low, s.ci_high) == (pytest.approx(lo), pytest.approx(hi))
    assert "CI from 3 node means: nodes differ" in s.interval_text("s")


def test_rounds_without_readings_keep_the_nodes_aligned() -> None:
    rng = np.random.default_rng(4)
    nodes = [NODES[i % 3] for i in range(60)]
    rounds: list[list[float]] = [
        [float(v)] for v in rng.normal(1.0, 0.01, 60) * np.array([1, 1, 1.2] * 20)
    ]
    rounds[5] = []  # an n3 round without readings: left out with its node
    s = collect(rounds, nodes=nodes, warmup="none")
    assert s.nodes is not None
    assert s.nodes["means"][2] / s.nodes["means"][0] == pytest.approx(1.2, rel=0.01)
    with pytest.raises(ValueError, match="nodes has 3 entries for 60 rounds"):
        collect(rounds, nodes=["a", "b", "c"])


def test_local_rounds_are_one_node_and_too_few_subsessions_are_said() -> None:
    rng = np.random.default_rng(6)
    rounds = [[float(v)] for v in rng.normal(1.0, 0.01, 40)]
    nodes: list[str | None] = [None] * 39 + ["far"]
    s = collect(rounds, nodes=nodes, warmup="none")
    assert s.nodes is None
    assert any("too few subsessions" in n for n in s.notes)


def test_node_note_reads_both_ways() -> None:
    differ = {"f": 12.34, "p_value": 4e-4, "ci_from": "nodes", "k": 3, "n": 24}
    assert node_note(differ) == "CI from 3 node means: nodes differ, F=12.3, p=0.0004"
    same = {"f": 0.8, "p_value": 0.47, "ci_from": "pooled", "k": 3, "n": 24}
    assert node_note(same) == "nodes do not differ (F=0.8, p=0.47): CI from the 24 pooled means"
    inf = {"f": None, "p_value": 0.0, "ci_from": "nodes", "k": 2, "n": 4}
    assert node_note(inf) == "CI from 2 node means: nodes differ, F=inf, p=0"
    maybe = {"f": 1.9, "p_value": 0.15, "ci_from": "nodes", "k": 4, "n": 32}
    assert node_note(maybe) == (
        "CI from 4 node means: a node effect is not ruled out, F=1.9, p=0.15 < 0.25"
    )


def test_the_collector_pools_only_when_the_f_test_is_above_the_pooling_level() -> None:
    """Node means whose F test has 0.05 < p < 0.25 (scipy's f_oneway computes it): the
    node-mean interval is used; above 0.25 the pooled one ("sometimes pool")."""
    rng = np.random.default_rng(11)
    for _ in range(200):
        values = rng.normal(1.0, 0.01, 3 * 16)
        labels = [NODES[i % 3] for i in range(values.size)]
        res, _ = node_level(values, labels, 4, 0.95)
        assert res is not None
        groups = [values[i::3].reshape(-1, 4).mean(axis=1) for i in range(3)]
        p = float(sps.f_oneway(*groups).pvalue)
        assert res.p_value == pytest.approx(p, rel=1e-9)
        assert res.ci_from == ("nodes" if p < POOLING_ALPHA else "pooled")


def test_readings_of_identical_nodes_in_subsessions_within_each_node() -> None:
    rng = np.random.default_rng(2)
    nodes = [NODES[i % 3] for i in range(90)]
    rounds = [list(rng.normal(1.0, 0.01, 40)) for _ in nodes]
    s = collect(rounds, nodes=nodes, warmup="none")
    info = s.nodes
    assert info is not None and info["grouping"].startswith("subsessions of")
    q = int(s.q or 1)
    groups = []
    for n in NODES:
        x = np.concatenate([r for r, m in zip(rounds, nodes, strict=True) if m == n])
        h = x.size // q
        groups.append(x[: h * q].reshape(h, q).mean(axis=1))
    ref = sps.f_oneway(*groups)
    assert info["f"] == pytest.approx(float(ref.statistic), rel=1e-9)
    assert info["ci_from"] == "pooled"  # p = 0.64 here: the ordinary CI stays
    assert (s.ci_low, s.ci_high) == (
        collect(rounds, warmup="none").ci_low,
        collect(rounds, warmup="none").ci_high,
    )
    assert "node means" not in s.interval_text("s")
