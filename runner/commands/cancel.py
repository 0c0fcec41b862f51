"""``benchrun cancel ID``: drop a queued campaign, or stop a running one (it commits)."""

from __future__ import annotations

import argparse

from benchrun.runner.daemon.protocol import request


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "cancel",
        help="cancel a queued or running daemon campaign",
        description="Cancel a campaign of the daemon's queue. A running one gets SIGTERM: "
        "it commits its finished rounds and stops (they stay in its results DB).",
    )
    p.add_argument("id", type=int, help="campaign id (from `benchrun queue`)")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    reply = request("cancel", id=args.id)
    print(f"campaign {args.id}: {reply['state']}")
    return 0
