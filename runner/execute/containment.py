"""Containment of a round's processes: every descendant is gone before the next round.

Two kinds, chosen once per executor (``benchrun system`` says which this machine gets):

- ``cgroup``: where a cgroup v2 hierarchy is mounted and writable (root, or a delegated
  subtree), the runner makes ``benchrun-<pid>-<start>/rounds`` below its own cgroup. Before
  the first spawn the runner moves itself into it, so its children start there (spawned
  with ``vfork``, no code runs between fork and exec); the runner moves back once the
  round has been timed, and ``cgroup.kill`` ends whatever is left, including children that
  called ``setsid`` and left the process group. A campaign's executor
  (``LocalExecutor(stay_in_cgroup=True)``) stays inside while rounds follow each other:
  once a round has been timed, one read of the cgroup's process list (and of its count of
  cgroups below) says whether anything of the round is left, and only then does the runner
  move out to kill it. Moving a process between cgroups makes the next fork wait (the
  kernel's cgroup_threadgroup_rwsem), which showed up in the measured wall time of short
  rounds (docs/loop.md "Containment").
- ``process group``: elsewhere; the round's process group is killed at the end of the
  round (a ``setsid`` child escapes it).

What is launched is also written to an *in-flight record* (``inflight.json`` in the
campaign directory) before the spawn and removed after the round, so that a run killed
with SIGKILL leaves enough behind for the next run (``--resume``, the daemon) to end the old
round's processes. docs/machine.md "Containment". The record before the spawn is the same
for every round of a runner, so it is written once and then moved aside after a round
(``inflight.json.next``) and back before the next one: two renames a round instead of a
file write.
"""

from __future__ import annotations

import functools
import json
import os
import re
import signal
import time
from pathlib import Path
from typing import Literal

from benchrun.runner.errors import UserError
from benchrun.runner.execute.contention import SOURCE_PRESSURE, SOURCE_SCHEDSTAT, PressureReader
from benchrun.runner.execute.inflight_record import InflightGroup, InflightRecord
from benchrun.runner.files import atomic_write_text
from benchrun.runner.safefs import UnsafePath, read_trusted

ContainmentKind = Literal["cgroup", "process group"]

#: name of the in-flight record in the campaign directory
INFLIGHT_FILE = "inflight.json"
#: longest wait for killed processes to disappear, seconds
KILL_WAIT_S = 5.0
#: prefix of the cgroup a runner makes below its own
CGROUP_PREFIX = "benchrun-"


def _cgroup2_mount() -> Path | None:
    try:
        with open("/proc/self/mounts", encoding="utf-8") as mounts:
            for line in mounts:
                parts = line.split()
                if len(parts) > 2 and parts[2] == "cgroup2":
                    return Path(parts[1])
    except OSError:
        return None
    return None


def _own_cgroup() -> str | None:
    try:
        with open("/proc/self/cgroup", encoding="utf-8") as lines:
            for line in lines:
                if line.startswith("0::"):
                    return line[3:].strip()
    except OSError:
        return None
    return None


