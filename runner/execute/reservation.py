"""The machine-wide reservation of the CPUs a run pins (docs/reservation.md).

One lock file per CPU (``cpu<N>.lock``) in one directory that every benchrun run of the
machine uses (:func:`lock_directory`), locked with ``flock(LOCK_EX)`` for as long as the run
holds the CPU. The kernel drops a ``flock`` when the last descriptor of its open file is
closed, so a runner killed with SIGKILL frees its CPUs at once and nobody has to clean up;
the descriptors are close-on-exec, so a round's child never holds them. Beside the locks
each run keeps one record (``run-<pid>-<random>.json``: pid, user, campaign, CPUs, start
time), itself held with ``flock(LOCK_EX)``: a record whose lock can be taken belongs to a
dead run and is ignored. The records only serve to name the other run in messages.

The directory may be writable by other users (``/run/benchrun/cpus`` is sticky and
world-writable so that the runs of every user meet there), so everything in it is hostile
input: each path component is opened with ``O_NOFOLLOW`` and checked (owner root or us;
writable by others only with the sticky bit), files are opened relative to the verified
directory with ``O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK``, must be regular files with one
link, lock files are never written, records are created with ``O_EXCL`` under a random name
and read at most :data:`RECORD_LIMIT` bytes, and a record's pid is only printed.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import pwd
import secrets
import stat
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from benchrun.runner.config.cpulist import format_cpu_list
from benchrun.runner.errors import UserError
from benchrun.runner.execute.pinning import (
    SYSFS_CPU,
    PinPlan,
    allowed_cpus,
    physical_cores,
    plan_pinning,
)
from benchrun.runner.jsonread import FieldError, JsonFields

__all__ = [
    "ENV_LOCK_DIR",
    "EXIT_CPUS_BUSY",
    "CpusBusy",
    "Holder",
    "Reservation",
    "active_runs",
    "lock_directory",
    "register_unpinned",
    "reserve",
    "try_reserve",
]

#: environment variable naming the lock directory (tests; a site that wants another place)
ENV_LOCK_DIR = "BENCHRUN_CPU_LOCK_DIR"
#: the machine-wide directory; root makes it sticky and world-writable (like /tmp)
SYSTEM_LOCK_DIR = Path("/run/benchrun/cpus")
#: exit status of ``benchrun run`` when the CPUs it needs are reserved by another run
#: (refused at once, or still reserved when ``--wait-for-cpus`` ran out)
EXIT_CPUS_BUSY = 4
#: most bytes read of another run's record
RECORD_LIMIT = 4096
#: most records read (a directory others can write may hold any number of files)
MAX_RECORDS = 256
#: a record that is not locked is a dead run's; it is removed only when older than this
#: (seconds), so that a record being created (made, then locked) is never taken for one
STALE_AFTER_S = 60.0
#: seconds between two attempts while waiting for CPUs, and between two progress lines
POLL_S = 0.5
PROGRESS_EVERY_S = 10.0

#: the lock a run holds while it chooses its CPUs, and the longest wait for it (s)
CHOOSE_LOCK = "choose.lock"
CHOOSE_TIMEOUT_S = 10.0

_OPEN_FLAGS = os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK


@dataclass(frozen=True)
class Holder:
    """Another run, as its record says (untrusted text: printed, never acted on).

    ``pid``: its process id; ``user``: its user name; ``campaign``: its campaign directory;
    ``cpus``: the CPUs it reserved (empty: a ``pin: none`` run, not pinned);
    ``started``: Unix time it took them.
    """

    pid: int | None
    user: str
    campaign: str
    cpus: tuple[int, ...]
    started: float | None

    def describe(self) -> str:
        """``pid 123 (user root, campaign results/x, CPUs 0-1, since 20:14:03)``."""
        where = f"CPUs {format_cpu_list(self.cpus)}" if self.cpus else "not pinned"
        since = (
            f", since {time.strftime('%H:%M:%S', time.localtime(self.started))}"
            if self.started is not None
            else ""
        )
        pid = f"pid {self.pid}" if self.pid is not None else "an unknown pid"
        return f"{pid} (user {self.user}, campaign {self.campaign}, {where}{since})"


@dataclass(frozen=True)
class CpusBusy:
    """Why a reservation cannot be taken now: the CPUs it needs and who holds them.

    ``needed``: what the run needs (``"CPU 1"``, ``"2 free cores (workload and runner)"``);
    ``busy``: the CPUs of the run's choice held by other runs; ``holders``: the live runs
    holding any of them (by their records; empty when a holder has not written one).
    """

    needed: str
    busy: tuple[int, ...]
    holders: tuple[Holder, ...]

    def line(self) -> str:
        """One line naming the other run(s): what is needed, which CPUs are taken, by whom."""
        cpus = f"CPU{'s' if len(self.busy) > 1 else ''} {format_cpu_list(self.busy)}"
        who = (
            "; ".join(h.describe() for h in self.holders)
            if self.holders
            else "another process (no record of it)"
        )
        verb = "are" if len(self.busy) > 1 else "is"
        return f"needs {self.needed}, but {cpus} {verb} reserved by {who}"


@dataclass
class Reservation:
    """CPUs held by this run until :meth:`close` (or its death): their lock descriptors, the
    record, and the pin plan they allow. ``cpus``: every CPU held (workload and runner)."""

    plan: PinPlan
    cpus: tuple[int, ...]
    directory: Path
    _fds: list[int] = field(default_factory=list, repr=False)
    _record: tuple[int, str] | None = field(default=None, repr=False)  # (fd, name)
    _dir_fd: int | None = field(default=None, repr=False)

    def close(self) -> None:
        """Release the CPUs and remove the record (idempotent)."""
        if self._record is not None and self._dir_fd is not None:
            fd, name = self._record
            try:
                os.unlink(name, dir_fd=self._dir_fd)
            except OSError:
                pass
            os.close(fd)
        self._record = None
        for fd in self._fds:
            os.close(fd)
        self._fds = []
        if self._dir_fd is not None:
            os.close(self._dir_fd)
            self._dir_fd = None

    def __enter__(self) -> Reservation:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# -- the directory -----------------------------------------------------------------------


def lock_directory(environ: Mapping[str, str] | None = None, euid: int | None = None) -> Path:
    """Where the CPU locks live: ``$BENCHRUN_CPU_LOCK_DIR``; else ``/run/benchrun/cpus`` for
    root (made sticky and world-writable) and for any user once it exists; else, for a user,
    ``$XDG_RUNTIME_DIR/benchrun/cpus`` or ``/tmp/benchrun-<uid>/cpus`` (seen by that user's
    runs only: docs/reservation.md)."""
    env = os.environ if environ is None else environ
    uid = os.geteuid() if euid is None else euid
    given = env.get(ENV_LOCK_DIR)
    if given:
        return Path(given)
    if uid == 0 or SYSTEM_LOCK_DIR.is_dir():
        return SYSTEM_LOCK_DIR
    runtime = env.get("XDG_RUNTIME_DIR")
    if runtime:
        return Path(runtime) / "benchrun" / "cpus"
    return Path(f"/tmp/benchrun-{uid}/cpus")


def _check_dir(fd: int, shown: str, euid: int) -> None:
    st = os.fstat(fd)
    if st.st_uid not in (0, euid):
        raise UserError(
            f"CPU reservations: {shown} belongs to uid {st.st_uid}, not to root or you; "
            f"it cannot be trusted (remove it, or set {ENV_LOCK_DIR} to another directory)"
        )
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not st.st_mode & stat.S_ISVTX:
        raise UserError(
            f"CPU reservations: {shown} is writable by others without the sticky bit; "
            f"it cannot be trusted (chmod o-w,g-w or +t it, or set {ENV_LOCK_DIR})"
        )


def open_lock_directory(path: Path, *, create: bool = True) -> int:
    """A descriptor of ``path`` opened component by component without following a symlink,
    each component checked (owner root or us; writable by others only if sticky), made when
    missing (``create``): with mode 1777 for :data:`SYSTEM_LOCK_DIR` (its parent 0755),
    else 0700. :class:`UserError` when a component is unsafe or cannot be made."""
    path = Path(os.path.abspath(path))
    euid = os.geteuid()
    shared = path == SYSTEM_LOCK_DIR
    fd = os.open("/", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    shown = Path("/")
    try:
        for i, part in enumerate(path.parts[1:]):
            shown = shown / part
            last = i == len(path.parts) - 2
            try:
                nfd = os.open(part, os.O_RDONLY | os.O_DIRECTORY | _OPEN_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                mode = 0o1777 if (shared and last) else (0o755 if shared else 0o700)
                try:
                    os.mkdir(part, 0o700, dir_fd=fd)
                except FileExistsError:
                    pass
                except OSError as exc:
                    raise UserError(
                        f"CPU reservations: cannot create {shown}: {exc.strerror}; set "
                        f"{ENV_LOCK_DIR} to a directory you may write"
                    ) from None
                nfd = os.open(part, os.O_RDONLY | os.O_DIRECTORY | _OPEN_FLAGS, dir_fd=fd)
                if os.fstat(nfd).st_uid == euid:
                    os.fchmod(nfd, mode)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise UserError(
                        f"CPU reservations: {shown} is not a directory (a symlink or a "
                        f"file); remove it, or set {ENV_LOCK_DIR}"
                    ) from None
                raise UserError(
                    f"CPU reservations: cannot open {shown}: {exc.strerror}; set {ENV_LOCK_DIR}"
                ) from None
            os.close(fd)
            fd = nfd
            _check_dir(fd, str(shown), euid)
        return fd
    except BaseException:
        os.close(fd)
        raise


def _open_regular(dir_fd: int, name: str, flags: int, mode: int = 0o444) -> int:
    """``name`` in the verified directory, never through a symlink, as a regular file with
    one link (a planted hard link to another file is refused)."""
    fd = os.open(name, flags | _OPEN_FLAGS, mode, dir_fd=dir_fd)
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
        os.close(fd)
        raise OSError(errno.EPERM, "not a regular file with one link")
    return fd


def _lock_fd(dir_fd: int, directory: Path, name: str) -> int:
    """The open lock file ``name`` (``cpu<N>.lock``, ``choose.lock``; made if missing;
    never written)."""
    try:
        try:
            return _open_regular(dir_fd, name, os.O_RDONLY)
        except FileNotFoundError:
            try:
                return _open_regular(dir_fd, name, os.O_RDONLY | os.O_CREAT | os.O_EXCL)
            except FileExistsError:
                return _open_regular(dir_fd, name, os.O_RDONLY)
    except OSError as exc:
        why = "a symlink" if exc.errno == errno.ELOOP else exc.strerror
        raise UserError(
            f"CPU reservations: {directory / name} cannot be used ({why}); remove it "
            f"(its owner or root), or set {ENV_LOCK_DIR}"
        ) from None


def _try_lock(fd: int, kind: int = fcntl.LOCK_EX) -> bool:
    try:
        fcntl.flock(fd, kind | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


# -- the records -------------------------------------------------------------------------


def _user_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def _clean_text(value: object, limit: int = 200) -> str:
    text = str(value)
    return "".join(c if c.isprintable() else "?" for c in text)[:limit]


def _holder_from(doc: object, owner: int) -> Holder | None:
    """The holder a run record's JSON describes (another user may have written it: a
    field of another type reads as unknown; no object: None). ``owner``: the file's
    owner, which names the user (not what the record says)."""
    if not isinstance(doc, dict):
        return None
    fields = JsonFields(doc, "run record")
    try:
        cpus = fields.raw_list("cpus") or []
    except FieldError:  # not a list
        cpus = []
    campaign = fields.loose("campaign", str)
    return Holder(
        pid=fields.loose("pid", int),
        user=_user_name(owner),
        campaign=_clean_text("?" if campaign is None else campaign),
        cpus=tuple(sorted({c for c in cpus if isinstance(c, int) and 0 <= c < 1 << 16})),
        started=fields.loose("started", float),
    )


def _live_records(dir_fd: int, clean_stale: bool = True) -> list[Holder]:
    """The records of live runs (their lock is held); stale ones (unlocked, older than
    :data:`STALE_AFTER_S`) are removed where we may."""
    holders: list[Holder] = []
    euid = os.geteuid()
    names = [n for n in os.listdir(dir_fd) if n.startswith("run-") and n.endswith(".json")]
    for name in sorted(names)[:MAX_RECORDS]:
        try:
            fd = _open_regular(dir_fd, name, os.O_RDONLY)
        except OSError:
            continue
        try:
            st = os.fstat(fd)
            if _try_lock(fd, fcntl.LOCK_SH):  # nobody holds it: a dead run's
                if clean_stale and time.time() - st.st_mtime > STALE_AFTER_S:
                    if st.st_uid == euid or euid == 0:  # who may unlink it
                        try:
                            os.unlink(name, dir_fd=dir_fd)
                        except OSError:
                            pass
                continue
            raw = os.read(fd, RECORD_LIMIT)
        finally:
            os.close(fd)
        try:
            doc = json.loads(raw.decode("utf-8", errors="replace"))
        except ValueError:
            doc = {}
        holder = _holder_from(doc, st.st_uid)
        if holder is not None:
            holders.append(holder)
    return holders


def _write_record(dir_fd: int, campaign: str, cpus: Sequence[int]) -> tuple[int, str]:
    """Create this run's record under a random name (``O_EXCL``: never an existing file or
    symlink), lock it, write it; returns (descriptor, name)."""
    name = f"run-{os.getpid()}-{secrets.token_hex(6)}.json"
    fd = _open_regular(dir_fd, name, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX)
    doc = {
        "pid": os.getpid(),
        "campaign": campaign[:1024],  # the record stays within RECORD_LIMIT
        "cpus": list(cpus),
        "started": time.time(),
    }
    os.write(fd, json.dumps(doc).encode())
    return fd, name


def active_runs(directory: Path | None = None) -> list[Holder]:
    """The benchrun runs of this machine that hold a reservation or announced themselves
    (``pin: none``), from their records; empty when the directory does not exist."""
    path = lock_directory() if directory is None else directory
    try:
        dir_fd = open_lock_directory(path, create=False)
    except (FileNotFoundError, UserError):
        return []
    try:
        own = os.getpid()
        return [h for h in _live_records(dir_fd) if h.pid != own]
    finally:
        os.close(dir_fd)


# -- taking CPUs -------------------------------------------------------------------------


def _plan_within(
    pin: str | tuple[int, ...],
    free: set[int],
    usable: tuple[int, ...],
    duet: bool,
    sysfs: Path,
) -> tuple[PinPlan, tuple[int, ...]] | str:
    """The pin plan inside the ``free`` CPUs and the CPUs it reserves, or what it needs
    (a phrase) when ``free`` is too small. Whole physical cores only: a core with a CPU
    held elsewhere is not free."""
    cores, known = physical_cores(usable, sysfs)
    note = "" if known else " (CPU topology unreadable; each CPU treated as a core)"
    free_cores = [core for core in cores if set(core) <= free]
    if isinstance(pin, str):  # auto
        if len(cores) < 2:  # one core (or CPU): nothing pinned, the run needs all of it
            if len(free_cores) == len(cores):
                plan = plan_pinning("auto", allowed=usable, sysfs=sysfs)
                return plan, usable
            return f"CPU {format_cpu_list(usable)} (the only core)"
        if len(free_cores) < 2:
            return "2 free cores (one for the workload, one for the runner)"
        if duet:  # every free core: the duet's two CPUs and the runner (docs/duet.md)
            cpus = tuple(sorted(c for core in free_cores for c in core))
            return plan_pinning("auto", allowed=cpus, sysfs=sysfs), cpus
        workload, runner = free_cores[-1], free_cores[0]
        plan = PinPlan(
            workload,
            runner,
            f"pin: auto; workload on {_cpus(workload)} (the last free core), runner on "
            f"{_cpus(runner)}{note}",
        )
        return plan, tuple(sorted(workload + runner))
    wanted = {c for core in cores if set(core) & set(pin) for c in core}
    if not wanted <= free:
        return f"{_cpus(sorted(pin))} (pin: {list(pin)})"
    others = [core for core in cores if not set(core) & wanted]
    if not others:  # the pin covers every core: the runner is not pinned
        plan = plan_pinning(pin, allowed=usable, sysfs=sysfs)
        return plan, tuple(sorted(wanted))
    runner_cores = [core for core in others if set(core) <= free]
    if not runner_cores:
        return f"{_cpus(sorted(pin))} and a free core for the runner"
    if duet:
        runner = tuple(sorted(c for core in runner_cores for c in core))
    else:
        runner = runner_cores[0]
    plan = PinPlan(
        tuple(sorted(pin)),
        runner,
        f"pin: workload on {_cpus(sorted(pin))}, runner on {_cpus(runner)}{note}",
    )
    return plan, tuple(sorted(wanted | set(runner)))


def _cpus(cpus: Iterable[int]) -> str:
    cpus = tuple(cpus)
    return f"CPU{'s' if len(cpus) > 1 else ''} {format_cpu_list(cpus)}"


def try_reserve(
    pin: str | tuple[int, ...],
    campaign: str,
    *,
    duet: bool = False,
    directory: Path | None = None,
    allowed: Iterable[int] | None = None,
    sysfs: Path = SYSFS_CPU,
) -> Reservation | CpusBusy:
    """Take the CPUs ``pin`` (``"auto"`` or a CPU list) needs, or say who holds them.

    ``auto``: the last free physical core for the workload and the first free one for the
    runner (every free core in ``duet`` mode); an explicit list: its cores and one free core
    for the runner (none when the list covers every core). Each CPU of the allowed set is
    tried without blocking; those not needed are released at once.
    """
    path = lock_directory() if directory is None else directory
    usable = tuple(sorted(set(allowed))) if allowed is not None else allowed_cpus()
    dir_fd = open_lock_directory(path)
    fds: dict[int, int] = {}
    choosing: int | None = None
    try:
        # one run chooses at a time: two runs started at the same moment must not each
        # take one of two free CPUs and both find too few (held for microseconds)
        choosing = _lock_fd(dir_fd, path, CHOOSE_LOCK)
        _lock_within(choosing, path / CHOOSE_LOCK)
        for cpu in usable:
            fds[cpu] = _lock_fd(dir_fd, path, f"cpu{cpu}.lock")
        got = {cpu for cpu, fd in fds.items() if _try_lock(fd)}
        chosen = _plan_within(pin, got, usable, duet, sysfs)
        if isinstance(chosen, str):
            busy = tuple(sorted(set(usable) - got))
            holders = tuple(h for h in _live_records(dir_fd) if set(h.cpus) & set(busy))
            for fd in fds.values():
                os.close(fd)
            os.close(choosing)
            os.close(dir_fd)
            return CpusBusy(chosen, busy, holders)
        plan, cpus = chosen
        keep = [fds.pop(cpu) for cpu in cpus]
        for fd in fds.values():
            os.close(fd)  # closing drops the lock of a CPU taken but not needed
        fds = {}
        record = _write_record(dir_fd, campaign, cpus)
        os.close(choosing)
        return Reservation(plan, cpus, path, keep, record, dir_fd)
    except BaseException:
        for fd in fds.values():
            os.close(fd)
        if choosing is not None:
            os.close(choosing)
        os.close(dir_fd)
        raise


def _lock_within(fd: int, shown: Path, timeout_s: float = CHOOSE_TIMEOUT_S) -> None:
    """``flock(LOCK_EX)`` on ``fd``, polling, at most ``timeout_s`` seconds: the choosing
    lock is held for microseconds by a run, so a longer hold is someone else's doing."""
    deadline = time.monotonic() + timeout_s
    while not _try_lock(fd):
        if time.monotonic() > deadline:
            raise UserError(
                f"CPU reservations: {shown} has been locked for more than {timeout_s:.0f} s "
                "(by a process that is not choosing CPUs); find it with `fuser` and end it",
                exit_code=EXIT_CPUS_BUSY,
            )
        time.sleep(0.005)


