"""``Store.snapshot()``: every read inside the block sees one state of the store while
another connection commits rounds (real SQLite, two connections, WAL).

The counts the snapshot must see are the ones a third, independent sqlite3 connection
reads before and after the writer's commits."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

import pytest
from test_round_records import _round, _store  # one campaign of one workload

from benchrun.runner.store.database import Store


def _count(db: Path) -> int:
    with contextlib.closing(sqlite3.connect(db, timeout=5)) as other:
        return int(other.execute("SELECT count(*) FROM reading").fetchone()[0])


def test_a_snapshot_does_not_see_commits_made_during_it(tmp_path: Path) -> None:
    writer, cid, wid = _store(tmp_path)
    writer.add_round(_round(cid, wid, 0))
    db = tmp_path / "benchrun.db"
    with Store.open(db) as reader:
        with reader.snapshot():
            before = reader.rounds(cid)
            writer.add_round(_round(cid, wid, 1))
            writer.add_round(_round(cid, wid, 2))
            assert _count(db) == 6  # the commits are there for everyone else
            # inside: the rounds, the readings' flags and the events of the first state
            assert reader.rounds(cid) == before and len(before) == 1
            assert reader.reading_flags(cid) == {}
            with reader.snapshot():  # nested: the same state
                assert len(reader.rounds(cid)) == 1
        assert len(reader.rounds(cid)) == 3  # after it: the newest state
    writer.close()


def test_no_write_inside_a_snapshot(tmp_path: Path) -> None:
    store, cid, wid = _store(tmp_path)
    with store.snapshot(), pytest.raises(RuntimeError, match="snapshot"):
        store.add_round(_round(cid, wid, 0))
    store.add_round(_round(cid, wid, 0))  # after it the store writes again
    assert _count(tmp_path / "benchrun.db") == 2
    store.close()


def test_reading_flags_are_the_stored_ones(tmp_path: Path) -> None:
    store, cid, wid = _store(tmp_path)
    rid = store.add_round(_round(cid, wid, 0))
    with store.transaction() as c:
        c.execute("UPDATE reading SET flags = 'clipped' WHERE round_id = ? AND idx = 1", (rid,))
    assert store.reading_flags(cid) == {(rid, 1): "clipped"}
    store.close()


def _round_count(db: Path) -> int:
    with contextlib.closing(sqlite3.connect(db, timeout=5)) as other:
        return int(other.execute("SELECT count(*) FROM round").fetchone()[0])


def test_rounds_read_twice_in_a_snapshot_are_the_stored_ones(tmp_path: Path) -> None:
    """Inside a read-only snapshot the rounds are read once (``show`` asks twice): the
    second read has the rows an independent connection counts, a caller changing its list
    changes nothing for the next one, and a grouped round cannot be written meanwhile."""
    store, cid, wid = _store(tmp_path)
    for i in range(3):
        store.add_round(_round(cid, wid, i))
    db = tmp_path / "benchrun.db"
    with Store.open(db) as reader, reader.snapshot():
        first = reader.rounds(cid)
        first.clear()
        again = reader.rounds(cid)
        assert len(again) == _round_count(db) == 3
        assert [r.round_index for r in again] == [0, 1, 2]
        assert len(reader.rounds(cid, wid)) == 3 and reader.rounds(cid, wid + 1) == []
        with pytest.raises(sqlite3.OperationalError):
            reader.add_round(_round(cid, wid, 3), group=True)
    assert _round_count(db) == 3
    store.close()
