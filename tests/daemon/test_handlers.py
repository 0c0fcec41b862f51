"""In-process tests of the daemon's parts: request handlers, the exit-code table and the
supervisor with a scripted child, and request framing over a socketpair (no daemon process).

Expected replies and states are written out by hand from docs/daemon.md; the real-process
tests beside this file check the same paths end to end.
"""

from __future__ import annotations

import dataclasses
import json
import os
import selectors
import signal
import socket
import sqlite3
import time
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from benchrun.runner import __version__
from benchrun.runner.daemon import handlers
from benchrun.runner.daemon.connections import Conn, Connections
from benchrun.runner.daemon.handlers import OPS, DaemonState, dispatch
from benchrun.runner.daemon.paths import DaemonPaths
from benchrun.runner.daemon.protocol import (
    MAX_MESSAGE,
    EntryEventsReply,
    EntryReply,
    QueueReply,
    StatusReply,
    encode,
)
from benchrun.runner.daemon.queue import QueueDB
from benchrun.runner.daemon.supervisor import Outcome, Supervisor, outcome
from benchrun.runner.errors import UserError


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[DaemonState]:
    paths = DaemonPaths(tmp_path / "data", tmp_path / "state", tmp_path / "run")
    paths.ensure()
    queue = QueueDB.open(paths.queue_db)
    sel = selectors.DefaultSelector()
    sup = Supervisor(queue, sel, quiet_load=None, quiet_max_wait=600.0, stop_timeout=120.0)
    yield DaemonState(paths, queue, sup, started_at=time.time())
    queue.close()
    sel.close()


def ask(daemon: DaemonState, **request: Any) -> dict[str, Any]:
    reply: dict[str, Any] = json.loads(dispatch(daemon, encode(request).rstrip(b"\n")))
    assert reply["v"] == 1
    return reply


def submission(tmp_path: Path) -> dict[str, Any]:
    """The fields ``benchrun submit`` sends (absolute paths)."""
    return {
        "experiment": str(tmp_path / "e.yaml"),
        "name": "e",
        "output": str(tmp_path / "out"),
        "db_path": str(tmp_path / "out" / "results.db"),
        "cwd": str(tmp_path),
        "config_text": "name: e\n",
    }


def submit(daemon: DaemonState, tmp_path: Path, **extra: Any) -> int:
    reply = ask(daemon, op="submit", **{**submission(tmp_path), **extra})
    assert reply["ok"], reply
    return int(reply["id"])


# ------------------------------------------------------------------------------ handlers


def test_every_op_has_a_handler_and_unknown_ops_list_them(daemon: DaemonState) -> None:
    assert OPS == (
        "cancel",
        "current",
        "daemon-status",
        "get",
        "ping",
        "queue",
        "resume",
        "stop",
        "submit",
    )
    reply = ask(daemon, op="reboot")
    assert reply == {
        "v": 1,
        "ok": False,
        "error": "unknown op 'reboot'; valid: " + ", ".join(OPS),
        "code": 2,
    }
    # op names were method names once: "_" still stands for "-"
    assert ask(daemon, op="daemon_status")["ok"]


def test_ping_and_status_describe_this_daemon(daemon: DaemonState) -> None:
    assert ask(daemon, op="ping")["pid"] == os.getpid()
    status = ask(daemon, op="daemon-status")
    assert status["socket"] == str(daemon.paths.socket)
    assert (status["running"], status["queued"], status["stopping"]) == (None, 0, False)