def _stat_fields(pid: int) -> list[bytes] | None:
    """The fields of ``/proc/PID/stat`` after the command name (field 3, the state, is
    index 0), or None when there is no such process."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    # the command name (field 2) may hold spaces and parentheses: split after the last ')'
    return stat[stat.rfind(b")") + 2 :].split()


def start_ticks(pid: int) -> int | None:
    """The start time of process ``pid`` in clock ticks since boot (``/proc/PID/stat``
    field 22), or None when there is no such process."""
    fields = _stat_fields(pid)
    return None if fields is None else int(fields[19])


def runner_cgroup_name(pid: int) -> str | None:
    """The name of the cgroup that runner ``pid`` makes: ``benchrun-<pid>-<start ticks>``
    (unique even when the pid is recycled), or None when there is no such process."""
    ticks = start_ticks(pid)
    return None if ticks is None else f"{CGROUP_PREFIX}{pid}-{ticks}"


def _write(path: Path, text: str) -> None:
    with open(path, "w", encoding="ascii") as f:
        f.write(text)


class Containment:
    """The containment of one executor's rounds (see the module docstring).

    ``Containment.create()`` tries a cgroup and falls back to the process group;
    :attr:`kind` says which. Around each spawn the executor calls :meth:`enter` (the
    runner moves into the rounds' cgroup, so its child starts there) and, once the round is
    timed, :meth:`end_round`, which moves the runner back (unless told to stay and nothing
    is left) and kills what the round left.
    """

    def __init__(
        self,
        kind: ContainmentKind,
        cgroup: Path | None = None,
        why: str = "",
        home: Path | None = None,
    ) -> None:
        self.kind: ContainmentKind = kind
        #: the cgroup every round runs in (None for process groups)
        self.cgroup = cgroup
        #: the runner's own cgroup, where it returns after each spawn
        self.home = home
        #: why cgroups are not used (empty when they are)
        self.why = why
        self._inside = False
        self._affinity: set[int] | None = None
        #: open descriptors of the rounds' cgroup.procs and cgroup.stat (read each round)
        self._fds: tuple[int, int] | None = None
        #: the rounds' cgroup's cpu.pressure, kept open (docs/contention.md)
        self._pressure: PressureReader | None = None
        #: the signal of a round's CPU wait, once :meth:`wait_signal` looked
        self._signal: str | None = None

    @classmethod
    def create(cls, use_cgroup: bool = True) -> Containment:
        """A cgroup below this process's own cgroup v2 when one can be made and this
        process can move into it and back; else process groups, with the reason."""
        if not use_cgroup:
            return cls("process group", why="cgroups turned off")
        mount, own = _cgroup2_mount(), _own_cgroup()
        if mount is None or own is None:
            return cls("process group", why="no cgroup v2 hierarchy mounted")
        home = mount / own.lstrip("/")
        sweep_stale_cgroups(home)
        name = runner_cgroup_name(os.getpid()) or f"{CGROUP_PREFIX}{os.getpid()}"
        base = home / name
        rounds = base / "rounds"
        try:
            rounds.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            return cls("process group", why=f"cannot create a cgroup: {exc.strerror or exc}")
        if not (rounds / "cgroup.kill").exists():
            _remove(rounds, base)
            return cls("process group", why="the kernel has no cgroup.kill (Linux < 5.14)")
        made = cls("cgroup", rounds, home=home)
        try:
            made.enter()
        except OSError as exc:
            _remove(rounds, base)
            why = exc.strerror or str(exc)
            return cls("process group", why=f"cannot move a process into a cgroup: {why}")
        try:
            made.leave()
        except OSError as exc:  # in, but not out again: stay there, never kill the cgroup
            made.kind, made.cgroup, made.home = "process group", None, None
            made.why = f"cannot move back out of a cgroup: {exc.strerror or exc}"
        return made

    def describe(self) -> str:
        """One line for ``benchrun system`` and the report's methods."""
        if self.kind == "cgroup":
            return "cgroup (every descendant of a round is killed at its end, setsid included)"
        return f"process group (descendants that call setsid can escape; {self.why})"

    def enter(self) -> None:
        """Move this process into the rounds' cgroup, so that a child spawned now starts
        there (nothing with process groups). Raises ``OSError`` if the move fails."""
        if self.cgroup is None or self._inside:
            return
        self._affinity = os.sched_getaffinity(0)
        _write(self.cgroup / "cgroup.procs", str(os.getpid()))
        self._inside = True

    def leave(self) -> None:
        """Move this process back to its own cgroup and restore the calling thread's CPU
        affinity if the move changed it (a cpuset controller resets it on migration)."""
        if not self._inside or self.home is None:
            return
        _write(self.home / "cgroup.procs", str(os.getpid()))
        self._inside = False
        if self._affinity is not None and os.sched_getaffinity(0) != self._affinity:
            os.sched_setaffinity(0, self._affinity)

    def end_round(self, pgid: int, stay: bool = False) -> bool:
        """Move this process back out of the rounds' cgroup, then kill everything the round
        left (its process group, and with a cgroup everything in it) and wait until it is
        gone. True when something was left.

        ``stay``: remain inside the cgroup when nothing is left (one read of
        ``cgroup.procs`` and ``cgroup.stat`` says so), so the next round needs no move;
        when something is left the runner moves out first all the same, so that
        ``cgroup.kill`` can end the rest."""
        if stay and self._inside and self._only_runner_inside():
            return kill_group(pgid)  # the group's probe; empty unless a member left the cgroup
        try:
            self.leave()
        except OSError:
            pass  # still inside: kill_cgroup spares this process and kills the others
        left = kill_group(pgid)
        if self.cgroup is not None:
            left = kill_cgroup(self.cgroup) or left
        return left

    def _only_runner_inside(self) -> bool:
        """Whether the rounds' cgroup holds this process alone and no cgroup below it."""
        if self.cgroup is None:
            return False
        try:
            if self._fds is None:
                procs = os.open(self.cgroup / "cgroup.procs", os.O_RDONLY | os.O_CLOEXEC)
                try:
                    stat = os.open(self.cgroup / "cgroup.stat", os.O_RDONLY | os.O_CLOEXEC)
                except OSError:
                    os.close(procs)
                    raise
                self._fds = (procs, stat)
            pids = os.pread(self._fds[0], 65536, 0).split()
            if pids != [str(os.getpid()).encode()]:
                return False
            for line in os.pread(self._fds[1], 4096, 0).splitlines():
                if line.startswith(b"nr_descendants "):
                    return int(line.split()[1]) == 0
        except (OSError, ValueError):
            pass
        return False

    def cpu_wait_us(self) -> int | None:
        """The ``some`` total (µs) of the rounds' cgroup's ``cpu.pressure``: the time at
        least one of its tasks was runnable but not running; None without a cgroup or PSI.
        Read before and after a round, the difference is the round's CPU wait."""
        if self.cgroup is None:
            return None
        if self._pressure is None:
            self._pressure = PressureReader(self.cgroup / "cpu.pressure")
        return self._pressure.some_us()

    def wait_signal(self) -> str:
        """Where a round's CPU wait comes from with this containment (docs/contention.md):
        ``"cgroup cpu.pressure"``, ``"schedstat"`` (no cgroup, or one without pressure
        stall information) or ``"none"``; remembered after the first call."""
        if self._signal is None:
            if self.cpu_wait_us() is not None:
                self._signal = SOURCE_PRESSURE
            elif os.path.exists("/proc/self/schedstat"):
                self._signal = SOURCE_SCHEDSTAT
            else:
                self._signal = "none"
        return self._signal

    def close(self) -> None:
        """Remove the cgroup directories (after killing anything still in them)."""
        if self._pressure is not None:
            self._pressure.close()
            self._pressure = None
        if self._fds is not None:
            for fd in self._fds:
                os.close(fd)
            self._fds = None
        if self.cgroup is not None:
            self.leave()
            kill_cgroup(self.cgroup)
            _remove(self.cgroup, self.cgroup.parent)
            self.cgroup = None


def probe_containment() -> Containment:
    """The containment this machine gives (for ``benchrun system``): made, its contention
    signal looked at, then removed."""
    probe = Containment.create()
    probe.wait_signal()
    probe.close()
    return probe


def containment_record(containment: Containment) -> dict[str, str]:
    """The campaign metadata's ``containment`` entry: ``kind``, a one-line ``detail`` and
    ``wait_source``, the signal of each round's CPU wait (docs/contention.md)."""
    return {
        "kind": containment.kind,
        "detail": containment.describe(),
        "wait_source": containment.wait_signal(),
    }


def _remove(*dirs: Path) -> None:
    """Remove empty cgroup directories, with any cgroups below them (a workload that ran
    benchrun itself leaves its runner's cgroup inside the rounds' one)."""
    for d in dirs:
        try:
            for child in d.iterdir():
                if child.is_dir():
                    kill_cgroup(child)
                    _remove(child)
            d.rmdir()
        except OSError:
            pass


def _killpg(pgid: int, signum: int) -> None:
    try:
        os.killpg(pgid, signum)
    except (ProcessLookupError, PermissionError):
        pass


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def group_members(pgid: int) -> list[int]:
    """The live processes (zombies excluded) of process group ``pgid``, from ``/proc``."""
    found = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for name in entries:
        if name.isdigit():
            fields = _stat_fields(int(name))
            if fields is not None and int(fields[2]) == pgid and fields[0] != b"Z":
                found.append(int(name))
    return found


def kill_group(pgid: int) -> bool:
    """SIGKILL process group ``pgid`` and wait (at most :data:`KILL_WAIT_S`) until no live
    member is left (zombies that a parent has yet to reap do not count); True when the
    group had any member."""
    if not _group_alive(pgid):
        return False
    _killpg(pgid, signal.SIGKILL)
    deadline = time.monotonic() + KILL_WAIT_S
    while _group_alive(pgid) and group_members(pgid) and time.monotonic() < deadline:
        time.sleep(0.002)
    return True


def _cgroup_pids(cgroup: Path) -> list[int]:
    try:
        return [int(x) for x in (cgroup / "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return []


def _stale(name: str) -> bool:
    """Whether ``benchrun-<pid>-<start>`` (or the older ``benchrun-<pid>``) names the cgroup
    of a runner that is no longer alive."""
    ident = name.removeprefix(CGROUP_PREFIX).split("-")
    if not all(part.isdigit() for part in ident) or len(ident) not in (1, 2):
        return False
    pid = int(ident[0])
    if pid == os.getpid():
        return False
    if len(ident) == 1:
        return not Path(f"/proc/{pid}").exists()
    return start_ticks(pid) != int(ident[1])


def sweep_stale_cgroups(parent: Path) -> int:
    """End what runs in the cgroups below ``parent`` of runners that are no longer alive (a
    run killed with SIGKILL), and remove them; returns how many."""
    swept = 0
    try:
        entries = list(parent.glob(f"{CGROUP_PREFIX}*"))
    except OSError:
        return 0
    for base in entries:
        if not _stale(base.name):
            continue
        for child in [base / "rounds", base]:
            if child.is_dir():
                kill_cgroup(child)
        _remove(base / "rounds", base)
        swept += 1
    return swept


def _subtree_pids(cgroup: Path) -> list[int]:
    """The processes in ``cgroup`` and in the cgroups below it."""
    pids = _cgroup_pids(cgroup)
    try:
        children = [c for c in cgroup.iterdir() if c.is_dir()]
    except OSError:
        children = []
    for child in children:
        pids += _subtree_pids(child)
    return pids


def kill_cgroup(cgroup: Path) -> bool:
    """SIGKILL every process in ``cgroup`` and below it, and wait (at most
    :data:`KILL_WAIT_S`) until they are gone; True when there was any. ``cgroup.kill`` is
    used unless this process is itself in the cgroup, which is then spared (each other
    process gets SIGKILL)."""
    me = os.getpid()
    pids = _subtree_pids(cgroup)
    if not pids:
        return False
    try:
        if me in pids:
            raise PermissionError("the runner is in the cgroup")
        _write(cgroup / "cgroup.kill", "1")
    except OSError:
        pass  # the loop below kills each process
    deadline = time.monotonic() + KILL_WAIT_S
    while time.monotonic() < deadline:
        left = [pid for pid in _subtree_pids(cgroup) if pid != me]
        if not left:
            break
        for pid in left:  # with cgroup.kill: already dying; else each gets SIGKILL here
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.002)
    return True


@functools.cache
def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def record_inflight(
    path: Path,
    pid: int | None,
    cgroup: Path | None,
    campaign_id: int | None = None,
    others: tuple[int, ...] = (),
) -> None:
    """Write the in-flight record of a round: before its spawn (``pid`` None, the cgroup it
    will run in), then again with the pid of its process group leader and that process's
    start time. ``others``: the leaders of further process groups in flight with it (the
    other side of a duet, docs/duet.md), each recorded with its start time. A write that
    fails (a full disk) removes the record instead: the round still runs; only a crash
    during it would have needed the record."""
    text = InflightRecord(
        pid=pid,
        start_ticks=None if pid is None else start_ticks(pid),
        boot_id=_boot_id(),
        cgroup=str(cgroup) if cgroup is not None else None,
        campaign_id=campaign_id,
        runner_pid=os.getpid(),
        others=tuple(InflightGroup(o, start_ticks(o)) for o in others),
    ).to_text()
    spare = _spare(path)
    if _SPARES.get(spare) == text:  # the same record as after the last round: put it back
        del _SPARES[spare]
        try:
            os.rename(spare, path)
        except OSError:
            pass
        else:
            _WRITTEN[path] = text
            return
    _WRITTEN.pop(path, None)
    try:
        atomic_write_text(path, text)
    except OSError:
        clear_inflight(path)
    else:
        if pid is None:
            _WRITTEN[path] = text


#: text of the record without a pid this process wrote last, by path (while it is there)
_WRITTEN: dict[Path, str] = {}
#: text of the records moved aside by :func:`clear_inflight`, by the path they wait at
_SPARES: dict[Path, str] = {}


def _spare(path: Path) -> Path:
    return path.with_name(path.name + ".next")


def clear_inflight(path: Path) -> None:
    """Remove the in-flight record (the round has ended and nothing of it is left).

    A record without a pid (written before a spawn) is moved aside to ``<path>.next``
    rather than deleted, so that the next round's identical record is one rename
    (:func:`record_inflight`); :func:`discard_spare` removes it."""
    text = _WRITTEN.pop(path, None)
    if text is not None:
        spare = _spare(path)
        try:
            os.rename(path, spare)
        except OSError:
            pass
        else:
            _SPARES[spare] = text
            return
    try:
        path.unlink()
    except OSError:
        pass


def discard_spare(path: Path) -> None:
    """Remove the record :func:`clear_inflight` moved aside for ``path`` (the campaign ends)."""
    spare = _spare(path)
    _SPARES.pop(spare, None)
    try:
        spare.unlink()
    except OSError:
        pass


def _ours(pgid: int, ticks: int) -> bool:
    """Whether process group ``pgid`` is still the group whose leader started at ``ticks``.

    The leader alive with that start time: yes. The leader gone but members left: the
    group id cannot have been reused while they live, so they are the round's, provided
    they are in the session ``pgid`` the round's child made and started after it (this
    rules out a group made later by a process that got the recycled pid, called setsid and
    exited, unless its children also hold that session).
    """
    leader = start_ticks(pgid)
    if leader is not None:
        return leader == ticks
    members = group_members(pgid)
    for pid in members:
        fields = _stat_fields(pid)
        if fields is None:
            continue
        if int(fields[3]) != pgid or int(fields[19]) < ticks:
            return False
    return bool(members)


#: most bytes of an in-flight record read (one holds a few pids and a cgroup path)
INFLIGHT_LIMIT = 65536
#: a cgroup a runner made: ``benchrun-<pid>-<start ticks>`` (or the older ``benchrun-<pid>``)
_RUNNER_CGROUP = re.compile(r"benchrun-[0-9]{1,10}(-[0-9]{1,20})?")


def runners_cgroup(recorded: object) -> Path | None:
    """The rounds' cgroup ``recorded`` names, if it is one benchrun made for a runner that is
    no longer alive, reached without a symlink: ``<cgroup2 mount>/.../benchrun-<pid>-<start>
    /rounds``, absolute and normalised, each component below the mount opened with
    ``O_NOFOLLOW``, on the cgroup2 file system itself. None otherwise (a path through a
    symlink, to the root cgroup, to another cgroup, or of a live runner): only such a cgroup
    may be emptied on the strength of a record."""
    mount = _cgroup2_mount()
    if not isinstance(recorded, str) or mount is None or os.path.realpath(mount) != str(mount):
        return None
    if os.path.normpath(recorded) != recorded or not recorded.startswith(f"{mount}/"):
        return None
    parts = Path(recorded).relative_to(mount).parts
    if len(parts) < 2 or parts[-1] != "rounds" or not _RUNNER_CGROUP.fullmatch(parts[-2]):
        return None
    if not _stale(parts[-2]):
        return None
    try:
        fd = os.open(mount, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        device = os.fstat(fd).st_dev
        for part in parts:
            nfd = os.open(
                part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd
            )
            os.close(fd)
            fd = nfd
        if os.fstat(fd).st_dev != device:  # another file system mounted on the way
            return None
    except OSError:
        return None
    finally:
        os.close(fd)
    return Path(recorded)


def end_leftovers(path: Path) -> str | None:
    """End the processes of a round recorded in ``path`` by a run that died, if they are
    still there and still the recorded ones (same boot, same start time: a recycled pid is
    never touched); remove the record. Call it holding the campaign's lock (the run that
    wrote the record is then dead). Returns a one-line note of what was ended (or of a
    record left alone), or None when nothing was.

    The record names processes to kill, so it is trusted only when nobody else could have
    written it (runner/safefs.py :func:`~benchrun.runner.safefs.read_trusted`): a regular
    file of ours with one link, not writable by other users, reached without a symlink.
    Any other is left where it is, unread, with a note. Its cgroup is emptied only when it
    is one a dead runner made (:func:`runners_cgroup`)."""
    try:
        record = InflightRecord.from_json(json.loads(read_trusted(path, INFLIGHT_LIMIT)))
    except FileNotFoundError:
        discard_spare(path)
        return None
    except UnsafePath as exc:
        return f"left the in-flight record {path} alone, unread: {exc.reason}"
    except (OSError, UserError, ValueError):
        clear_inflight(path)
        discard_spare(path)
        return f"ignored an unreadable in-flight record {path}"
    pid, ticks = record.pid, record.start_ticks
    same_boot = record.boot_id == _boot_id()
    killed = False
    if same_boot and pid is not None and ticks is not None and _ours(pid, ticks):
        killed = kill_group(pid)
    for other in record.others if same_boot else ():
        if other.start_ticks is not None and _ours(other.pgid, other.start_ticks):
            killed = kill_group(other.pgid) or killed
    note = ""
    cgroup = record.cgroup
    if cgroup and same_boot:
        rounds = runners_cgroup(cgroup)
        if rounds is not None:
            killed = kill_cgroup(rounds) or killed
            _remove(rounds, rounds.parent)
        elif os.path.lexists(cgroup):
            shown = "".join(c if c.isprintable() else "?" for c in cgroup)[:200]
            note = f"; left the cgroup {shown} alone: not one a dead benchrun runner made"
    clear_inflight(path)
    discard_spare(path)
    if killed:
        campaign = record.campaign_id
        of = f" of campaign {campaign}" if campaign is not None else ""
        which = f" (pid {pid})" if pid is not None else ""
        return f"ended the processes of a round{of} left running by an earlier run{which}{note}"
    return note.removeprefix("; ") or None
