"""Unit tests of the daemon's pure parts: quiet guard, protocol, times, live view, queue."""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from benchrun.runner.commands.submit import parse_not_before
from benchrun.runner.daemon.child import last_error_line
from benchrun.runner.daemon.live import CampaignLive, campaign_live, render
from benchrun.runner.daemon.protocol import (
    MAX_MESSAGE,
    ProtocolError,
    Request,
    decode_request,
    encode,
)
from benchrun.runner.daemon.queue import QueueDB
from benchrun.runner.errors import UserError
from benchrun.runner.execute.executor import RoundSpec
from benchrun.runner.execute.local import LocalExecutor
from benchrun.runner.format import format_duration
from benchrun.runner.machine.quiet import ENV_LOAD, ENV_MAX_WAIT, quiet_settings, wait_for_quiet


class FakeClock:
    """A clock that only moves when the code under test sleeps (seconds)."""

    def __init__(self) -> None:
        self.now = 100.0
        self.sleeps: list[float] = []

    def sleep(self, s: float) -> None:
        self.sleeps.append(s)
        self.now += s

    def __call__(self) -> float:
        return self.now


def loads_over_time(
    clock: FakeClock, schedule: list[tuple[float, float]]
) -> Callable[[], tuple[float, float, float]]:
    """loadavg() returning the load of the last schedule step whose start time has passed."""

    def loadavg() -> tuple[float, float, float]:
        t = clock.now - 100.0
        load = [v for start, v in schedule if start <= t][-1]
        return (load, 0.0, 0.0)

    return loadavg


def test_quiet_guard_off_and_already_quiet_do_not_wait() -> None:
    clock = FakeClock()
    assert (
        wait_for_quiet(None, 60, loadavg=lambda: (9.0, 0, 0), sleep=clock.sleep, clock=clock) == 0
    )
    assert wait_for_quiet(1.0, 60, loadavg=lambda: (0.2, 0, 0), sleep=clock.sleep, clock=clock) == 0
    assert clock.sleeps == []


def test_quiet_guard_waits_until_the_load_drops() -> None:
    clock = FakeClock()
    load = loads_over_time(clock, [(0, 3.0), (12, 0.4)])
    waited = wait_for_quiet(0.5, 600, loadavg=load, sleep=clock.sleep, clock=clock, poll_s=5)
    assert waited == 15.0  # looks at 0, 5, 10 (loaded), 15 (quiet)
    assert clock.sleeps == [5, 5, 5]


def test_quiet_guard_gives_up_at_max_wait_without_oversleeping() -> None:
    clock = FakeClock()
    waited = wait_for_quiet(
        0.5, 12, loadavg=lambda: (2.0, 0, 0), sleep=clock.sleep, clock=clock, poll_s=5
    )
    assert waited == 12.0
    assert clock.sleeps == [5, 5, 2]  # never sleeps past the deadline


def test_quiet_guard_ends_early_when_told_to_stop() -> None:
    clock = FakeClock()
    asked: list[float] = []

    def stop() -> bool:
        asked.append(clock.now)
        return clock.now >= 103.0  # e.g. Ctrl-C arrived 3 s into the wait

    waited = wait_for_quiet(
        0.5, 600, loadavg=lambda: (2.0, 0, 0), sleep=clock.sleep, clock=clock, should_stop=stop
    )
    assert waited == 3.0 and clock.sleeps == [1.0, 1.0, 1.0]  # default poll: 1 s
    assert asked == [100.0, 101.0, 102.0, 103.0]


def test_quiet_guard_below_is_strict() -> None:
    clock = FakeClock()
    waited = wait_for_quiet(
        1.0, 3, loadavg=lambda: (1.0, 0, 0), sleep=clock.sleep, clock=clock, poll_s=5
    )
    assert waited == 3.0  # a load equal to the threshold is not quiet


