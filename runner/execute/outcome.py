"""The outcome of a reaped round of this machine: status, reason, times, output.

Shared by :class:`runner.execute.local.LocalExecutor` and duets
(:mod:`runner.execute.duet`): what :func:`runner.execute.watch.watch` noted about a child
becomes a :class:`RoundOutcome`.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable

from benchrun.runner.config.experiment import ReadingsSpec
from benchrun.runner.execute.executor import RoundOutcome, RoundSpec, RoundStatus
from benchrun.runner.execute.readings import ReadingsError
from benchrun.runner.execute.watch import Stream, Watched


class ParseInterrupted(Exception):
    """Raised into the readings search by :meth:`LocalExecutor.interrupt`."""


def signal_name(signum: int) -> str:
    """The name of signal ``signum`` (SIGKILL), or "signal N" for an unnamed one."""
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


#: what programs print when an allocation fails (CPython, glibc, C++, Go, Rust, Java)
_OOM_WORDS = (
    "MemoryError",
    "Cannot allocate memory",
    "bad_alloc",
    "out of memory",
    "memory allocation of",
    "OutOfMemoryError",
)


def memory_reason(limit: int, reason: str, stderr_tail: str) -> str:
    """The reason of a failed round that ran under ``memory_limit``: say so, and say that
    the limit was exceeded when the program's output shows a failed allocation."""
    mib = limit / 2**20
    if any(word in stderr_tail for word in _OOM_WORDS):
        return f"exceeded memory_limit {mib:g} MiB (RLIMIT_AS): {reason}"
    return f"{reason} (memory_limit {mib:g} MiB (RLIMIT_AS) was in force)"


def round_outcome(
    spec: RoundSpec,
    w: Watched,
    t0: int,
    started_at: float,
    applied: tuple[int, ...] | None,
    stdout: Stream,
    stderr: Stream,
    *,
    readings_stdout_limit: int,
    parse: Callable[[str, ReadingsSpec], tuple[float, ...]],
) -> RoundOutcome:
    """The outcome of a reaped round: its status and reason (timeout, interrupt, signal,
    exit code, memory limit, readings, counters), wall time ``w.end_ns - t0`` (monotonic
    ns), CPU times and max RSS from ``w.rusage`` (``wait4``), the output's tails.

    ``parse(stdout, spec.readings)`` parses the readings of an ok round (it raises
    :class:`ParseInterrupted` when an interrupt aborts it); ``readings_stdout_limit``:
    the bytes of stdout kept whole for it, named in the reason when exceeded.
    """
    assert w.wait_status is not None and w.rusage is not None
    exit_code = os.waitstatus_to_exitcode(w.wait_status)
    status: RoundStatus = "ok"
    reason: str | None = None
    readings: tuple[float, ...] = ()
    if w.cause == "timeout":
        status, reason = "timeout", f"timed out after {float(spec.timeout)} s"
    elif w.cause == "interrupted":
        status, reason = "interrupted", "interrupted; process group killed"
    elif exit_code < 0:
        status, reason = "failed", f"killed by signal {signal_name(-exit_code)}"
    elif exit_code > 0:
        status, reason = "failed", f"exit code {exit_code}"
    if status == "failed" and spec.memory_limit is not None:
        reason = memory_reason(spec.memory_limit, reason or "", stderr.tail_text())
    elif status == "ok" and spec.readings is not None:
        if stdout.overflow:
            mib = readings_stdout_limit / 2**20
            status = "failed"
            reason = f"stdout exceeded {mib:g} MiB; readings were not parsed"
        else:
            try:
                readings = parse(stdout.whole_text(), spec.readings)
            except ReadingsError as exc:
                status, reason = "failed", str(exc)
            except ParseInterrupted:
                status, reason = "interrupted", "interrupted while parsing the readings"
    counters = w.counters
    if w.counter_error is not None and status in ("ok", "failed"):
        status, reason = "failed", w.counter_error
    elif status == "ok":
        missing = [m for m in spec.counters if m not in {c.metric for c in counters}]
        if missing:
            status, reason = "failed", f"no count of {', '.join(missing)}"
    if status != "ok":
        counters = ()
    ru = w.rusage
    extra = dict(w.extra)
    extra.update(stdout_bytes=stdout.total, stderr_bytes=stderr.total)
    return RoundOutcome(
        status=status,
        wall_ns=w.end_ns - t0,
        user_s=float(ru.ru_utime),  # type: ignore[attr-defined]
        sys_s=float(ru.ru_stime),  # type: ignore[attr-defined]
        max_rss_kib=int(ru.ru_maxrss),  # type: ignore[attr-defined]
        exit_code=exit_code,
        started_at=started_at,
        cpus=applied,
        readings=readings,
        reason=reason,
        stdout_tail=stdout.tail_text(),
        stderr_tail=stderr.tail_text(),
        extra=extra,
        wait_ns=w.wait_ns,
        wait_source=w.wait_source,
        counters=counters,
    )
