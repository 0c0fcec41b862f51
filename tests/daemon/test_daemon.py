"""The daemon end to end: the real ``benchrun`` console script, real campaigns, the queue
and the results read back with plain sqlite3."""

from __future__ import annotations

import os
import sqlite3
import stat
import subprocess
import time
from pathlib import Path

from daemon_util import Env, count_rounds, det_experiment, expected_reading, rounds_of, wait_for


def one_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    """The failure contract: non-zero exit, one ``benchrun: error:`` line, no traceback."""
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("benchrun: error: "), proc.stderr
    return lines[0]


def test_commands_without_a_daemon_say_so_in_one_line(xdg: Env, tmp_path: Path) -> None:
    exp = det_experiment(tmp_path, tmp_path / "out", 2)
    for args in (
        ("queue",),
        ("status",),
        ("logs", "1"),
        ("cancel", "1"),
        ("submit", str(exp)),
        ("daemon", "stop"),
        ("daemon", "status"),
    ):
        proc = xdg.cli(*args)  # in process: the same code as the console script
        line = one_error_line(proc)
        assert proc.returncode == 1
        assert "daemon is not running" in line and "benchrun daemon start" in line, args
    real = xdg.run("status")  # and once through the console script
    assert real.returncode == 1 and "daemon is not running" in one_error_line(real)


def test_start_detaches_refuses_a_second_daemon_and_stops(xdg: Env) -> None:
    started = xdg.run("daemon", "start")
    assert started.returncode == 0, started.stderr
    pid = int(xdg.pid_file.read_text())
    assert f"pid {pid}" in started.stdout
    # the socket is the user's only: 0600 in a 0700 directory
    assert stat.S_IMODE(xdg.socket.stat().st_mode) == 0o600
    assert stat.S_IMODE(xdg.socket.parent.stat().st_mode) == 0o700
    second = xdg.run("daemon", "start")
    line = one_error_line(second)
    assert f"pid {pid}" in line and "already running" in line
    second_fg = xdg.cli("daemon", "start", "--foreground")
    assert f"pid {pid}" in one_error_line(second_fg)
    status = xdg.cli("daemon", "status")
    assert status.returncode == 0 and f"pid {pid}" in status.stdout
    assert "RSS" in status.stdout
    stopped = xdg.run("daemon", "stop")
    assert stopped.returncode == 0, stopped.stderr
    wait_for(lambda: not Path(f"/proc/{pid}").exists(), 10, "daemon exit")
    assert not xdg.socket.exists()
    assert xdg.cli("daemon", "status").returncode == 1


def test_submit_runs_the_campaign_and_every_command_shows_it(xdg: Env, tmp_path: Path) -> None:
    xdg.start_daemon(fast=False)  # `benchrun daemon start --foreground`, as systemd runs it
    exp = det_experiment(tmp_path, tmp_path / "out", 6, workloads=("a", "b"))
    sub = xdg.run("submit", str(exp))  # the console script, as a user types it
    assert sub.returncode == 0, sub.stderr
    entry_id = int(sub.stdout)
    final = xdg.wait_state(entry_id, ("done", "failed"))
    assert final["state"] == "done", final
    db = tmp_path / "out" / "det" / "benchrun.db"
    got = rounds_of(db)
    assert [(w, i, s, v) for w, i, s, v in got] == [
        (w, i, "ok", (expected_reading(i),)) for w in ("a", "b") for i in range(6)
    ]
    queue = xdg.cli("queue")
    assert queue.returncode == 0
    row = next(line for line in queue.stdout.splitlines() if line.split()[0] == str(entry_id))
    assert "done" in row and "det" in row
    status = xdg.cli("status", str(entry_id))
    assert status.returncode == 0, status.stderr
    assert f"campaign {entry_id} (det): done" in status.stdout
    # rounds per workload, counted from the results DB: 6 of 6 each
    table = {line.split()[0]: line.split()[1] for line in status.stdout.splitlines()[-2:]}
    assert table == {"a": "6/6", "b": "6/6"}
    logs = xdg.cli("logs", str(entry_id))
    assert logs.returncode == 0
    assert "launch 1" in logs.stdout and f"campaign {entry_id} done" in logs.stdout
    follow = xdg.cli("logs", str(entry_id), "--follow")
    assert follow.returncode == 0 and follow.stdout == logs.stdout
    idle = xdg.cli("status")
    assert idle.returncode == 0 and "no campaign is running" in idle.stdout


