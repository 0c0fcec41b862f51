"""The human layout of a reproducibility record, written once for the terminal and reports.

:func:`describe_machine` turns a record from :func:`runner.machine.metadata.collect_metadata` into
``(section, label, text)`` rows, in the order they should be shown. Unreadable facts read
``unknown (reason)``; facts that were read and are absent read ``none``/``not set``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TypeVar

from benchrun.runner.config.cpulist import format_cpu_list
from benchrun.runner.machine.facts import (
    EnvironmentFacts,
    Facts,
    HardwareFacts,
    MachineFacts,
    SoftwareFacts,
    TimerFacts,
)

T = TypeVar("T")

#: record section -> title shown to people, in display order
SECTION_TITLES: dict[str, str] = {
    "hardware": "Hardware",
    "software": "Software",
    "timer": "Timer",
    "environment": "Environment",
}

Row = tuple[str, str, str]


def format_bytes(n: int | float) -> str:
    """A size in bytes with a binary prefix, at most 3 significant digits.

    Parameters
    ----------
    n : int or float
        Bytes.

    Returns
    -------
    str
        E.g. ``"48 KiB"`` for 49152, ``"1 GiB"`` for 1073741824.
    """
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if value == int(value) else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"  # pragma: no cover - loop always returns


def _onoff(value: bool) -> str:
    return "on" if value else "off"


def _cpus(cpus: tuple[int, ...]) -> str:
    return format_cpu_list(cpus)


def shown(
    group: Facts,
    key: str,
    value: T | None,
    fmt: Callable[[T], str] = str,
    absent: str = "not set",
) -> str:
    """One fact as people read it: ``unknown (reason)`` when it was not read
    (:meth:`Facts.why`), ``absent`` when it was read as None, else ``fmt(value)`` (its
    ``str`` when ``fmt`` cannot format it).

    Parameters
    ----------
    group : Facts
        The group holding the fact (for the reason).
    key : str
        The fact's key in the record.
    value : object or None
        The fact's value (the group's field ``key``).
    fmt : callable
        Formats a value that is there.
    absent : str
        The text for a fact that was read and is None.
    """
    why = group.why(key)
    if why is not None:
        return f"unknown ({why})"
    if value is None:
        return absent
    try:
        return fmt(value)
    except (TypeError, ValueError):
        return str(value)


def _hardware_rows(hw: HardwareFacts) -> list[tuple[str, str]]:
    ident, cores, smt, caches, freq = hw.identity, hw.cores, hw.smt, hw.caches, hw.frequency
    flags = shown(ident, "cpu_flags_count", ident.cpu_flags_count, lambda n: f"{n} flags")
    if ident.cpu_flags_notable:
        flags += "; notable: " + " ".join(ident.cpu_flags_notable)
    sizes = ", ".join(
        f"{name} {shown(caches, key, value, format_bytes)}"
        for name, key, value in (
            ("L1d", "cache_l1d", caches.cache_l1d),
            ("L1i", "cache_l1i", caches.cache_l1i),
            ("L2", "cache_l2", caches.cache_l2),
            ("L3", "cache_l3", caches.cache_l3),
        )
    )
    ref = hw.facts_for_cpu
    mhz = lambda v: f"{v:.0f} MHz"  # noqa: E731
    low = shown(freq, "freq_min_mhz", freq.freq_min_mhz, mhz)
    high = shown(freq, "freq_max_mhz", freq.freq_max_mhz, mhz)
    limits = f"min/max {low}" if low == high else f"min {low}, max {high}"
    current = shown(freq, "freq_current_mhz", freq.freq_current_mhz, mhz)
    mem = hw.memory
    return [
        ("CPU model", shown(ident, "cpu_model", ident.cpu_model)),
        (
            "Vendor / arch",
            f"{shown(ident, 'cpu_vendor', ident.cpu_vendor)} / "
            f"{shown(ident, 'cpu_arch', ident.cpu_arch)}",
        ),
        ("Flags", flags),
        (
            "Virtual machine",
            shown(ident, "virtualized", ident.virtualized, lambda v: "yes" if v else "no"),
        ),
        (
            "Cores",
            f"{shown(cores, 'cores_physical', cores.cores_physical)} physical, "
            f"{shown(cores, 'cores_logical', cores.cores_logical)} logical; "
            f"online {shown(cores, 'cpus_online', cores.cpus_online, _cpus)}",
        ),
        (
            "SMT",
            f"{shown(smt, 'smt_active', smt.smt_active, _onoff)} "
            f"(control: {shown(smt, 'smt_control', smt.smt_control)})",
        ),
        (f"Caches (CPU {ref})" if ref is not None else "Caches", sizes),
        (
            f"Frequency (CPU {ref})" if ref is not None else "Frequency",
            f"{limits}, current {current}",
        ),
        ("Governor", shown(freq, "governor", freq.governor)),
        ("Scaling driver", shown(freq, "scaling_driver", freq.scaling_driver)),
        ("Turbo / boost", shown(freq, "turbo", freq.turbo, _onoff)),
        ("Memory", shown(mem, "memory_total_bytes", mem.memory_total_bytes, format_bytes)),
        ("NUMA nodes", shown(mem, "numa_nodes", mem.numa_nodes)),
    ]


def _software_rows(sw: SoftwareFacts) -> list[tuple[str, str]]:
    kernel, py = sw.kernel, sw.python
    no = "(not set)"
    return [
        ("OS", shown(sw.os_release, "os_name", sw.os_release.os_name)),
        ("Kernel", shown(kernel, "kernel_release", kernel.kernel_release)),
        (
            "Kernel isolation",
            f"isolcpus={shown(kernel, 'isolcpus', kernel.isolcpus, absent=no)} "
            f"nohz_full={shown(kernel, 'nohz_full', kernel.nohz_full, absent=no)}",
        ),
        ("C library", shown(sw.libc, "libc", sw.libc.libc)),
        (
            "Python",
            f"{shown(py, 'python_version', py.python_version)} "
            f"({shown(py, 'python_implementation', py.python_implementation)})",
        ),
        ("Python executable", shown(py, "python_executable", py.python_executable)),
        ("benchrun", shown(py, "benchrun_version", py.benchrun_version)),
        ("Hostname", shown(py, "hostname", py.hostname)),
    ]


def _timer_rows(timer: TimerFacts) -> list[tuple[str, str]]:
    tm = timer.clock
    ns = lambda v: f"{v:g} ns"  # noqa: E731
    return [
        (
            "Clock",
            f"{shown(tm, 'clock', tm.clock)} ({shown(tm, 'implementation', tm.implementation)})",
        ),
        (
            "Resolution",
            f"declared {shown(tm, 'declared_resolution_ns', tm.declared_resolution_ns, ns)}, "
            "smallest measured step "
            f"{shown(tm, 'measured_resolution_ns', tm.measured_resolution_ns, ns)}",
        ),
        (
            "Overhead",
            shown(tm, "overhead_ns", tm.overhead_ns, lambda v: f"{v:.0f} ns per call (median)"),
        ),
        ("Clock source", shown(tm, "clocksource", tm.clocksource)),
        ("Available sources", shown(tm, "clocksources_available", tm.clocksources_available)),
    ]


def _environment_rows(meta: MachineFacts) -> list[tuple[str, str]]:
    env, cores = meta.environment, meta.hardware.cores
    load, aslr, git = env.load, env.aslr, env.git
    aslr_text = shown(aslr, "aslr", aslr.aslr)
    if aslr.aslr is not None:
        aslr_text += f" ({shown(aslr, 'aslr_meaning', aslr.aslr_meaning)})"
    isolated = env.isolation
    rows = [
        (
            "Load average",
            shown(
                load, "load_average", load.load_average, lambda v: " ".join(f"{x:.2f}" for x in v)
            ),
        ),
        ("ASLR", aslr_text),
        (
            "Isolated CPUs",
            shown(isolated, "isolated_cpus", isolated.isolated_cpus, lambda v: _cpus(v) or "none"),
        ),
        ("Workload CPUs", _workload_cpus(env)),
        ("Runner affinity", shown(cores, "runner_affinity", cores.runner_affinity, _cpus)),
    ]
    commit = shown(git, "git_commit", git.git_commit, absent="none")
    if git.git_commit:
        commit += " (uncommitted changes)" if git.git_dirty else " (clean)"
        commit += f" in {shown(git, 'git_repository', git.git_repository)}"
    rows.append(("Git commit", commit))
    for name, value in (env.variables.variables or {}).items():
        rows.append((f"${name}", "not set" if value is None else str(value)))
    return rows


def _workload_cpus(env: EnvironmentFacts) -> str:
    """The workload CPUs (a fact of the section itself: unknown only with the section)."""
    if env.failed is not None and env.workload_cpus is None:
        return f"unknown ({env.failed})"
    return _cpus(env.workload_cpus) if env.workload_cpus is not None else "not given"


def describe_machine(meta: MachineFacts | Mapping[str, object]) -> list[Row]:
    """The rows that describe a record to people, in display order.

    Parameters
    ----------
    meta : MachineFacts or Mapping
        A record, or the stored JSON object of one (parsed with
        :meth:`MachineFacts.from_stored`).

    Returns
    -------
    list of (str, str, str)
        ``(section title, label, text)``; unreadable facts read ``unknown (reason)``.
    """
    facts = MachineFacts.from_stored(meta)
    sections = (
        ("hardware", _hardware_rows(facts.hardware)),
        ("software", _software_rows(facts.software)),
        ("timer", _timer_rows(facts.timer)),
        ("environment", _environment_rows(facts)),
    )
    return [(SECTION_TITLES[name], label, text) for name, rows in sections for label, text in rows]
