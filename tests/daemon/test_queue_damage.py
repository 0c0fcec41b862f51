"""A damaged queue file is refused with one line, never written into (issue 16)."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import pytest

from benchrun.runner.daemon.queue import QueueDB
from benchrun.runner.errors import UserError


def test_a_damaged_queue_file_is_refused_and_left_as_it_is(tmp_path: Path) -> None:
    path = tmp_path / "queue.db"
    queue = QueueDB.open(path)
    for i in range(300):
        queue.add(
            experiment=f"/x/{i}.yaml", name=f"e{i}", output="/x/out", db_path="/x/out/r.db",
            cwd="/x", config_text="name: e\n" + "# padding\n" * 50, priority=0,
            not_before=None, log_dir=tmp_path,
        )  # fmt: skip
    queue.close()
    con = sqlite3.connect(path)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    data = bytearray(path.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 8192] = random.Random(7).randbytes(8192)
    path.write_bytes(bytes(data))
    con = sqlite3.connect(path)  # the damage is real: SQLite's own check sees it
    try:
        assert con.execute("PRAGMA quick_check").fetchone()[0] != "ok"
    except sqlite3.DatabaseError:
        pass
    finally:
        con.close()
    before = path.read_bytes()
    with pytest.raises(UserError) as info:
        QueueDB.open(path)
    message = str(info.value)
    assert "\n" not in message and str(path) in message and "move it away" in message
    assert path.read_bytes() == before