def test_quiet_settings_from_experiment_or_daemon_environment() -> None:
    assert quiet_settings(0.7, 30.0, {ENV_LOAD: "2"}) == (0.7, 30.0)
    assert quiet_settings(None, 600.0, {}) == (None, 600.0)
    assert quiet_settings(None, 600.0, {ENV_LOAD: "1.5", ENV_MAX_WAIT: "90"}) == (1.5, 90.0)
    assert quiet_settings(None, 600.0, {ENV_LOAD: "1.5", ENV_MAX_WAIT: "soon"}) == (1.5, 600.0)
    for bad in ("", "x", "0", "-1", "nan", "inf"):
        assert quiet_settings(None, 600.0, {ENV_LOAD: bad}) == (None, 600.0)


def test_protocol_round_trip_and_limits() -> None:
    raw = encode({"op": "ping", "x": [1, "é"]})
    assert raw.endswith(b"\n") and raw.count(b"\n") == 1
    assert decode_request(raw.rstrip(b"\n")) == Request("ping", {"x": [1, "é"]})
    with pytest.raises(ProtocolError, match="too large"):
        decode_request(b"{" + b" " * MAX_MESSAGE + b"}")
    for bad, why in (
        (b"\xff", "not UTF-8"),
        (b"nul\x00", "not JSON"),
        (b"1", "JSON object"),
        (b'{"v": "1", "op": "ping"}', "version"),
        (b'{"v": 1, "op": 3}', "no op"),
    ):
        with pytest.raises(ProtocolError, match=why):
            decode_request(bad)


def test_not_before_is_the_next_such_clock_time() -> None:
    tz = dt.timezone(dt.timedelta(hours=1))
    now = dt.datetime(2026, 11, 23, 20, 30, tzinfo=tz)
    assert parse_not_before("22:00", now) == dt.datetime(2026, 11, 23, 22, 0, tzinfo=tz).timestamp()
    assert parse_not_before("06:15", now) == dt.datetime(2026, 11, 24, 6, 15, tzinfo=tz).timestamp()
    assert (
        parse_not_before("20:30", now) == dt.datetime(2026, 11, 24, 20, 30, tzinfo=tz).timestamp()
    )
    iso = "2026-12-01T03:00+01:00"
    assert parse_not_before(iso, now) == dt.datetime(2026, 12, 1, 3, 0, tzinfo=tz).timestamp()
    for bad in ("25:00", "tonight", "22h", ""):
        with pytest.raises(ValueError, match="HH:MM"):
            parse_not_before(bad, now)


def test_live_durations() -> None:
    # status shows durations as runner/format.py writes them, and "?" when unknown
    live = CampaignLive(3, status="running", elapsed_s=3600 + 125, eta_s=None)
    assert render(live)[0].endswith("elapsed 1h02m, estimated time to finish ?")
    assert [format_duration(s) for s in (0, 59.4, 61, 3600 + 125)] == [
        "0s",
        "59s",
        "1m01s",
        "1h02m",
    ]


def _results_db(path: Path) -> None:
    """A minimal results DB with the columns live.py reads (written with plain SQL)."""
    conn = sqlite3.connect(path)
    conn.executescript(
        """
        CREATE TABLE campaign (id INTEGER PRIMARY KEY, status TEXT, settings_json TEXT,
                               created_at REAL);
        CREATE TABLE workload (id INTEGER PRIMARY KEY, campaign_id INTEGER, name TEXT,
                               position INTEGER);
        CREATE TABLE round (id INTEGER PRIMARY KEY, workload_id INTEGER, status TEXT,
                            warmup INTEGER, flags TEXT NOT NULL DEFAULT '');
        INSERT INTO campaign VALUES (1, 'done', '{}', 0);
        INSERT INTO campaign VALUES (2, 'running', '{"adaptive": false, "rounds": 10,
                                     "warmup_rounds": 1}', strftime('%s', 'now') - 100);
        INSERT INTO workload VALUES (1, 2, 'fast', 0), (2, 2, 'slow', 1);
        INSERT INTO round (workload_id, status, warmup) VALUES
            (1, 'ok', 1), (1, 'ok', 0), (1, 'ok', 0), (1, 'failed', 0),
            (2, 'ok', 1), (2, 'ok', 0);
        """
    )
    conn.commit()
    conn.close()


