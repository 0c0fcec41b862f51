"""The reproducibility record: a snapshot of the machine, once per campaign (docs/machine.md).

:func:`collect_facts` gathers hardware, software, timer and environment facts into one
:class:`~runner.machine.facts.MachineFacts` (an unreadable fact is None with a reason);
:func:`collect_metadata` is that record as the JSON object stored (``null`` and the
section's ``_unavailable``); :func:`round_facts` reads load and frequency cheaply, once per
round.
The public names of the probes, noise rules and layout modules are re-exported here.
"""

from __future__ import annotations

import datetime as _dt
import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import ParamSpec, TypedDict, TypeVar

from benchrun.runner.machine import envprobes as envprobes
from benchrun.runner.machine import probes as probes
from benchrun.runner.machine.describe import SECTION_TITLES, describe_machine
from benchrun.runner.machine.facts import (
    SCHEMA_VERSION,
    Aslr,
    Caches,
    Clock,
    Cores,
    CpuIdentity,
    EnvironmentFacts,
    Facts,
    Frequency,
    GitState,
    HardwareFacts,
    Isolation,
    Kernel,
    Libc,
    Load,
    MachineFacts,
    Memory,
    OsRelease,
    PythonInfo,
    Smt,
    SoftwareFacts,
    TimerFacts,
    Variables,
)
from benchrun.runner.machine.noise import NoiseWarning, noise_warnings, unknown_noise_settings

__all__ = [
    "SCHEMA_VERSION",
    "SECTION_TITLES",
    "MachineFacts",
    "NoiseWarning",
    "RoundFacts",
    "collect_facts",
    "collect_metadata",
    "describe_machine",
    "noise_warnings",
    "round_facts",
    "unknown_noise_settings",
]

P = ParamSpec("P")
F = TypeVar("F", bound=Facts)
S = TypeVar("S")


def _run(group: type[F], probe: Callable[P, F], *args: P.args, **kwargs: P.kwargs) -> F:
    """``probe(*args)``; when it fails, the ``group`` with every fact None and the reason.

    Every fact of the group is there afterwards, whatever the probe did, so the record
    has the same shape on every machine.
    """
    try:
        return probe(*args, **kwargs)
    except probes.Unreadable as exc:
        return group.unknown(exc.reason)
    except Exception as exc:  # noqa: BLE001 - a probe must never break collection
        return group.unknown(f"{probe.__name__} failed: {type(exc).__name__}: {exc}")


def _hardware(ref_cpu: int) -> HardwareFacts:
    identity = _run(CpuIdentity, probes.probe_cpu_identity)
    cores = _run(Cores, probes.probe_cores)
    return HardwareFacts(
        identity=identity,
        cores=cores,
        smt=_run(Smt, probes.probe_smt, cores.cpus_online),
        caches=_run(Caches, probes.probe_caches, ref_cpu),
        frequency=_run(Frequency, probes.probe_frequency, ref_cpu, cores.cpus_online),
        memory=_run(Memory, probes.probe_memory_numa),
        facts_for_cpu=ref_cpu,
    )


def _software() -> SoftwareFacts:
    return SoftwareFacts(
        kernel=_run(Kernel, probes.probe_kernel),
        os_release=_run(OsRelease, probes.probe_os_release),
        libc=_run(Libc, probes.probe_libc),
        python=_run(PythonInfo, probes.probe_python),
    )


def _timer() -> TimerFacts:
    return TimerFacts(clock=_run(Clock, envprobes.probe_timer))


def _environment(
    env: Iterable[str] | Mapping[str, str],
    experiment_path: Path | None,
    workload_cpus: Sequence[int] | None,
) -> EnvironmentFacts:
    return EnvironmentFacts(
        workload_cpus=tuple(sorted(set(workload_cpus))) if workload_cpus is not None else None,
        load=_run(Load, envprobes.probe_load),
        aslr=_run(Aslr, envprobes.probe_aslr),
        isolation=_run(Isolation, envprobes.probe_isolated),
        variables=_run(Variables, envprobes.probe_variables, env),
        git=_run(GitState, envprobes.probe_git, experiment_path),
    )


def _section(build: Callable[[], S], failed: Callable[[str], S]) -> S:
    """``build()``, or ``failed(reason)`` when it raises (the probes catch first)."""
    try:
        return build()
    except Exception as exc:  # noqa: BLE001 - last line of defence; probes catch first
        return failed(f"{type(exc).__name__}: {exc}")


