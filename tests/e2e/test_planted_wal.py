"""Issue 29: a ``benchrun.db-wal`` another user plants beside root's store must not be
replayed into it.

SQLite replays a WAL it finds beside a database into it when it opens the database. The
other user (``nobody``) here may write the campaign directory (mode 01777, like a shared
results folder) but not the store; she crafts a WAL of her own (a copy of the store with
the campaign renamed and its experiment text changed, its WAL kept) and plants it. Before
the fix root's ``benchrun show`` printed her campaign name and the change was
checkpointed into root's store for good (a ``--resume`` would have run her text). Now
``show`` and the writer's open (``Store.create_or_open``, what ``run`` uses) refuse with
one line naming the file and its owner, and the store read with plain sqlite3 is as root
wrote it. A symbolic link in place of ``benchrun.db-shm`` is refused by name too.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest
from e2e_util import cli
from other_user import OTHER_UID, needs_root, plant, plant_symlink, shared_dir
from test_unreadable_store import make_campaign

from benchrun.runner.errors import UserError
from benchrun.runner.store.database import Store


def crafted_wal(db: Path, scratch: Path) -> bytes:
    """The WAL of a copy of ``db`` in which the campaign is renamed and its text replaced."""
    copy = scratch / "benchrun.db"
    shutil.copy(db, copy)
    conn = sqlite3.connect(copy, isolation_level=None)
    try:
        conn.execute("PRAGMA wal_autocheckpoint = 0")
        conn.execute("UPDATE campaign SET name = 'pwned', config_text = 'name: pwned'")
        return (scratch / "benchrun.db-wal").read_bytes()  # before close checkpoints it
    finally:
        conn.close()


def stored_name(db: Path) -> str:
    conn = sqlite3.connect(f"file:{db}?immutable=1", uri=True)  # the file, no WAL replay
    try:
        return str(conn.execute("SELECT name FROM campaign").fetchone()[0])
    finally:
        conn.close()


@needs_root
def test_a_planted_wal_is_refused_and_never_replayed(tmp_path: Path) -> None:
    campaign = make_campaign(tmp_path)
    db = campaign / "benchrun.db"
    shared_dir(campaign)  # the other user may write the directory, not the store
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    wal = plant(campaign / "benchrun.db-wal", crafted_wal(db, scratch))
    for argv in (("show",), ("export", "--format", "csv")):
        r = cli(argv[0], str(campaign), *argv[1:])
        assert r.returncode != 0 and "pwned" not in r.stdout
        line = r.stderr.strip()
        assert "\n" not in line and "Traceback" not in line
        assert f"{wal}: belongs to uid {OTHER_UID}" in line, line
    # `run --resume` opens it so: refused before SQLite sees it (runner/safefs.py's check of
    # the files a store is written through, then check_companions)
    with pytest.raises(UserError, match=f"(belongs to|owned by) uid {OTHER_UID}"):
        Store.create_or_open(db)
    assert wal.exists()  # left for the owner to look at
    assert stored_name(db) == "place"  # root's store as root wrote it


@needs_root
def test_a_symlink_for_the_shared_memory_file_is_refused(tmp_path: Path) -> None:
    campaign = make_campaign(tmp_path)
    victim = tmp_path / "victim"
    victim.write_text("root's file")
    shared_dir(campaign)
    plant_symlink(campaign / "benchrun.db-shm", victim)
    r = cli("show", str(campaign))
    assert r.returncode != 0
    assert "benchrun.db-shm: is a symbolic link" in r.stderr
    assert victim.read_text() == "root's file"
