"""``python -m benchrun.runner.daemon [--quiet-load L] [--quiet-max-wait S] [--stop-timeout S]``.

The daemon in the foreground without importing the whole CLI (numpy, scipy, rich): it
starts in a fraction of a second and stays small. ``benchrun daemon start`` runs this;
``benchrun daemon start --foreground`` is the same daemon for systemd.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from benchrun.runner.daemon.paths import DaemonPaths
from benchrun.runner.daemon.server import Daemon
from benchrun.runner.errors import UserError


def main(argv: Sequence[str] | None = None) -> int:
    """Run the daemon until it is stopped; returns the exit code."""
    p = argparse.ArgumentParser(prog="python -m benchrun.runner.daemon")
    p.add_argument("--quiet-load", type=float, default=None, help="1-minute load average")
    p.add_argument("--quiet-max-wait", type=float, default=600.0, help="seconds")
    p.add_argument("--stop-timeout", type=float, default=120.0, help="seconds")
    args = p.parse_args(argv)
    try:
        return Daemon(
            DaemonPaths.from_env(),
            quiet_load=args.quiet_load,
            quiet_max_wait=args.quiet_max_wait,
            stop_timeout=args.stop_timeout,
        ).serve()
    except UserError as exc:
        print(f"benchrun: error: {exc.message}", file=sys.stderr)
        return exc.exit_code


if __name__ == "__main__":
    sys.exit(main())
