"""The daemon's own log: one stamped line per event on stderr (``daemon.log`` or the journal)."""

from __future__ import annotations

import os
import sys
import time


def log(text: str) -> None:
    """Write ``text`` as one line ``<local time> benchrun-daemon[<pid>]: <text>`` to stderr.

    Parameters
    ----------
    text : str
        What happened, in one line.
    """
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime())
    print(f"{stamp} benchrun-daemon[{os.getpid()}]: {text}", file=sys.stderr, flush=True)
