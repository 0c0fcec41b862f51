"""NewRound at the store boundary: its columns are the table's, and a round reads back as
it was written (real SQLite)."""

from __future__ import annotations

import sqlite3
from dataclasses import fields
from pathlib import Path

import pytest

from benchrun.runner.store.database import ROUND_COLUMNS, NewRound, RoundRow, Store


def _store(tmp_path: Path) -> tuple[Store, int, int]:
    store = Store.create_or_open(tmp_path / "benchrun.db")
    cid = store.create_campaign(
        name="t", config_path=None, config_text="", fingerprint="f", settings={},
        workloads=[{"name": "w", "metric": "wall_time", "unit": "s",
                    "direction": "lower_is_better", "spec": {}}],
        benchrun_version="0", command_line=None,
    )  # fmt: skip
    (w,) = store.workloads(cid)
    return store, cid, w.id


def _round(cid: int, wid: int, index: int) -> NewRound:
    return NewRound(
        campaign_id=cid, workload_id=wid, seq=index, pass_=index, round_index=index,
        status="ok", reason=None, exit_code=0, started_at=1.7e9 + index, wall_ns=123_456_789,
        user_s=0.1, sys_s=0.02, max_rss_kib=4096, cpus="1", argv=["python3", "-c", "pass"],
        work=1000, warmup=index == 0, readings=[1.5, 2.5], stdout_tail=None,
        stderr_tail="warn", facts={"load": 0.5}, flags="",
    )  # fmt: skip


def test_the_round_columns_are_the_tables(tmp_path: Path) -> None:
    store, cid, wid = _store(tmp_path)
    table = [r[1] for r in store.conn.execute("PRAGMA table_info(round)")]
    assert set(ROUND_COLUMNS) <= set(table)
    written = set(_round(cid, wid, 0).columns())
    assert written == set(table) - {"id"}  # every column but the key is written
    store.close()


def test_a_round_reads_back_as_written(tmp_path: Path) -> None:
    store, cid, wid = _store(tmp_path)
    new = _round(cid, wid, 0)
    store.add_round(new)
    (row,) = store.rounds(cid, wid)
    for f in fields(RoundRow):
        if f.name == "id":
            continue
        got, want = getattr(row, f.name), getattr(new, f.name)
        assert (list(got) if f.name == "readings" else got) == want, f.name
    store.close()


def test_a_round_is_never_stored_twice(tmp_path: Path) -> None:
    store, cid, wid = _store(tmp_path)
    store.add_round(_round(cid, wid, 1))
    with pytest.raises(sqlite3.IntegrityError):
        store.add_round(_round(cid, wid, 1))
    assert len(store.rounds(cid)) == 1
    store.close()
