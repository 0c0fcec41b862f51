"""The group commit of the store (docs/loop.md "Durability"): rounds added with
``group=True`` are invisible to other connections until their group is committed, by
:meth:`Store.commit_group`, by the next write of its own or by :meth:`Store.close`; a round
that fails to insert leaves the group's other rounds intact. Each check reads the file
through a second, independent SQLite connection, as ``benchrun status`` or a resume would."""

from __future__ import annotations

import contextlib
import sqlite3
import time
from pathlib import Path

import pytest
from test_round_records import _store  # one campaign of one workload

from benchrun.runner.store.database import NewRound


def _round(cid: int, wid: int, index: int) -> NewRound:
    return NewRound(
        campaign_id=cid, workload_id=wid, seq=index, pass_=index, round_index=index,
        status="ok", reason=None, exit_code=0, started_at=1.7e9 + index, wall_ns=700_000,
        user_s=0.0, sys_s=0.0, max_rss_kib=1024, cpus="1", argv=["true"], work=None,
        warmup=False, readings=[0.0007],
    )  # fmt: skip


def _seen(tmp_path: Path) -> list[tuple[int, int]]:
    """(round_index, readings) of the stored rounds, read by another connection."""
    with contextlib.closing(sqlite3.connect(tmp_path / "benchrun.db", timeout=5)) as other:
        return other.execute(
            "SELECT round.round_index, count(reading.idx) FROM round LEFT JOIN reading"
            " ON reading.round_id = round.id GROUP BY round.id ORDER BY round.round_index"
        ).fetchall()


def test_grouped_rounds_are_seen_only_once_committed(tmp_path: Path) -> None:
    store, cid, wid = _store(tmp_path)
    assert store.group_rounds == 0 and store.group_age() == 0.0
    for i in range(3):
        store.add_round(_round(cid, wid, i), group=True)
    assert store.group_rounds == 3
    assert _seen(tmp_path) == []  # not committed: another connection sees nothing
    time.sleep(0.02)
    assert store.group_age() >= 0.02
    assert store.commit_group() == 3
    assert _seen(tmp_path) == [(0, 1), (1, 1), (2, 1)]
    assert store.group_rounds == 0 and store.commit_group() == 0
    store.close()


def test_a_write_of_its_own_commits_the_group_first(tmp_path: Path) -> None:
    store, cid, wid = _store(tmp_path)
    store.add_round(_round(cid, wid, 0), group=True)
    store.add_round(_round(cid, wid, 1), group=True)
    store.add_event(cid, "note", "something happened")
    assert [i for i, _ in _seen(tmp_path)] == [0, 1]
    store.add_round(_round(cid, wid, 2), group=True)
    store.add_round(_round(cid, wid, 3))  # an ungrouped round: the group goes first
    assert [i for i, _ in _seen(tmp_path)] == [0, 1, 2, 3]
    store.close()


def test_close_commits_the_open_group(tmp_path: Path) -> None:
    store, cid, wid = _store(tmp_path)
    store.add_round(_round(cid, wid, 0), group=True)
    store.close()
    assert _seen(tmp_path) == [(0, 1)]


def test_a_duplicate_in_a_group_is_refused_alone(tmp_path: Path) -> None:
    store, cid, wid = _store(tmp_path)
    store.add_round(_round(cid, wid, 0), group=True)
    store.add_round(_round(cid, wid, 1), group=True)
    dup = _round(cid, wid, 1)
    with pytest.raises(sqlite3.IntegrityError):
        store.add_round(NewRound(**{**dup.__dict__, "seq": 99}), group=True)
    assert store.group_rounds == 2  # the group and its rounds are intact
    store.add_round(_round(cid, wid, 2), group=True)
    assert store.commit_group() == 3
    assert _seen(tmp_path) == [(0, 1), (1, 1), (2, 1)]
    store.close()


def test_a_failed_first_round_leaves_no_transaction_open(tmp_path: Path) -> None:
    store, cid, wid = _store(tmp_path)
    store.add_round(_round(cid, wid, 0))
    with pytest.raises(sqlite3.IntegrityError):
        store.add_round(_round(cid, wid, 0), group=True)
    assert store.group_rounds == 0
    assert not store.conn.in_transaction
    store.add_event(cid, "note", "the store still writes")
    assert _seen(tmp_path) == [(0, 1)]
    store.close()