def test_live_view_counts_rounds_from_the_db_and_estimates_fixed_mode(tmp_path: Path) -> None:
    db = tmp_path / "benchrun.db"
    _results_db(db)
    live = campaign_live(db, None, base_id=1)
    assert live.campaign_id == 2 and live.status == "running" and not live.adaptive
    by = {w.name: (w.rounds, w.warmup, w.failed, w.target_rounds) for w in live.workloads}
    assert by == {"fast": (2, 1, 1, 10), "slow": (1, 1, 0, 10)}
    # 6 rounds launched in ~100 s; 8 + 9 steady rounds still to go -> ~17 * 100 / 6 s
    assert live.eta_s == pytest.approx(17 * live.elapsed_s / 6, rel=1e-6)
    lines = render(live)
    assert any(line.split()[:3] == ["fast", "2/10", "+1w"] for line in lines)


def test_live_view_merges_status_json_defensively(tmp_path: Path) -> None:
    db = tmp_path / "benchrun.db"
    _results_db(db)
    (tmp_path / "status.json").write_text(
        json.dumps(
            {
                "campaign_id": 2,
                "eta_s": 42,
                "reason": "CI too wide",
                "undecided": ["fast~slow"],
                "workloads": {
                    "fast": {"rel_half_width": 0.031, "target": 0.02, "done": False},
                    "slow": {"rel_half_width": "wide", "rounds_needed": 7},
                    "ghost": "nonsense",
                },
            }
        )
    )
    live = campaign_live(db, 2)
    assert live.eta_s == 42 and live.undecided == ["fast~slow"] and live.reason == "CI too wide"
    fast, slow = live.workloads
    assert (fast.rel_half_width, fast.target_width, fast.done) == (0.031, 0.02, False)
    assert (slow.rel_half_width, slow.rounds_needed) == (None, 7)
    text = "\n".join(render(live))
    assert "3.10% / 2.00%" in text and "undecided pairs: fast~slow" in text
    # a status.json of another campaign is ignored; a broken one too
    (tmp_path / "status.json").write_text(json.dumps({"campaign_id": 1, "eta_s": 1}))
    assert campaign_live(db, 2).eta_s != 1
    (tmp_path / "status.json").write_text("{truncated")
    assert campaign_live(db, 2).workloads[0].rel_half_width is None


def test_live_view_of_missing_or_foreign_db(tmp_path: Path) -> None:
    assert "does not exist yet" in (campaign_live(tmp_path / "none.db", None).note or "")
    other = tmp_path / "other.db"
    sqlite3.connect(other).execute("CREATE TABLE x (y)").connection.close()
    assert "cannot read" in (campaign_live(other, 1).note or "")


def test_queue_db_refuses_foreign_and_corrupt_files(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"\x13" * 4096)
    with pytest.raises(UserError, match="not a usable SQLite database"):
        QueueDB.open(garbage)
    q = QueueDB.open(tmp_path / "q.db")
    entry_id = q.add(
        experiment="/e.yaml",
        name="e",
        output="/o",
        db_path="/o/e/benchrun.db",
        cwd="/",
        config_text="name: e",
        priority=3,
        not_before=None,
        log_dir=tmp_path,
    )
    q.close()
    q = QueueDB.open(tmp_path / "q.db")  # reopens its own file
    e = q.get(entry_id)
    assert e is not None and e.state == "queued" and e.log_path == str(tmp_path / "1.log")
    q.close()
    from benchrun.runner.store.database import Store

    with Store.create_or_open(tmp_path / "results.db"):
        pass
    with pytest.raises(UserError, match="not a benchrun queue"):
        QueueDB.open(tmp_path / "results.db")  # a results DB is not a queue


def _add(q: QueueDB, tmp_path: Path, **fields: Any) -> int:
    """Queue a campaign with placeholder paths; ``fields`` replace the defaults."""
    defaults: dict[str, Any] = {
        "experiment": "/e.yaml",
        "name": "e",
        "output": "/o",
        "db_path": "/o/e/benchrun.db",
        "cwd": "/",
        "config_text": "name: e",
        "priority": 0,
        "not_before": None,
        "log_dir": tmp_path,
    }
    return q.add(**{**defaults, **fields})