def test_replies_keep_their_wire_format(daemon: DaemonState, tmp_path: Path) -> None:
    """The reply records serialise to the bytes the protocol always sent: ``v``, ``ok``,
    then the fields in their documented order (docs/daemon.md)."""
    pid = os.getpid()
    ping = dispatch(daemon, b'{"v":1,"op":"ping"}')
    assert ping == f'{{"v":1,"ok":true,"pid":{pid},"version":"{__version__}"}}\n'.encode()
    status = json.loads(dispatch(daemon, b'{"v":1,"op":"daemon_status"}'))
    assert list(status) == [
        "v", "ok", "pid", "version", "started_at", "rss_kib", "rss_at_start_kib", "socket",
        "queue_db", "running", "queued", "quiet_load", "quiet_max_wait", "stopping",
    ]  # fmt: skip
    back = StatusReply.from_json(status)  # what the client reads of it
    assert (back.pid, back.version, back.running, back.queued) == (pid, __version__, None, 0)
    entry_id = submit(daemon, tmp_path, overrides=["rounds=3"])
    got = json.loads(dispatch(daemon, f'{{"v":1,"op":"get","id":{entry_id}}}'.encode()))
    assert list(got) == ["v", "ok", "entry", "events"]
    assert got["entry"]["overrides"] == ["rounds=3"] and "config_text" not in got["entry"]
    ((at, kind, message),) = daemon.queue.events(entry_id)
    assert got["events"] == [{"at": at, "kind": kind, "message": message}]
    stop = dispatch(daemon, b'{"v":1,"op":"stop"}')
    assert stop == f'{{"v":1,"ok":true,"pid":{pid},"running":null}}\n'.encode()


def test_submit_get_queue_resume_cancel(daemon: DaemonState, tmp_path: Path) -> None:
    first = submit(daemon, tmp_path)
    second = submit(daemon, tmp_path, priority=5, overrides=["rounds=3"])
    assert ask(daemon, op="submit", experiment="relative.yaml")["error"].startswith(
        "submit: name must be"
    )
    listed = ask(daemon, op="queue")
    assert [e["id"] for e in listed["entries"]] == [first, second]
    assert listed["running"] is None
    got = ask(daemon, op="get", id=second)
    assert got["entry"]["priority"] == 5 and got["events"][0]["kind"] == "submit"
    assert ask(daemon, op="current") == {"v": 1, "ok": True, "entry": None}

    refused = ask(daemon, op="resume", id=first)
    assert refused["error"] == (
        f"campaign {first} is queued; only paused or interrupted campaigns, and failed ones "
        "whose campaign did not end, can be resumed"
    )
    assert refused["code"] == 2  # UserError: bad input
    assert ask(daemon, op="cancel", id=first)["state"] == "cancelled"
    assert ask(daemon, op="cancel", id=first)["error"] == (
        f"campaign {first} is already cancelled; nothing to cancel"
    )
    daemon.queue.update(second, state="paused")
    assert ask(daemon, op="resume", id=second)["state"] == "queued"
    entry = daemon.queue.get(second)
    assert entry is not None and entry.resume


def test_a_failed_entry_whose_campaign_did_not_end_can_be_resumed(
    daemon: DaemonState, tmp_path: Path
) -> None:
    """A Slurm campaign stopped by the cluster (pending_limit, max_resubmits) exits 2 and
    is ``failed`` in the queue, but its campaign is still ``running`` in the results DB:
    ``benchrun resume`` continues it. A failed entry whose campaign ended stays refused."""
    from benchrun.runner.store.database import Store

    entry_id = submit(daemon, tmp_path)
    db = Path(submission(tmp_path)["db_path"])
    db.parent.mkdir(parents=True)
    with Store.create_or_open(db) as store:
        cid = store.create_campaign(
            name="e",
            config_path=None,
            config_text="",
            fingerprint="f",
            settings={},
            workloads=[],
            benchrun_version="0",
            command_line=None,
        )
    daemon.queue.update(entry_id, state="failed", base_campaign_id=0, launches=1)
    assert ask(daemon, op="resume", id=entry_id)["state"] == "queued"
    entry = daemon.queue.get(entry_id)
    assert entry is not None and entry.resume
    with Store.create_or_open(db) as store:
        store.set_status(cid, "failed", "workloads failed")
    daemon.queue.update(entry_id, state="failed")
    assert "can be resumed" in ask(daemon, op="resume", id=entry_id)["error"]


