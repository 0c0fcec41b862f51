"""The parsed experiment in the store (schema 6, issue 30): written as JSON when a campaign
starts, read back into the typed ``Experiment``; a schema 5 store gains it when opened;
a damaged column is one line."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from benchrun.runner.cli import main
from benchrun.runner.config.loader import load_experiment
from benchrun.runner.config.stored import experiment_from_json, experiment_to_json
from benchrun.runner.errors import UserError
from benchrun.runner.results.comparisons import stored_experiment
from benchrun.runner.store.database import (
    _HOOK_TABLE,
    _METRIC_TABLE,
    _SCHEMA_V1,
    _SPAN_TABLE,
    _WAIT_COLUMNS,
    APPLICATION_ID,
    SCHEMA_VERSION,
    Store,
)

CONFIGS = sorted((Path(__file__).resolve().parents[2] / "configs").glob("*.yaml"))

#: an experiment with a ``compare:`` group, a matrix and a hook: what readers need of it
TEXT = """\
name: old
settings: {adaptive: false, rounds: 3}
workloads:
  - name: a
    command: [python3, -c, "pass"]
    setup: "true"
  - name: b
    command: [python3, -c, "pass"]
  - name: loop
    command: [python3, -c, "{n}"]
matrix: {n: [1, 2]}
compare: [[a, b]]
"""
NAMES = ("a", "b", "loop[n=1]", "loop[n=2]")


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_each_config_round_trips_through_its_stored_json(path: Path) -> None:
    loaded = load_experiment(path, check_commands=False)
    text = experiment_to_json(loaded)
    doc = json.loads(text)
    assert "settings" not in doc and "source_text" not in doc  # stored in their own columns
    assert [w["name"] for w in doc["workloads"]] == list(loaded.names)
    back = experiment_from_json(
        text, settings=loaded.settings, source_text=loaded.source_text, display="t"
    )
    assert back == loaded


def _schema_5_store(db: Path) -> None:
    """A store as benchrun wrote it at schema 5 (no ``experiment_json``): two campaigns, one
    whose text parses and one whose text no longer does."""
    conn = sqlite3.connect(db)
    conn.executescript(_SCHEMA_V1 + _HOOK_TABLE + _WAIT_COLUMNS + _SPAN_TABLE + _METRIC_TABLE)
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    conn.execute("INSERT INTO meta VALUES ('schema_version', '5')")
    for cid, text in ((1, TEXT), (2, "name: [unclosed")):
        conn.execute(
            "INSERT INTO campaign (id, name, status, created_at, updated_at, config_text, "
            "fingerprint, settings_json, benchrun_version) VALUES "
            "(?, 'old', 'done', 1.0, 2.0, ?, 'f', '{\"adaptive\": false}', '0.1')",
            (cid, text),
        )
        for position, name in enumerate(NAMES):
            conn.execute(
                "INSERT INTO workload (campaign_id, name, position, metric, unit, direction, "
                "spec_json) VALUES (?, ?, ?, 'wall_time', 's', 'lower_is_better', '{}')",
                (cid, name, position),
            )
    conn.commit()
    conn.close()


def test_a_schema_5_store_gains_the_parsed_experiment_when_opened(tmp_path: Path) -> None:
    db = tmp_path / "benchrun.db"
    _schema_5_store(db)
    with Store.open(db) as store:
        assert store.schema_version() == SCHEMA_VERSION == 6
        first, second = store.campaigns()
        workloads = store.workloads(first.id)
    doc = json.loads(first.experiment_json or "")
    assert doc["compare"] == [["a", "b"]]
    assert doc["matrix"] == {"n": [1, 2]}
    assert doc["workloads"][0]["setup"] == {"command": ["true"], "shell": True}
    assert second.experiment_json == "null"  # did not parse: no experiment, as before
    experiment = stored_experiment(first, [w.name for w in workloads])
    assert experiment is not None and experiment.names == NAMES
    assert experiment.compare == (("a", "b"),)
    assert experiment.comparison_group("a") == "wall_time:s#1"
    assert experiment.comparison_group("loop[n=1]") is None
    assert stored_experiment(second, NAMES) is None


def test_a_new_campaign_stores_its_experiment(tmp_path: Path) -> None:
    path = tmp_path / "x.yaml"
    path.write_text(TEXT)
    experiment = load_experiment(path, check_commands=False)
    with Store.create_or_open(tmp_path / "benchrun.db") as store:
        cid = store.create_campaign(
            name="old", config_path=str(path), config_text=TEXT, fingerprint="f",
            settings={"adaptive": False, "rounds": 3},
            workloads=[{"name": n, "metric": "wall_time", "unit": "s",
                        "direction": "lower_is_better", "spec": {}} for n in NAMES],
            benchrun_version="0", command_line=None, experiment=experiment,
        )  # fmt: skip
        row = store.campaign(cid)
    back = stored_experiment(row, NAMES)
    assert back is not None
    assert back.workloads == experiment.workloads
    assert back.compare == (("a", "b"),) and back.source_text == TEXT
    assert back.settings.rounds == 3 and back.settings.adaptive is False
    # another experiment's workloads: not this campaign's experiment
    assert stored_experiment(row, ("a", "b")) is None


@pytest.mark.parametrize(
    ("stored", "said"),
    [
        ('{"name": "old", "workloads": [', "Expecting value"),
        ('{"name": "old", "workloads": "a"}', "workloads: expected a list"),
        ('{"name": "old", "workloads": [{"name": "a", "command": [1]}]}', "command[0]"),
        ("[1, 2]", "expected an object"),
    ],
)
def test_a_damaged_stored_experiment_is_one_line(
    tmp_path: Path, stored: str, said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(UserError, match="experiment_json") as raised:
        from benchrun.runner.config.experiment import Settings

        experiment_from_json(stored, settings=Settings(), source_text="", display="t")
    assert said in str(raised.value) and "\n" not in str(raised.value)
    # and `benchrun show` of a store holding it says so in one line, without a traceback
    db = tmp_path / "benchrun.db"
    _schema_5_store(db)
    with Store.open(db):
        pass  # migrated
    conn = sqlite3.connect(db)
    conn.execute("DELETE FROM campaign WHERE id = 2")
    conn.execute("DELETE FROM workload WHERE campaign_id = 2")
    conn.execute("UPDATE campaign SET experiment_json = ? WHERE id = 1", (stored,))
    conn.commit()
    conn.close()
    capsys.readouterr()
    assert main(["show", str(db)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "experiment_json" in err and said in err
    assert "Traceback" not in err


def test_a_campaign_stored_without_its_experiment_is_parsed_from_its_text(
    tmp_path: Path,
) -> None:
    with Store.create_or_open(tmp_path / "benchrun.db") as store:
        cid = store.create_campaign(
            name="old", config_path=None, config_text=TEXT, fingerprint="f",
            settings={"adaptive": False}, workloads=[], benchrun_version="0",
            command_line=None,
        )  # fmt: skip
        row = store.campaign(cid)
    assert row.experiment_json is None
    experiment = stored_experiment(row, NAMES)
    assert experiment is not None and experiment.compare == (("a", "b"),)