def test_submit_validates_like_validate_and_unknown_ids_fail(xdg: Env, tmp_path: Path) -> None:
    xdg.start_daemon()
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\nsettings: {rouns: 3}\nworkloads:\n  - {name: a, command: [true]}\n")
    validate = xdg.cli("validate", str(bad))
    submit = xdg.cli("submit", str(bad))
    assert submit.returncode == validate.returncode == 2
    # every problem, as validate lists them: one error line each, then the count
    assert submit.stderr == validate.stderr and "Traceback" not in submit.stderr
    lines = submit.stderr.splitlines()
    assert [ln.split(": ")[2] for ln in lines[:2]] == [f"{bad}:2", f"{bad}:4"]
    assert "rouns" in lines[0] and "boolean" in lines[1]
    assert lines[2] == f"benchrun: 2 problems in {bad}"
    missing = xdg.cli("submit", str(tmp_path / "nope.yaml"))
    assert "file not found" in one_error_line(missing)
    for args in (("status", "99"), ("logs", "99"), ("cancel", "99"), ("resume", "99")):
        proc = xdg.cli(*args)
        assert proc.returncode == 2
        assert "no campaign 99 in the queue" in one_error_line(proc), args
    bad_time = xdg.cli(
        "submit", str(det_experiment(tmp_path, tmp_path, 1)), "--not-before", "25:99"
    )
    assert "--not-before" in one_error_line(bad_time)
    assert xdg.cli("queue").stdout.startswith("the queue is empty")


def test_submit_set_overrides_the_files_settings_in_the_campaign(xdg: Env, tmp_path: Path) -> None:
    xdg.start_daemon()
    exp = det_experiment(tmp_path, tmp_path / "out", 6)  # the file asks for 6 rounds
    sub = xdg.cli("submit", str(exp), "--set", "rounds=3", "--set", "seed=5")
    assert sub.returncode == 0, sub.stderr
    final = xdg.wait_state(int(sub.stdout), ("done", "failed"))
    assert final["state"] == "done", final
    db = tmp_path / "out" / "det" / "benchrun.db"
    assert [(w, i) for w, i, _s, _v in rounds_of(db)] == [("a", 0), ("a", 1), ("a", 2)]
    conn = sqlite3.connect(db)
    settings = conn.execute("SELECT settings_json FROM campaign").fetchone()[0]
    conn.close()
    assert '"rounds": 3' in settings and '"seed": 5' in settings
    bad = xdg.cli("submit", str(exp), "--set", "rounds=zero")
    assert "--set rounds" in one_error_line(bad) and bad.returncode == 2


