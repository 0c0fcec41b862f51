"""A damaged store is refused, never written into (issue 16).

The database is made by a real small campaign (two campaigns in one file, like a user who
ran twice), then 8 KiB of seeded random bytes are written into the middle of the file, as
a bad disk or a stray ``dd`` would. Every test first checks with plain ``sqlite3`` that
SQLite's own quick_check sees the damage, so a test cannot pass on a corruption nobody
could detect.
"""

from __future__ import annotations

import hashlib
import random
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from benchrun.runner.store.database import (
    EXIT_STORE_DAMAGED,
    Store,
    StoreDamaged,
    quick_check,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "e2e"))

from e2e_util import cli, write_experiment  # noqa: E402

ROUNDS = 30


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A campaign directory holding two finished campaigns of two workloads (``true``)."""
    root = tmp_path_factory.mktemp("pristine")
    exp = write_experiment(
        root,
        f"""
        name: x
        output: {root}
        settings: {{adaptive: false, rounds: {ROUNDS}, warmup_rounds: 0, pin: none}}
        workloads:
          - name: a
            command: ["true"]
          - name: b
            command: ["true"]
        """,
    )
    for extra in ((), ("--new",)):
        proc = cli("run", str(exp), "-q", *extra)
        assert proc.returncode == 0, proc.stderr
    return root


def _sqlite_sees_damage(db: Path) -> bool:
    """SQLite's own quick_check (not benchrun's wrapper) reports a problem or fails."""
    conn = sqlite3.connect(db)
    try:
        return conn.execute("PRAGMA quick_check").fetchall() != [("ok",)]
    except sqlite3.DatabaseError:
        return True
    finally:
        conn.close()


def _damage(db: Path, seed: int = 16, size: int = 8192, at: int | None = None) -> None:
    """Overwrite ``size`` seeded random bytes at offset ``at`` (default: the middle)."""
    total = db.stat().st_size
    with db.open("r+b") as fh:
        fh.seek(total // 2 - size // 2 if at is None else at)
        fh.write(random.Random(seed).randbytes(size))


def _newest_reads(db: Path) -> bool:
    """Plain sqlite3 reads every round and reading of the newest campaign without error."""
    conn = sqlite3.connect(db)
    try:
        conn.execute("SELECT * FROM round WHERE campaign_id = 2").fetchall()
        conn.execute(
            "SELECT reading.* FROM reading JOIN round ON round.id = reading.round_id"
            " WHERE round.campaign_id = 2"
        ).fetchall()
        return True
    except sqlite3.DatabaseError:
        return False
    finally:
        conn.close()


def _digest(directory: Path) -> dict[str, str]:
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(directory.iterdir())
        if p.name.startswith("benchrun.db")
    }


@pytest.fixture
def damaged(pristine: Path, tmp_path: Path) -> Path:
    """A copy of the pristine campaign directory whose database is damaged in the middle."""
    root = tmp_path / "results"
    shutil.copytree(pristine, root)
    (root / "x" / ".benchrun.lock").unlink(missing_ok=True)
    db = root / "x" / "benchrun.db"
    assert not _sqlite_sees_damage(db)
    _damage(db)
    assert _sqlite_sees_damage(db), "the corruption must be one that quick_check detects"
    return root


def _one_clear_line(stderr: str, db_name: str) -> str:
    assert "Traceback" not in stderr, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    (line,) = lines
    assert line.startswith("benchrun: error: ") and db_name in line
    assert "is damaged (quick_check: " in line and ".recover" in line
    return line


@pytest.mark.parametrize(
    "argv",
    [
        ("show", "{dir}"),
        ("show", "{dir}", "--campaign", "1"),
        ("report", "{dir}", "-o", "{tmp}/r.html"),
        ("export", "{dir}", "-o", "{tmp}/e.json"),
        ("export", "{dir}", "--campaign-id", "1", "--format", "csv"),
        ("compare", "{dir}", "{pristine}"),
    ],
    ids=lambda argv: "-".join(a for a in argv if "{" not in a),
)
def test_read_commands_refuse_a_damaged_store(
    damaged: Path, pristine: Path, tmp_path: Path, argv: tuple[str, ...]
) -> None:
    fields = {"dir": damaged / "x", "tmp": tmp_path, "pristine": pristine / "x"}
    before = _digest(damaged / "x")
    proc = cli(*(a.format(**fields) for a in argv))
    assert proc.returncode == EXIT_STORE_DAMAGED, proc.stderr
    line = _one_clear_line(proc.stderr, str(damaged / "x" / "benchrun.db"))
    assert "will not read results from it" in line
    assert proc.stdout == ""
    assert not list(tmp_path.glob("r.*")) and not list(tmp_path.glob("e.*"))
    assert _digest(damaged / "x") == before


@pytest.mark.parametrize("command", ["show", "report", "export"])
def test_damage_the_newest_campaign_does_not_touch_is_refused_too(
    pristine: Path, tmp_path: Path, command: str
) -> None:
    """The silent case: 8 KiB of noise on pages the newest campaign's queries never read,
    so a plain read of it succeeds and gives numbers; benchrun refuses all the same."""
    campaign_dir = tmp_path / "x"
    shutil.copytree(pristine / "x", campaign_dir)
    db = campaign_dir / "benchrun.db"
    sound = db.read_bytes()
    for page in range(1, len(sound) // 4096 - 1):
        db.write_bytes(sound)
        _damage(db, at=page * 4096)
        if _newest_reads(db) and _sqlite_sees_damage(db):
            break
    else:
        pytest.fail("no 8 KiB window leaves the newest campaign readable")
    out = () if command == "show" else ("-o", str(tmp_path / "out"))
    proc = cli(command, str(campaign_dir), *out)
    assert proc.returncode == EXIT_STORE_DAMAGED, proc.stderr
    _one_clear_line(proc.stderr, str(db))
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("extra", [(), ("--new",), ("--resume",)], ids=["run", "new", "resume"])
def test_run_never_writes_into_a_damaged_store(damaged: Path, extra: tuple[str, ...]) -> None:
    campaign_dir = damaged / "x"
    exp = write_experiment(
        damaged,
        f"""
        name: x
        output: {damaged}
        settings: {{adaptive: false, rounds: 3, warmup_rounds: 0, pin: none}}
        workloads:
          - name: a
            command: ["true"]
        """,
    )
    before = _digest(campaign_dir)
    proc = cli("run", str(exp), "-q", *extra)
    assert proc.returncode == EXIT_STORE_DAMAGED, proc.stderr
    line = _one_clear_line(proc.stderr, str(campaign_dir / "benchrun.db"))
    assert "will not write into it" in line
    assert _digest(campaign_dir) == before  # not one byte added, no WAL left behind


def test_the_store_api_refuses_a_damaged_file_both_ways(damaged: Path) -> None:
    db = damaged / "x" / "benchrun.db"
    before = _digest(db.parent)
    with pytest.raises(StoreDamaged, match="will not write into it"):
        Store.create_or_open(db)
    with pytest.raises(StoreDamaged, match="will not read results from it"):
        Store.open(db)
    assert _digest(db.parent) == before


def test_damage_met_while_reading_is_the_same_refusal(damaged: Path) -> None:
    """A connection that skipped the opening check (damage appearing after the store was
    opened) still gets StoreDamaged, not a bare sqlite3.DatabaseError, from every read."""
    db = damaged / "x" / "benchrun.db"
    store = Store(sqlite3.connect(db, isolation_level=None), db, writable=False)
    try:
        with pytest.raises(StoreDamaged, match="is damaged"):
            for campaign in store.campaigns():
                for w in store.workloads(campaign.id):
                    store.rounds(campaign.id, w.id)
                store.events(campaign.id)
    finally:
        store.close()


def test_quick_check_passes_a_sound_store_and_names_the_problem_of_a_damaged_one(
    pristine: Path, damaged: Path
) -> None:
    with sqlite3.connect(pristine / "x" / "benchrun.db") as conn:
        assert quick_check(conn) is None
    conn = sqlite3.connect(damaged / "x" / "benchrun.db")
    try:
        problem = quick_check(conn)
    finally:
        conn.close()
    assert problem and "\n" not in problem and not problem.startswith("***")


def test_the_last_resort_turns_any_sqlite_error_into_one_line(tmp_path: Path) -> None:
    """An SQLite failure no store turned into a UserError (here a database locked by
    another process for longer than the busy timeout) leaves the CLI as one line."""
    code = (
        "import sqlite3, sys\n"
        "from benchrun.runner.cli import main\n"
        "import benchrun.runner.commands.show as show\n"
        "def boom(args):\n"
        "    raise sqlite3.OperationalError('database is locked')\n"
        "show.main = boom\n"
        "sys.exit(main(['show', sys.argv[1]]))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("benchrun: error: SQLite: database is locked")