@pytest.mark.parametrize(
    ("request_fields", "error"),
    [
        ({"op": "get"}, "bad campaign id None; expected a number from `benchrun queue`"),
        (
            {"op": "get", "id": True},
            "bad campaign id True; expected a number from `benchrun queue`",
        ),
        ({"op": "get", "id": 9}, "no campaign 9 in the queue; `benchrun queue` lists them"),
    ],
)
def test_bad_ids_are_refused(
    daemon: DaemonState, request_fields: dict[str, Any], error: str
) -> None:
    assert ask(daemon, **request_fields) == {"v": 1, "ok": False, "error": error, "code": 2}


def test_a_full_queue_disk_is_one_clear_line_and_the_daemon_carries_on(
    daemon: DaemonState, tmp_path: Path
) -> None:
    """Issue 29 item 7, simulated in-process: SQLite's ``max_page_count`` makes the queue
    file full (SQLITE_FULL, what ENOSPC gives; the real tmpfs is in test_disk_full.py).
    On main the reply was ``internal error in the daemon: cannot rollback - no transaction
    is active`` (SQLite had already rolled back, and the ROLLBACK after it failed)."""
    first = submit(daemon, tmp_path)
    conn = daemon.queue.conn
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.execute(f"PRAGMA max_page_count = {pages}")
    big = "x" * 20000  # needs new pages: cannot fit
    refused = ask(daemon, op="submit", **{**submission(tmp_path), "config_text": big})
    assert refused["ok"] is False and refused["code"] == 75, refused
    assert refused["error"].startswith(f"{daemon.queue.path}: the daemon's queue cannot be written")
    assert "the disk is full" in refused["error"] and "internal error" not in refused["error"]
    assert not conn.in_transaction
    # nothing half-done: the queue still holds the first entry only, its log untouched
    assert [e["id"] for e in ask(daemon, op="queue")["entries"]] == [first]
    assert conn.execute("SELECT count(*) FROM log").fetchone()[0] == 1
    conn.execute("PRAGMA max_page_count = 1073741823")
    assert submit(daemon, tmp_path, config_text=big) == first + 1


def test_stop_refuses_new_submissions(daemon: DaemonState, tmp_path: Path) -> None:
    assert ask(daemon, op="stop")["running"] is None
    assert daemon.stop_requested
    reply = ask(daemon, op="submit", **submission(tmp_path))
    assert (reply["error"], reply["code"]) == (
        "the daemon is stopping; submit again after it restarts",
        1,
    )


def test_malformed_requests_and_handler_bugs_become_error_replies(
    daemon: DaemonState, monkeypatch: pytest.MonkeyPatch
) -> None:
    reply = json.loads(dispatch(daemon, b"not json"))
    assert (reply["ok"], reply["error"], reply["code"]) == (False, "malformed request: not JSON", 2)

    def broken(daemon: DaemonState, req: dict[str, Any]) -> dict[str, Any]:
        raise KeyError("oops")

    monkeypatch.setitem(handlers.HANDLERS, "ping", broken)
    reply = ask(daemon, op="ping")
    assert (reply["error"], reply["code"]) == ("internal error in the daemon: 'oops'", 1)


# ------------------------------------------------------------------ exit code -> state