def test_priority_not_before_and_cancel(xdg: Env, tmp_path: Path) -> None:
    xdg.start_daemon()
    blocker = det_experiment(tmp_path, tmp_path / "out", 200, name="blocker", sleep=0.05)
    low = det_experiment(tmp_path, tmp_path / "out", 2, name="low")
    high = det_experiment(tmp_path, tmp_path / "out", 2, name="high")
    later = det_experiment(tmp_path, tmp_path / "out", 2, name="later")
    ids = {}
    ids["blocker"] = int(xdg.cli("submit", str(blocker)).stdout)
    xdg.wait_state(ids["blocker"], ("running",))
    ids["low"] = int(xdg.cli("submit", str(low)).stdout)
    ids["dropped"] = int(xdg.cli("submit", str(low), "--priority", "9").stdout)
    ids["high"] = int(xdg.cli("submit", str(high), "--priority", "5").stdout)
    ids["later"] = int(
        xdg.cli("submit", str(later), "--priority", "99", "--not-before", "23:59").stdout
    )
    if time.localtime().tm_hour == 23 and time.localtime().tm_min >= 57:
        ids.pop("later")  # 23:59 could come during the test
    # cancel a queued entry: it never runs
    cancel = xdg.cli("cancel", str(ids["dropped"]))
    assert cancel.returncode == 0 and "cancelled" in cancel.stdout
    again = xdg.cli("cancel", str(ids["dropped"]))
    assert "already cancelled" in one_error_line(again)
    # cancel the running one: it commits what it has and stops
    blocker_db = tmp_path / "out" / "blocker" / "benchrun.db"
    wait_for(lambda: count_rounds(blocker_db) >= 2, 30, "blocker rounds")
    assert xdg.cli("cancel", str(ids["blocker"])).returncode == 0
    assert xdg.wait_state(ids["blocker"], ("cancelled",), 30)["state"] == "cancelled"
    (status,) = sqlite3.connect(blocker_db).execute("SELECT status FROM campaign").fetchone()
    assert status == "interrupted"
    assert 2 <= count_rounds(blocker_db) < 200
    high_e = xdg.wait_state(ids["high"], ("done",))
    low_e = xdg.wait_state(ids["low"], ("done",))
    assert high_e["started_at"] < low_e["started_at"]  # priority 5 before priority 0
    assert xdg.entry(ids["dropped"])["launches"] == 0
    queue = xdg.cli("queue").stdout
    if "later" in ids:
        assert xdg.entry(ids["later"])["state"] == "queued"
        assert xdg.entry(ids["later"])["launches"] == 0
        row = next(r for r in queue.splitlines() if r.split()[0] == str(ids["later"]))
        assert "not before" in row
    for name in ("blocker", "dropped"):
        row = next(r for r in queue.splitlines() if r.split()[0] == str(ids[name]))
        assert "cancelled" in row


def test_daemon_stop_interrupts_and_the_next_start_resumes(xdg: Env, tmp_path: Path) -> None:
    xdg.start_daemon()
    exp = det_experiment(tmp_path, tmp_path / "out", 25, sleep=0.05)
    db = tmp_path / "out" / "det" / "benchrun.db"
    entry_id = int(xdg.cli("submit", str(exp)).stdout)
    wait_for(lambda: count_rounds(db) >= 3, 30, "3 rounds")
    live = xdg.cli("status")  # the running campaign, live
    assert live.returncode == 0, live.stderr
    assert f"campaign {entry_id} (det): running" in live.stdout
    row = next(line.split() for line in live.stdout.splitlines() if line.split()[:1] == ["a"])
    done, target = map(int, row[1].split("/"))
    assert target == 25 and 3 <= done < 25
    assert "estimated time to finish" in live.stdout
    # in process: the console script's start-up (up to seconds on a loaded machine) could
    # let the 25 rounds finish before the stop arrives (test_start_detaches... runs it)
    stop = xdg.cli("daemon", "stop")
    assert stop.returncode == 0, stop.stderr
    assert f"campaign {entry_id} commits" in stop.stdout
    entry = xdg.entry(entry_id)
    assert entry["state"] == "interrupted" and entry["auto_resume"] == 1
    offline = xdg.cli("queue")  # no daemon: the queue file is read directly
    assert offline.returncode == 0, offline.stderr
    row = next(r for r in offline.stdout.splitlines() if r.split()[:1] == [str(entry_id)])
    assert row.split()[1] == "interrupted"
    assert "daemon is not running" in offline.stderr and "Traceback" not in offline.stderr
    (status,) = sqlite3.connect(db).execute("SELECT status FROM campaign").fetchone()
    assert status == "interrupted"
    stored = count_rounds(db)
    assert 3 <= stored < 25
    xdg.start_daemon()
    final = xdg.wait_state(entry_id, ("done", "failed"))
    assert final["state"] == "done" and final["launches"] == 2
    got = rounds_of(db)
    assert [(i, s, v) for _, i, s, v in got] == [
        (i, "ok", (expected_reading(i),)) for i in range(25)
    ]
    kinds = [k for (k,) in sqlite3.connect(db).execute("SELECT kind FROM event")]
    assert "daemon-resume" in kinds and "resume" in kinds


