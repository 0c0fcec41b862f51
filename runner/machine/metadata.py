"""The reproducibility record: a snapshot of the machine, once per campaign (docs/machine.md).

:func:`collect_metadata` gathers hardware, software, timer and environment facts into one
JSON-serialisable dict (an unreadable fact is ``null`` with a reason in the section's
``_unavailable``); :func:`round_facts` reads load and frequency cheaply, once per round.
The public names of the probes, noise rules and layout modules are re-exported here.
"""

from __future__ import annotations

import datetime as _dt
import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from benchrun.runner.machine import envprobes as envprobes
from benchrun.runner.machine import probes as probes
from benchrun.runner.machine.describe import SECTION_TITLES, describe_machine
from benchrun.runner.machine.noise import NoiseWarning, noise_warnings, unknown_noise_settings

__all__ = [
    "SECTION_TITLES",
    "NoiseWarning",
    "collect_metadata",
    "describe_machine",
    "noise_warnings",
    "round_facts",
    "unknown_noise_settings",
]

SCHEMA_VERSION = 1

Probe = Callable[..., dict[str, Any]]


def _section() -> dict[str, Any]:
    return {"_unavailable": {}}


def _run_probe(section: dict[str, Any], keys: Sequence[str], probe: Probe, *args: Any) -> None:
    """Run one probe into ``section``; on any failure its ``keys`` become null + reason.

    Every key in ``keys`` is present afterwards, whatever the probe did, so the record
    has the same shape on every machine.
    """
    gone: dict[str, str] = section["_unavailable"]
    try:
        facts = dict(probe(*args))
    except probes.Unreadable as exc:
        reason = exc.reason
    except Exception as exc:  # noqa: BLE001 - a probe must never break collection
        reason = f"{probe.__name__} failed: {type(exc).__name__}: {exc}"
    else:
        gone.update(facts.pop("_unavailable", None) or {})
        section.update(facts)
        for key in keys:
            if key not in section:
                section[key] = None
                gone.setdefault(key, f"{probe.__name__} did not report it")
        return
    for key in keys:
        section[key] = None
        gone[key] = reason


def _hardware(ref_cpu: int) -> dict[str, Any]:
    hw = _section()
    _run_probe(
        hw,
        (
            "cpu_model",
            "cpu_vendor",
            "cpu_arch",
            "cpu_flags_count",
            "cpu_flags_notable",
            "virtualized",
            "cpu_identity_source",
            "microcode",
        ),
        probes.probe_cpu_identity,
    )
    _run_probe(
        hw,
        ("cores_logical", "cores_physical", "cpus_online", "runner_affinity"),
        probes.probe_cores,
    )
    _run_probe(
        hw, ("smt_active", "smt_control", "thread_siblings"), probes.probe_smt, hw["cpus_online"]
    )
    _run_probe(hw, ("cache_l1d", "cache_l1i", "cache_l2", "cache_l3"), probes.probe_caches, ref_cpu)
    _run_probe(
        hw,
        (
            "freq_min_mhz",
            "freq_max_mhz",
            "freq_current_mhz",
            "freq_current_source",
            "scaling_driver",
            "governor",
            "governors",
            "turbo",
            "turbo_control",
        ),
        probes.probe_frequency,
        ref_cpu,
        hw["cpus_online"],
    )
    _run_probe(hw, ("memory_total_bytes", "numa_nodes"), probes.probe_memory_numa)
    hw["facts_for_cpu"] = ref_cpu
    return hw


def _software() -> dict[str, Any]:
    sw = _section()
    _run_probe(
        sw,
        ("kernel_release", "kernel_version", "kernel_cmdline", "isolcpus", "nohz_full"),
        probes.probe_kernel,
    )
    _run_probe(sw, ("os_name", "os_id", "os_version_id"), probes.probe_os_release)
    _run_probe(sw, ("libc",), probes.probe_libc)
    _run_probe(
        sw,
        (
            "python_version",
            "python_implementation",
            "python_build",
            "python_executable",
            "benchrun_version",
            "hostname",
            "platform",
        ),
        probes.probe_python,
    )
    return sw


def _timer() -> dict[str, Any]:
    timer = _section()
    _run_probe(
        timer,
        (
            "clock",
            "implementation",
            "adjustable",
            "declared_resolution_ns",
            "measured_resolution_ns",
            "overhead_ns",
            "clocksource",
            "clocksources_available",
        ),
        envprobes.probe_timer,
    )
    return timer


def _environment(
    env: Iterable[str] | Mapping[str, str],
    experiment_path: Path | None,
    workload_cpus: Sequence[int] | None,
) -> dict[str, Any]:
    envs = _section()
    envs["workload_cpus"] = sorted(set(workload_cpus)) if workload_cpus is not None else None
    _run_probe(envs, ("load_average",), envprobes.probe_load)
    _run_probe(envs, ("aslr", "aslr_meaning"), envprobes.probe_aslr)
    _run_probe(envs, ("isolated_cpus",), envprobes.probe_isolated)
    _run_probe(envs, ("variables",), envprobes.probe_variables, env)
    _run_probe(
        envs, ("git_commit", "git_dirty", "git_repository"), envprobes.probe_git, experiment_path
    )
    return envs


def collect_metadata(
    env_names: Iterable[str] | Mapping[str, str] = (),
    experiment_path: Path | None = None,
    workload_cpus: Sequence[int] | None = None,
) -> dict[str, Any]:
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
    dict
        The JSON-serialisable record (layout and the ``null`` + ``_unavailable``
        convention: docs/machine.md). Never raises (except KeyboardInterrupt); takes
        about 10-50 ms, most of it the timer measurement and ``git status``.
    """
    start = time.perf_counter()
    record: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "collected_at": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    try:
        cpus = [int(c) for c in workload_cpus] if workload_cpus is not None else None
    except (TypeError, ValueError):
        cpus = None
    ref_cpu = min(cpus) if cpus else 0
    try:
        env = env_names if isinstance(env_names, Mapping) else [str(n) for n in env_names]
    except TypeError:
        env = []
    builders: tuple[tuple[str, Callable[[], dict[str, Any]]], ...] = (
        ("hardware", lambda: _hardware(ref_cpu)),
        ("software", _software),
        ("timer", _timer),
        ("environment", lambda: _environment(env, experiment_path, cpus)),
    )
    for name, build in builders:
        try:
            record[name] = build()
        except Exception as exc:  # noqa: BLE001 - last line of defence; probes catch first
            record[name] = {"_unavailable": {"*": f"{type(exc).__name__}: {exc}"}}
    record["collection_seconds"] = round(time.perf_counter() - start, 4)
    return record


def round_facts(cpus: Sequence[int] | None) -> dict[str, Any]:
    """Cheap per-round facts: 1-minute load average and current MHz of the pinned CPUs.

    Parameters
    ----------
    cpus : sequence of int or None
        The CPUs whose frequency is read.

    Returns
    -------
    dict
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
    return {"load_1min": load, "cpu_mhz": mhz or None}


#: scaling_cur_freq files found missing by :func:`round_facts` (cpufreq is absent)
_NO_FREQ: set[str] = set()
