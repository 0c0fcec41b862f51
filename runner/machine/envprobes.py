"""Readers of the timer and the environment for the reproducibility record (docs/machine.md).

Same conventions as :mod:`runner.machine.probes` (raise :class:`Unreadable` with a reason;
paths taken from that module's constants at call time so tests can redirect them).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import time
from collections.abc import Iterable, Mapping
from pathlib import Path

from benchrun.runner.config.cpulist import parse_kernel_cpu_list
from benchrun.runner.machine import probes as probes
from benchrun.runner.machine.facts import Aslr, Clock, GitState, Isolation, Load, Variables
from benchrun.runner.machine.probes import Unreadable, read_text


def probe_timer(calls_per_block: int = 1000, blocks: int = 31) -> Clock:
    """The clock benchrun times rounds with (``time.monotonic_ns``): declared and measured.

    Parameters
    ----------
    calls_per_block : int
        Clock calls timed together for the overhead.
    blocks : int
        Blocks timed; the overhead is their median.

    Returns
    -------
    Clock
        ``declared_resolution_ns`` (``time.get_clock_info("monotonic").resolution`` x 1e9);
        ``measured_resolution_ns``, the smallest non-zero difference of consecutive
        ``monotonic_ns()`` values over up to 200 changes (HOEFLER Rule 9: report the
        timer); ``overhead_ns``, the median over blocks of block time / calls, i.e. the
        cost of one call as a Python caller pays it, loop included (an upper bound); the
        kernel clock source (``tsc``, ``kvm-clock``, ...) and the available ones.
    """
    mono = time.monotonic_ns
    info = time.get_clock_info("monotonic")
    gone: dict[str, str] = {}
    smallest: int | None = None
    changes = calls = 0
    prev = mono()
    while changes < 200 and calls < 1_000_000:
        now = mono()
        calls += 1
        diff = now - prev
        if diff > 0:
            changes += 1
            smallest = diff if smallest is None else min(smallest, diff)
            prev = now
    if smallest is None:
        gone["measured_resolution_ns"] = "the clock never changed in 1e6 calls"
    per_call: list[float] = []
    loop = range(calls_per_block)
    for _ in range(blocks):
        start = mono()
        for _ in loop:
            mono()
        per_call.append((mono() - start) / calls_per_block)
    sources: dict[str, str | None] = {}
    for key, name in (
        ("clocksource", "current_clocksource"),
        ("clocksources_available", "available_clocksource"),
    ):
        try:
            sources[key] = read_text(probes.CLOCKSOURCE / name)
        except Unreadable as exc:
            sources[key] = None
            gone[key] = exc.reason
    return Clock(
        clock="time.monotonic_ns",
        implementation=info.implementation,
        adjustable=info.adjustable,
        declared_resolution_ns=info.resolution * 1e9,
        measured_resolution_ns=smallest,
        overhead_ns=float(statistics.median(per_call)),
        clocksource=sources["clocksource"],
        clocksources_available=sources["clocksources_available"],
        unavailable=gone,
    )


ASLR_MEANING = {0: "off", 1: "on (stack, mmap, vdso)", 2: "on (stack, mmap, vdso, heap)"}


def probe_aslr() -> Aslr:
    """ASLR: ``/proc/sys/kernel/randomize_va_space`` (0 off, 1 partial, 2 full)."""
    value = int(read_text(probes.PROC / "sys" / "kernel" / "randomize_va_space"))
    return Aslr(aslr=value, aslr_meaning=ASLR_MEANING.get(value, "unknown value"))


def probe_isolated() -> Isolation:
    """CPUs isolated from the scheduler (``/sys/devices/system/cpu/isolated``; () = none)."""
    return Isolation(isolated_cpus=parse_kernel_cpu_list(read_text(probes.SYS_CPU / "isolated")))


def probe_load() -> Load:
    """Load average over 1, 5 and 15 minutes (runnable + uninterruptible tasks)."""
    return Load(load_average=tuple(round(x, 3) for x in os.getloadavg()))


def probe_variables(env: Iterable[str] | Mapping[str, str]) -> Variables:
    """Environment variables the experiment sets or names, with their values.

    Parameters
    ----------
    env : iterable of str or mapping of str to str
        A mapping gives the values the experiment sets (recorded as given); an iterable
        of names is looked up in the runner's environment.

    Returns
    -------
    Variables
        ``variables``: name to value; ``None`` for a name not set in the environment.
    """
    if isinstance(env, Mapping):
        return Variables(variables={str(k): str(v) for k, v in env.items()})
    return Variables(variables={str(name): os.environ.get(str(name)) for name in env})


def probe_git(experiment_path: Path | None, timeout: float = 5.0) -> GitState:
    """Commit, dirty flag and top directory of the git repository holding the experiment.

    Parameters
    ----------
    experiment_path : Path or None
        The experiment file.
    timeout : float
        Seconds each ``git`` command may take.

    Returns
    -------
    GitState
        ``git_commit``, ``git_dirty`` (True when ``git status --porcelain`` lists
        anything: modified, staged or untracked files) and ``git_repository``.

    Raises
    ------
    Unreadable
        No experiment file, git not installed or not answering in time, or the file
        is not in a git repository.
    """
    if experiment_path is None:
        raise Unreadable("no experiment file given")
    folder = Path(experiment_path).resolve()
    folder = folder if folder.is_dir() else folder.parent

    def git(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["git", "-C", str(folder), *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    try:
        top = git("rev-parse", "--show-toplevel")
    except FileNotFoundError:
        raise Unreadable("git is not installed") from None
    except subprocess.TimeoutExpired:
        raise Unreadable(f"git did not answer within {timeout:g} s") from None
    if top.returncode != 0:
        raise Unreadable(f"{folder} is not in a git repository")
    head = git("rev-parse", "--verify", "HEAD")
    status = git("status", "--porcelain")
    gone: dict[str, str] = {}
    if head.returncode != 0:
        gone["git_commit"] = "the repository has no commit yet"
    if status.returncode != 0:
        gone["git_dirty"] = status.stderr.strip() or "git status failed"
    return GitState(
        git_commit=head.stdout.strip() if head.returncode == 0 else None,
        git_dirty=bool(status.stdout.strip()) if status.returncode == 0 else None,
        git_repository=top.stdout.strip(),
        unavailable=gone,
    )
