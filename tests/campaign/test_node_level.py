"""Nodes as a level of variation (issue 19, docs/methods.md §14), with the fake executor.

A workload whose passes alternate between 3 fake nodes (runner/execute/fake.py
``round_robin``), one node 10 % slower: the node-level CI is the workload's CI (its mean
the mean of the node means, t with 2 df), every output says so, and the controller stops
the workload because more rounds cannot narrow a CI from 3 node means. Identical nodes:
the ordinary CI, nothing flagged. References: the stored rounds read back with plain
sqlite3, grouped by node and cut into subsessions here, and scipy's one-way ANOVA.
"""

from __future__ import annotations

import json
import math
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps

from benchrun.runner.campaign.run import run_campaign
from benchrun.runner.campaign.session import load_states
from benchrun.runner.cli import main
from benchrun.runner.config.experiment import Experiment
from benchrun.runner.config.loader import parse_experiment
from benchrun.runner.control.collector import collect
from benchrun.runner.execute.executor import RoundSpec
from benchrun.runner.execute.fake import FakeExecutor, constant, lognormal, round_robin
from benchrun.runner.store.database import Store

NODES = ("n1", "n2", "n3")
SETTINGS = "pin: none\nseed: 3\nmax_rounds: 300\nci_rel_width: 0.02"


class _Quiet:
    def start(self, *a: object) -> None: ...
    def round_done(self, *a: object) -> None: ...
    def message(self, text: str) -> None: ...
    def show_decision(self, *a: object) -> None: ...
    def stop(self) -> None: ...


def _experiment(root: Path) -> Experiment:
    text = (
        f"name: nodes\noutput: {root / 'out'}\nsettings: {{{SETTINGS.replace(chr(10), ', ')}}}\n"
        "workloads:\n  - {name: a, command: [work]}\n"
    )
    return parse_experiment(text, base_dir=root, check_commands=False)


def _run(root: Path, slow: float, seed: int = 1) -> Experiment:
    exp = _experiment(root)
    fake = FakeExecutor(
        {"a": lognormal(0.1, 0.02, seed=seed)},
        node_of=round_robin(NODES),
        node_speed={"n3": slow},
    )
    run_campaign(exp, fake, _Quiet())
    return exp


def _steady(db: Path) -> list[tuple[str, float]]:
    """(node, wall time s) of every steady ok round, in launch order, by plain sqlite3."""
    conn = sqlite3.connect(db)
    rows = conn.execute(
        "SELECT facts_json, wall_ns FROM round WHERE warmup = 0 AND status = 'ok' ORDER BY seq"
    ).fetchall()
    conn.close()
    return [(json.loads(f)["node"], ns / 1e9) for f, ns in rows]


