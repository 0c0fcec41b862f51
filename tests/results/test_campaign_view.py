"""The campaign read model (results/campaign_view.py, issue 30): one read of a stored
campaign gives show and the report its settings, stored experiment, rows, results and node
records, with secrets hidden."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchrun.runner.config.loader import load_experiment
from benchrun.runner.errors import UserError
from benchrun.runner.results.campaign_view import node_records, read_campaign
from benchrun.runner.store.database import EventRow, NewRound, Store

TEXT = """\
name: view
settings: {adaptive: false, rounds: 3, warmup_rounds: 0, confidence: 0.9}
workloads:
  - name: a
    command: [python3, -c, "pass"]
    env: {API_TOKEN: hunter2-hunter2}
  - name: b
    command: [python3, -c, "pass"]
compare: [[a, b]]
"""


def _campaign(tmp_path: Path, values: dict[str, list[float]]) -> Path:
    """A fixed campaign stored through the store's API: 3 passes of a and b with
    ``values`` (seconds), each round on node n1 for a and n2 for b, and one
    node-metadata event."""
    path = tmp_path / "view.yaml"
    path.write_text(TEXT)
    experiment = load_experiment(path, check_commands=False)
    db = tmp_path / "benchrun.db"
    with Store.create_or_open(db) as store:
        cid = store.create_campaign(
            name="view", config_path=str(path), config_text=TEXT, fingerprint="f",
            settings={"adaptive": False, "rounds": 3, "warmup_rounds": 0, "confidence": 0.9},
            workloads=[{"name": w.name, "metric": "wall_time", "unit": "s",
                        "direction": "lower_is_better", "spec": {"env": dict(w.env)}}
                       for w in experiment.workloads],
            benchrun_version="0", command_line=None, experiment=experiment,
        )  # fmt: skip
        ids = {w.name: w.id for w in store.workloads(cid)}
        seq = 0
        for p in range(3):
            for name, node in (("a", "n1"), ("b", "n2")):
                v = values[name][p]
                store.add_round(
                    NewRound(
                        campaign_id=cid, workload_id=ids[name], seq=seq, pass_=p,
                        round_index=p, status="ok", reason=None, exit_code=0,
                        started_at=1.7e9 + seq, wall_ns=int(v * 1e9), user_s=v, sys_s=0.0,
                        max_rss_kib=1, cpus="1", argv=["python3"], work=None, warmup=False,
                        readings=[v], facts={"node": node},
                    )
                )  # fmt: skip
                seq += 1
        store.add_event(
            cid, "node-metadata", "metadata of node n1", {"node": "n1", "record": {"cpu": "x"}}
        )
        store.set_status(cid, "done")
    return db


def test_one_read_gives_the_typed_campaign_with_secrets_hidden(tmp_path: Path) -> None:
    db = _campaign(tmp_path, {"a": [1.0, 1.1, 0.9], "b": [2.0, 2.2, 1.8]})
    with Store.open(db) as store:
        view = read_campaign(store, max_magnitude=1e50)
    assert view.settings.adaptive is False and view.confidence == 0.9
    assert view.experiment is not None and view.experiment.compare == (("a", "b"),)
    assert view.names == {w.id: w.name for w in view.workloads}
    assert [r.name for r in view.results] == ["a", "b"]
    assert [r.rounds for r in view.results] == [3, 3]
    assert view.n_campaigns == 1 and view.latest
    assert view.nodes == {"n1": {"cpu": "x"}}
    assert {r.node for r in view.rounds} == {"n1", "n2"}
    assert view.reading_flags == {}  # read only when asked
    # the secret is hidden in every row the view holds, the stored experiment's JSON too
    assert "hunter2" not in view.campaign.config_text
    assert "hunter2" not in (view.campaign.experiment_json or "")
    assert json.loads(view.campaign.experiment_json or "")["workloads"][0]["env"] == {
        "API_TOKEN": "<secret>"
    }
    assert "hunter2" not in json.dumps([w.spec for w in view.workloads])
    # ...but the experiment the statistics used is the one that ran
    assert view.experiment.workloads[0].env == {"API_TOKEN": "hunter2-hunter2"}
    with Store.open(db) as store:
        shown = read_campaign(store, max_magnitude=1e50, include_secrets=True)
    assert "hunter2-hunter2" in (shown.campaign.experiment_json or "")


def test_the_fixed_campaign_s_comparison_uses_the_stored_compare_group(tmp_path: Path) -> None:
    db = _campaign(tmp_path, {"a": [1.0, 1.1, 0.9], "b": [2.0, 2.2, 1.8]})
    with Store.open(db) as store:
        view = read_campaign(store, max_magnitude=1e50)
    assert view.comparisons is not None and view.verdicts is not None
    (pair,) = [c for c in view.comparisons.comparisons if c.kind == "pair"]
    assert {pair.a, pair.b} == {"a", "b"}
    # b is twice a in every pass: the ratio b/a of each pass is 2
    assert pair.ratio == pytest.approx(2.0, rel=1e-6)


def test_a_reading_beyond_the_limit_is_one_line_before_any_statistic(tmp_path: Path) -> None:
    db = _campaign(tmp_path, {"a": [1.0, 1.1, 0.9], "b": [2.0, 5e6, 1.8]})
    with Store.open(db) as store, pytest.raises(UserError) as raised:
        read_campaign(store, max_magnitude=1e6)
    assert "workload 'b' has a reading of 5e+06 s (round 1), beyond ±1e+06" in str(raised.value)


def test_node_records_take_each_node_s_record_and_skip_other_shapes() -> None:
    events = [
        EventRow(1, 1.0, "node-metadata", "m", {"node": "n1", "record": {"cpu": "x"}}),
        EventRow(2, 2.0, "node-metadata", "m", {"node": "n2"}),
        EventRow(3, 3.0, "node-metadata", "m", {"node": "", "record": {"cpu": "y"}}),
        EventRow(4, 4.0, "node-metadata", "m", None),
        EventRow(5, 5.0, "status", "m", {"node": "n3", "record": {}}),
        EventRow(6, 6.0, "node-metadata", "m", {"node": "n1", "record": "not a record"}),
    ]
    assert node_records(events) == {"n1": {}, "n2": {}}
    assert node_records(events[:2]) == {"n1": {"cpu": "x"}, "n2": {}}


#: prints, after `benchrun show DIR` in a fresh interpreter, which modules it imported
_IMPORTED = """
import contextlib, io, sys
from benchrun.runner.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    code = main(["show", sys.argv[1]])
print(code, *(m for m in ("benchrun.runner.config.loader", "benchrun.runner.report.model",
                          "matplotlib") if m in sys.modules))
"""


def test_show_parses_no_yaml_and_reads_no_report_model(tmp_path: Path) -> None:
    """The stored experiment is decoded, not parsed: `show` imports neither the YAML
    loader nor the report's model (issue 30)."""
    import subprocess
    import sys

    db = _campaign(tmp_path, {"a": [1.0, 1.1, 0.9], "b": [2.0, 2.2, 1.8]})
    proc = subprocess.run(
        [sys.executable, "-c", _IMPORTED, str(db)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["0"]
