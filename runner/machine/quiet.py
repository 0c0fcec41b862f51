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
from collections.abc import Callable, Mapping, Sequence

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

    Parameters
    ----------
    max_load : float or None
        The load average to get below; None turns the guard off.
    max_wait_s : float
        Seconds after which the wait gives up.
    loadavg, sleep, clock : callable
        ``os.getloadavg``, ``time.sleep`` and ``time.monotonic`` (replaceable in tests).
    poll_s : float
        Longest sleep between two looks, in seconds; never past the deadline.
    should_stop : callable, optional
        Asked before each sleep (e.g. "a SIGINT arrived"); true ends the wait early.

    Returns
    -------
    float
        Seconds waited: 0.0 when the guard is off or the machine is already quiet; after
        giving up or stopping early, the time waited (tell them apart with
        :func:`is_quiet`).

    Examples
    --------
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
    """True when the guard is off or the 1-minute load average is below ``max_load``.

    Parameters
    ----------
    max_load : float or None
        The limit; None means the guard is off.
    loadavg : callable
        ``os.getloadavg`` (replaceable in tests).
    """
    return max_load is None or loadavg()[0] < max_load


def quiet_settings(
    quiet_load: float | None, quiet_max_wait: float, environ: Mapping[str, str] | None = None
) -> tuple[float | None, float]:
    """The quiet-machine guard in force: the experiment's, else the daemon's default.

    Parameters
    ----------
    quiet_load : float or None
        The experiment's ``quiet_load``; when set it wins.
    quiet_max_wait : float
        The experiment's ``quiet_max_wait`` in seconds.
    environ : mapping, optional
        Where ``BENCHRUN_QUIET_LOAD`` / ``BENCHRUN_QUIET_MAX_WAIT`` are read
        (default ``os.environ``); malformed or non-positive values are ignored.

    Returns
    -------
    (float or None, float)
        ``(max_load, max_wait_s)`` for :func:`wait_for_quiet`.
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


#: the 1-minute load average per CPU above which ``run`` says the machine is loaded: an
#: evenly spread load L on n CPUs keeps each CPU busy with other work about L/n of the
#: time, and a quarter of the workload's CPU is far above the 1-5 % differences a campaign
#: resolves (docs/reservation.md "Load at the start")
LOADED_PER_CPU = 0.25
#: ... but never below this: on one or two CPUs a single busy process must count
LOADED_MIN = 0.5


def loaded_threshold(cpu_count: int) -> float:
    """The 1-minute load average above which a machine of ``cpu_count`` CPUs is loaded:
    ``max(LOADED_MIN, LOADED_PER_CPU * cpu_count)`` (0.5 on 1-2 CPUs, 2.0 on 8, 16 on 64)."""
    return max(LOADED_MIN, LOADED_PER_CPU * max(1, cpu_count))


#: the machine-wide CPU pressure (share of the last 10 s in which some task waited for a
#: CPU, ``/proc/pressure/cpu`` ``some avg10``, in %) above which ``run`` says so at the
#: start: a round beside such a load is contended for a tenth of its time or more, the
#: level at which a whole campaign's contended rounds make it not comparable
#: (runner/results/conditions.py CONTENDED_MATERIAL, docs/contention.md)
PRESSURE_NOTED = 10.0

#: the kernel's pressure stall information for CPUs (Linux >= 4.20, CONFIG_PSI)
CPU_PRESSURE = "/proc/pressure/cpu"


def cpu_pressure_avg10(path: str = CPU_PRESSURE) -> float | None:
    """The machine's CPU pressure over the last 10 s, in %: ``avg10`` of the ``some``
    line of ``/proc/pressure/cpu`` (the share of time at least one runnable task waited
    for a CPU; kernel documentation, accounting/psi.rst).

    Parameters
    ----------
    path : str
        The pressure file (default ``/proc/pressure/cpu``).

    Returns
    -------
    float or None
        The percentage (0-100), None when the file is missing (no PSI) or malformed.
    """
    try:
        with open(path, encoding="ascii", errors="replace") as f:
            text = f.read(4096)
    except OSError:
        return None
    for line in text.splitlines():
        fields = line.split()
        if fields[:1] != ["some"]:
            continue
        for field in fields[1:]:
            key, _, value = field.partition("=")
            if key == "avg10":
                try:
                    share = float(value)
                except ValueError:
                    return None
                return share if math.isfinite(share) and 0.0 <= share <= 100.0 else None
    return None


def load_note(
    other_runs: Sequence[str],
    *,
    loadavg: Callable[[], tuple[float, float, float]] = os.getloadavg,
    cpu_count: int | None = None,
    pressure: Callable[[], float | None] = cpu_pressure_avg10,
) -> str | None:
    """The one line ``run`` prints at the start when the machine is loaded, else None.

    Parameters
    ----------
    other_runs : sequence of str
        The other benchrun runs active on this machine, each described in a few words
        (from the CPU reservations, runner/execute/reservation.py).
    loadavg : callable
        ``os.getloadavg`` (replaceable in tests).
    cpu_count : int, optional
        CPUs of the machine (default ``os.cpu_count()``).
    pressure : callable
        :func:`cpu_pressure_avg10` (replaceable in tests): the share of the last 10 s in
        which some task waited for a CPU, in %, or None without PSI.

    Returns
    -------
    str or None
        ``"machine is loaded: 1-min load average 1.92 on 2 CPUs (above 0.50); tasks
        waited for a CPU 35 % of the last 10 s; other benchrun runs: ..."``, naming
        whichever applies; None when none does.
    """
    n = cpu_count if cpu_count is not None else (os.cpu_count() or 1)
    load = loadavg()[0]
    limit = loaded_threshold(n)
    parts = []
    if load > limit:
        parts.append(f"1-min load average {load:.2f} on {n} CPUs (above {limit:.2f})")
    waited = pressure()
    if waited is not None and waited > PRESSURE_NOTED:
        parts.append(f"tasks waited for a CPU {waited:.0f} % of the last 10 s")
    if other_runs:
        parts.append("other benchrun runs: " + "; ".join(other_runs))
    if not parts:
        return None
    return "machine is loaded: " + "; ".join(parts)
