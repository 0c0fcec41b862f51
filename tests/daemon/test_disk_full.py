"""A full disk mid-campaign: the store refuses cleanly, the daemon pauses, nothing is lost.

The campaign's output lives on a small tmpfs the test mounts (``small_fs`` in conftest.py;
the daemon's queue and logs stay elsewhere); after some rounds the test fills the file
system with a filler file (``fill`` in daemon_util.py).
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from daemon_util import (
    Env,
    benchrun_argv,
    count_rounds,
    det_experiment,
    expected_reading,
    fill,
    rounds_of,
    wait_for,
)

from benchrun.runner.store.database import NewRound, Store


def test_full_disk_pauses_cleanly_and_resume_finishes(
    xdg: Env, tmp_path: Path, small_fs: Path
) -> None:
    xdg.start_daemon()
    rounds = 40
    exp = det_experiment(tmp_path, small_fs, rounds, sleep=0.03)
    db = small_fs / "det" / "benchrun.db"
    entry_id = int(xdg.cli("submit", str(exp)).stdout)
    follow = subprocess.Popen(  # `benchrun logs ID --follow` ends when the campaign pauses
        [*benchrun_argv(), "logs", str(entry_id), "--follow"],
        env=xdg.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_for(lambda: count_rounds(db) >= 5, 60, "5 rounds")
    filler = fill(small_fs)
    entry = xdg.wait_state(entry_id, ("paused", "failed", "done"), 60)
    assert entry["state"] == "paused", entry
    assert entry["exit_code"] == 75
    assert (
        "the disk is full" in entry["message"] and f"benchrun resume {entry_id}" in entry["message"]
    )
    followed, follow_err = follow.communicate(timeout=30)
    assert follow.returncode == 0 and f"(campaign {entry_id} is paused)" in follow_err
    assert "the disk is full" in followed and "launch 1" in followed
    status = xdg.cli("status", str(entry_id))
    assert status.returncode == 0
    assert "paused" in status.stdout and "the disk is full" in status.stdout
    logs = xdg.cli("logs", str(entry_id))
    assert "benchrun: error:" in logs.stdout and "the disk is full" in logs.stdout
    assert "Traceback" not in logs.stdout

    # the store is intact: every committed round once, with its readings
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()
    stored = rounds_of(db)
    assert 5 <= len(stored) < rounds
    assert [(i, s, v) for _, i, s, v in stored] == [
        (i, "ok", (expected_reading(i),)) for i in range(len(stored))
    ]
    # not retried by itself: still paused a moment later
    assert xdg.entry(entry_id)["state"] == "paused"

    os.unlink(filler)
    resumed = xdg.cli("resume", str(entry_id))
    assert resumed.returncode == 0, resumed.stderr
    final = xdg.wait_state(entry_id, ("done", "failed", "paused"), 60)
    assert final["state"] == "done", final
    got = rounds_of(db)
    assert [(i, s, v) for _, i, s, v in got] == [
        (i, "ok", (expected_reading(i),)) for i in range(rounds)
    ]
    again = xdg.cli("resume", str(entry_id))
    assert again.returncode == 2 and "only paused or interrupted" in again.stderr


def _round(store: Store, campaign_id: int, workload_id: int, i: int) -> None:
    new = NewRound(
        campaign_id=campaign_id,
        workload_id=workload_id,
        seq=i,
        pass_=i,
        round_index=i,
        status="ok",
        reason=None,
        exit_code=0,
        started_at=0.0,
        wall_ns=1,
        user_s=0.0,
        sys_s=0.0,
        max_rss_kib=1,
        cpus=None,
        argv=["x" * 2000],  # a few KiB per round: pages fill quickly
        work=None,
        warmup=False,
        readings=[float(i)] * 50,
    )
    store.add_round(new)


def test_store_turns_sqlite_full_into_storefull_and_keeps_committed_rounds(
    tmp_path: Path,
) -> None:
    from benchrun.runner.store.database import EXIT_STORE_FULL, StoreFull

    db = tmp_path / "benchrun.db"
    store = Store.create_or_open(db)
    cid = store.create_campaign(
        name="x",
        config_path=None,
        config_text="",
        fingerprint="f",
        settings={},
        workloads=[
            {"name": "w", "metric": "m", "unit": "u", "direction": "lower_is_better", "spec": {}}
        ],
        benchrun_version="0",
        command_line=None,
    )
    wid = store.workloads(cid)[0].id
    pages = store.conn.execute("PRAGMA page_count").fetchone()[0]
    store.conn.execute(f"PRAGMA max_page_count = {pages + 6}")  # SQLITE_FULL past this
    committed = 0
    with pytest.raises(StoreFull) as info:
        for i in range(1000):
            _round(store, cid, wid, i)
            committed += 1
    assert 1 <= committed < 1000
    assert info.value.exit_code == EXIT_STORE_FULL == 75
    assert "the disk is full" in info.value.message and "--resume" in info.value.message
    store.conn.execute("PRAGMA max_page_count = 1000000")
    _round(store, cid, wid, committed)  # the store still works once there is room
    store.close()
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    idx = [i for (i,) in conn.execute("SELECT round_index FROM round ORDER BY round_index")]
    assert idx == list(range(committed + 1))  # the failed round left nothing behind
    assert conn.execute("SELECT count(*) FROM reading").fetchone()[0] == 50 * (committed + 1)


def test_benchrun_run_on_a_full_disk_exits_75_with_one_line(tmp_path: Path, small_fs: Path) -> None:
    exp = det_experiment(tmp_path, small_fs, 40, sleep=0.03)
    db = small_fs / "det" / "benchrun.db"
    proc = subprocess.Popen(
        [*benchrun_argv(), "run", str(exp), "-q"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    try:
        wait_for(lambda: count_rounds(db) >= 5, 60, "5 rounds")
        filler = fill(small_fs)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 75, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("benchrun: error: "), err
    assert "the disk is full" in lines[0] and "--resume" in lines[0]
    stored = rounds_of(db)
    assert [(i, v) for _, i, _, v in stored] == [
        (i, (expected_reading(i),)) for i in range(len(stored))
    ]
    os.unlink(filler)
    resumed = subprocess.run(
        [*benchrun_argv(), "run", str(exp), "-q", "--resume"],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert resumed.returncode == 0, resumed.stderr
    assert [(i, v) for _, i, _, v in rounds_of(db)] == [
        (i, (expected_reading(i),)) for i in range(40)
    ]


def test_daemon_with_a_full_queue_disk_answers_one_line_and_stays_alive(
    xdg: Env, tmp_path: Path, small_fs: Path
) -> None:
    """Issue 29 item 7: the queue's own disk fills up (the data directory on a small tmpfs).
    On main `benchrun submit` printed "internal error in the daemon: cannot rollback - no
    transaction is active"; now one line saying the disk is full, exit 75, and the daemon
    serves on and queues the campaign once there is room."""
    xdg.vars["XDG_DATA_HOME"] = str(small_fs)
    daemon = xdg.start_daemon()
    queue_db = small_fs / "benchrun" / "queue.db"
    exp = det_experiment(tmp_path, tmp_path / "results", 3)
    filler = fill(small_fs)
    refused = xdg.run("submit", str(exp), "--not-before", "2100-01-01T00:00")
    assert refused.returncode == 75, refused
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        f"benchrun: error: {queue_db}: the daemon's queue cannot be written: the disk is full"
    ), refused.stderr
    assert "cannot rollback" not in refused.stderr and "internal error" not in refused.stderr
    assert daemon.poll() is None and xdg.answers()  # alive, and serving
    listed = xdg.run("queue", "--json")
    assert listed.returncode == 0 and listed.stdout.strip() == "[]", listed
    os.unlink(filler)
    queued = xdg.run("submit", str(exp), "--not-before", "2100-01-01T00:00")
    assert queued.returncode == 0, queued.stderr
    conn = sqlite3.connect(f"file:{queue_db}?mode=ro", uri=True)
    try:
        ids = [i for (i,) in conn.execute("SELECT id FROM entry")]
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        conn.close()
    assert ids == [int(queued.stdout)] == [1]


def test_daemon_starting_on_a_full_disk_says_so(xdg: Env, small_fs: Path) -> None:
    """No queue file yet and no room for one: the disk is full, not a damaged queue (on main:
    "the queue file is damaged ... move it away")."""
    xdg.vars["XDG_DATA_HOME"] = str(small_fs)
    (small_fs / "benchrun" / "logs").mkdir(parents=True, mode=0o700)
    filler = fill(small_fs)
    proc = subprocess.run(
        [sys.executable, "-m", "benchrun.runner.daemon"],
        env=xdg.env(),
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    queue_db = small_fs / "benchrun" / "queue.db"
    assert proc.returncode == 75, proc
    assert proc.stderr.strip().splitlines() == [
        f"benchrun: error: {queue_db}: the daemon cannot open its queue: the disk is full "
        f"(database or disk is full); free space on the file system of {queue_db.parent} and "
        "start the daemon again"
    ], proc.stderr
    os.unlink(filler)
    xdg.start_daemon()  # room again: it starts
    assert xdg.answers()
