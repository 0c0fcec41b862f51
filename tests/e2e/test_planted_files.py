"""A campaign directory another user can write must not steer a root run (issue 29, items
1, 2 and 7): the probes of the issue, each played with a second user (``nobody``) against
a real ``benchrun run`` (runner/safefs.py, docs/security.md)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from e2e_util import cli, query, write_experiment

from benchrun.runner.execute.containment import start_ticks
from benchrun.runner.store.database import Store
from tests.other_user import OTHER_UID, as_other_user, needs_root, plant, shared_dir

pytestmark = needs_root

BOOT_ID = Path("/proc/sys/kernel/random/boot_id").read_text().strip()


@pytest.fixture
def shared() -> Iterator[Path]:
    """A directory under /tmp every user may write (01777, like /tmp), reachable by the
    other user (tmp_path's parents are root's alone); removed afterwards."""
    d = shared_dir(Path(tempfile.mkdtemp(prefix="benchrun-shared-", dir="/tmp")))
    yield d
    shutil.rmtree(d, ignore_errors=True)


def _experiment(where: Path, output: Path) -> Path:
    """Two rounds of ``true``, unpinned (no CPU reservation shared with other test runs)."""
    return write_experiment(
        where,
        f"""
        name: probe
        output: {output}
        settings: {{rounds: 2, warmup_rounds: 0, pin: none}}
        workloads:
          - name: t
            command: ["true"]
        """,
    )


def _one_error_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.startswith("benchrun: error:")]
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    return lines[0]


def _as_other(fn: Callable[[], object]) -> None:
    """Run ``fn`` as the other user (it writes into the shared directory)."""

    def call() -> None:
        fn()

    as_other_user(call)


def test_an_inflight_record_planted_by_another_user_kills_nothing(
    shared: Path, tmp_path: Path
) -> None:
    # probe 1: another user writes a record naming a root process group into a shared
    # campaign directory; root's plain run used to SIGKILL that group
    campaign = shared_dir(shared / "probe")
    victim = subprocess.Popen(["sleep", "300"], start_new_session=True)
    try:
        record = {
            "pid": victim.pid,
            "pgid": victim.pid,
            "start_ticks": start_ticks(victim.pid),
            "boot_id": BOOT_ID,
            "cgroup": None,
            "campaign_id": 1,
            "runner_pid": 4194304,
        }
        text = json.dumps(record)
        _as_other(lambda: (campaign / "inflight.json").write_text(text))
        assert (campaign / "inflight.json").stat().st_uid == OTHER_UID
        done = cli("run", str(_experiment(tmp_path, shared)))
        assert victim.poll() is None, "the planted record's process group was killed"
        assert done.returncode == 0, done.stderr
        said = done.stdout + done.stderr
        assert "left the in-flight record" in said and f"owned by uid {OTHER_UID}" in said
        assert "ended the processes" not in said
        events = query(
            campaign / "benchrun.db", "SELECT message FROM event WHERE kind = ?", ("leftovers",)
        )
        assert len(events) == 1 and "left the in-flight record" in events[0][0]
    finally:
        victim.kill()
        victim.wait(timeout=5)


def test_a_symlinked_lock_file_is_refused_and_its_target_left_intact(
    shared: Path, tmp_path: Path
) -> None:
    # probe 2: .benchrun.lock -> a 0600 root file; the run opened it O_RDWR|O_CREAT,
    # truncated it and wrote its pid there
    secret = tmp_path / "secret"
    secret.write_text("root's secret\n")
    secret.chmod(0o600)
    campaign = shared_dir(shared / "probe")
    _as_other(lambda: os.symlink(secret, campaign / ".benchrun.lock"))
    done = cli("run", str(_experiment(tmp_path, shared)), "-q")
    assert done.returncode == 2
    line = _one_error_line(done.stderr)
    assert ".benchrun.lock: a symbolic link" in line and f"uid {OTHER_UID}" in line
    assert secret.read_text() == "root's secret\n"
    assert not (campaign / "benchrun.db").exists()


def test_a_lock_file_of_another_user_is_neither_truncated_nor_written(
    shared: Path, tmp_path: Path
) -> None:
    campaign = shared_dir(shared / "probe")
    plant(campaign / ".benchrun.lock", "hers\n")
    done = cli("run", str(_experiment(tmp_path, shared)), "-q")
    assert done.returncode == 2
    assert f"owned by uid {OTHER_UID}" in _one_error_line(done.stderr)
    assert (campaign / ".benchrun.lock").read_text() == "hers\n"


@pytest.mark.parametrize("dangling", [True, False])
def test_a_symlinked_store_is_refused_and_nothing_is_made_where_it_points(
    shared: Path, tmp_path: Path, dangling: bool
) -> None:
    # probe 2: a dangling benchrun.db symlink made root create a file where the link points
    campaign = shared_dir(shared / "probe")
    target = tmp_path / f"elsewhere-{uuid.uuid4().hex}.db"
    if not dangling:
        target.write_bytes(b"")
        target.chmod(0o600)
    _as_other(lambda: os.symlink(target, campaign / "benchrun.db"))
    done = cli("run", str(_experiment(tmp_path, shared)), "-q")
    assert done.returncode == 2
    line = _one_error_line(done.stderr)
    assert "benchrun.db: a symbolic link" in line
    if dangling:
        assert not target.exists()
    else:
        assert target.read_bytes() == b""


def _foreign_store(tmp_path: Path) -> bytes:
    """The bytes of a real benchrun store (with a campaign), as another user could copy."""
    made = tmp_path / "made" / "benchrun.db"
    Store.create_or_open(made).close()
    return made.read_bytes()


def test_a_store_owned_by_another_user_is_refused(shared: Path, tmp_path: Path) -> None:
    campaign = shared_dir(shared / "probe")
    data = _foreign_store(tmp_path)
    plant(campaign / "benchrun.db", data, mode=0o644)
    done = cli("run", str(_experiment(tmp_path, shared)), "-q")
    assert done.returncode == 2
    line = _one_error_line(done.stderr)
    assert "benchrun.db: owned by uid 65534" in line
    assert (campaign / "benchrun.db").read_bytes() == data
    assert query(campaign / "benchrun.db", "SELECT count(*) FROM campaign") == [(0,)]


def test_a_directory_others_can_write_holding_a_foreign_store_is_refused(
    shared: Path, tmp_path: Path
) -> None:
    campaign = shared / "probe"
    campaign.mkdir()
    campaign.chmod(0o777)  # no sticky bit: others may rename and replace our files
    data = _foreign_store(tmp_path)
    plant(campaign / "benchrun.db", data, mode=0o666)
    done = cli("run", str(_experiment(tmp_path, shared)), "-q")
    assert done.returncode == 2
    line = _one_error_line(done.stderr)
    assert "writable by other users (mode 0777" in line and str(campaign) in line
    assert (campaign / "benchrun.db").read_bytes() == data


def _mount_tmpfs(where: Path, size: str) -> bool:
    where.mkdir()
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
        capture_output=True,
        check=False,
    )
    return made.returncode == 0


def test_a_new_run_on_a_full_disk_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    # probe 7: ENOSPC in campaign_lock (a new run on a full disk) was a traceback
    disk = tmp_path / "full"
    if not _mount_tmpfs(disk, "16k"):
        pytest.skip("cannot mount a tmpfs here")
    try:
        fd = os.open(disk / "filler", os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            while os.write(fd, b"\0" * 4096):
                pass
        except OSError as exc:
            assert exc.errno == 28
        finally:
            os.close(fd)
        done = cli("run", str(_experiment(tmp_path, disk)), "-q")
        assert done.returncode == 75, done.stderr
        line = _one_error_line(done.stderr)
        assert ".benchrun.lock: No space left on device" in line
        assert "free some space" in line
    finally:
        subprocess.run(["umount", str(disk)], check=False)


def test_a_lock_file_that_cannot_be_created_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the same without a tmpfs: the creation itself fails as on a file system out of inodes
    real_open = os.open

    def full_open(path: object, flags: int, *args: object, **kwargs: object) -> int:
        if str(path).endswith(".benchrun.lock") and flags & os.O_CREAT:
            raise OSError(28, os.strerror(28), str(path))
        return real_open(path, flags, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", full_open)
    done = cli("run", str(_experiment(tmp_path, tmp_path / "out")), "-q")
    assert done.returncode == 75, done.stderr
    assert "No space left on device" in _one_error_line(done.stderr)


def test_the_lock_holder_is_named_and_the_lock_file_kept(tmp_path: Path) -> None:
    # the lock still keeps a second runner off: the message names the first one's pid
    exp = _experiment(tmp_path, tmp_path / "out")
    campaign = tmp_path / "out" / "probe"
    first = cli("run", str(exp), "-q")
    assert first.returncode == 0, first.stderr
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, os, sys, time; fd = os.open(sys.argv[1], os.O_RDWR); "
            "fcntl.flock(fd, fcntl.LOCK_EX); os.pwrite(fd, str(os.getpid()).encode(), 0); "
            "print('held', flush=True); time.sleep(60)",
            str(campaign / ".benchrun.lock"),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        again = cli("run", str(exp), "-q")
        assert again.returncode == 1
        assert f"by pid {holder.pid}" in _one_error_line(again.stderr)
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=5)
