"""Issue 29, item 3: another local user must not steer root's daemon or its clients.

The other user is ``nobody`` (tests/other_user.py). The probes: a runtime directory that
user owns in a shared ``XDG_RUNTIME_DIR``, where it serves a socket of its own (root's
``benchrun submit`` must send it nothing, the experiment's ``env:`` token included); the
daemon started on such a directory (refused, the directory left as it was); a directory
others may write, a planted symbolic link on the way, a planted socket or link where the
daemon's socket goes; ``benchrun queue`` reading a planted queue file. docs/security.md.
"""

from __future__ import annotations

import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from daemon_util import Env, write_experiment

from benchrun.runner.daemon.queue import QueueDB
from tests.other_user import OTHER_UID, as_other_user, needs_root, plant_symlink, shared_dir

SECRET = "s3cret-token-4711"


@pytest.fixture
def shared() -> Iterator[Path]:
    """A directory every user may write (01777, like /tmp) that nobody can reach: a child
    running as nobody cannot pass tmp_path's 0700 parents."""
    where = shared_dir(Path(tempfile.mkdtemp(prefix="brsh")))
    try:
        yield where
    finally:
        shutil.rmtree(where, ignore_errors=True)


def secret_experiment(directory: Path) -> Path:
    return write_experiment(
        directory,
        f"""
        name: secret
        output: {directory / "results"}
        settings: {{adaptive: false, rounds: 2, warmup_rounds: 0, env: {{API_TOKEN: {SECRET}}}}}
        workloads:
          - name: a
            command: ["true"]
        """,
        name="secret.yaml",
    )


def fake_daemon(runtime_root: str, accept_seconds: float, clients: int = 1) -> dict[str, Any]:
    """Run as nobody: make ``RUNTIME/benchrun`` (0755), serve ``daemon.sock`` there (moved
    into place only once it listens, so a client never sees it half-made), accept
    ``clients`` clients one after the other and keep every byte they send until they hang
    up."""
    home = Path(runtime_root) / "benchrun"
    home.mkdir(mode=0o755)
    os.chmod(home, 0o755)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(home / "tmp.sock"))
    os.chmod(home / "tmp.sock", 0o777)
    server.listen(1)
    os.rename(home / "tmp.sock", home / "daemon.sock")
    server.settimeout(accept_seconds)
    connected = 0
    data = b""
    for _ in range(clients):
        try:
            conn, _ = server.accept()
        except TimeoutError:
            break
        connected += 1
        conn.settimeout(30)
        try:
            while chunk := conn.recv(65536):
                data += chunk
        except TimeoutError:
            pass
        conn.close()
    return {"connected": connected, "received": data.decode("utf-8", errors="replace")}


def serve_as_nobody(shared: Path, clients: int) -> tuple[threading.Thread, dict[str, Any], Path]:
    """Start :func:`fake_daemon` as nobody in a thread; returns it, the dict its result
    lands in, and the socket (once it exists, owned by nobody as the kernel reports)."""
    got: dict[str, Any] = {}
    server = threading.Thread(
        target=lambda: got.update(as_other_user(lambda: fake_daemon(str(shared), 60.0, clients)))
    )
    server.start()
    sock = shared / "benchrun" / "daemon.sock"
    deadline = time.monotonic() + 30
    while not sock.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert os.lstat(sock).st_uid == OTHER_UID
    return server, got, sock


@needs_root
def test_submit_sends_nothing_to_a_socket_served_by_another_user(
    xdg: Env, tmp_path: Path, shared: Path
) -> None:
    """The issue's probe: nobody owns ``benchrun/`` in a shared runtime directory and
    serves the socket; root's ``benchrun submit`` with an ``env:`` token must refuse before
    sending a byte (on main it sent the whole experiment, token included)."""
    exp = secret_experiment(tmp_path)
    server, got, sock = serve_as_nobody(shared, clients=1)
    try:
        xdg.vars["XDG_RUNTIME_DIR"] = str(shared)
        proc = xdg.run("submit", str(exp), timeout=120)
    finally:
        server.join(120)
    assert got["connected"] == 1  # the client did reach the fake daemon...
    assert got["received"] == ""  # ...and sent it nothing: no experiment, no token
    assert proc.returncode == 1, proc
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(
        f"benchrun: error: the daemon socket {sock} is served by uid {OTHER_UID} (nobody), "
        "not you: refusing to send"
    ), lines
    assert "Traceback" not in proc.stderr and SECRET not in proc.stdout + proc.stderr


