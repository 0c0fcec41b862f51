"""Child supervision: the queue's campaigns run one at a time as ``benchrun run`` children.

:class:`Supervisor` starts the next runnable entry (after the quiet-machine wait), reaps
the child and turns its exit code into the entry's state (:func:`outcome`), requeues what
a dead daemon left running, and stops the child on ``daemon stop``. States, exit codes
and the recovery rules: docs/daemon.md.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from benchrun.runner.daemon import child as child_process
from benchrun.runner.daemon.child import append_line, kill, signal_name
from benchrun.runner.daemon.log import log
from benchrun.runner.daemon.queue import FINAL_STATES, Entry, QueueDB
from benchrun.runner.files import atomic_write_text


@dataclass(frozen=True)
class Outcome:
    """How a child's end reads in the queue: the entry's new ``state``, the ``message``
    shown by ``status``/``queue``/``logs``, and whether the next daemon start continues it."""

    state: str
    message: str
    auto_resume: bool = False


def outcome(
    code: int,
    *,
    entry_id: int,
    db: Path,
    cancelled: bool,
    stopping: bool,
    said: str | None,
) -> Outcome:
    """The queue state of an entry whose child exited (the table in docs/daemon.md).

    Parameters
    ----------
    code : int
        The child's exit code as ``Popen.poll`` gives it (negative: killed by a signal).
    entry_id : int
        The queue entry, named in the messages that tell the user what to run next.
    db : Path
        The campaign's results DB, named in the ``done`` message.
    cancelled : bool
        ``benchrun cancel`` asked for this child to stop.
    stopping : bool
        ``benchrun daemon stop`` (or SIGTERM to the daemon) is under way.
    said : str or None
        The child's last ``benchrun: ...`` line, if its log has one.

    Returns
    -------
    Outcome
        ``cancelled``, ``done``, ``paused`` (exit 75, disk full), ``interrupted`` (a
        signal; auto-resumed when the daemon was stopping) or ``failed``.
    """
    if cancelled:
        return Outcome("cancelled", "cancelled by `benchrun cancel`")
    if code == 0:
        return Outcome("done", f"done; results in {db}")
    if code == child_process.EXIT_STORE_FULL:
        return Outcome(
            "paused",
            f"paused: {said or 'the disk is full'}; after freeing space run "
            f"`benchrun resume {entry_id}`",
        )
    if code >= 128 or code < 0:
        name = signal_name(code - 128 if code >= 128 else -code)
        if stopping:
            return Outcome(
                "interrupted",
                f"stopped by `benchrun daemon stop` ({name}); continues when the daemon starts",
                auto_resume=True,
            )
        return Outcome(
            "interrupted", f"interrupted by {name}; continue it with `benchrun resume {entry_id}`"
        )
    return Outcome("failed", said or f"benchrun run exited with code {code}")


def unfinished(entry: Entry) -> bool:
    """True when the entry's campaign exists in its results DB and did not end (``running``
    or ``interrupted``): its child stopped on an error (e.g. a Slurm campaign whose jobs
    could not run) and ``--resume`` can continue it."""
    found = child_process.campaign_after(Path(entry.db_path), entry.base_campaign_id or 0)
    return found is not None and found[1] in ("running", "interrupted")


class Supervisor:
    """Runs the queue's campaigns, one ``benchrun run`` child at a time.

    Parameters
    ----------
    queue : QueueDB
        The daemon's queue; the supervisor is its only writer of entry states.
    selector : selectors.BaseSelector
        The daemon's event loop; a running child's pidfd is registered with data
        ``"child"`` so that its exit wakes the loop.
    quiet_load : float or None
        Daemon-wide quiet-machine guard: the 1-minute load average must be below it
        before a campaign starts (None: off).
    quiet_max_wait : float
        Seconds to wait for the quiet machine before starting anyway.
    stop_timeout : float
        Seconds ``daemon stop`` lets the child finish before it is killed.
    """

    def __init__(
        self,
        queue: QueueDB,
        selector: selectors.BaseSelector,
        *,
        quiet_load: float | None,
        quiet_max_wait: float,
        stop_timeout: float,
    ) -> None:
        self.queue = queue
        self.sel = selector
        self.quiet_load = quiet_load
        self.quiet_max_wait = quiet_max_wait
        self.stop_timeout = stop_timeout
        self.child: subprocess.Popen[bytes] | None = None
        self.child_entry: int | None = None
        self.child_pidfd: int | None = None
        self.cancel_requested: int | None = None
        self.stop_deadline: float | None = None
        self.quiet_since: float | None = None

    @property
    def running(self) -> int | None:
        """The queue id of the campaign whose child runs now, if any."""
        return self.child_entry

    @property
    def stopping(self) -> bool:
        """True once :meth:`begin_stop` was called."""
        return self.stop_deadline is not None

    # -- recovery --------------------------------------------------------------------------

    def recover(self) -> None:
        """Requeue entries left ``running`` by a dead daemon, or interrupted by ``daemon stop``,
        and kill the leftover workloads of a dead child."""
        crashed: set[int] = set()
        for e in self.queue.entries(("running",)):
            crashed.add(e.id)
            why = (
                f"the daemon (pid {e.daemon_pid}) died while campaign {e.id} was running "
                f"(child pid {e.pid}); committed rounds are kept and the round in flight "
                "is redone"
            )
            self.queue.update(e.id, state="queued", resume=True, message=why)
            self.queue.log(e.id, "crash-detected", why)
            append_line(Path(e.log_path), f"[benchrun daemon] {why}")
            log(why)
        for e in self.queue.entries(("interrupted",)):
            if e.auto_resume:
                why = f"campaign {e.id} was stopped by `benchrun daemon stop`; continuing it"
                self.queue.update(e.id, state="queued", resume=True, auto_resume=False, message=why)
                self.queue.log(e.id, "requeued", why)
        killed = child_process.kill_leftovers(crashed, self.queue.path)
        if killed:
            log(f"killed leftover workload processes {killed}")
        for e in self.queue.entries(("queued",)):
            if e.id in crashed:
                self._cancel_slurm_jobs(e)

    def _cancel_slurm_jobs(self, entry: Entry) -> None:
        """Cancel the Slurm jobs a dead child of ``entry`` left queued or running: no one
        waits for their agents (docs/slurm.md, "The daemon and --resume")."""
        jobs = child_process.cancel_slurm_jobs(entry.config_text, Path(entry.db_path).parent)
        if jobs:
            msg = (
                f"cancelled slurm job(s) {', '.join(jobs)} left by the dead child of "
                f"campaign {entry.id}"
            )
            self.queue.log(entry.id, "slurm-cancel", msg)
            append_line(Path(entry.log_path), f"[benchrun daemon] {msg}")
            log(msg)

    # -- stopping --------------------------------------------------------------------------

    def begin_stop(self) -> None:
        """Start stopping: SIGTERM to the child, which has ``stop_timeout`` seconds."""
        self.stop_deadline = time.monotonic() + self.stop_timeout
        if self.child is not None and self.child.poll() is None:
            log(f"stopping: SIGTERM to campaign {self.child_entry} (pid {self.child.pid})")
            kill(self.child.pid, signal.SIGTERM)
        else:
            log("stopping")

    def stopped(self, now: float) -> bool:
        """While stopping: True once no child is left; SIGKILL a child past its deadline.

        Parameters
        ----------
        now : float
            ``time.monotonic()`` seconds.
        """
        if self.stop_deadline is None:
            return False
        if self.child is None:
            return True
        if now >= self.stop_deadline and self.child.poll() is None:
            log(f"child {self.child.pid} did not stop in {self.stop_timeout:g} s: SIGKILL")
            kill(self.child.pid, signal.SIGKILL)
            self.stop_deadline = now + 3600
        return False

    # -- cancelling ------------------------------------------------------------------------

    def cancel(self, entry: Entry) -> str:
        """Cancel ``entry``: SIGTERM to its child if it runs, else mark it cancelled.

        Returns
        -------
        str
            ``"cancelling"`` (the child was signalled; its end is reaped later) or
            ``"cancelled"``.
        """
        # the queue is written first: when that fails (a full disk), nothing was done
        if entry.id == self.child_entry and self.child is not None:
            self.queue.log(entry.id, "cancel", "cancel requested: SIGTERM to the campaign")
            self.cancel_requested = entry.id
            kill(self.child.pid, signal.SIGTERM)
            return "cancelling"
        msg = f"cancelled by `benchrun cancel` while {entry.state}"
        with self.queue.transaction():
            self.queue.update(entry.id, state="cancelled", message=msg, finished_at=time.time())
            self.queue.log(entry.id, "cancelled", msg)
        return "cancelled"

    # -- running campaigns -----------------------------------------------------------------

    def maybe_start(self) -> None:
        """Start the next runnable entry, once the machine is quiet enough (or waited enough)."""
        entry = self.queue.next_runnable(time.time())
        if entry is None:
            self.quiet_since = None
            return
        if self.quiet_load is not None:
            load = os.getloadavg()[0]
            now = time.monotonic()
            if self.quiet_since is None:
                self.quiet_since = now
            waited = now - self.quiet_since
            if load >= self.quiet_load and waited < self.quiet_max_wait:
                return
            self.queue.log(
                entry.id,
                "quiet",
                f"waited {waited:.1f} s for the 1-minute load average ({load:.2f}) to drop "
                f"below {self.quiet_load:g}"
                + ("" if load < self.quiet_load else " (gave up: quiet_max_wait reached)"),
            )
            self.quiet_since = None
        self._start(entry)

    def _start(self, entry: Entry) -> None:
        db = Path(entry.db_path)
        base = entry.base_campaign_id
        resume = False
        if entry.launches == 0 or base is None:
            base = child_process.max_campaign_id(db)
            self.queue.update(entry.id, base_campaign_id=base)
        else:
            found = child_process.campaign_after(db, base)
            if found is not None:
                cid, status = found
                self.queue.update(entry.id, campaign_id=cid)
                if status in ("running", "interrupted"):
                    resume = True
                else:
                    # the child ended and committed before the daemon could see it
                    state = "done" if status == "done" else "failed"
                    msg = f"campaign {cid} in {db} is {status}"
                    self.queue.update(entry.id, state=state, finished_at=time.time(), message=msg)
                    self.queue.log(entry.id, state, msg)
                    return
        log_path = Path(entry.log_path)
        child_process.wait_gone(entry.pid, 5.0)
        child_process.wait_campaign_lock(db.parent, 10.0)
        if resume:
            why = entry.message or "resumed"
            self._campaign_event(entry, db, "daemon-resume", f"daemon pid {os.getpid()}: {why}")
            self.queue.log(entry.id, "resume", why)
        # the text submitted runs, whatever the file says now (or if it is gone)
        submitted: str | None = str(Path(entry.log_path).with_suffix(".yaml"))
        try:
            atomic_write_text(Path(str(submitted)), entry.config_text)
        except OSError as exc:  # e.g. a full disk: the child will report it
            log(f"campaign {entry.id}: cannot keep the submitted text ({exc}); runs the file")
            submitted = None
        argv = child_process.child_argv(
            entry.experiment, entry.output, resume, entry.overrides, submitted
        )
        extra: dict[str, str] = {}
        if self.quiet_load is not None:
            extra["BENCHRUN_QUIET_LOAD"] = f"{self.quiet_load:g}"
            extra["BENCHRUN_QUIET_MAX_WAIT"] = f"{self.quiet_max_wait:g}"
        append_line(
            log_path,
            f"[benchrun daemon] {time.strftime('%Y-%m-%d %H:%M:%S')} launch "
            f"{entry.launches + 1}: {' '.join(argv[2:])}",
        )
        try:
            child = child_process.launch(
                argv,
                cwd=entry.cwd,
                log_path=log_path,
                entry_id=entry.id,
                extra_env=extra,
                queue_path=self.queue.path,
            )
        except OSError as exc:
            msg = f"cannot start benchrun run: {exc.strerror or exc}"
            self.queue.update(entry.id, state="failed", message=msg, finished_at=time.time())
            self.queue.log(entry.id, "failed", msg)
            return
        self.child, self.child_entry = child, entry.id
        try:
            self.child_pidfd = os.pidfd_open(child.pid)
            self.sel.register(self.child_pidfd, selectors.EVENT_READ, "child")
        except (OSError, AttributeError):
            self.child_pidfd = None  # polled every second instead
        self.queue.update(
            entry.id,
            state="running",
            pid=child.pid,
            daemon_pid=os.getpid(),
            started_at=entry.started_at or time.time(),
            launches=entry.launches + 1,
            resume=False,
            message="resumed" if resume else "running",
        )
        self.queue.log(entry.id, "launch", f"pid {child.pid}: {' '.join(argv[2:])}")
        log(f"campaign {entry.id}: started pid {child.pid}")

    def _campaign_event(self, entry: Entry, db: Path, kind: str, message: str) -> None:
        """Record ``message`` in the campaign's own event log (best effort)."""
        from benchrun.runner.store.database import Store  # the store only when resuming

        found = child_process.campaign_after(db, entry.base_campaign_id or 0)
        if found is None:
            return
        try:
            with Store.open(db) as store:
                store.add_event(found[0], kind, message)
        except Exception as exc:  # noqa: BLE001 - the child will report a broken store
            log(f"campaign {entry.id}: cannot record {kind} in {db}: {exc}")

    def reap(self) -> None:
        """If the child has exited: record its end in the queue and the campaign log."""
        if self.child is None:
            return
        code = self.child.poll()
        if code is None:
            return
        assert self.child_entry is not None
        entry_id = self.child_entry
        if self.child_pidfd is not None:
            self.sel.unregister(self.child_pidfd)
            os.close(self.child_pidfd)
        self.child = self.child_entry = self.child_pidfd = None
        entry = self.queue.get(entry_id)
        assert entry is not None
        if code < 0 or code >= 128:  # killed: it may not have closed its Slurm jobs
            self._cancel_slurm_jobs(entry)
        db = Path(entry.db_path)
        found = child_process.campaign_after(db, entry.base_campaign_id or 0)
        cancelled = self.cancel_requested == entry_id
        if cancelled:
            self.cancel_requested = None
        end = outcome(
            code,
            entry_id=entry_id,
            db=db,
            cancelled=cancelled,
            stopping=self.stopping,
            said=child_process.last_error_line(Path(entry.log_path)),
        )
        message = end.message
        if end.state == "failed" and found is not None and found[1] in ("running", "interrupted"):
            message += f"; its campaign did not end: `benchrun resume {entry_id}` continues it"
        self.queue.update(
            entry_id,
            state=end.state,
            exit_code=code,
            message=message,
            finished_at=time.time() if end.state in FINAL_STATES else None,
            campaign_id=found[0] if found else entry.campaign_id,
            auto_resume=end.auto_resume,
        )
        self.queue.log(entry_id, end.state, f"exit code {code}: {message}")
        append_line(
            Path(entry.log_path),
            f"[benchrun daemon] campaign {entry_id} {end.state}: {message}",
        )
        log(f"campaign {entry_id}: {end.state} (exit code {code})")
