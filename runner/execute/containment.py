"""Containment of a round's processes: every descendant is gone before the next round.

Two kinds, chosen once per executor (``benchrun system`` says which this machine gets):

- ``cgroup``: where a cgroup v2 hierarchy is mounted and writable (root, or a delegated
  subtree), the runner makes ``benchrun-<pid>/rounds`` below its own cgroup and every round's
  child enters it before ``exec``. At the end of the round ``cgroup.kill`` ends whatever is
  left, including children that called ``setsid`` and left the process group.
- ``process group``: elsewhere; the round's process group is killed at the end of the
  round (a ``setsid`` child escapes it).

What is launched is also written to an *in-flight record* (``inflight.json`` in the
campaign directory) before the round is timed and removed after it, so that a run killed
with SIGKILL leaves enough behind for the next run (``--resume``, the daemon) to end the old
round's processes: it kills them only if the recorded process still has the recorded start
time (a recycled pid is never touched). docs/machine.md "Containment".
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from benchrun.runner.files import atomic_write_text

ContainmentKind = Literal["cgroup", "process group"]

#: name of the in-flight record in the campaign directory
INFLIGHT_FILE = "inflight.json"
#: longest wait for killed processes to disappear, seconds
KILL_WAIT_S = 5.0


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


class Containment:
    """The containment of one executor's rounds (see the module docstring).

    ``Containment.create()`` tries a cgroup and falls back to the process group;
    :attr:`kind` says which; :meth:`preexec` is the function a child runs before ``exec``
    (None for process groups); :meth:`end_round` kills what a round left.
    """

    def __init__(self, kind: ContainmentKind, cgroup: Path | None = None, why: str = "") -> None:
        self.kind: ContainmentKind = kind
        self.cgroup = cgroup
        #: why cgroups are not used (empty when they are)
        self.why = why

    @classmethod
    def create(cls, use_cgroup: bool = True) -> Containment:
        """A cgroup below this process's own cgroup v2 when it can be made, else groups."""
        if not use_cgroup:
            return cls("process group", why="cgroups turned off")
        mount, own = _cgroup2_mount(), _own_cgroup()
        if mount is None or own is None:
            return cls("process group", why="no cgroup v2 hierarchy mounted")
        parent = mount / own.lstrip("/")
        sweep_stale_cgroups(parent)
        base = parent / f"benchrun-{os.getpid()}"
        rounds = base / "rounds"
        try:
            rounds.mkdir(parents=True, exist_ok=True)
            if not (rounds / "cgroup.kill").exists():
                _remove(rounds, base)
                return cls("process group", why="the kernel has no cgroup.kill (Linux < 5.14)")
        except OSError as exc:
            return cls("process group", why=f"cannot create a cgroup: {exc.strerror or exc}")
        return cls("cgroup", rounds)

    def describe(self) -> str:
        """One line for ``benchrun system`` and the report's methods."""
        if self.kind == "cgroup":
            return "cgroup (every descendant of a round is killed at its end, setsid included)"
        return f"process group (descendants that call setsid can escape; {self.why})"

    def preexec(self) -> Callable[[], None] | None:
        """What the child runs between fork and exec: enter the rounds' cgroup."""
        if self.cgroup is None:
            return None
        procs = str(self.cgroup / "cgroup.procs")

        def enter() -> None:
            with open(procs, "w") as f:
                f.write("0")

        return enter

    def end_round(self, pgid: int) -> bool:
        """Kill everything the round left (its process group, and with a cgroup everything
        in it); wait until it is gone. True when something was left."""
        left = _group_alive(pgid)
        if left:
            _killpg(pgid, signal.SIGKILL)
        if self.cgroup is not None:
            left = kill_cgroup(self.cgroup) or left
        return left

    def close(self) -> None:
        """Remove the cgroup directories (after killing anything still in them)."""
        if self.cgroup is not None:
            kill_cgroup(self.cgroup)
            _remove(self.cgroup, self.cgroup.parent)
            self.cgroup = None


def containment_record(containment: Containment) -> dict[str, str]:
    """The campaign metadata's ``containment`` entry: ``kind`` and a one-line ``detail``."""
    return {"kind": containment.kind, "detail": containment.describe()}


