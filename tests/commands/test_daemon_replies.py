"""The daemon's replies read once into records (runner/commands/replies.py, issue 30), and
``benchrun system``'s records (runner/commands/system.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchrun.runner.commands.replies import DaemonStatus, QueueItem
from benchrun.runner.commands.status import status_doc
from benchrun.runner.commands.system import DuetCapability, TuningState
from benchrun.runner.daemon.queue import QueueDB
from benchrun.runner.errors import UserError
from benchrun.runner.execute.duet import DuetPlan
from benchrun.runner.machine.tuning_journal import Entry, Journal, Owner


def _queued(tmp_path: Path) -> dict[str, object]:
    """A queue entry as the daemon sends it: a real entry of a real queue, as JSON."""
    q = QueueDB.open(tmp_path / "q.db")
    try:
        q.add(
            experiment="/x/exp.yaml",
            name="demo",
            output="/x/results",
            db_path="/x/results/demo/benchrun.db",
            cwd="/x",
            config_text="name: demo\n",
            priority=3,
            not_before=None,
            log_dir=tmp_path,
        )
        (entry,) = q.entries()
    finally:
        q.close()
    return json.loads(json.dumps(entry.to_json()))


def test_queue_entry_read_from_the_daemons_json(tmp_path: Path) -> None:
    raw = _queued(tmp_path)
    item = QueueItem.from_json(raw)
    assert (item.id, item.name, item.state, item.priority) == (1, "demo", "queued", 3)
    assert item.db_path == "/x/results/demo/benchrun.db"
    assert item.experiment == "/x/exp.yaml"
    # never launched: no campaign id yet, nothing live to read, base 0 for a new store
    assert item.campaign_id is None and item.base_campaign_id == 0
    assert item.launches == 0 and not item.has_live
    assert item.started_at is None and item.message is None
    # --json prints the entry as the daemon sent it
    assert item.raw == raw
    assert status_doc(item) == {"entry": raw, "live": None}


def test_queue_entry_running_has_live(tmp_path: Path) -> None:
    raw = {**_queued(tmp_path), "state": "running", "started_at": 1795400000, "launches": 1}
    item = QueueItem.from_json(raw)
    assert item.has_live and item.started_at == 1795400000.0


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"id": "7"}, "bad entry id: '7'"),
        ({"launches": None}, "bad launch count: None"),
        ({"started_at": "today"}, "bad start time: 'today'"),
        ({"campaign_id": 1.5}, "bad campaign id: 1.5"),
    ],
)
def test_queue_entry_of_the_wrong_type_is_one_line(
    tmp_path: Path, change: dict[str, object], said: str
) -> None:
    with pytest.raises(UserError, match=said):
        QueueItem.from_json({**_queued(tmp_path), **change})


def test_queue_entry_without_a_field_names_it(tmp_path: Path) -> None:
    raw = _queued(tmp_path)
    del raw["db_path"]
    with pytest.raises(UserError, match="queue entry without 'db_path'"):
        QueueItem.from_json(raw)
    with pytest.raises(UserError, match="bad queue entry: \\[1\\]"):
        QueueItem.from_json([1])


STATUS = {
    "pid": 4242,
    "version": "0.1.0",
    "started_at": 1795400000.5,
    "rss_kib": 20480,
    "rss_at_start_kib": 18432,
    "socket": "/run/user/1000/benchrun/daemon.sock",
    "queue_db": "/home/u/.local/share/benchrun/queue.db",
    "running": 3,
    "queued": 2,
    "quiet_load": 0.5,
    "quiet_max_wait": 600,
    "stopping": True,
}


def test_daemon_status_read() -> None:
    s = DaemonStatus.from_json(STATUS)
    assert (s.pid, s.running, s.queued, s.stopping) == (4242, 3, 2, True)
    assert (s.rss_kib, s.quiet_load, s.quiet_max_wait) == (20480.0, 0.5, 600.0)


def test_daemon_status_of_an_older_daemon_takes_the_defaults() -> None:
    old = {k: v for k, v in STATUS.items() if k not in ("quiet_load", "quiet_max_wait", "stopping")}
    s = DaemonStatus.from_json({**old, "running": None})
    assert (s.running, s.quiet_load, s.quiet_max_wait, s.stopping) == (None, None, None, False)
    del old["queued"]
    with pytest.raises(UserError, match="status without 'queued'"):
        DaemonStatus.from_json(old)


def test_duet_capability_lines_and_json() -> None:
    plan = DuetPlan(cpus=(2, 3), runner_cpus=(0, 1), shares=False, smt={2: (2, 6), 3: (3, 7)})
    duet = DuetCapability(4, plan)
    assert duet.lines() == [
        "yes: 4 usable CPUs; a duet runs on CPUs 2 and 3 (pin: auto)",
        "SMT siblings: CPU 2: [2, 6], CPU 3: [3, 7]",
        "the runner stays on CPUs [0, 1], off both sides",
    ]
    assert json.dumps(duet.to_json()) == (
        '{"usable_cpus": 4, "possible": true, "cpus": [2, 3], "runner_cpus": [0, 1], '
        '"runner_shares_cpu": false, "smt_siblings": {"2": [2, 6], "3": [3, 7]}, '
        '"reason": "", "sides_share_a_core": false}'
    )
    siblings = DuetCapability(2, DuetPlan((0, 4), None, True, {0: (0, 4), 4: (0, 4)}))
    assert siblings.sides_share_a_core
    assert siblings.lines()[1].endswith("(one core: the sides share it)")
    no = DuetCapability(1, None, "one usable CPU")
    assert no.lines() == ["no: one usable CPU"]
    assert no.to_json() == {"usable_cpus": 1, "possible": False, "reason": "one usable CPU"}


def test_tuning_state_lines_and_json() -> None:
    path = "/var/lib/benchrun/tuning.json"
    assert TuningState(path).lines() == [f"nothing (no journal at {path})"]
    assert TuningState(path).to_json() == {"journal": path, "tuned": None}
    broken = TuningState(path, error="cannot read it")
    assert broken.lines() == ["unknown: cannot read it"]
    assert broken.to_json() == {"journal": path, "tuned": None, "error": "cannot read it"}
    owner = Owner("campaign", 77, 0.0, "/r/demo")
    journal = Journal("/", owner, (Entry("governor", "/sys/x", "powersave", "performance"),))
    dead = TuningState(path, journal, owner_running=False)
    first = dead.lines()[0]
    assert first.startswith("by the campaign /r/demo (pid 77, 1970-01-01 00:00:00 UTC)")
    assert "ended without restoring" in first
    assert len(dead.lines()) == 2 and "powersave" in dead.lines()[1]
    assert "restored when that campaign ends" in TuningState(path, journal, True).lines()[0]
    doc = TuningState(path, journal, True).to_json()
    assert list(doc) == ["journal", "tuned", "owner", "owner_running"]
    assert doc["owner_running"] is True
