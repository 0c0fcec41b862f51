"""The client's reading of a reply into its record (runner/daemon/protocol.py
Reply.from_json): the fields the daemon sends, each of its declared type, or one line."""

from __future__ import annotations

import json

import pytest

from benchrun.runner.daemon.protocol import PingReply, StatusReply, StopReply, SubmitReply
from benchrun.runner.errors import UserError

#: a daemon-status reply as the daemon sends it (docs/daemon.md)
STATUS = (
    '{"v":1,"ok":true,"pid":41,"version":"0.9","started_at":1700000000.5,"rss_kib":30000,'
    '"rss_at_start_kib":28000,"socket":"/run/user/1/benchrun/daemon.sock",'
    '"queue_db":"/home/u/.local/share/benchrun/queue.db","running":null,"queued":2,'
    '"quiet_load":0.5,"quiet_max_wait":600,"stopping":false}'
)


def test_a_status_reply_reads_into_its_record() -> None:
    status = StatusReply.from_json(json.loads(STATUS))
    assert (status.pid, status.version, status.started_at) == (41, "0.9", 1700000000.5)
    assert (status.running, status.queued, status.quiet_load) == (None, 2, 0.5)
    assert (status.quiet_max_wait, status.stopping) == (600, False)
    assert status.socket == "/run/user/1/benchrun/daemon.sock"


def test_small_replies_read_into_their_records() -> None:
    assert PingReply.from_json({"ok": True, "pid": 7, "version": "1.0"}) == PingReply(7, "1.0")
    assert StopReply.from_json({"pid": 7, "running": 3}) == StopReply(7, 3)
    assert SubmitReply.from_json({"id": 4, "log_path": "/l/4.log"}) == SubmitReply(4, "/l/4.log")


@pytest.mark.parametrize(
    ("reply", "field"),
    [
        ({"version": "1.0"}, "pid"),
        ({"pid": "7", "version": "1.0"}, "pid"),
        ({"pid": True, "version": "1.0"}, "pid"),
        ({"pid": 7, "version": 1.0}, "version"),
    ],
)
def test_a_reply_without_its_fields_is_one_line(reply: dict[str, object], field: str) -> None:
    with pytest.raises(UserError, match=f"unreadable reply \\({field}: ") as caught:
        PingReply.from_json(reply)
    assert caught.value.exit_code == 1
