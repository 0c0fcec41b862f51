"""The report's compute nodes (issue 19: "nodes whose metadata differ (CPU model,
microcode, kernel, governor) are flagged in the report"), for any campaign measured on
Slurm nodes, not only a fleet: a campaign through the fake executor whose rounds ran on
two nodes, with each node's record stored as the campaign stores a Slurm node's
(``store_node_metadata``); the Markdown, HTML and JSON reports are checked against those
records."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchrun.runner.campaign.run import run_campaign
from benchrun.runner.campaign.session import store_node_metadata
from benchrun.runner.cli import main
from benchrun.runner.config.loader import parse_experiment
from benchrun.runner.execute.fake import FakeExecutor, constant, round_robin
from benchrun.runner.store.database import Store


def record(kernel: str, microcode: str) -> dict[str, Any]:
    return {
        "hardware": {
            "cpu_model": "Xeon 6338",
            "microcode": microcode,
            "governor": "performance",
            "smt_active": True,
            "cores_logical": 64,
        },
        "software": {"kernel_release": kernel},
    }


class Quiet:
    def start(self, *a: Any) -> None: ...
    def round_done(self, *a: Any) -> None: ...
    def message(self, text: str) -> None: ...
    def show_decision(self, *a: Any) -> None: ...
    def stop(self) -> None: ...


def campaign(tmp_path: Path, records: dict[str, dict[str, Any]]) -> Path:
    text = (
        f"name: nodes\noutput: {tmp_path / 'out'}\n"
        "settings: {adaptive: false, rounds: 6, warmup_rounds: 0, seed: 1}\n"
        "workloads:\n  - {name: a, command: [work, a]}\n"
    )
    exp = parse_experiment(text, base_dir=tmp_path, check_commands=False)
    fake = FakeExecutor({"a": constant(0.01)}, node_of=round_robin(tuple(sorted(records))))
    out = run_campaign(exp, fake, Quiet())
    assert out.exit_code == 0, out.message
    with Store.open(exp.db_path) as store:
        for node, rec in records.items():
            store_node_metadata(store, out.campaign_id, node, rec)
    return exp.campaign_dir


def report(directory: Path, fmt: str, capsys: Any) -> str:
    target = directory / f"report.{fmt}"
    assert main(["report", str(directory), "--format", fmt, "-o", str(target)]) == 0
    capsys.readouterr()
    return target.read_text()


def test_nodes_that_differ_are_flagged_in_every_report(tmp_path: Path, capsys: Any) -> None:
    records = {"n1": record("6.1.0-18", "0xd0003a5"), "n2": record("6.5.0-1", "0xd0003a5")}
    directory = campaign(tmp_path, records)
    md = report(directory, "md", capsys)
    assert "### Compute nodes" in md
    assert "FLAGGED: these nodes differ (kernel differs: n1 6.1.0-18, n2 6.5.0-1)" in md
    for node, rec in records.items():
        row = next(line for line in md.splitlines() if line.startswith(f"| {node} |"))
        assert rec["software"]["kernel_release"] in row and rec["hardware"]["microcode"] in row
    assert "microcode differs" not in md  # the same on both
    html = report(directory, "html", capsys)
    assert "Compute nodes" in html and "kernel differs: n1 6.1.0-18, n2 6.5.0-1" in html
    doc = json.loads(report(directory, "json", capsys))
    assert doc["machine"]["nodes"] == records
    assert doc["machine"]["node_differences"] == ["kernel differs: n1 6.1.0-18, n2 6.5.0-1"]


def test_identical_nodes_are_listed_not_flagged(tmp_path: Path, capsys: Any) -> None:
    same = record("6.1.0-18", "0xd0003a5")
    directory = campaign(tmp_path, {"n1": same, "n2": same})
    md = report(directory, "md", capsys)
    assert "### Compute nodes" in md and "FLAGGED" not in md
    assert "The nodes agree on every compared fact." in md
    assert json.loads(report(directory, "json", capsys))["machine"]["node_differences"] == []


def test_a_local_campaign_has_no_compute_nodes(tmp_path: Path, capsys: Any) -> None:
    text = (
        f"name: local\noutput: {tmp_path / 'out'}\n"
        "settings: {adaptive: false, rounds: 3, warmup_rounds: 0}\n"
        "workloads:\n  - {name: a, command: [work, a]}\n"
    )
    exp = parse_experiment(text, base_dir=tmp_path, check_commands=False)
    assert run_campaign(exp, FakeExecutor({"a": constant(0.01)}), Quiet()).exit_code == 0
    md = report(exp.campaign_dir, "md", capsys)
    assert "Compute nodes" not in md
    assert json.loads(report(exp.campaign_dir, "json", capsys))["machine"]["nodes"] == {}