def test_hanging_workload_is_killed_at_its_timeout(xdg: Env, tmp_path: Path) -> None:
    xdg.start_daemon()
    exp = tmp_path / "hang.yaml"
    exp.write_text(
        f"name: hang\noutput: {tmp_path / 'out'}\n"
        "settings: {adaptive: false, rounds: 2, warmup_rounds: 0, timeout: 300ms,"
        " max_consecutive_failures: 2}\n"
        "workloads:\n  - {name: hangs, command: [sleep, '30']}\n  - {name: fine, command: ['true']}\n"
    )
    t0 = time.monotonic()
    entry_id = int(xdg.cli("submit", str(exp)).stdout)
    final = xdg.wait_state(entry_id, ("done", "failed"), 40)
    assert time.monotonic() - t0 < 25
    assert final["state"] == "failed" and final["exit_code"] == 1
    assert "stopped early" in final["message"]
    conn = sqlite3.connect(tmp_path / "out" / "hang" / "benchrun.db")
    rows = conn.execute(
        "SELECT w.name, r.status, count(*) FROM round r JOIN workload w ON w.id = r.workload_id"
        " GROUP BY w.name, r.status"
    ).fetchall()
    assert sorted(rows) == [("fine", "ok", 2), ("hangs", "timeout", 2)]


def test_corrupt_or_foreign_files_are_refused(xdg: Env, tmp_path: Path) -> None:
    xdg.start_daemon()
    exp = det_experiment(tmp_path, tmp_path / "out", 2)
    db = tmp_path / "out" / "det" / "benchrun.db"
    db.parent.mkdir(parents=True)
    db.write_bytes(os.urandom(8192))
    line = one_error_line(xdg.cli("submit", str(exp)))
    assert str(db) in line and "not a usable SQLite database" in line
    db.unlink()
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    conn.close()
    line = one_error_line(xdg.cli("submit", str(exp)))
    assert "not written by benchrun" in line
    assert sqlite3.connect(db).execute("SELECT count(*) FROM t").fetchone() == (0,)
    assert xdg.cli("queue").stdout.startswith("the queue is empty")


def test_a_foreign_queue_file_stops_the_daemon_from_starting(xdg: Env) -> None:
    xdg.queue_db.parent.mkdir(parents=True)
    conn = sqlite3.connect(xdg.queue_db)
    conn.execute("CREATE TABLE mine (x)")
    conn.commit()
    conn.close()
    line = one_error_line(xdg.cli("daemon", "start", "--foreground"))
    assert str(xdg.queue_db) in line and "not a benchrun queue" in line
    line = one_error_line(xdg.cli("daemon", "start"))
    assert "not a benchrun queue" in line


def test_commands_run_without_a_shell_as_the_daemons_user(xdg: Env, tmp_path: Path) -> None:
    xdg.start_daemon()
    marker = tmp_path / "pwned"
    exp = tmp_path / "noshell.yaml"
    exp.write_text(
        f"name: noshell\noutput: {tmp_path / 'out'}\n"
        "settings: {adaptive: false, rounds: 1, warmup_rounds: 0}\n"
        "workloads:\n"
        "  - name: argv\n"
        "    command: ['python3', '-c', 'import os, sys; print(\"n=%d u=%d\" % (len(sys.argv),"
        f" os.getuid()))', '$(touch {marker})', ';', 'touch {marker}', '&&', '`id`']\n"
        "    readings: {pattern: 'n=([0-9]+)', unit: args}\n"
        "  - name: uid\n"
        "    command: ['python3', '-c', 'import os; print(\"u=%d\" % os.getuid())']\n"
        "    readings: {pattern: 'u=([0-9]+)', unit: uid}\n"
    )
    entry_id = int(xdg.cli("submit", str(exp)).stdout)
    assert xdg.wait_state(entry_id, ("done",))["state"] == "done"
    conn = sqlite3.connect(tmp_path / "out" / "noshell" / "benchrun.db")
    got = dict(
        conn.execute(
            "SELECT w.name, reading.value FROM reading JOIN round r ON r.id = reading.round_id"
            " JOIN workload w ON w.id = r.workload_id"
        ).fetchall()
    )
    # argv[0] ('-c') plus the five arguments, each passed literally: nothing expanded
    assert got == {"argv": 6.0, "uid": float(os.getuid())}
    assert not marker.exists()