def reserve(
    pin: str | tuple[int, ...],
    campaign: str,
    *,
    wait_s: float | None,
    on_wait: Callable[[str], None],
    duet: bool = False,
    directory: Path | None = None,
    allowed: Iterable[int] | None = None,
    sysfs: Path = SYSFS_CPU,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> Reservation:
    """:func:`try_reserve`, waiting up to ``wait_s`` seconds (None or 0: not at all; inf:
    without limit) while other runs hold the CPUs. ``on_wait(line)`` gets a progress line
    when the wait starts and every :data:`PROGRESS_EVERY_S` seconds. Raises
    :class:`UserError` with :data:`EXIT_CPUS_BUSY` and one line naming the other run when
    the CPUs are still taken."""
    start = clock()
    last_said: float | None = None
    limit = 0.0 if wait_s is None else wait_s
    while True:
        got = try_reserve(
            pin, campaign, duet=duet, directory=directory, allowed=allowed, sysfs=sysfs
        )
        if isinstance(got, Reservation):
            if last_said is not None:
                on_wait(f"CPUs free after {clock() - start:.1f} s of waiting")
            return got
        waited = clock() - start
        if waited >= limit:
            if limit > 0:
                raise UserError(
                    f"CPUs still reserved after waiting {waited:.0f} s: this run {got.line()}",
                    exit_code=EXIT_CPUS_BUSY,
                )
            raise UserError(
                f"this run {got.line()}; wait for it with --wait-for-cpus [DURATION], or "
                "choose other CPUs (pin:)",
                exit_code=EXIT_CPUS_BUSY,
            )
        if last_said is None or clock() - last_said >= PROGRESS_EVERY_S:
            left = "" if limit == float("inf") else f" (at most {limit - waited:.0f} s more)"
            on_wait(f"waiting for CPUs{left}: this run {got.line()}")
            last_said = clock()
        sleep(min(POLL_S, max(0.0, limit - waited)))


def register_unpinned(campaign: str, directory: Path | None = None) -> Reservation | None:
    """A record without CPUs for a ``pin: none`` run, so that other runs name it as active;
    None when the lock directory cannot be used (the run goes on; nothing is reserved)."""
    path = lock_directory() if directory is None else directory
    try:
        dir_fd = open_lock_directory(path)
    except UserError:
        return None
    try:
        record = _write_record(dir_fd, campaign, ())
    except OSError:
        os.close(dir_fd)
        return None
    return Reservation(PinPlan(None, None, "pin: none"), (), path, [], record, dir_fd)
