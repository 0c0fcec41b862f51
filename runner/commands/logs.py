"""``benchrun logs ID [--follow]``: what a daemon campaign printed, and what the daemon did."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from benchrun.runner.daemon.protocol import request
from benchrun.runner.daemon.queue import FINAL_STATES
from benchrun.runner.errors import UserError

#: seconds between checks while following
FOLLOW_INTERVAL = 0.25


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "logs",
        help="show (or follow) the log of a daemon campaign",
        description="Print the log of a campaign run by the daemon: the output of its "
        "`benchrun run` and the daemon's own lines (launches, crashes, resumes, pauses).",
    )
    p.add_argument("id", type=int, help="campaign id (from `benchrun queue`)")
    p.add_argument(
        "-f",
        "--follow",
        action="store_true",
        help="keep printing until the campaign is done, failed, cancelled, paused or interrupted",
    )
    p.set_defaults(func=main)


def _copy(path: Path, offset: int) -> int:
    """Write ``path`` from ``offset`` to stdout; returns the new offset."""
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            data = f.read()
    except FileNotFoundError:
        return offset
    except OSError as exc:
        raise UserError(f"{path}: cannot read: {exc.strerror or exc}", 1) from None
    if data:
        sys.stdout.write(data.decode("utf-8", errors="replace"))
        sys.stdout.flush()
    return offset + len(data)


def main(args: argparse.Namespace) -> int:
    reply = request("get", id=args.id)
    entry = reply["entry"]
    path = Path(entry["log_path"])
    offset = _copy(path, 0)
    if not args.follow:
        if offset == 0:
            print(f"(campaign {args.id} is {entry['state']}; its log {path} is empty)")
        return 0
    stop_states = (*FINAL_STATES, "paused", "interrupted")
    while True:
        state = request("get", id=args.id)["entry"]["state"]
        offset = _copy(path, offset)
        if state in stop_states:
            offset = _copy(path, offset)
            print(f"(campaign {args.id} is {state})", file=sys.stderr)
            return 0
        time.sleep(FOLLOW_INTERVAL)