def _show(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    capsys.readouterr()
    assert main(list(argv)) == 0
    return capsys.readouterr().out


@pytest.fixture(scope="module")
def slow_node(tmp_path_factory: pytest.TempPathFactory) -> Experiment:
    return _run(tmp_path_factory.mktemp("slow"), slow=1.1)


def test_fake_executor_runs_rounds_on_nodes_with_their_speed() -> None:
    fake = FakeExecutor({"a": constant(0.5)}, node_of=round_robin(NODES), node_speed={"n3": 1.1})
    spec = RoundSpec("a", ("work",), {}, timeout=10.0)
    outs = [fake.launch(spec) for _ in range(6)]
    assert [o.node for o in outs] == ["n1", "n2", "n3"] * 2
    assert [o.wall_ns for o in outs] == [500_000_000, 500_000_000, 550_000_000] * 2
    # the launch-overhead probe runs here
    assert fake.launch(RoundSpec("a", ("true",), {}, timeout=10.0)).node is None


def test_a_slow_node_makes_the_ci_the_node_level_one(slow_node: Experiment) -> None:
    db = slow_node.db_path
    steady = _steady(db)
    assert {n for n, _ in steady} == set(NODES)
    with Store.open(db) as store:
        campaign = store.campaign()
        w = store.workloads(campaign.id)[0]
        assert campaign.stop_reason is not None
        # the controller stopped the workload for the reason only more nodes can fix
        assert "nodes differ: more rounds do not narrow a CI from 3 node means" in (
            campaign.stop_reason
        )
        assert "run on more nodes" in campaign.stop_reason
        # resume rebuilds each steady round's node from its facts
        states = load_states(store, campaign, slow_node)
        assert states["a"].steady_nodes == [n for n, _ in steady]
        assert w.name == "a"
    nodes = [n for n, _ in steady]
    x = np.array([v for _, v in steady])
    s = collect([[v] for v in x], nodes=nodes)
    info = s.nodes
    assert info is not None and info["ci_from"] == "nodes" and info["k"] == 3
    # reference: group by node here, subsessions of q within each node, scipy's ANOVA
    q = int(s.q or 1)
    groups = []
    for node in NODES:
        v = x[np.array(nodes) == node]
        h = v.size // q
        groups.append(v[: h * q].reshape(h, q).mean(axis=1))
    ref = sps.f_oneway(*groups)
    assert info["f"] == pytest.approx(float(ref.statistic), rel=1e-9)
    assert info["p_value"] == pytest.approx(float(ref.pvalue), rel=1e-6, abs=1e-300)
    m = np.array([g.mean() for g in groups])
    lo, hi = sps.t.interval(0.95, df=2, loc=m.mean(), scale=sps.sem(m))
    assert (s.mean, s.ci_low, s.ci_high) == (
        pytest.approx(m.mean()),
        pytest.approx(lo),
        pytest.approx(hi),
    )
    # the truth: the mean over the three nodes of 0.1 s x speed
    truth = 0.1 * (1 + 1 + 1.1) / 3
    assert lo <= truth <= hi
    # the pooled CI (nodes ignored) is far narrower and misses the node variation
    pooled = collect([[v] for v in x])
    assert pooled.half_width is not None and s.half_width is not None
    assert pooled.half_width < s.half_width / 5


def test_every_output_says_the_ci_is_from_node_means(
    slow_node: Experiment, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    d = str(slow_node.campaign_dir)
    text = " ".join(_show(capsys, "show", d).split())
    assert "* a: CI from 3 node means: nodes differ, F=" in text
    assert "nodes: a: CI from 3 node means" in text
    for node in NODES:
        assert f"{node} " in text
    doc = json.loads(_show(capsys, "show", d, "--json"))
    (w,) = doc["workloads"]
    nodes = w["collected"]["nodes"]
    assert nodes["ci_from"] == "nodes" and nodes["nodes"] == list(NODES)
    assert nodes["means"][2] / nodes["means"][0] == pytest.approx(1.1, rel=0.03)
    md = tmp_path / "r.md"
    assert main(["report", d, "--format", "md", "--no-plots", "-o", str(md)]) == 0
    report = md.read_text()
    assert "nodes (docs/methods.md §14)" in report and "CI from 3 node means" in report
    ej = tmp_path / "e.json"
    assert main(["export", d, "-o", str(ej)]) == 0
    (e,) = json.loads(ej.read_text())["workloads"]
    assert e["result"]["nodes"]["ci_from"] == "nodes"
    assert (e["result"]["ci_low"], e["result"]["ci_high"]) == (
        w["collected"]["ci_low"],
        w["collected"]["ci_high"],
    )


def test_identical_nodes_keep_the_ordinary_ci(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    exp = _run(tmp_path, slow=1.0)
    with Store.open(exp.db_path) as store:
        campaign = store.campaign()
    assert campaign.stop_reason is not None
    assert campaign.stop_reason.startswith("all conditions met")
    assert "nodes" not in campaign.stop_reason
    doc = json.loads(_show(capsys, "show", str(exp.campaign_dir), "--json"))
    (w,) = doc["workloads"]
    c = w["collected"]
    assert c["nodes"]["ci_from"] == "pooled" and not c["nodes"]["differ"]
    assert c["rel_half_width"] <= 0.02
    # the ordinary CI: the same as the collector's without nodes
    steady = _steady(exp.db_path)
    plain = collect([[v] for _, v in steady])
    assert (c["ci_low"], c["ci_high"]) == (
        pytest.approx(plain.ci_low),
        pytest.approx(plain.ci_high),
    )
    text = _show(capsys, "show", str(exp.campaign_dir))
    assert "node means" not in text


def test_one_node_changes_nothing() -> None:
    rng = np.random.default_rng(5)
    x = [[float(v)] for v in rng.lognormal(math.log(0.1), 0.02, 60)]
    a = collect(x)
    b = collect(x, nodes=["n1"] * 60)
    assert a == b and b.nodes is None


def test_the_controller_does_not_stop_a_workload_for_nodes_by_chance() -> None:
    """Over 200 simulated collections of identical nodes, re-tested after every round as
    the controller does, the node stop's test (p < alpha / max_rounds) never fires in more
    than alpha of the campaigns (the F test at 0.05 alone fires far more often)."""
    from benchrun.runner.control.controller import Controller, ControllerParams

    rng = np.random.default_rng(11)
    params = ControllerParams(ci_rel_width=0.001, max_rounds=60)
    fired = plain = 0
    for _ in range(200):
        x = rng.normal(1.0, 0.02, 60)
        nodes = [NODES[i % 3] for i in range(60)]
        ctl = Controller(params, [("a", "lower_is_better")])
        hit = hit_plain = False
        for r in range(24, 61, 3):
            s = collect([[v] for v in x[:r]], nodes=nodes[:r])
            hit_plain |= bool(s.nodes and s.nodes["differ"])
            hit |= ctl.node_limited(s) is not None
        fired += hit
        plain += hit_plain
    assert fired / 200 <= params.alpha + 3 * math.sqrt(params.alpha / 200)
    assert plain > fired