def collect_facts(
    env_names: Iterable[str] | Mapping[str, str] = (),
    experiment_path: Path | None = None,
    workload_cpus: Sequence[int] | None = None,
) -> MachineFacts:
    """Snapshot hardware, software, timer and environment (HOEFLER Rules 5, 9, 10).

    Parameters
    ----------
    env_names : iterable of str or mapping of str to str
        Names of environment variables to record with their values from this process's
        environment, or a mapping of the values the experiment sets (recorded as given).
    experiment_path : Path, optional
        The experiment file; the commit and dirty flag of the git repository holding it
        are recorded.
    workload_cpus : sequence of int, optional
        The CPUs workloads are pinned to; per-CPU facts (caches, frequency limits) are
        read for the first of them (CPU 0 when not given) and the noise rules check them.

    Returns
    -------
    MachineFacts
        The record (an unreadable fact is None with its reason: docs/machine.md). Never
        raises (except KeyboardInterrupt); takes about 10-50 ms, most of it the timer
        measurement and ``git status``.
    """
    start = time.perf_counter()
    collected_at = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    try:
        cpus = [int(c) for c in workload_cpus] if workload_cpus is not None else None
    except (TypeError, ValueError):
        cpus = None
    ref_cpu = min(cpus) if cpus else 0
    try:
        env = env_names if isinstance(env_names, Mapping) else [str(n) for n in env_names]
    except TypeError:
        env = []
    hardware = _section(lambda: _hardware(ref_cpu), lambda why: HardwareFacts(failed=why))
    software = _section(_software, lambda why: SoftwareFacts(failed=why))
    timer = _section(_timer, lambda why: TimerFacts(failed=why))
    environment = _section(
        lambda: _environment(env, experiment_path, cpus),
        lambda why: EnvironmentFacts(failed=why),
    )
    return MachineFacts(
        hardware,
        software,
        timer,
        environment,
        SCHEMA_VERSION,
        collected_at,
        round(time.perf_counter() - start, 4),
    )


def collect_metadata(
    env_names: Iterable[str] | Mapping[str, str] = (),
    experiment_path: Path | None = None,
    workload_cpus: Sequence[int] | None = None,
) -> dict[str, object]:
    """:func:`collect_facts` as the JSON object stored as a campaign's metadata
    (:meth:`MachineFacts.to_json`; the caller adds its own keys: ``revision``, ...)."""
    return collect_facts(env_names, experiment_path, workload_cpus).to_json()


class RoundFacts(TypedDict):
    """A round's facts as stored with the round (JSON): the 1-minute load average and each
    pinned CPU's current frequency in MHz (CPU number as a string); None when unread."""

    load_1min: float | None
    cpu_mhz: dict[str, float] | None


def round_facts(cpus: Sequence[int] | None) -> RoundFacts:
    """Cheap per-round facts: 1-minute load average and current MHz of the pinned CPUs.

    Parameters
    ----------
    cpus : sequence of int or None
        The CPUs whose frequency is read.

    Returns
    -------
    RoundFacts
        ``{"load_1min": float | None, "cpu_mhz": {"1": 2400.0} | None}``. The frequency
        is ``scaling_cur_freq`` (kHz / 1000) of each CPU where the cpufreq driver exposes
        it; ``None`` when no CPU's frequency is readable (virtual machines). Costs a few
        microseconds per CPU; never raises.
    """
    try:
        load: float | None = round(os.getloadavg()[0], 3)
    except OSError:
        load = None
    mhz: dict[str, float] = {}
    base = str(probes.SYS_CPU)
    for cpu in cpus or ():
        try:
            path = f"{base}/cpu{int(cpu)}/cpufreq/scaling_cur_freq"
        except (ValueError, TypeError):
            continue
        if path in _NO_FREQ:
            continue  # not exposed here (a virtual machine): not asked again every round
        try:
            with open(path, "rb") as handle:
                mhz[str(int(cpu))] = int(handle.read()) / 1000.0
        except FileNotFoundError:
            _NO_FREQ.add(path)
        except (OSError, ValueError):
            continue
    return RoundFacts(load_1min=load, cpu_mhz=mhz or None)


#: scaling_cur_freq files found missing by :func:`round_facts` (cpufreq is absent)
_NO_FREQ: set[str] = set()
