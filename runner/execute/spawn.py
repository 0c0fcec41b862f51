"""Starting a round's child: its argv, its memory limit, its CPUs, and the outcome of a
round whose child never ran.

:class:`Spawner` is a thread pinned to a round's CPUs for its whole life that starts the
children, so they inherit its CPU mask with no ``preexec_fn`` (docs/loop.md "Pinning");
used by :class:`runner.execute.local.LocalExecutor`. The other functions are shared with
duets (:mod:`runner.execute.duet`).
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from typing import TypeVar

from benchrun.runner.errors import UserError
from benchrun.runner.execute.executor import RoundOutcome, RoundSpec, RoundStatus
from benchrun.runner.execute.watch import killpg

_T = TypeVar("_T")

#: a started child, the monotonic ns just before its spawn, the CPUs it was pinned to
Spawned = tuple[subprocess.Popen[bytes], int, tuple[int, ...] | None]


def limit_as(limit: int) -> Callable[[], None]:
    """A preexec function setting RLIMIT_AS (soft and hard) to ``limit`` bytes."""

    def preexec() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return preexec


def argv_of(spec: RoundSpec) -> tuple[str, ...]:
    """The argv that runs ``spec``: its own, or ``/bin/sh -c`` with its one string when
    ``spec.shell``; a :class:`UserError` for an empty command or a shell command of more
    than one string."""
    if spec.shell:
        if len(spec.argv) != 1:
            raise UserError(
                f"workload {spec.workload!r}: a shell command must be one string, "
                f"got {len(spec.argv)}"
            )
        return ("/bin/sh", "-c", spec.argv[0])
    if not spec.argv or not spec.argv[0]:
        raise UserError(f"workload {spec.workload!r}: the command is empty")
    return tuple(spec.argv)


def spawn_reason(exc: OSError, argv: tuple[str, ...], spec: RoundSpec) -> str:
    """Why ``argv`` could not be started (``exc`` from the spawn), for a round's reason."""
    what = exc.strerror or str(exc)
    if spec.cwd is not None and exc.filename == spec.cwd:
        return f"cannot enter working directory {spec.cwd!r}: {what}"
    return f"cannot execute {argv[0]!r}: {what}"


def not_run(
    spec: RoundSpec,
    started_at: float,
    status: RoundStatus,
    reason: str,
    cpus: tuple[int, ...] | None,
    wall_ns: int = 0,
) -> RoundOutcome:
    """Outcome of a round whose child never ran: no CPU time, no RSS, no exit code."""
    return RoundOutcome(
        status=status,
        wall_ns=wall_ns,
        user_s=0.0,
        sys_s=0.0,
        max_rss_kib=0,
        exit_code=None,
        started_at=started_at,
        cpus=cpus,
        reason=reason,
        extra={"started": False},
    )


def pin_reason(spec: RoundSpec, exc: BaseException) -> str:
    """Why the round could not be pinned to ``spec.cpus``, with the CPUs this process may use."""
    why = getattr(exc, "strerror", None) or str(exc)
    return (
        f"cannot pin to CPUs {list(spec.cpus or ())}: {why}; "
        f"this process may use {sorted(os.sched_getaffinity(0))}"
    )


def start_child(
    spec: RoundSpec,
    argv: tuple[str, ...],
    stdio: tuple[int, int, int],
    env: dict[bytes, bytes],
    started_at: float,
    applied: tuple[int, ...] | None,
) -> Spawned | RoundOutcome:
    """Start ``argv`` for the round ``spec`` in its own session, with ``stdio`` (stdin,
    stdout, stderr descriptors), exactly ``env``, ``spec.cwd`` and ``spec.memory_limit``,
    inheriting the calling thread's CPU mask ``applied``; the child and the monotonic ns
    just before the spawn, or the outcome of a round that could not start."""
    t0 = time.monotonic_ns()
    try:
        proc = subprocess.Popen(
            argv,
            stdin=stdio[0],
            stdout=stdio[1],
            stderr=stdio[2],
            env=env,
            cwd=spec.cwd,
            start_new_session=True,
            preexec_fn=None if spec.memory_limit is None else limit_as(spec.memory_limit),
        )
    except OSError as exc:
        wall = time.monotonic_ns() - t0
        reason = spawn_reason(exc, argv, spec)
        return not_run(spec, started_at, "failed", reason, applied, wall)
    except ValueError as exc:  # NUL byte in argv/env, '=' in a variable name
        return not_run(spec, started_at, "failed", f"cannot start: {exc}", applied)
    return proc, t0, applied


class Spawner:
    """A thread pinned to ``cpus`` for its whole life that starts children on request, so
    they inherit its CPU mask (docs/loop.md "Pinning"). :attr:`error` is set when it could
    not be pinned (it then ends at once); :attr:`applied` is the mask it got."""

    def __init__(self, cpus: tuple[int, ...]) -> None:
        self.cpus = cpus
        self.error: BaseException | None = None
        self.applied: tuple[int, ...] | None = None
        self._go = threading.Lock()
        self._done = threading.Lock()
        self._go.acquire()
        self._done.acquire()
        self._job: Callable[[], object] | None = None
        self._result: tuple[bool, object] = (True, None)
        self._thread = threading.Thread(target=self._run, name="benchrun-spawner", daemon=True)
        self._thread.start()
        self._done.acquire()  # pinned (or failed to)

    def _run(self) -> None:
        try:
            os.sched_setaffinity(0, self.cpus)
            self.applied = tuple(sorted(os.sched_getaffinity(0)))
        except (OSError, ValueError, TypeError) as exc:
            self.error = exc
            self._done.release()
            return
        self._done.release()
        while True:
            self._go.acquire()
            job = self._job
            if job is None:
                return
            try:
                self._result = (True, job())
            except BaseException as exc:  # handed to the caller
                self._result = (False, exc)
            self._done.release()

    def call(self, job: Callable[[], _T]) -> _T:
        """Run ``job`` in the pinned thread and return what it returned (or raise what it
        raised). Interrupted while waiting (KeyboardInterrupt), it still waits for the job,
        kills the child it started, and re-raises."""
        self._job = job
        self._go.release()
        try:
            self._done.acquire()
        except BaseException:
            while True:
                try:
                    self._done.acquire()
                    break
                except BaseException:
                    continue
            ok, value = self._result
            if ok and isinstance(value, tuple) and isinstance(value[0], subprocess.Popen):
                killpg(value[0].pid, signal.SIGKILL)
                os.wait4(value[0].pid, 0)
                value[0].returncode = -1
            raise
        ok, value = self._result
        self._result = (True, None)
        if not ok:
            assert isinstance(value, BaseException)
            raise value
        return value  # type: ignore[return-value]

    def close(self) -> None:
        if self.error is None and self._thread.is_alive():
            self._job = None
            self._go.release()
            self._thread.join(timeout=1.0)