COMMANDS = (
    ("queue",),
    ("status",),
    ("status", "1"),
    ("logs", "1"),
    ("cancel", "1"),
    ("resume", "1"),
    ("daemon", "stop"),
)


@needs_root
def test_every_client_command_refuses_a_socket_served_by_another_user(
    xdg: Env, shared: Path
) -> None:
    server, got, sock = serve_as_nobody(shared, clients=len(COMMANDS))
    xdg.vars["XDG_RUNTIME_DIR"] = str(shared)
    try:
        results = {args: xdg.cli(*args) for args in COMMANDS}
    finally:
        server.join(120)
    for args, proc in results.items():
        assert proc.returncode == 1, (args, proc)
        assert proc.stderr.strip().splitlines() == [
            f"benchrun: error: the daemon socket {sock} is served by uid {OTHER_UID} (nobody), "
            "not you: refusing to send; someone else's process listens there (see "
            "docs/security.md)"
        ], (args, proc.stderr)
    assert got == {"connected": len(COMMANDS), "received": ""}


def start_foreground(xdg: Env) -> subprocess.CompletedProcess[str]:
    """``python -m benchrun.runner.daemon`` (what ``benchrun daemon start`` detaches) until it
    exits; a daemon that starts instead of refusing is killed after 20 s."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "benchrun.runner.daemon"],
        env=xdg.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    try:
        out, err = proc.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def assert_refused(proc: subprocess.CompletedProcess[str], *parts: str) -> str:
    """One ``benchrun: error:`` line holding every part, a non-zero exit, no traceback."""
    assert proc.returncode == 1, proc
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("benchrun: error: "), proc.stderr
    for part in parts:
        assert part in lines[0], (part, lines[0])
    return lines[0]


@needs_root
def test_daemon_refuses_a_runtime_directory_of_another_user_and_leaves_it_alone(
    xdg: Env, shared: Path
) -> None:
    def make() -> None:
        (shared / "benchrun").mkdir(mode=0o755)
        os.chmod(shared / "benchrun", 0o755)

    as_other_user(make)
    foreign = shared / "benchrun"
    xdg.vars["XDG_RUNTIME_DIR"] = str(shared)
    proc = start_foreground(xdg)
    assert_refused(
        proc,
        f"{foreign}: the daemon's runtime directory belongs to uid {OTHER_UID} (nobody)",
        "set XDG_RUNTIME_DIR",
    )
    st = os.lstat(foreign)  # not chmod-ed, not taken over, nothing made in it
    assert (st.st_uid, stat.S_IMODE(st.st_mode)) == (OTHER_UID, 0o755)
    assert os.listdir(foreign) == []
    # `benchrun daemon start` (detached) refuses the same way before starting anything
    started = xdg.cli("daemon", "start")
    assert started.returncode == 1 and "belongs to uid 65534 (nobody)" in started.stderr
    assert not xdg.pid_file.exists()


@pytest.mark.parametrize("mode", [0o777, 0o770])
def test_daemon_refuses_its_own_directory_when_others_may_write_it(xdg: Env, mode: int) -> None:
    """0770: the group may write (root's group, or a user's group with other members)."""
    runtime = Path(xdg.vars["XDG_RUNTIME_DIR"]) / "benchrun"
    runtime.mkdir(parents=True)
    os.chmod(runtime, mode)
    proc = start_foreground(xdg)
    assert_refused(
        proc, f"{runtime}: the daemon's runtime directory is writable by others (mode {mode:04o})"
    )
    assert stat.S_IMODE(os.lstat(runtime).st_mode) == mode  # refused, not "repaired"
    assert not (runtime / "daemon.sock").exists()


@needs_root
def test_daemon_refuses_a_runtime_path_through_another_users_link(xdg: Env, shared: Path) -> None:
    """nobody plants ``shared/rt -> a directory of root's``: the directory itself is fine,
    but nobody can point the link elsewhere at any time."""
    target = xdg.root / "rt"
    target.mkdir(mode=0o700)
    plant_symlink(shared / "rt", target)
    xdg.vars["XDG_RUNTIME_DIR"] = str(shared / "rt")
    proc = start_foreground(xdg)
    assert_refused(proc, f"{shared / 'rt'} belongs to uid {OTHER_UID} (nobody)")
    assert os.listdir(target) == []


@needs_root
@pytest.mark.parametrize("planted", ["symlink", "socket"])
def test_daemon_refuses_a_planted_socket_path(xdg: Env, planted: str) -> None:
    """Something the daemon did not make where its socket goes is neither removed nor used
    (on main: unlinked and replaced, whatever it was)."""
    runtime = Path(xdg.vars["XDG_RUNTIME_DIR"]) / "benchrun"
    runtime.mkdir(parents=True, mode=0o700)
    sock_path = runtime / "daemon.sock"
    victim = xdg.root / "victim"
    victim.write_text("root's file\n")
    if planted == "symlink":
        plant_symlink(sock_path, victim)
    else:
        with socket.socket(socket.AF_UNIX) as s:
            s.bind(str(sock_path))
        os.lchown(sock_path, OTHER_UID, OTHER_UID)
    before = os.lstat(sock_path)
    proc = start_foreground(xdg)
    kind = "symbolic link" if planted == "symlink" else "socket"
    assert_refused(
        proc, f"{sock_path}: a {kind} of uid {OTHER_UID} (nobody)", "refusing to remove or use it"
    )
    after = os.lstat(sock_path)
    assert (after.st_ino, after.st_uid) == (before.st_ino, OTHER_UID)
    assert victim.read_text() == "root's file\n"


def test_a_stale_socket_of_our_own_is_replaced(xdg: Env) -> None:
    """The case the refusal must not catch: a socket a killed daemon of ours left."""
    runtime = Path(xdg.vars["XDG_RUNTIME_DIR"]) / "benchrun"
    runtime.mkdir(parents=True, mode=0o700)
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(runtime / "daemon.sock"))
    xdg.start_daemon()  # bind would fail (EADDRINUSE) had the stale socket stayed
    assert xdg.answers()


@needs_root
def test_queue_without_a_daemon_does_not_read_another_users_data_directory(xdg: Env) -> None:
    data = Path(xdg.vars["XDG_DATA_HOME"]) / "benchrun"
    data.mkdir(parents=True)
    QueueDB.open(data / "queue.db").close()
    for p in (data, data / "queue.db"):
        os.chown(p, OTHER_UID, OTHER_UID)
    listed = xdg.cli("queue")
    assert listed.returncode == 1, listed
    assert f"{data}: the daemon's data directory belongs to uid {OTHER_UID}" in listed.stderr
    assert listed.stdout == ""


def test_own_directories_readable_by_others_are_narrowed_to_0700(xdg: Env) -> None:
    """What the daemon may change: the mode of its own directory that others can only read."""
    runtime = Path(xdg.vars["XDG_RUNTIME_DIR"]) / "benchrun"
    runtime.mkdir(parents=True)
    os.chmod(runtime, 0o755)
    old_umask = os.umask(0)  # the daemon inherits it: created directories stay 0700 anyway
    try:
        xdg.start_daemon()
    finally:
        os.umask(old_umask)
    assert stat.S_IMODE(os.lstat(runtime).st_mode) == 0o700
    for d in ("d/benchrun", "d/benchrun/logs", "s/benchrun"):
        assert stat.S_IMODE(os.lstat(xdg.root / d).st_mode) == 0o700, d
    assert stat.S_IMODE(os.lstat(runtime / "daemon.sock").st_mode) == 0o600


@needs_root
def test_a_pid_file_link_is_not_written_through(xdg: Env) -> None:
    """A link where the lock and pid file go: on main the daemon truncated the file it
    points to and wrote its pid there (as root, any file)."""
    state = Path(xdg.vars["XDG_STATE_HOME"]) / "benchrun"
    state.mkdir(parents=True, mode=0o700)
    victim = xdg.root / "victim"
    victim.write_text("root's file\n")
    plant_symlink(state / "daemon.pid", victim)
    proc = start_foreground(xdg)
    assert proc.returncode == 1, proc
    assert proc.stderr.count("\n") == 1 and f"{state / 'daemon.pid'}" in proc.stderr, proc.stderr
    assert victim.read_text() == "root's file\n"
    assert os.path.islink(state / "daemon.pid")
