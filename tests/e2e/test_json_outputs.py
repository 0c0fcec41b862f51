"""Issue 17: ``benchrun run --json`` and ``benchrun status --json``.

``run --json`` prints one JSON document on stdout and nothing else (the progress goes to
stderr), so ``benchrun run x.yaml --json | jq`` works; its numbers are the ones
``benchrun show --json`` reads back from the store, and the rounds it counts are the
stored ones (plain sqlite3). ``status --json`` is checked in process against a campaign
run with the fake executor, the daemon's queue entry given by a stand-in for its socket.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from e2e_util import cli, run_benchrun, write_experiment

from benchrun.runner.campaign.run import run_campaign
from benchrun.runner.cli import main
from benchrun.runner.commands import status as status_command
from benchrun.runner.config.loader import parse_experiment
from benchrun.runner.execute.fake import FakeExecutor, constant


def test_run_json_is_the_only_stdout_and_matches_show(tmp_path: Path) -> None:
    exp = write_experiment(
        tmp_path,
        f"""
        name: js
        output: {tmp_path}
        settings: {{rounds: 8, warmup_rounds: 1, pin: none, seed: 1}}
        workloads:
          - name: nap
            command: ["sleep", "{{t}}"]
        matrix: {{t: [0.01, 0.03]}}
        """,
    )
    proc = run_benchrun("run", str(exp), "--json")  # a real process: nothing else on fd 1
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)  # the whole of stdout is one document
    assert "stored in" in proc.stderr and "benchrun: campaign" in proc.stderr
    show = json.loads(cli("show", str(tmp_path / "js"), "--json").stdout)
    assert {k: v for k, v in doc.items() if k not in ("exit_code", "message")} == show
    assert (doc["exit_code"], doc["status"]) == (0, "done")
    assert doc["stop_reason"] == "8 rounds of every workload"
    # per workload: the base unit, the display unit, the estimate and q x n_q
    conn = sqlite3.connect(tmp_path / "js" / "benchrun.db")
    by = {w["name"]: w for w in doc["workloads"]}
    assert set(by) == {"nap[t=0.01]", "nap[t=0.03]"}
    for name, sleep in (("nap[t=0.01]", 0.01), ("nap[t=0.03]", 0.03)):
        w = by[name]
        values = np.array(
            [
                ns / 1e9
                for (ns,) in conn.execute(
                    "SELECT r.wall_ns FROM round r JOIN workload w ON w.id = r.workload_id"
                    " WHERE w.name = ? AND r.warmup = 0 AND r.status = 'ok'",
                    (name,),
                )
            ]
        )
        assert values.size == w["steady"] == 8 and w["rounds"] == 9 and w["warmup"] == 1
        assert (w["unit"], w["display_unit"]) == ("s", {"label": "ms", "factor": 0.001})
        c = w["collected"]
        assert c["q"] * c["n_q"] <= 8 and values.min() <= c["mean"] <= values.max()
        assert c["mean"] >= sleep  # a sleep lasts at least as long as asked
        assert c["interval_low"] < c["mean"] < c["interval_high"]
        assert w["work"] is None  # no {work} in the command
    conn.close()
    # the pair of the matrix: the 30 ms sleep is the slower
    (pair,) = doc["comparisons"]["comparisons"]
    assert (pair["a"], pair["b"]) == ("nap[t=0.01]", "nap[t=0.03]") and pair["ratio"] > 1.5


class _Socket:
    """Stands in for the daemon's socket: answers ``current``, ``get`` and ``queue``."""

    def __init__(self, entry: dict[str, Any] | None, queued: int = 0) -> None:
        self.entry = entry
        self.queued = queued

    def __call__(self, op: str, **kw: Any) -> dict[str, Any]:
        if op in ("current", "get"):
            return {"entry": self.entry}
        return {"entries": [{"state": "queued"}] * self.queued}


def test_status_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    text = f"""\
name: st
output: {tmp_path / "out"}
settings: {{adaptive: false, rounds: 5, warmup_rounds: 1, pin: none, seed: 1}}
workloads:
  - {{name: a, command: [work, a]}}
  - {{name: b, command: [work, b]}}
"""
    exp = parse_experiment(text, base_dir=tmp_path, check_commands=False)
    fake = FakeExecutor({"a": constant(0.01), "b": constant(0.02)})

    class Quiet:
        def start(self, *a: Any) -> None: ...
        def round_done(self, *a: Any) -> None: ...
        def message(self, *a: Any) -> None: ...
        def show_decision(self, *a: Any) -> None: ...
        def stop(self) -> None: ...

    run_campaign(exp, fake, Quiet())
    entry = {
        "id": 7,
        "name": "st",
        "state": "done",
        "priority": 0,
        "submitted_at": 1.7e9,
        "not_before": None,
        "experiment": str(tmp_path / "st.yaml"),
        "db_path": str(exp.db_path),
        "campaign_id": 1,
        "base_campaign_id": 0,
        "launches": 1,
        "started_at": 1.7e9,
        "message": None,
    }
    monkeypatch.setattr(status_command, "request", _Socket(entry))
    capsys.readouterr()
    assert main(["status", "7", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["entry"] == entry
    live = doc["live"]
    assert (live["campaign_id"], live["status"], live["adaptive"]) == (1, "done", False)
    conn = sqlite3.connect(exp.db_path)
    counts = dict(
        conn.execute(
            "SELECT w.name, count(*) FROM round r JOIN workload w ON w.id = r.workload_id"
            " WHERE r.warmup = 0 AND r.status = 'ok' GROUP BY w.name"
        ).fetchall()
    )
    conn.close()
    assert counts == {"a": 5, "b": 5}
    assert {
        w["name"]: (w["rounds"], w["warmup"], w["target_rounds"]) for w in live["workloads"]
    } == {
        "a": (5, 1, 5),
        "b": (5, 1, 5),
    }
    # nothing running: one small document
    monkeypatch.setattr(status_command, "request", _Socket(None, queued=2))
    assert main(["status", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"entry": None, "queued": 2}
