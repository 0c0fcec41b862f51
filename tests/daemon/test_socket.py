"""The daemon's socket: only its user, small JSON messages, bad input answered, never fatal."""

from __future__ import annotations

import json
import os
import socket
import stat
import threading
from pathlib import Path

import pytest
from daemon_util import Env

from benchrun.runner.daemon.protocol import MAX_MESSAGE


def exchange(path: Path, payload: bytes, half_close: bool = True, timeout: float = 10) -> dict:
    """Send raw bytes, read the reply until the daemon closes; the reply as a dict."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect(str(path))
        sender = threading.Thread(target=_send, args=(s, payload, half_close), daemon=True)
        sender.start()
        chunks = []
        while True:
            data = s.recv(65536)
            if not data:
                break
            chunks.append(data)
        sender.join(timeout)
    raw = b"".join(chunks)
    assert raw.endswith(b"\n") and raw.count(b"\n") == 1, raw
    return json.loads(raw)


def _send(s: socket.socket, payload: bytes, half_close: bool) -> None:
    try:
        s.sendall(payload)
        if half_close:
            s.shutdown(socket.SHUT_WR)
    except OSError:
        pass  # the daemon stopped reading an oversized request: expected


def ping(xdg: Env) -> dict:
    return exchange(xdg.socket, b'{"v": 1, "op": "ping"}\n')


@pytest.mark.parametrize(
    ("payload", "fragment"),
    [
        (b"\x00\xff\xfe garbage \x80\n", "not UTF-8"),
        (b"hello daemon\n", "not JSON"),
        (b"[1, 2, 3]\n", "expected a JSON object"),
        (b'{"op": "ping"}\n', "unsupported protocol version None"),
        (b'{"v": 2, "op": "ping"}\n', "unsupported protocol version 2"),
        (b'{"v": 1}\n', "no op"),
        (b'{"v": 1, "op": "rm -rf"}\n', "unknown op 'rm -rf'"),
        (b'{"v": 1, "op": "__init__"}\n', "unknown op"),
        (b'{"v": 1, "op": "get", "id": "1; DROP TABLE entry"}\n', "bad campaign id"),
        (b'{"v": 1, "op": "get", "id": true}\n', "bad campaign id"),
        (b'{"v": 1, "op": "cancel", "id": 12345}\n', "no campaign 12345"),
        (b'{"v": 1, "op": "submit", "experiment": "x"}\n', "submit: name must be"),
        (b'{"v": 1, "op": "submit", "experiment": 7}\n', "submit: experiment must be"),
        (b"{not json", "not JSON"),  # no newline: the half-close ends the request
    ],
)
def test_bad_requests_get_an_error_reply(xdg: Env, payload: bytes, fragment: str) -> None:
    xdg.start_daemon(fast=True)
    reply = exchange(xdg.socket, payload)
    assert reply["v"] == 1 and reply["ok"] is False
    assert fragment in reply["error"]
    assert ping(xdg)["ok"] is True  # still up


def test_oversized_and_many_bad_messages_leave_the_daemon_up(xdg: Env) -> None:
    daemon = xdg.start_daemon(fast=True)
    # more than the cap without a newline: answered after MAX_MESSAGE bytes
    reply = exchange(xdg.socket, b"x" * (4 * MAX_MESSAGE), half_close=False)
    assert reply["ok"] is False and "request too large" in reply["error"]
    # a line longer than the cap, then a newline
    reply = exchange(xdg.socket, b'{"v": 1, "op": "ping", "pad": "' + b"y" * MAX_MESSAGE + b'"}\n')
    assert reply["ok"] is False and "request too large" in reply["error"]
    # a burst of random bytes, and a client that connects and goes away without a word
    for i in range(20):
        reply = exchange(xdg.socket, os.urandom(1000 + i) + b"\n")
        assert reply["ok"] is False
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.connect(str(xdg.socket))
    assert ping(xdg)["ok"] is True
    assert daemon.poll() is None
    queue = xdg.cli("queue")
    assert queue.returncode == 0


def as_nobody(path: Path) -> dict:
    """Connect to ``path`` from a forked child that dropped to uid/gid ``nobody`` (65534);
    what it saw comes back through a pipe: its uid, and EACCES or the daemon's reply."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: no exec, no pytest machinery, only os._exit
        code = 0
        try:
            os.close(r)
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            out: dict = {"uid": os.getuid()}
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(10)
            try:
                s.connect(str(path))
            except PermissionError:
                out["connect"] = "EACCES"
            else:
                try:
                    s.sendall(b'{"v": 1, "op": "queue"}\n')
                    s.shutdown(socket.SHUT_WR)
                except OSError:
                    pass  # refused at accept: the reply is already waiting to be read
                data = b""
                while chunk := s.recv(65536):
                    data += chunk
                out["reply"] = json.loads(data)
            os.write(w, json.dumps(out).encode())
        except BaseException as exc:  # noqa: BLE001 - report, never return into pytest
            os.write(w, json.dumps({"child_error": repr(exc)}).encode())
            code = 1
        finally:
            os._exit(code)
    os.close(w)
    chunks = []
    while chunk := os.read(r, 65536):
        chunks.append(chunk)
    os.close(r)
    _, status = os.waitpid(pid, 0)
    got = json.loads(b"".join(chunks))
    assert os.waitstatus_to_exitcode(status) == 0, got
    return got


@pytest.mark.skipif(os.geteuid() != 0, reason="dropping to uid nobody needs root")
def test_another_uid_is_refused(xdg: Env) -> None:
    xdg.start_daemon(fast=True)
    # the file system refuses first: 0600 socket in a 0700 directory
    assert as_nobody(xdg.socket) == {"uid": 65534, "connect": "EACCES"}
    # with the permissions opened up, the daemon's SO_PEERCRED check still refuses
    for d in (xdg.root, xdg.root / "r", xdg.socket.parent):
        os.chmod(d, 0o711)
    os.chmod(xdg.socket, 0o666)
    for _ in range(20):  # every time: the reply, never a connection reset
        got = as_nobody(xdg.socket)
        assert got["uid"] == 65534
        assert got["reply"]["ok"] is False
        assert "permission denied" in got["reply"]["error"]
        assert "uid 65534" in got["reply"]["error"]
        assert "entries" not in got["reply"]
    assert ping(xdg)["ok"] is True
    assert stat.S_IMODE(os.stat(xdg.socket).st_mode) == 0o666  # (what the test set)


def test_a_full_backlog_makes_the_client_wait_not_crash(tmp_path: Path) -> None:
    """A Unix socket connect with a timeout gets EAGAIN from Linux while the listener's
    backlog is full (a busy daemon); the client used to end in a BlockingIOError traceback.
    It now waits: it connects once the listener accepts, and times out otherwise."""
    from benchrun.runner.daemon.protocol import _connect

    path = str(tmp_path / "s")
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(0)
    held = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    held.connect(path)  # fills the backlog of 0 (+1)
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(1)
    with pytest.raises(BlockingIOError):  # the kernel's behaviour the client must absorb
        probe.connect(path)
    probe.close()
    late = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    late.settimeout(0.3)
    with pytest.raises(TimeoutError):
        _connect(late, path, 0.3)
    late.close()
    accepted: list[socket.socket] = []
    timer = threading.Timer(0.2, lambda: accepted.append(srv.accept()[0]))
    timer.start()
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.settimeout(5)
    _connect(client, path, 5)  # succeeds once the held connection is accepted
    timer.join()
    for s in (client, held, srv, *accepted):
        s.close()