def _next_id(q: QueueDB, now: float) -> int | None:
    entry = q.next_runnable(now)
    return entry.id if entry else None


def test_queue_of_schema_1_gains_the_overrides_column_and_keeps_its_entries(
    tmp_path: Path,
) -> None:
    """A queue written before ``submit --set`` existed (schema 1: no overrides column)
    opens, keeps its entries (with no overrides), and stores overrides afterwards."""
    path = tmp_path / "q.db"
    q = QueueDB.open(path)
    old_id = _add(q, tmp_path)
    q.close()
    conn = sqlite3.connect(path)  # turn it into the schema-1 file an older benchrun wrote
    conn.execute("ALTER TABLE entry DROP COLUMN overrides")
    conn.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()
    q = QueueDB.open(path)
    old = q.get(old_id)
    assert old is not None and old.name == "e" and old.overrides == ()
    new = q.get(_add(q, tmp_path, overrides=["max_time=2m", "seed=3"]))
    assert new is not None and new.overrides == ("max_time=2m", "seed=3")
    q.close()
    version = (
        sqlite3.connect(path)
        .execute("SELECT value FROM meta WHERE key = 'schema_version'")
        .fetchone()[0]
    )
    assert version == "2"


def test_queue_order_priority_then_started_then_fifo(tmp_path: Path) -> None:
    q = QueueDB.open(tmp_path / "q.db")

    def add(prio: int, not_before: float | None = None) -> int:
        return _add(q, tmp_path, priority=prio, not_before=not_before)

    a, b, c, d = add(0), add(0), add(5, not_before=2000.0), add(0)
    q.update(d, launches=1)  # d was started before (being resumed): first among equals
    assert _next_id(q, 1000.0) == d
    assert _next_id(q, 3000.0) == c
    assert q.next_wakeup() == 2000.0
    q.update(d, state="done")
    q.update(c, state="cancelled")
    assert _next_id(q, 3000.0) == a
    assert b > a
    q.close()


def test_last_error_line_reads_the_childs_final_words(tmp_path: Path) -> None:
    log = tmp_path / "1.log"
    log.write_text("table\nbenchrun: error: disk full; resume\n[benchrun daemon] ended\n")
    assert last_error_line(log) == "disk full; resume"
    log.write_text("benchrun: interrupted (SIGTERM); continue with: x\n")
    assert last_error_line(log) == "interrupted (SIGTERM); continue with: x"
    assert last_error_line(tmp_path / "missing.log") is None


def test_memory_limit_fails_the_round_and_names_the_limit() -> None:
    ex = LocalExecutor(kill_grace=0.3)
    try:
        hog = (sys.executable, "-c", "b = bytearray(600 * 2**20); print(len(b))")
        small = (sys.executable, "-c", "b = bytearray(8 * 2**20); print(len(b))")
        limit = 256 * 2**20
        over = ex.launch(RoundSpec("w", hog, env={}, timeout=20, memory_limit=limit))
        assert over.status == "failed"
        assert (
            over.reason is not None and "exceeded memory_limit 256 MiB (RLIMIT_AS)" in over.reason
        )
        assert "MemoryError" in over.stderr_tail
        under = ex.launch(RoundSpec("w", small, env={}, timeout=20, memory_limit=limit))
        assert under.status == "ok" and under.stdout_tail.strip() == str(8 * 2**20)
        # no limit: the same hog is fine (the limit, not the machine, failed it)
        free = ex.launch(RoundSpec("w", hog, env={}, timeout=20))
        assert free.status == "ok" and free.stdout_tail.strip() == str(600 * 2**20)
        # the child really had the limit: it reports its own RLIMIT_AS
        probe = (
            sys.executable,
            "-c",
            "import resource; print(resource.getrlimit(resource.RLIMIT_AS))",
        )
        seen = ex.launch(RoundSpec("w", probe, env={}, timeout=20, memory_limit=limit))
        assert seen.stdout_tail.strip() == f"({limit}, {limit})"
    finally:
        ex.close()
