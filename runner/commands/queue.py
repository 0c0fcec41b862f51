"""``benchrun queue`` (list the daemon's campaigns) and ``benchrun resume ID``."""

from __future__ import annotations

import argparse
import json
import sys
import time

from benchrun.runner.commands.replies import QueueItem
from benchrun.runner.daemon.paths import DaemonPaths
from benchrun.runner.daemon.protocol import DaemonNotRunning, request
from benchrun.runner.daemon.queue import QueueDB


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "queue",
        help="list the daemon's campaigns: queued, running, done, failed, interrupted",
        description="List every campaign the daemon knows, oldest first, with its state. "
        "Without a running daemon the queue file is read directly (a note on stderr says so).",
    )
    p.add_argument("--json", action="store_true", help="print the entries as JSON")
    p.set_defaults(func=cmd_queue)
    r = sub.add_parser(
        "resume",
        help="queue a paused (disk full) or interrupted daemon campaign again",
        description="Put a paused or interrupted campaign back in the queue; the daemon "
        "continues it from its committed rounds.",
    )
    r.add_argument("id", type=int, help="campaign id (from `benchrun queue`)")
    r.set_defaults(func=cmd_resume)


def _when(ts: object) -> str:
    if not isinstance(ts, (int, float)):
        return "-"
    try:  # a value stored before submissions were range-checked may be out of range
        return time.strftime("%m-%d %H:%M", time.localtime(ts))
    except (OverflowError, ValueError, OSError):
        return f"(bad time {ts!r})"


def _entries() -> list[QueueItem]:
    """The queue's entries from the daemon, or from its file when no daemon answers."""
    paths = DaemonPaths.from_env()
    try:
        return [QueueItem.from_json(e) for e in request("queue", paths)["entries"]]
    except DaemonNotRunning:
        # the data directory is checked like the daemon checks it: a queue file another
        # user could have planted is not read (nor written: opening may migrate it)
        if paths.existing_data_dir() is None or not paths.queue_db.is_file():
            raise  # no queue yet: say that the daemon is not running
    db = QueueDB.open(paths.queue_db)
    try:
        entries = [QueueItem.from_json(e.to_json()) for e in db.entries()]
    finally:
        db.close()
    print(
        f"benchrun: the daemon is not running; read from {paths.queue_db} "
        "(start it with `benchrun daemon start`)",
        file=sys.stderr,
    )
    return entries


def cmd_queue(args: argparse.Namespace) -> int:
    entries = _entries()
    if args.json:
        print(json.dumps([e.raw for e in entries], indent=2))
        return 0
    if not entries:
        print("the queue is empty; add a campaign with `benchrun submit EXPERIMENT`")
        return 0
    print(f"{'id':>4}  {'state':<11}  {'prio':>4}  {'submitted':<11}  {'name':<20}  message")
    for e in entries:
        msg = e.message or ""
        later = e.not_before
        if e.state == "queued" and isinstance(later, int | float) and later > time.time():
            msg = f"not before {_when(later)}" + (f"; {msg}" if msg else "")
        print(
            f"{e.id:>4}  {e.state:<11}  {e.priority:>4}  {_when(e.submitted_at):<11}  "
            f"{e.name:<20}  {msg}"
        )
    if any(e.state in ("queued", "paused") for e in entries):
        print(
            "queued campaigns run the experiment text as submitted: edit the file and submit again"
        )
    return 0


def cmd_resume(args: argparse.Namespace) -> int:
    reply = request("resume", id=args.id)
    print(f"campaign {args.id} {reply['state']}")
    return 0