def _remove(*dirs: Path) -> None:
    for d in dirs:
        try:
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


def _cgroup_pids(cgroup: Path) -> list[int]:
    try:
        return [int(x) for x in (cgroup / "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return []


def sweep_stale_cgroups(parent: Path) -> int:
    """End what runs in the ``benchrun-<pid>`` cgroups below ``parent`` whose runner
    ``<pid>`` is dead (a run killed with SIGKILL), and remove them; returns how many."""
    swept = 0
    try:
        entries = list(parent.glob("benchrun-*"))
    except OSError:
        return 0
    for base in entries:
        pid = base.name.removeprefix("benchrun-")
        if not pid.isdigit() or int(pid) == os.getpid() or Path(f"/proc/{pid}").exists():
            continue
        for child in [base / "rounds", base]:
            if child.is_dir():
                kill_cgroup(child)
        _remove(base / "rounds", base)
        swept += 1
    return swept


def kill_cgroup(cgroup: Path) -> bool:
    """SIGKILL every process in ``cgroup`` (``cgroup.kill``) and wait until it is empty;
    True when it held any process."""
    if not _cgroup_pids(cgroup):
        return False
    try:
        (cgroup / "cgroup.kill").write_text("1")
    except OSError:
        for pid in _cgroup_pids(cgroup):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    deadline = time.monotonic() + KILL_WAIT_S
    while _cgroup_pids(cgroup) and time.monotonic() < deadline:
        time.sleep(0.005)
    return True


def start_ticks(pid: int) -> int | None:
    """The start time of process ``pid`` in clock ticks since boot (``/proc/PID/stat``
    field 22), or None when there is no such process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # the command name (field 2) may hold spaces and parentheses: split after the last ')'
    fields = stat[stat.rfind(")") + 2 :].split()
    return int(fields[19])


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def record_inflight(path: Path, pid: int | None, cgroup: Path | None) -> None:
    """Write the in-flight record of a round: before its spawn (``pid`` None, the cgroup it
    will run in), then again with the pid of its process group leader."""
    doc = {
        "pid": pid,
        "start_ticks": None if pid is None else start_ticks(pid),
        "boot_id": _boot_id(),
        "cgroup": str(cgroup) if cgroup is not None else None,
        "runner_pid": os.getpid(),
    }
    try:
        atomic_write_text(path, json.dumps(doc) + "\n")
    except OSError:
        # a full disk: the round still runs (and the store's commit reports the disk);
        # the record is a best effort that only a later crash would have needed
        clear_inflight(path)


def clear_inflight(path: Path) -> None:
    """Remove the in-flight record (the round has ended and nothing of it is left)."""
    try:
        path.unlink()
    except OSError:
        pass


def end_leftovers(path: Path) -> str | None:
    """End the processes of a round recorded in ``path`` by a run that died, if they are
    still there and still the recorded ones; remove the record. Call it holding the
    campaign's lock (the run that wrote the record is then dead). Returns a one-line note
    of what was ended, or None when nothing was."""
    try:
        doc: dict[str, Any] = json.loads(path.read_text())
        pid = None if doc["pid"] is None else int(doc["pid"])
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError):
        clear_inflight(path)
        return f"ignored an unreadable in-flight record {path}"
    same = (
        pid is not None
        and doc.get("boot_id") == _boot_id()
        and doc.get("start_ticks") is not None
        and start_ticks(pid) == doc.get("start_ticks")
    )
    killed = False
    if same and pid is not None:
        killed = _group_alive(pid)
        _killpg(pid, signal.SIGKILL)
        deadline = time.monotonic() + KILL_WAIT_S
        while _group_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.005)
    cgroup = doc.get("cgroup")
    if cgroup and doc.get("boot_id") == _boot_id() and Path(cgroup).is_dir():
        killed = kill_cgroup(Path(cgroup)) or killed
        _remove(Path(cgroup), Path(cgroup).parent)
    clear_inflight(path)
    if killed:
        which = f" (pid {pid})" if pid is not None else ""
        return f"ended the processes of a round left running by an earlier run{which}"
    return None
