"""The fleet report (issue 19): a campaign of 3 benchmarks on 2 node types run through
the fleet's executor with fake members (runner/execute/fake.py: no process, no Slurm;
each member says which node ran a round and sends its node's record once, as a Slurm
executor's agent does). The report's Fleet section is checked against statistics
computed here from the stored rounds by benchrun.stats, and its metadata table against
the stored node records."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from benchrun.runner.campaign.run import run_campaign
from benchrun.runner.cli import main
from benchrun.runner.config.loader import parse_experiment
from benchrun.runner.execute.executor import RoundOutcome, RoundSpec
from benchrun.runner.execute.fake import FakeExecutor, lognormal
from benchrun.runner.execute.fleet import FleetExecutor
from benchrun.runner.report.document import build_report
from benchrun.runner.report.fleet_tables import DIFFERS, metadata_table, verdicts_table
from benchrun.runner.report.markdown import render_markdown
from benchrun.runner.report.model import load_campaign
from benchrun.runner.store.database import Store
from benchrun.stats.hpt import hpt, r_speedup
from benchrun.stats.speedup import speedup_suite

MEANS = {"a": 0.010, "b": 0.020, "c": 0.040}  # seconds on alpha
SLOWER = 1.25  # beta takes 25 % longer on every benchmark
ROUNDS = 40


def record(cpu: str, microcode: str, kernel: str) -> dict[str, Any]:
    return {
        "hardware": {
            "cpu_model": cpu,
            "microcode": microcode,
            "cores_physical": 8,
            "cores_logical": 16,
            "smt_active": True,
            "memory_total_bytes": 64 * 2**30,
        },
        "software": {"kernel_release": kernel, "os": "Debian GNU/Linux 12 (bookworm)"},
    }


RECORDS = {
    "n1": record("Xeon 6338", "0xd0003a5", "6.1.0-18-amd64"),
    "n2": record("Xeon 6338", "0xd0003b9", "6.1.0-18-amd64"),  # other microcode than n1
    "n3": record("EPYC 7B13", "0xa001173", "6.1.0-18-amd64"),
}


class FakeMember:
    """A node type's executor: a FakeExecutor whose rounds run on ``nodes`` (the first
    half of its launches on the first node, then on the next: a job resubmitted
    elsewhere), telling ``on_node`` each node's record once, as SlurmExecutor does."""

    def __init__(self, fake: FakeExecutor, nodes: list[str]) -> None:
        self.fake = fake
        self.nodes = nodes
        self.node_metadata: dict[str, dict[str, Any]] = {}
        self.on_node: Any = None
        self.launches = 0

    def launch(self, spec: RoundSpec) -> RoundOutcome:
        half = (ROUNDS + 2) * len(MEANS) // 2
        node = self.nodes[min(self.launches // half, len(self.nodes) - 1)]
        self.launches += 1
        if node not in self.node_metadata:
            self.node_metadata[node] = RECORDS[node]
            if self.on_node is not None:
                self.on_node(node, RECORDS[node])
        return dataclasses.replace(self.fake.launch(spec), node=node)

    def interrupt(self) -> None:
        self.fake.interrupt()

    def clear_interrupt(self) -> None:
        pass

    def close(self) -> None:
        pass


class NullDisplay:
    def start(self, campaign: Any, targets: dict[str, int], done: dict[str, int]) -> None:
        pass

    def round_done(self, workload: str, outcome: Any, value: float | None, warmup: bool) -> None:
        pass

    def message(self, text: str) -> None:
        pass

    def show_decision(self, decision: Any, eta_s: float | None) -> None:
        pass

    def stop(self) -> None:
        pass


def text(out: Path) -> str:
    workloads = "".join(f"  - name: {n}\n    command: [python3, -c, pass]\n" for n in MEANS)
    return (
        f"name: fleet\noutput: {out}\n"
        f"settings:\n  rounds: {ROUNDS}\n  warmup_rounds: 1\n  pin: none\n"
        "executor:\n  kind: slurm\n  time: 10m\n  node_types:\n"
        "    alpha: {partition: alpha}\n    beta: {partition: beta}\n"
        f"workloads:\n{workloads}"
    )


@pytest.fixture(scope="module")
def fleet_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fleet")
    exp = parse_experiment(text(root / "out"), base_dir=root, check_commands=False)
    scripts = {
        w.name: lognormal(
            MEANS[w.base_name or ""] * (SLOWER if w.params["node_type"] == "beta" else 1.0),
            0.02,
            seed=i,
        )
        for i, w in enumerate(exp.workloads)
    }
    members = {
        "alpha": FakeMember(FakeExecutor(scripts), ["n1", "n2"]),
        "beta": FakeMember(FakeExecutor(scripts), ["n3"]),
    }
    routes = {w.name: str(w.params["node_type"]) for w in exp.workloads}
    fleet = FleetExecutor(members, routes)
    run_campaign(exp, fleet, NullDisplay())
    return exp.db_path


def steady_from_store(db: Path) -> dict[str, np.ndarray]:
    """Each workload's steady wall times (s): its ok rounds after the warm-up round, in
    launch order, read from the store without the report's code."""
    with Store.open(db) as store:
        c = store.campaign()
        out = {}
        for w in store.workloads(c.id):
            rows = [r for r in store.rounds(c.id, w.id) if r.status == "ok" and not r.warmup]
            out[w.name] = np.array([r.wall_ns / 1e9 for r in rows])
    return out


def test_rounds_and_node_records_are_stored(fleet_db: Path) -> None:
    with Store.open(fleet_db) as store:
        c = store.campaign()
        events = [e for e in store.events(c.id) if e.kind == "node-metadata"]
        assert sorted(e.data["node"] for e in events) == ["n1", "n2", "n3"]
        nodes = {
            w.name: {r.facts["node"] for r in store.rounds(c.id, w.id)}
            for w in store.workloads(c.id)
        }
    assert nodes["a[node_type=alpha]"] == {"n1", "n2"}
    assert nodes["a[node_type=beta]"] == {"n3"}


def test_fleet_section_matches_stats_on_the_stored_rounds(fleet_db: Path) -> None:
    model = load_campaign(fleet_db)
    report = build_report(model, with_plots=False, resamples=500)
    fleet = report.fleet
    assert fleet is not None
    assert fleet.node_types == ["alpha", "beta"]
    assert fleet.nodes == {"alpha": ["n1", "n2"], "beta": ["n3"]}
    assert fleet.benchmarks == ["a", "b", "c"]
    assert report.sections[0] == ("fleet", "Fleet: the hardware comparison")
    # one verdict per benchmark, beta 25 % slower: separated, ratio b/a near 1.25
    assert [v.benchmark for v in fleet.verdicts] == ["a", "b", "c"]
    series = steady_from_store(fleet_db)
    for v in fleet.verdicts:
        c = v.comparison
        assert c.verdict == "separated"
        slow, fast = (c.b, c.a) if v.b_type == "beta" else (c.a, c.b)
        assert slow.endswith("node_type=beta]") and fast.endswith("node_type=alpha]")
        assert c.ratio is not None and c.ratio_low is not None and c.ratio_high is not None
        want = series[c.b].mean() / series[c.a].mean()
        assert c.ratio == pytest.approx(want, rel=0.02)
        assert c.ratio_low <= want <= c.ratio_high
    # the hardware comparison: the suite's HPT, r-speedup, Speedup-Test, computed here
    suite = report.hardware_suite
    assert suite is not None and suite.systems == ["alpha", "beta"]
    (cmp,) = suite.comparisons
    assert (cmp.a, cmp.b) == ("beta", "alpha")
    beta = {b: series[f"{b}[node_type=beta]"] for b in MEANS}
    alpha = {b: series[f"{b}[node_type=alpha]"] for b in MEANS}
    for b in MEANS:  # the report's series are the stored rounds
        assert np.array_equal(suite.cells["beta"][b], beta[b])
    h = hpt(beta, alpha, False)
    assert cmp.hpt is not None and cmp.r_speedup is not None and cmp.speedup_test is not None
    assert cmp.hpt.confidence == pytest.approx(h.confidence, abs=1e-12)
    assert cmp.hpt.confidence < 0.5  # beta does not outperform alpha
    rs = r_speedup(beta, alpha, 0.95, higher_is_better=False)
    doc = rs.to_dict()
    assert cmp.r_speedup.gamma == doc["gamma"]  # None: beta is no faster at any r
    assert cmp.r_speedup.gmean_speedup == pytest.approx(doc["gmean_speedup"], rel=1e-12)
    sp = speedup_suite({b: (alpha[b], beta[b]) for b in MEANS}, confidence=0.95)
    got = cmp.speedup_test
    assert got.overall_speedup_mean == pytest.approx(sp.overall_speedup_mean, rel=1e-12)
    # closed form: the speedup of means over the suite is alpha's total over beta's
    total = sum(alpha[b].mean() for b in MEANS) / sum(beta[b].mean() for b in MEANS)
    assert got.overall_speedup_mean == pytest.approx(total, rel=1e-9)
    assert got.overall_speedup_mean == pytest.approx(1 / SLOWER, rel=0.03)


def test_metadata_side_by_side_matches_the_stored_records(fleet_db: Path) -> None:
    report = build_report(load_campaign(fleet_db), with_plots=False, resamples=200)
    fleet = report.fleet
    assert fleet is not None
    rows = {(f.section, f.label): f for f in fleet.facts}
    assert rows[("Nodes", "nodes")].values == {"alpha": "n1, n2", "beta": "n3"}
    cpu = rows[("Hardware", "CPU model")]
    assert cpu.values == {"alpha": "Xeon 6338", "beta": "EPYC 7B13"} and cpu.differs
    code = rows[("Hardware", "Microcode")]
    assert code.values["alpha"] == "n1: 0xd0003a5; n2: 0xd0003b9" and code.within == ["alpha"]
    assert code.values["beta"] == "0xa001173"
    kernel = rows[("Software", "Kernel")]
    assert kernel.values == {"alpha": "6.1.0-18-amd64", "beta": "6.1.0-18-amd64"}
    assert not kernel.differs and kernel.within == []
    assert fleet.within == {"alpha": ["microcode differs: n1 0xd0003a5, n2 0xd0003b9"]}
    table = metadata_table(fleet)
    assert table.headers == ("section", "fact", "alpha", "beta", "differs")
    by_fact = {r[1]: r for r in table.rows}
    assert by_fact["CPU model"][-1] == DIFFERS
    assert by_fact["Microcode"][-1] == f"{DIFFERS}; differs within alpha"
    assert by_fact["Kernel"][-1] == ""
    verdicts = verdicts_table(fleet, 0.95)
    assert [r[0] for r in verdicts.rows] == ["a", "b", "c"]
    assert all(r[2] == "separated" for r in verdicts.rows)


def test_every_format_has_the_fleet_section(fleet_db: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "r.html"
    assert main(["report", str(fleet_db), "--out", str(out), "--no-plots"]) == 0
    html = out.read_text()
    assert '<section id="fleet">' in html and html.index('id="fleet"') < html.index(
        'id="comparisons"'
    )
    for fragment in (
        "per-benchmark verdicts between node types",
        "Hardware comparison: alpha vs beta across 3 benchmarks",
        "HPT: beta vs alpha",
        "Speedup-Test: alpha (initial) -&gt; beta",
        "node types side by side",
        "<th>alpha</th><th>beta</th>",
        "Nodes of alpha differ: microcode differs",
    ):
        assert fragment in html, fragment
    assert html.count("HPT: beta vs alpha") == 1  # not again under the comparisons
    report = build_report(load_campaign(fleet_db), with_plots=False, resamples=200)
    md = render_markdown(report, None)
    assert "## Fleet: the hardware comparison" in md and "| section | fact | alpha | beta |" in md
    assert main(["report", str(fleet_db), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["sections"][0] == "fleet"
    f = doc["fleet"]
    assert f["node_types"] == ["alpha", "beta"] and len(f["verdicts"]) == 3
    assert f["hardware_comparison"][0]["hpt"]["confidence"] == pytest.approx(
        doc["suite"]["comparisons"][0]["hpt"]["confidence"]
    )
    assert f["records"]["n3"] == RECORDS["n3"]


def test_one_benchmark_gets_its_verdict_and_says_why_no_hpt(tmp_path: Path) -> None:
    exp = parse_experiment(
        text(tmp_path / "out").replace(
            "  - name: b\n    command: [python3, -c, pass]\n"
            "  - name: c\n    command: [python3, -c, pass]\n",
            "",
        ),
        base_dir=tmp_path,
        check_commands=False,
    )
    assert exp.names == ("a[node_type=alpha]", "a[node_type=beta]")
    scripts = {
        "a[node_type=alpha]": lognormal(0.01, 0.02, seed=1),
        "a[node_type=beta]": lognormal(0.0125, 0.02, seed=2),
    }
    members = {
        "alpha": FakeMember(FakeExecutor(scripts), ["n1"]),
        "beta": FakeMember(FakeExecutor(scripts), ["n3"]),
    }
    routes = {n: str(exp.node_type_of(n)) for n in exp.names}
    run_campaign(exp, FleetExecutor(members, routes), NullDisplay())
    report = build_report(load_campaign(exp.db_path), with_plots=False, resamples=200)
    assert report.fleet is not None and report.hardware_suite is None
    assert [v.benchmark for v in report.fleet.verdicts] == ["a"]
    assert any("at least 2 benchmarks" in n for n in report.fleet.notes)


def test_show_says_the_campaign_is_a_fleet(fleet_db: Path, capsys) -> None:
    assert main(["show", str(fleet_db.parent)]) == 0
    out = capsys.readouterr().out
    assert "fleet: 2 node types" in out
    assert "alpha: n1, n2" in out and "beta: n3" in out
    assert main(["show", str(fleet_db.parent), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    doc = doc[0] if isinstance(doc, list) else doc
    assert doc["fleet"] == {"alpha": ["n1", "n2"], "beta": ["n3"]}