@pytest.mark.parametrize(
    ("code", "cancelled", "stopping", "said", "expected"),
    [
        (0, False, False, None, Outcome("done", "done; results in /r/results.db")),
        (
            1,
            False,
            False,
            "workload a failed",
            Outcome("failed", "workload a failed"),
        ),
        (2, False, False, None, Outcome("failed", "benchrun run exited with code 2")),
        (
            75,
            False,
            False,
            "disk full at /r",
            Outcome(
                "paused", "paused: disk full at /r; after freeing space run `benchrun resume 4`"
            ),
        ),
        (
            75,
            False,
            False,
            None,
            Outcome(
                "paused", "paused: the disk is full; after freeing space run `benchrun resume 4`"
            ),
        ),
        (
            128 + 15,
            False,
            True,
            None,
            Outcome(
                "interrupted",
                "stopped by `benchrun daemon stop` (SIGTERM); continues when the daemon starts",
                auto_resume=True,
            ),
        ),
        (
            -9,
            False,
            False,
            None,
            Outcome("interrupted", "interrupted by SIGKILL; continue it with `benchrun resume 4`"),
        ),
        (
            128 + 77,
            False,
            False,
            None,
            Outcome(
                "interrupted", "interrupted by signal 77; continue it with `benchrun resume 4`"
            ),
        ),
        (-15, True, True, None, Outcome("cancelled", "cancelled by `benchrun cancel`")),
    ],
)
def test_exit_codes_map_to_the_documented_states(
    code: int, cancelled: bool, stopping: bool, said: str | None, expected: Outcome
) -> None:
    got = outcome(
        code,
        entry_id=4,
        db=Path("/r/results.db"),
        cancelled=cancelled,
        stopping=stopping,
        said=said,
    )
    assert got == expected


# ---------------------------------------------------------- supervisor, scripted child


