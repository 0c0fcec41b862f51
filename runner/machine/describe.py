"""The human layout of a reproducibility record, written once for the terminal and reports.

:func:`describe_machine` turns a record from :func:`runner.machine.metadata.collect_metadata` into
``(section, label, text)`` rows, in the order they should be shown. Unreadable facts read
``unknown (reason)``; facts that were read and are absent read ``none``/``not set``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from benchrun.runner.config.cpulist import format_cpu_list

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


def _onoff(value: Any) -> str:
    return "on" if value else "off"


class _Reader:
    """Formats one section's facts, replacing unreadable ones by ``unknown (reason)``."""

    def __init__(self, meta: Mapping[str, Any], section: str) -> None:
        self.facts: Mapping[str, Any] = meta.get(section) or {}
        self.gone: Mapping[str, str] = self.facts.get("_unavailable") or {}

    def __call__(self, key: str, fmt: Callable[[Any], str] = str, absent: str = "not set") -> str:
        if key in self.gone or ("*" in self.gone and key not in self.facts):
            return f"unknown ({self.gone.get(key) or self.gone.get('*')})"
        value = self.facts.get(key)
        if value is None:
            return absent
        try:
            return fmt(value)
        except (TypeError, ValueError):
            return str(value)

    def raw(self, key: str) -> Any:
        return self.facts.get(key)


def _hardware_rows(meta: Mapping[str, Any]) -> list[tuple[str, str]]:
    hw = _Reader(meta, "hardware")
    flags = hw("cpu_flags_count", lambda n: f"{n} flags")
    notable = hw.raw("cpu_flags_notable")
    if notable:
        flags += "; notable: " + " ".join(notable)
    caches = ", ".join(
        f"{name} {hw(key, format_bytes)}"
        for name, key in (
            ("L1d", "cache_l1d"),
            ("L1i", "cache_l1i"),
            ("L2", "cache_l2"),
            ("L3", "cache_l3"),
        )
    )
    ref = hw.raw("facts_for_cpu")
    mhz = lambda v: f"{v:.0f} MHz"  # noqa: E731
    low, high = hw("freq_min_mhz", mhz), hw("freq_max_mhz", mhz)
    limits = f"min/max {low}" if low == high else f"min {low}, max {high}"
    freq = f"{limits}, current {hw('freq_current_mhz', mhz)}"
    return [
        ("CPU model", hw("cpu_model")),
        ("Vendor / arch", f"{hw('cpu_vendor')} / {hw('cpu_arch')}"),
        ("Flags", flags),
        ("Virtual machine", hw("virtualized", lambda v: "yes" if v else "no")),
        (
            "Cores",
            f"{hw('cores_physical')} physical, {hw('cores_logical')} logical; "
            f"online {hw('cpus_online', format_cpu_list)}",
        ),
        ("SMT", f"{hw('smt_active', _onoff)} (control: {hw('smt_control')})"),
        (f"Caches (CPU {ref})" if ref is not None else "Caches", caches),
        (f"Frequency (CPU {ref})" if ref is not None else "Frequency", freq),
        ("Governor", hw("governor")),
        ("Scaling driver", hw("scaling_driver")),
        ("Turbo / boost", hw("turbo", _onoff)),
        ("Memory", hw("memory_total_bytes", format_bytes)),
        ("NUMA nodes", hw("numa_nodes")),
    ]


def _software_rows(meta: Mapping[str, Any]) -> list[tuple[str, str]]:
    sw = _Reader(meta, "software")
    return [
        ("OS", sw("os_name")),
        ("Kernel", sw("kernel_release")),
        (
            "Kernel isolation",
            f"isolcpus={sw('isolcpus', absent='(not set)')} "
            f"nohz_full={sw('nohz_full', absent='(not set)')}",
        ),
        ("C library", sw("libc")),
        ("Python", f"{sw('python_version')} ({sw('python_implementation')})"),
        ("Python executable", sw("python_executable")),
        ("benchrun", sw("benchrun_version")),
        ("Hostname", sw("hostname")),
    ]


def _timer_rows(meta: Mapping[str, Any]) -> list[tuple[str, str]]:
    tm = _Reader(meta, "timer")
    ns = lambda v: f"{v:g} ns"  # noqa: E731
    return [
        ("Clock", f"{tm('clock')} ({tm('implementation')})"),
        (
            "Resolution",
            f"declared {tm('declared_resolution_ns', ns)}, "
            f"smallest measured step {tm('measured_resolution_ns', ns)}",
        ),
        ("Overhead", tm("overhead_ns", lambda v: f"{v:.0f} ns per call (median)")),
        ("Clock source", tm("clocksource")),
        ("Available sources", tm("clocksources_available")),
    ]


def _environment_rows(meta: Mapping[str, Any]) -> list[tuple[str, str]]:
    env = _Reader(meta, "environment")
    hw = _Reader(meta, "hardware")
    rows = [
        ("Load average", env("load_average", lambda v: " ".join(f"{x:.2f}" for x in v))),
        (
            "ASLR",
            f"{env('aslr')} ({env('aslr_meaning')})"
            if env.raw("aslr") is not None
            else env("aslr"),
        ),
        ("Isolated CPUs", env("isolated_cpus", lambda v: format_cpu_list(v) or "none")),
        ("Workload CPUs", env("workload_cpus", format_cpu_list, absent="not given")),
        ("Runner affinity", hw("runner_affinity", format_cpu_list)),
    ]
    commit = env("git_commit", absent="none")
    if env.raw("git_commit"):
        commit += " (uncommitted changes)" if env.raw("git_dirty") else " (clean)"
        commit += f" in {env('git_repository')}"
    rows.append(("Git commit", commit))
    variables = env.raw("variables")
    if isinstance(variables, Mapping):
        for name, value in variables.items():
            rows.append((f"${name}", "not set" if value is None else str(value)))
    return rows


def describe_machine(meta: Mapping[str, Any]) -> list[Row]:
    """The rows that describe a record to people, in display order.

    Parameters
    ----------
    meta : Mapping
        A record from :func:`runner.machine.metadata.collect_metadata`.

    Returns
    -------
    list of (str, str, str)
        ``(section title, label, text)``; unreadable facts read ``unknown (reason)``.
    """
    builders = (
        ("hardware", _hardware_rows),
        ("software", _software_rows),
        ("timer", _timer_rows),
        ("environment", _environment_rows),
    )
    rows: list[Row] = []
    for section, build in builders:
        title = SECTION_TITLES[section]
        rows.extend((title, label, text) for label, text in build(meta))
    return rows
