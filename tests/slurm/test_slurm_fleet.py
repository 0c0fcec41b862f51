"""The fleet report from two partitions of the one node of the test cluster (issue 19):
node types ``alpha: {partition: alpha}`` and ``beta: {partition: beta}``, both on node
``vm``, jobs not exclusive (each gets one of its 2 CPUs, so both jobs run at once);
``benchrun run`` (the console script) then ``benchrun report`` and ``benchrun show``.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from benchrun.runner.store.database import Store

pytestmark = pytest.mark.usefixtures("slurm_cluster")

BENCHMARKS = {"small": "sum(range(20000))", "large": "sum(range(40000))"}
ROUNDS = 10


def write(tmp_path: Path) -> Path:
    workloads = "".join(
        f"  - {{name: {n}, command: [python3, -c, '{code}']}}\n" for n, code in BENCHMARKS.items()
    )
    path = tmp_path / "fleet.yaml"
    path.write_text(
        f"name: fleet-cluster\noutput: {tmp_path / 'results'}\n"
        f"settings: {{rounds: {ROUNDS}, warmup_rounds: 1, pin: none}}\n"
        "executor:\n"
        "  kind: slurm\n"
        "  time: '10:00'\n"
        "  exclusive: false\n"
        "  pending_limit: 5m\n"  # the cluster is shared with other tests: wait for a CPU
        # ahead of the other tests' jobs (root may): an exclusive job queued between our two
        # would wait for our first, held for the campaign, while our second waits for it
        "  sbatch_args: [--nice=-5000]\n"
        "  node_types:\n"
        "    alpha: {partition: alpha}\n"
        "    beta: {partition: beta}\n"
        f"workloads:\n{workloads}"
    )
    return path


def benchrun(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["benchrun", *args], capture_output=True, text=True, timeout=timeout,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip


def test_the_fleet_report_from_two_partitions_of_one_node(tmp_path: Path) -> None:
    path = write(tmp_path)
    done = benchrun("run", str(path))
    assert done.returncode == 0, done.stderr
    # each node type's events name it
    assert "alpha: slurm: submitted job" in done.stderr, done.stderr
    assert "beta: slurm: submitted job" in done.stderr, done.stderr
    db = tmp_path / "results" / "fleet-cluster" / "benchrun.db"
    node = os.uname().nodename.split(".")[0]
    with Store.open(db) as store:
        c = store.campaign()
        names = {w.id: w.name for w in store.workloads(c.id)}
        rounds = store.rounds(c.id)
        events = [e for e in store.events(c.id) if e.kind == "node-metadata"]
    assert sorted(names.values()) == sorted(
        f"{b}[node_type={t}]" for b in BENCHMARKS for t in ("alpha", "beta")
    )
    assert len(rounds) == 4 * (ROUNDS + 1) and all(r.status == "ok" for r in rounds)
    assert {r.facts["node"] for r in rounds} == {node}
    # one job per node type served all its rounds while the other type's job served its
    # own (interleaved rounds): the two jobs were held at the same time
    jobs = {t: {r.facts["slurm_job"] for r in rounds if names[r.workload_id].endswith(f"={t}]")} for t in ("alpha", "beta")}  # fmt: skip
    assert len(jobs["alpha"]) == len(jobs["beta"]) == 1, (jobs, done.stderr)
    assert jobs["alpha"] != jobs["beta"]
    types = [names[r.workload_id].rsplit("=", 1)[1] for r in sorted(rounds, key=lambda r: r.seq)]
    switches = sum(a != b for a, b in zip(types, types[1:], strict=False))
    assert switches >= ROUNDS  # the types alternated through the campaign
    assert [e.data["node"] for e in events] == [node]  # one node, described once

    report = benchrun("report", str(db.parent), "--format", "json")
    assert report.returncode == 0, report.stderr
    doc = json.loads(report.stdout)
    fleet = doc["fleet"]
    assert doc["sections"][0] == "fleet"
    assert fleet["node_types"] == ["alpha", "beta"]
    assert fleet["nodes"] == {"alpha": [node], "beta": [node]}
    assert fleet["benchmarks"] == ["small", "large"]
    verdicts = {v["benchmark"]: v for v in fleet["verdicts"]}
    assert set(verdicts) == {"small", "large"}
    for v in verdicts.values():
        assert {v["a"], v["b"]} == {"alpha", "beta"}
        assert v["verdict"] in ("separated", "equivalent", "undecided", "equal")
        assert v["ratio"] is not None and 0.5 < v["ratio"] < 2.0  # the same node: near 1
    (hw,) = fleet["hardware_comparison"]
    assert (hw["a"], hw["b"]) == ("beta", "alpha")
    assert 0.0 <= hw["hpt"]["confidence"] <= 1.0
    rows = {(r["section"], r["label"]): r for r in fleet["metadata"]}
    cpu = rows[("Hardware", "CPU model")]
    assert set(cpu["values"]) == {"alpha", "beta"}
    assert cpu["values"]["alpha"] == cpu["values"]["beta"] and not cpu["differs_between_types"]
    assert rows[("Nodes", "nodes")]["values"] == {"alpha": node, "beta": node}

    html_path = tmp_path / "fleet.html"
    html = benchrun("report", str(db.parent), "--out", str(html_path), "--no-plots")
    assert html.returncode == 0, html.stderr
    text = html_path.read_text()
    for fragment in (
        '<section id="fleet">',
        "per-benchmark verdicts between node types",
        "HPT: beta vs alpha",
        "Speedup-Test: alpha (initial)",
        "<th>section</th><th>fact</th><th>alpha</th><th>beta</th>",
    ):
        assert fragment in text, fragment

    show = benchrun("show", str(db.parent))
    assert show.returncode == 0, show.stderr
    assert "fleet: 2 node types" in show.stdout
    assert f"alpha: {node}" in show.stdout and f"beta: {node}" in show.stdout