class ScriptedChild:
    """Stands in for the ``benchrun run`` Popen: runs until :meth:`exit`; records signals."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.code: int | None = None

    def poll(self) -> int | None:
        return self.code

    def exit(self, code: int) -> None:
        self.code = code


def run_scripted(
    daemon: DaemonState, entry_id: int, monkeypatch: pytest.MonkeyPatch
) -> tuple[ScriptedChild, list[tuple[int, int]]]:
    """Mark ``entry_id`` as running under a scripted child; returns it and the list of
    (pid, signal) the supervisor sends."""
    sent: list[tuple[int, int]] = []
    monkeypatch.setattr("benchrun.runner.daemon.supervisor.kill", lambda p, s: sent.append((p, s)))
    child = ScriptedChild(4242)
    monkeypatch.setattr(daemon.supervisor, "child", child)
    daemon.supervisor.child_entry = entry_id
    daemon.queue.update(entry_id, state="running", pid=4242, launches=1)
    return child, sent


def test_cancel_of_the_running_campaign_signals_it_and_reaps_it_cancelled(
    daemon: DaemonState, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    entry_id = submit(daemon, tmp_path)
    child, sent = run_scripted(daemon, entry_id, monkeypatch)
    assert ask(daemon, op="current")["entry"]["id"] == entry_id
    assert ask(daemon, op="cancel", id=entry_id)["state"] == "cancelling"
    assert sent == [(4242, signal.SIGTERM)]
    daemon.supervisor.reap()  # still running: nothing happens
    assert daemon.supervisor.running == entry_id
    child.exit(-15)
    daemon.supervisor.reap()
    entry = daemon.queue.get(entry_id)
    assert entry is not None
    assert (entry.state, entry.exit_code, entry.message) == (
        "cancelled",
        -15,
        "cancelled by `benchrun cancel`",
    )
    assert daemon.supervisor.running is None
    log = Path(entry.log_path).read_text()
    assert log.endswith(f"[benchrun daemon] campaign {entry_id} cancelled: {entry.message}\n")


def test_stop_terms_the_child_kills_it_at_the_deadline_and_marks_it_for_auto_resume(
    daemon: DaemonState, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    entry_id = submit(daemon, tmp_path)
    child, sent = run_scripted(daemon, entry_id, monkeypatch)
    sup = daemon.supervisor
    sup.begin_stop()
    assert sup.stopping and sent == [(4242, signal.SIGTERM)]
    now = time.monotonic()
    assert not sup.stopped(now)  # before the deadline: wait
    assert not sup.stopped(now + sup.stop_timeout + 1)  # past it: SIGKILL
    assert sent[-1] == (4242, signal.SIGKILL)
    child.exit(128 + 9)
    sup.reap()
    assert sup.stopped(time.monotonic())  # no child left: the daemon may exit
    entry = daemon.queue.get(entry_id)
    assert entry is not None and (entry.state, entry.auto_resume) == ("interrupted", True)


def test_recover_requeues_what_a_dead_daemon_left(
    daemon: DaemonState, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        "benchrun.runner.daemon.child.kill_leftovers", lambda ids, queue_path=None: []
    )
    crashed, stopped, paused = (submit(daemon, tmp_path) for _ in range(3))
    daemon.queue.update(crashed, state="running", pid=999999, daemon_pid=1)
    daemon.queue.update(stopped, state="interrupted", auto_resume=True)
    daemon.queue.update(paused, state="paused")
    daemon.supervisor.recover()
    states = {e.id: (e.state, e.resume) for e in daemon.queue.entries()}
    assert states == {
        crashed: ("queued", True),
        stopped: ("queued", True),
        paused: ("paused", False),
    }
    kinds = [kind for _, kind, _ in daemon.queue.events(crashed)]
    assert "crash-detected" in kinds


def test_first_launch_runs_new_and_a_clean_exit_is_done(
    daemon: DaemonState, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    entry_id = submit(daemon, tmp_path, overrides=["rounds=3"])
    launched: list[list[str]] = []
    child = ScriptedChild(99_999_999)  # no such pid: no pidfd, polled instead

    def launch(argv: list[str], **kwargs: Any) -> ScriptedChild:
        launched.append(argv)
        assert kwargs["entry_id"] == entry_id and kwargs["cwd"] == str(tmp_path)
        return child

    monkeypatch.setattr("benchrun.runner.daemon.child.launch", launch)
    sup = daemon.supervisor
    sup.maybe_start()
    assert launched[0][2:] == [
        "benchrun.runner.cli",
        "run",
        str(tmp_path / "e.yaml"),
        "-o",
        str(tmp_path / "out"),
        "-q",
        "--new",
        "--wait-for-cpus",  # another run's CPUs make the campaign wait, not fail
        "--set",
        "rounds=3",
        "--config-text",
        launched[0][-1],
    ]
    # the child runs the text submitted ("name: e" in submission()), kept beside the log
    assert Path(launched[0][-1]).read_text() == "name: e\n"
    entry = daemon.queue.get(entry_id)
    assert entry is not None
    assert (entry.state, entry.pid, entry.launches, entry.base_campaign_id) == (
        "running",
        99_999_999,
        1,
        0,  # no results DB yet: the campaign will be the first after id 0
    )
    assert sup.running == entry_id
    child.exit(0)
    sup.reap()
    entry = daemon.queue.get(entry_id)
    assert entry is not None
    assert (entry.state, entry.message) == (
        "done",
        f"done; results in {tmp_path / 'out' / 'results.db'}",
    )
    assert entry.finished_at is not None and sup.running is None


def test_a_campaign_that_finished_unseen_is_marked_without_a_launch(
    daemon: DaemonState, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    entry_id = submit(daemon, tmp_path)
    db = tmp_path / "out" / "results.db"
    db.parent.mkdir()
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute("CREATE TABLE campaign (id INTEGER PRIMARY KEY, status TEXT)")
        conn.execute("INSERT INTO campaign VALUES (1, 'old'), (2, 'done')")
    daemon.queue.update(entry_id, launches=1, base_campaign_id=1)
    monkeypatch.setattr("benchrun.runner.daemon.child.launch", pytest.fail)
    daemon.supervisor.maybe_start()
    entry = daemon.queue.get(entry_id)
    assert entry is not None
    assert (entry.state, entry.campaign_id, entry.message) == (
        "done",
        2,
        f"campaign 2 in {db} is done",
    )


def test_a_child_that_cannot_start_fails_the_entry(
    daemon: DaemonState, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    entry_id = submit(daemon, tmp_path)

    def launch(argv: list[str], **kwargs: Any) -> ScriptedChild:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr("benchrun.runner.daemon.child.launch", launch)
    daemon.supervisor.maybe_start()
    entry = daemon.queue.get(entry_id)
    assert entry is not None
    assert (entry.state, entry.message) == (
        "failed",
        "cannot start benchrun run: Permission denied",
    )
    assert daemon.supervisor.running is None


# ------------------------------------------------------------------- request framing


@pytest.fixture
def pair() -> Iterator[tuple[Connections, socket.socket, list[bytes]]]:
    """Connections over one end of a socketpair; the other end is the client."""
    sel = selectors.DefaultSelector()
    seen: list[bytes] = []

    def echo(raw: bytes) -> bytes:
        seen.append(raw)
        return encode({"ok": True, "len": len(raw)})

    conns = Connections(sel, echo)
    _, client = _attach(conns)
    client.settimeout(5)
    yield conns, client, seen
    client.close()
    conns.close_all()
    sel.close()


def _attach(conns: Connections) -> tuple[Conn, socket.socket]:
    """A connection of ``conns`` over one end of a socketpair; returns it and the client end."""
    server, client = socket.socketpair()
    server.setblocking(False)
    conn = Conn(server, time.monotonic() + 10)
    conns.conns[server.fileno()] = conn
    conns.sel.register(server, selectors.EVENT_READ, conn)
    return conn, client


def _read_all(sock: socket.socket) -> bytes:
    chunks = []
    while data := sock.recv(65536):
        chunks.append(data)
    return b"".join(chunks)


def _pump(conns: Connections) -> None:
    for key, _ in conns.sel.select(1.0):
        conns.readable(key.data)


def test_a_request_arriving_in_pieces_is_answered_once(
    pair: tuple[Connections, socket.socket, list[bytes]],
) -> None:
    conns, client, seen = pair
    client.sendall(b'{"v": 1, "op":')
    _pump(conns)
    assert seen == [] and conns.conns  # no newline yet: keep reading
    client.sendall(b' "ping"}\n{"ignored": true}\n')
    _pump(conns)
    assert seen == [b'{"v": 1, "op": "ping"}']  # only the first line
    assert json.loads(_read_all(client)) == {"v": 1, "ok": True, "len": 22}
    assert conns.conns == {}


def test_an_oversized_request_is_refused_without_being_read(
    pair: tuple[Connections, socket.socket, list[bytes]],
) -> None:
    conns, client, seen = pair
    client.sendall(b"x" * (MAX_MESSAGE + 1))
    while not any(c.draining for c in conns.conns.values()):
        _pump(conns)
    reply = json.loads(client.recv(65536))
    assert reply["error"] == f"request too large (more than {MAX_MESSAGE} bytes); not read"
    assert seen == []


def test_a_silent_client_gets_an_error_at_its_deadline(
    pair: tuple[Connections, socket.socket, list[bytes]],
) -> None:
    conns, client, _ = pair
    for conn in conns.conns.values():
        conn.deadline = time.monotonic() - 1
    assert conns.timeout() == 0.01
    conns.expire()
    assert json.loads(_read_all(client))["error"] == "no complete request within 10 s"
    assert conns.conns == {}


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("not_before", float("inf")),
        ("not_before", float("nan")),
        ("not_before", -1.0),
        ("not_before", 1e300),
        ("priority", 2**70),
        ("priority", -(2**70)),
    ],
)
def test_out_of_range_numbers_are_refused_and_the_queue_still_lists(
    daemon: DaemonState, tmp_path: Path, field: str, value: Any
) -> None:
    reply = ask(daemon, op="submit", **{**submission(tmp_path), field: value})
    assert reply["ok"] is False and reply["error"].startswith(f"submit: {field} must be")
    assert ask(daemon, op="queue")["ok"] is True


@pytest.mark.parametrize("raw", [2**64, -(2**70), 0])
def test_ids_beyond_64_bits_are_a_clear_error_not_an_internal_one(
    daemon: DaemonState, raw: int
) -> None:
    reply = ask(daemon, op="get", id=raw)
    assert reply["ok"] is False and "bad campaign id" in reply["error"]


@pytest.mark.parametrize("ts", [1e300, float("nan"), float("inf"), 1700000000.0])
def test_queue_times_that_cannot_be_shown_do_not_break_the_listing(ts: float) -> None:
    from benchrun.runner.commands.queue import _when

    shown = _when(ts)
    if ts == 1700000000.0:
        assert shown == time.strftime("%m-%d %H:%M", time.localtime(ts))
    else:
        assert shown.startswith("(bad time")


def test_a_client_that_never_reads_its_reply_does_not_hold_the_loop() -> None:
    sel = selectors.DefaultSelector()
    big = b"x" * (8 << 20)  # far more than a socket buffer holds
    conns = Connections(sel, lambda raw: big)
    conn, client = _attach(conns)
    client.sendall(b'{"v": 1, "op": "queue"}\n')
    t0 = time.monotonic()
    _pump(conns)  # answers: the part the buffer takes now, the rest waits for EVENT_WRITE
    assert time.monotonic() - t0 < 0.5  # used to block in sendall for 2 s
    assert conn.out is not None and 0 < len(conn.out) < len(big)
    got = b""
    client.settimeout(5)
    while len(got) < len(big):  # the client reads after all: the loop sends the rest
        got += client.recv(1 << 20)
        _pump(conns)
    assert got == big and conns.conns == {}
    # one that never reads is closed at its deadline
    conn2, client2 = _attach(conns)
    client2.sendall(b'{"v": 1, "op": "queue"}\n')
    _pump(conns)
    conn2.deadline = time.monotonic() - 1
    conns.expire()
    assert conns.conns == {}
    for s in (client, client2):
        s.close()
    sel.close()


def test_idle_connections_are_evicted_to_let_a_new_client_in(tmp_path: Path) -> None:
    from benchrun.runner.daemon.connections import MAX_CONNECTIONS, listen_unix

    sel = selectors.DefaultSelector()
    conns = Connections(sel, lambda raw: encode({"ok": True}))
    path = tmp_path / "s.sock"
    listener = listen_unix(path).sock
    idle = []
    for _ in range(MAX_CONNECTIONS):
        c = socket.socket(socket.AF_UNIX)
        c.connect(str(path))
        idle.append(c)
    conns.accept(listener)
    assert len(conns.conns) == MAX_CONNECTIONS
    new = socket.socket(socket.AF_UNIX)
    new.connect(str(path))
    new.settimeout(2)
    new.sendall(b'{"v": 1, "op": "ping"}\n')
    t0 = time.monotonic()
    conns.accept(listener)
    while True:
        _pump(conns)
        try:
            data = new.recv(65536)
            break
        except (BlockingIOError, TimeoutError):
            continue
    assert json.loads(data)["ok"] is True and time.monotonic() - t0 < 1.0
    assert len(conns.conns) <= MAX_CONNECTIONS
    for c in [*idle, new]:
        c.close()
    conns.close_all()
    listener.close()
    sel.close()


def test_the_client_reads_queue_replies_into_entries(daemon: DaemonState, tmp_path: Path) -> None:
    """What the daemon sends of a queue entry reads back as the queue holds it (its
    experiment's text is left out of replies: empty on the client)."""
    first = submit(daemon, tmp_path, priority=3, overrides=["rounds=3", "seed=1"])
    second = submit(daemon, tmp_path)
    stored = daemon.queue.get(first)
    assert stored is not None and stored.config_text == "name: e\n"
    got = EntryEventsReply.from_json(ask(daemon, op="get", id=first))
    assert got.entry == dataclasses.replace(stored, config_text="")
    assert got.entry.overrides == ("rounds=3", "seed=1") and got.entry.priority == 3
    assert [(e.at, e.kind, e.message) for e in got.events] == daemon.queue.events(first)
    listed = QueueReply.from_json(ask(daemon, op="queue"))
    assert [e.id for e in listed.entries] == [first, second] and listed.running is None
    assert EntryReply.from_json(ask(daemon, op="current")) == EntryReply(None)
    with pytest.raises(UserError, match=r"unreadable reply \(state: 5\)"):
        EntryReply.from_json({"entry": {**ask(daemon, op="get", id=first)["entry"], "state": 5}})
