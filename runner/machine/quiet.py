"""Quiet-machine guard: before a batch of rounds, wait until the machine is idle enough.

Settings ``quiet_load`` (the 1-minute load average must drop below it; null = off) and
``quiet_max_wait`` (seconds; after that the batch starts anyway and the wait is recorded
as having given up). The daemon can set a default for experiments that do not set
``quiet_load`` through the environment variables ``BENCHRUN_QUIET_LOAD`` and
``BENCHRUN_QUIET_MAX_WAIT`` (see :func:`quiet_settings`).
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Mapping

#: environment variables through which the daemon passes its default (``daemon start``)
ENV_LOAD = "BENCHRUN_QUIET_LOAD"
ENV_MAX_WAIT = "BENCHRUN_QUIET_MAX_WAIT"
#: seconds between two looks at the load average (Linux updates it every 5 s; looking
#: more often is cheap and lets an interruption end the wait promptly)
POLL_INTERVAL = 1.0


def wait_for_quiet(
    max_load: float | None,
    max_wait_s: float,
    *,
    loadavg: Callable[[], tuple[float, float, float]] = os.getloadavg,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    poll_s: float = POLL_INTERVAL,
    should_stop: Callable[[], bool] | None = None,
) -> float:
    """Wait until the 1-minute load average is below ``max_load``, at most ``max_wait_s``.

    Returns the seconds waited (0.0 when ``max_load`` is None, i.e. the guard is off, or
    when the machine is already quiet). Gives up after ``max_wait_s`` seconds and returns
    the time waited; the caller tells the two apart with :func:`is_quiet` if needed.
    Sleeps in steps of at most ``poll_s`` seconds, never past the deadline.
    ``should_stop`` (e.g. "a SIGINT arrived") is asked before each sleep; when it says
    true the wait ends early and returns the time waited.

    >>> loads = iter([(2.0, 0, 0), (1.5, 0, 0), (0.3, 0, 0)])
    >>> now = [0.0]
    >>> wait_for_quiet(0.5, 60, loadavg=lambda: next(loads), poll_s=5,
    ...                sleep=lambda s: now.__setitem__(0, now[0] + s), clock=lambda: now[0])
    10.0
    """
    if max_load is None:
        return 0.0
    start = clock()
    deadline = start + max(0.0, max_wait_s)
    while True:
        if loadavg()[0] < max_load:
            return clock() - start
        now = clock()
        if now >= deadline or (should_stop is not None and should_stop()):
            return now - start
        sleep(min(poll_s, deadline - now))


def is_quiet(
    max_load: float | None, loadavg: Callable[[], tuple[float, float, float]] = os.getloadavg
) -> bool:
    """True when the guard is off or the 1-minute load average is below ``max_load``."""
    return max_load is None or loadavg()[0] < max_load


def quiet_settings(
    quiet_load: float | None, quiet_max_wait: float, environ: Mapping[str, str] | None = None
) -> tuple[float | None, float]:
    """The effective (max_load, max_wait_s): the experiment's ``quiet_load`` if set, else
    the daemon-wide default from ``BENCHRUN_QUIET_LOAD``/``BENCHRUN_QUIET_MAX_WAIT``.

    Malformed or non-positive environment values are ignored (the guard stays off).
    """
    if quiet_load is not None:
        return quiet_load, quiet_max_wait
    env = os.environ if environ is None else environ
    try:
        load = float(env.get(ENV_LOAD, ""))
    except ValueError:
        return None, quiet_max_wait
    if not (math.isfinite(load) and load > 0):
        return None, quiet_max_wait
    try:
        wait = float(env.get(ENV_MAX_WAIT, ""))
    except ValueError:
        wait = quiet_max_wait
    if not (math.isfinite(wait) and wait >= 0):
        wait = quiet_max_wait
    return load, wait
