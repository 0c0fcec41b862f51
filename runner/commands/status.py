"""``benchrun status [ID]``: the live state of the running (or a given) daemon campaign."""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from benchrun.runner.daemon.live import campaign_live, render
from benchrun.runner.daemon.protocol import request
from benchrun.runner.format import format_duration


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "status",
        help="live state of the daemon's running campaign (or of campaign ID)",
        description="Per workload: rounds stored, CI half-width vs target, undecided "
        "pairs and the estimated time to finish (adaptive runs); the queue state and "
        "message (e.g. why a campaign is paused).",
    )
    p.add_argument("id", type=int, nargs="?", help="campaign id (default: the running one)")
    p.set_defaults(func=main)


def describe_entry(entry: dict[str, Any]) -> list[str]:
    """The lines about one queue entry (state, files, message) and its live state."""
    lines = [f"campaign {entry['id']} ({entry['name']}): {entry['state']}"]
    lines.append(f"  experiment: {entry['experiment']}")
    lines.append(f"  results:    {entry['db_path']}")
    if entry.get("started_at"):
        since = time.time() - float(entry["started_at"])
        lines.append(
            f"  started:    {time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(entry['started_at']))}"
            f" ({format_duration(since)} ago, {entry['launches']} launch(es))"
        )
    if entry.get("message"):
        lines.append(f"  message:    {entry['message']}")
    if entry["state"] != "queued" or entry.get("launches"):
        live = campaign_live(
            Path(entry["db_path"]), entry.get("campaign_id"), entry.get("base_campaign_id") or 0
        )
        lines.extend(render(live))
    return lines


def main(args: argparse.Namespace) -> int:
    if args.id is None:
        entry = request("current")["entry"]
        if entry is None:
            queued = [e for e in request("queue")["entries"] if e["state"] == "queued"]
            print(f"no campaign is running; {len(queued)} queued (`benchrun queue` lists them)")
            return 0
    else:
        entry = request("get", id=args.id)["entry"]
    print("\n".join(describe_entry(entry)))
    return 0
