"""Issue 29, item 7: ``show``, ``report`` and ``export`` of a store SQLite cannot read
because of its place (a full disk, a read-only file system, a directory the user may not
write) say what is wrong, not "not a usable SQLite database ... move it away".

A benchrun store is in WAL mode: a reader must create ``benchrun.db-shm`` beside it. The
campaign is written (fake executor, real store) on a small tmpfs this test mounts; the
file system is then filled with a filler file, or remounted read-only; a second user
(``nobody``) reads a store in a directory only root may write. Each time the command
fails with one line naming the cause and exits 75 (no room) or 77 (no permission), and
once the place is fixed the same command reads every round (counted with plain sqlite3).
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from e2e_util import cli
from other_user import as_other_user, needs_root

from benchrun.runner.campaign.run import run_campaign
from benchrun.runner.config.loader import parse_experiment
from benchrun.runner.execute.fake import FakeExecutor, lognormal

EXPERIMENT = """\
name: place
output: {out}
settings: {{adaptive: false, rounds: 30, warmup_rounds: 1, pin: none, min_round_time: 0}}
workloads:
  - name: a
    command: [work]
  - name: b
    command: [work]
"""

COMMANDS = (
    ("show",),
    ("report", "--format", "json", "--no-plots", "--out", "-"),
    ("export", "--format", "csv"),
)


class NullDisplay:
    def start(self, campaign: Any, targets: dict[str, int], done: dict[str, int]) -> None:
        pass

    def round_done(self, workload: str, outcome: Any, value: float | None, warmup: bool) -> None:
        pass

    def message(self, text: str) -> None:
        pass

    def show_decision(self, decision: Any, eta_s: float | None) -> None:
        pass

    def stop(self) -> None:
        pass


def make_campaign(root: Path) -> Path:
    """A stored campaign of 2 x 31 rounds under ``root``; its directory."""
    exp = parse_experiment(EXPERIMENT.format(out=root / "out"), base_dir=root, check_commands=False)
    fake = FakeExecutor({"a": lognormal(0.01, 0.02, seed=1), "b": lognormal(0.012, 0.02, seed=2)})
    run_campaign(exp, fake, NullDisplay())
    assert not (exp.campaign_dir / "benchrun.db-shm").exists()  # closed: the reader makes it
    return exp.campaign_dir


def stored_rounds(campaign: Path) -> int:
    conn = sqlite3.connect(f"file:{campaign / 'benchrun.db'}?immutable=1", uri=True)
    try:
        return int(conn.execute("SELECT count(*) FROM round").fetchone()[0])
    finally:
        conn.close()


@pytest.fixture
def small_fs() -> Iterator[Path]:
    """A 4 MiB tmpfs, or a skip saying why it cannot be mounted."""
    where = Path(tempfile.mkdtemp(prefix="brplace"))
    proc = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m,mode=0700", "tmpfs", str(where)],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        where.rmdir()
        pytest.skip(f"cannot mount a small tmpfs (needs root): {proc.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)
        where.rmdir()


def fill(directory: Path) -> Path:
    """Write zeros until ENOSPC; returns the filler file."""
    filler = directory / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        for size in (65536, 512, 1):
            try:
                while True:
                    os.write(fd, b"\0" * size)
            except OSError:
                pass
    finally:
        os.close(fd)
    return filler


def test_a_full_disk_is_named_and_nothing_is_lost(small_fs: Path) -> None:
    campaign = make_campaign(small_fs)
    rounds = stored_rounds(campaign)
    assert rounds == 62
    filler = fill(small_fs)
    assert os.statvfs(small_fs).f_bavail == 0  # the kernel says: full
    for argv in COMMANDS:
        r = cli(argv[0], str(campaign), *argv[1:])
        assert r.returncode == 75, (argv, r.stderr)
        line = r.stderr.strip()
        assert "\n" not in line and "Traceback" not in line
        assert f"the file system of {campaign} is full" in line, line
        assert "not a usable SQLite database" not in line and "move it away" not in line
    filler.unlink()
    r = cli("show", str(campaign), "--json")
    assert r.returncode == 0, r.stderr
    assert {w["name"]: w["rounds"] for w in json.loads(r.stdout)["workloads"]} == {"a": 31, "b": 31}
    assert stored_rounds(campaign) == rounds


def test_a_read_only_file_system_is_named(small_fs: Path) -> None:
    campaign = make_campaign(small_fs)
    subprocess.run(["mount", "-o", "remount,ro", str(small_fs)], check=True)
    try:
        with pytest.raises(OSError):  # the kernel says: read-only
            (small_fs / "probe").write_text("x")
        for argv in COMMANDS:
            r = cli(argv[0], str(campaign), *argv[1:])
            assert r.returncode == 77, (argv, r.stderr)
            line = r.stderr.strip()
            assert "\n" not in line and "Traceback" not in line
            assert f"{campaign} is on a read-only file system" in line, line
            assert "not a usable SQLite database" not in line
    finally:
        subprocess.run(["mount", "-o", "remount,rw", str(small_fs)], check=True)
    assert cli("show", str(campaign)).returncode == 0


@needs_root
def test_a_directory_the_user_may_not_write_is_named() -> None:
    root = Path(tempfile.mkdtemp(prefix="brplace"))
    try:
        os.chmod(root, 0o755)
        campaign = make_campaign(root)
        for d in (root / "out", campaign):
            os.chmod(d, 0o755)  # nobody may read, not write
        os.chmod(campaign / "benchrun.db", 0o644)

        def show() -> list[Any]:
            r = cli("show", str(campaign))
            return [r.returncode, r.stderr]

        code, err = as_other_user(show)
        assert code == 77, err
        assert f"you may not write in {campaign}" in err and "not damaged" in err
        assert "not a usable SQLite database" not in err
        assert cli("show", str(campaign)).returncode == 0  # root may: it reads
    finally:
        shutil.rmtree(root)
