"""Contention of a round: how long its processes were runnable but not running.

Three Linux signals, read around a round outside its timed window (docs/contention.md):

- ``cpu.pressure`` of the cgroup v2 the round runs in (pressure stall information,
  kernel docs accounting/psi.rst): its ``some ... total=<µs>`` line is the cumulative time
  at least one task of the cgroup was runnable but not running. The difference over a
  round is the round's CPU wait, whatever its processes and threads (the source
  :data:`SOURCE_PRESSURE`).
- ``/proc/PID/schedstat`` field 2: the run-queue wait of one task in ns (the round's
  leader, read while it is a zombie, before the reap): the source :data:`SOURCE_SCHEDSTAT`
  where the round has no cgroup. It misses the waits of other threads and of children.
- ``/proc/pressure/cpu``: the same ``some`` line for the whole machine (:func:`system_cpu_some_us`),
  for load lines, never for a round (it counts every process).

Wall time minus CPU time is not used as a source: it counts a round's sleeps and I/O as
waiting, so a workload that sleeps would be flagged contended every round.

Each reader keeps its file open and reads it with ``pread`` (no open/close a round).
"""

from __future__ import annotations

import os
from pathlib import Path

#: ``RoundOutcome.wait_source`` of a wait from the cgroup's ``cpu.pressure``
SOURCE_PRESSURE = "cgroup cpu.pressure"
#: ``RoundOutcome.wait_source`` of a wait from the leader's ``/proc/PID/schedstat``
SOURCE_SCHEDSTAT = "schedstat"
#: ``RoundOutcome.wait_source`` of a wait scripted by the fake executor (tests)
SOURCE_FAKE = "fake"
#: the system-wide pressure file
SYSTEM_PRESSURE = Path("/proc/pressure/cpu")


def parse_some_total(text: bytes) -> int:
    """The ``total=`` value (µs) of the ``some`` line of a pressure file's contents.

    Raises ``ValueError`` when there is no such line.
    """
    for line in text.splitlines():
        if line.startswith(b"some "):
            return int(line.rsplit(b"total=", 1)[1])
    raise ValueError("no 'some' line with total= in the pressure file")


class PressureReader:
    """A pressure file (``cpu.pressure`` of a cgroup, or ``/proc/pressure/cpu``) kept open.

    :meth:`some_us` returns the ``some`` total in µs, or None when the file cannot be
    read (no PSI in the kernel, the cgroup gone); after a failure the reader stays off.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None
        self._off = False

    def some_us(self) -> int | None:
        """The cumulative ``some`` stall time in µs (one ``pread``), or None."""
        if self._off:
            return None
        try:
            if self._fd is None:
                self._fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
            return parse_some_total(os.pread(self._fd, 256, 0))
        except (OSError, ValueError, IndexError):
            self.close()
            self._off = True
            return None

    def close(self) -> None:
        """Close the file (idempotent)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def open_schedstat(pid: int) -> int | None:
    """An open descriptor of ``/proc/PID/schedstat``, or None where there is none."""
    try:
        return os.open(f"/proc/{pid}/schedstat", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None


def read_run_delay_ns(fd: int) -> int | None:
    """Field 2 of an open ``/proc/PID/schedstat``: the task's run-queue wait in ns."""
    try:
        return int(os.pread(fd, 128, 0).split()[1])
    except (OSError, ValueError, IndexError):
        return None


def system_cpu_some_us() -> int | None:
    """The machine's ``some`` CPU stall total in µs (``/proc/pressure/cpu``), or None."""
    try:
        return parse_some_total(SYSTEM_PRESSURE.read_bytes())
    except (OSError, ValueError, IndexError):
        return None


def is_contended(wait_ns: int | None, wall_ns: int, threshold: float) -> bool:
    """Whether a round waited more than ``threshold`` (a share of its wall time) for a CPU.

    ``wait_ns``: the round's wait in ns (None: not measured, never contended);
    ``wall_ns``: its wall time in ns.
    """
    return wait_ns is not None and wall_ns > 0 and wait_ns > threshold * wall_ns


#: the round flag (``round.flags``) of a contended round
CONTENDED_FLAG = "contended"
#: the values of ``settings.contended``
CONTENDED_POLICIES = ("exclude", "keep", "fail")


def flagged_contended(flags: str) -> bool:
    """Whether a round's stored ``flags`` (comma-separated) include ``contended``."""
    return CONTENDED_FLAG in flags.split(",")


def left_out_as_contended(flags: str, policy: str | None) -> bool:
    """Whether the analysis leaves a round out for contention: it is flagged ``contended``
    and ``settings.contended`` (``policy``; None: the default) is not ``keep``. With
    ``fail`` the campaign stopped at that round, which is left out like with ``exclude``."""
    return (policy or "exclude") != "keep" and flagged_contended(flags)


def add_flag(flags: str, flag: str) -> str:
    """``flags`` (comma-separated) with ``flag`` added once."""
    marks = [m for m in flags.split(",") if m]
    return ",".join(marks if flag in marks else [*marks, flag])
