"""Readers of hardware and software facts for the reproducibility record (docs/machine.md).

Each ``probe_*`` function reads one concept and returns a dict of facts, or raises
:class:`Unreadable` with a one-line reason. Paths are module constants read at call time,
so tests can point a probe at a fabricated tree; :mod:`runner.machine.envprobes` reads the
timer and the environment with the same conventions.
"""

from __future__ import annotations

import os
import platform
import re
import socket
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import psutil

from benchrun.runner.config.cpulist import parse_kernel_cpu_list

#: procfs root (``/proc/cpuinfo``, ``/proc/cmdline``, ``/proc/sys/kernel/...``)
PROC = Path("/proc")
#: sysfs CPU root (cpufreq, topology, caches, SMT control, isolated CPUs, turbo)
SYS_CPU = Path("/sys/devices/system/cpu")
#: sysfs NUMA node root
SYS_NODE = Path("/sys/devices/system/node")
#: sysfs clock source of the kernel's timekeeping
CLOCKSOURCE = Path("/sys/devices/system/clocksource/clocksource0")

#: CPU flags worth naming in a report: vector units, crypto, and timer/TSC properties.
NOTABLE_FLAGS: tuple[str, ...] = (
    "sse4_2",
    "avx",
    "avx2",
    "fma",
    "avx512f",
    "avx512bw",
    "avx512vl",
    "avx512_vnni",
    "avx512_bf16",
    "amx_tile",
    "aes",
    "sha_ni",
    "constant_tsc",
    "nonstop_tsc",
    "hypervisor",
    "asimd",
    "sve",
    "sve2",
)


class Unreadable(Exception):
    """A fact could not be read; ``reason`` says why in one line (stored in the record)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def read_text(path: Path) -> str:
    """The stripped content of a small text file.

    Parameters
    ----------
    path : Path
        A procfs or sysfs file (or any small text file).

    Returns
    -------
    str
        Its content without leading and trailing white space.

    Raises
    ------
    Unreadable
        The file is missing, not permitted or unreadable; the reason names it.
    """
    try:
        return path.read_text(encoding="utf-8", errors="replace").strip()
    except FileNotFoundError:
        raise Unreadable(f"no {path}") from None
    except PermissionError:
        raise Unreadable(f"{path}: permission denied") from None
    except OSError as exc:
        raise Unreadable(f"{path}: {exc.strerror or exc}") from None


def _cpuinfo_first_block() -> dict[str, str]:
    """``key: value`` pairs of the first processor block of /proc/cpuinfo (+ global keys)."""
    text = read_text(PROC / "cpuinfo")
    fields: dict[str, str] = {}
    seen_processor = False
    for line in text.splitlines():
        if not line.strip():
            if seen_processor:
                break
            continue
        key, _, value = line.partition(":")
        key = key.strip()
        if key == "processor":
            if seen_processor:
                break
            seen_processor = True
        fields.setdefault(key, value.strip())
    return fields


def probe_cpu_identity() -> dict[str, Any]:
    """CPU model, vendor, architecture, flags and microcode revision (``microcode``: the
    first CPU's ``microcode :`` line of /proc/cpuinfo, x86; None where the kernel does not
    give it).

    Read from /proc/cpuinfo (a few hundred microseconds); py-cpuinfo is the fallback only,
    because ``cpuinfo.get_cpu_info()`` measured 1.2 s on the development machine.
    """
    facts: dict[str, Any] = {"cpu_arch": platform.machine() or None}
    try:
        fields = _cpuinfo_first_block()
        model = fields.get("model name") or fields.get("Model") or fields.get("cpu model")
        vendor = fields.get("vendor_id") or fields.get("CPU implementer")
        flags = (fields.get("flags") or fields.get("Features") or "").split()
        microcode = fields.get("microcode") or None
        source = str(PROC / "cpuinfo")
        if not model:
            raise Unreadable(f"{source} has no model name")
    except Unreadable as first:
        try:
            import cpuinfo  # py-cpuinfo: slow, but portable

            info = cpuinfo.get_cpu_info()
        except Exception as exc:  # noqa: BLE001 - any failure of the fallback is a reason
            raise Unreadable(f"{first.reason}; py-cpuinfo failed: {exc}") from None
        model = info.get("brand_raw") or None
        vendor = info.get("vendor_id_raw") or None
        flags = list(info.get("flags") or [])
        microcode = None
        source = "py-cpuinfo"
    flag_set = set(flags)
    facts.update(
        cpu_model=model,
        cpu_vendor=vendor,
        cpu_flags_count=len(flag_set),
        cpu_flags_notable=[f for f in NOTABLE_FLAGS if f in flag_set],
        virtualized=("hypervisor" in flag_set) if flag_set else None,
        cpu_identity_source=source,
        microcode=microcode,
    )
    return facts


def probe_cores() -> dict[str, Any]:
    """Logical and physical core counts (psutil), online CPUs and the runner's affinity."""
    facts: dict[str, Any] = {"_unavailable": {}}
    facts["cores_logical"] = psutil.cpu_count(logical=True)
    physical = psutil.cpu_count(logical=False)
    facts["cores_physical"] = physical
    if physical is None:
        facts["_unavailable"]["cores_physical"] = "psutil cannot count physical cores here"
    try:
        facts["cpus_online"] = list(parse_kernel_cpu_list(read_text(SYS_CPU / "online")))
    except Unreadable as exc:
        facts["cpus_online"] = None
        facts["_unavailable"]["cpus_online"] = exc.reason
    if hasattr(os, "sched_getaffinity"):
        facts["runner_affinity"] = sorted(os.sched_getaffinity(0))
    else:
        facts["runner_affinity"] = None
        facts["_unavailable"]["runner_affinity"] = "os.sched_getaffinity is not available"
    return facts


def probe_smt(cpus_online: Sequence[int] | None) -> dict[str, Any]:
    """SMT state (``smt/active``, ``smt/control``) and the SMT siblings of every online CPU.

    Parameters
    ----------
    cpus_online : sequence of int or None
        The online CPUs (from :func:`probe_cores`); None when unknown.

    Returns
    -------
    dict
        ``smt_active``, ``smt_control`` and ``thread_siblings``, which maps a CPU number
        (as a string, for JSON) to the online CPUs that share its physical core, itself
        included; unreadable ones are listed under ``_unavailable``.
    """
    facts: dict[str, Any] = {"_unavailable": {}}
    try:
        facts["smt_active"] = read_text(SYS_CPU / "smt" / "active") == "1"
    except Unreadable as exc:
        logical, physical = psutil.cpu_count(), psutil.cpu_count(logical=False)
        if logical and physical:
            facts["smt_active"] = logical > physical
        else:
            facts["smt_active"] = None
            facts["_unavailable"]["smt_active"] = exc.reason
    try:
        facts["smt_control"] = read_text(SYS_CPU / "smt" / "control")
    except Unreadable as exc:
        facts["smt_control"] = None
        facts["_unavailable"]["smt_control"] = exc.reason
    if not cpus_online:
        facts["thread_siblings"] = None
        facts["_unavailable"]["thread_siblings"] = "online CPUs unknown"
        return facts
    siblings: dict[str, list[int]] = {}
    for cpu in cpus_online:
        path = SYS_CPU / f"cpu{cpu}" / "topology" / "thread_siblings_list"
        try:
            siblings[str(cpu)] = list(parse_kernel_cpu_list(read_text(path)))
        except Unreadable as exc:
            facts["thread_siblings"] = None
            facts["_unavailable"]["thread_siblings"] = exc.reason
            return facts
    facts["thread_siblings"] = siblings
    return facts


_SIZE_RE = re.compile(r"^\s*(\d+)\s*([KMG]?)", re.IGNORECASE)
_SIZE_UNIT = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3}


def probe_caches(cpu: int) -> dict[str, Any]:
    """Cache sizes seen by one CPU, in bytes (one instance, not the sum over cores).

    Parameters
    ----------
    cpu : int
        The CPU whose ``/sys/devices/system/cpu/cpuN/cache/index*/{level,type,size}``
        are read.

    Returns
    -------
    dict
        ``cache_l1d``, ``cache_l1i``, ``cache_l2``, ``cache_l3`` in bytes.

    Raises
    ------
    Unreadable
        The CPU has no cache directory.
    """
    keys = ("cache_l1d", "cache_l1i", "cache_l2", "cache_l3")
    base = SYS_CPU / f"cpu{cpu}" / "cache"
    if not base.is_dir():
        raise Unreadable(f"no {base}")
    facts: dict[str, Any] = dict.fromkeys(keys)
    facts["_unavailable"] = {}
    for index in sorted(base.glob("index*")):
        level = read_text(index / "level")
        kind = read_text(index / "type")
        match = _SIZE_RE.match(read_text(index / "size"))
        if not match:
            continue
        size = int(match.group(1)) * _SIZE_UNIT[match.group(2).upper()]
        if level == "1":
            key = "cache_l1d" if kind == "Data" else "cache_l1i" if kind == "Instruction" else None
        else:
            key = f"cache_l{level}" if f"cache_l{level}" in facts else None
        if key:
            facts[key] = size
    for key in keys:
        if facts[key] is None:
            facts["_unavailable"][key] = f"{base} lists no such cache"
    return facts


def _khz_to_mhz(path: Path) -> float:
    return int(read_text(path)) / 1000.0


def probe_frequency(cpu: int, cpus_online: Sequence[int] | None) -> dict[str, Any]:
    """Frequency limits and current value of one CPU, governors, driver and turbo.

    cpufreq sysfs first (``cpuinfo_min_freq``, ``cpuinfo_max_freq``, ``scaling_cur_freq`` in
    kHz); ``psutil.cpu_freq()`` as the fallback.

    Parameters
    ----------
    cpu : int
        The CPU whose limits and current frequency are read.
    cpus_online : sequence of int or None
        The CPUs whose governors are read; None when unknown.

    Returns
    -------
    dict
        ``freq_min_mhz``, ``freq_max_mhz``, ``freq_current_mhz`` (MHz) and their source,
        ``scaling_driver``, ``governors`` (every online CPU to its scaling governor),
        ``governor`` (their common value or ``"mixed"``), ``turbo`` (True when turbo or
        boost is on) and ``turbo_control`` (the file that says so).
    """
    out: dict[str, Any] = {"_unavailable": {}}
    gone = out["_unavailable"]
    cpufreq = SYS_CPU / f"cpu{cpu}" / "cpufreq"
    no_cpufreq = f"no {cpufreq} (no cpufreq driver: virtual machine or cpufreq disabled?)"
    have_cpufreq = cpufreq.is_dir()
    try:
        fallback = psutil.cpu_freq()
    except Exception:  # noqa: BLE001 - the fallback failing must not hide the sysfs facts
        fallback = None
    for key, name, attr in (
        ("freq_min_mhz", "cpuinfo_min_freq", "min"),
        ("freq_max_mhz", "cpuinfo_max_freq", "max"),
    ):
        try:
            out[key] = _khz_to_mhz(cpufreq / name)
        except (Unreadable, ValueError) as exc:
            value = getattr(fallback, attr, 0.0) if fallback is not None else 0.0
            out[key] = float(value) if value else None
            if out[key] is None:
                gone[key] = no_cpufreq if not have_cpufreq else getattr(exc, "reason", str(exc))
    try:
        out["freq_current_mhz"] = _khz_to_mhz(cpufreq / "scaling_cur_freq")
        out["freq_current_source"] = str(cpufreq / "scaling_cur_freq")
    except (Unreadable, ValueError):
        if fallback is not None and fallback.current:
            out["freq_current_mhz"] = float(fallback.current)
            out["freq_current_source"] = "psutil.cpu_freq (on a VM: the nominal value)"
        else:
            out["freq_current_mhz"] = out["freq_current_source"] = None
            gone["freq_current_mhz"] = no_cpufreq
    try:
        out["scaling_driver"] = read_text(cpufreq / "scaling_driver")
    except Unreadable:
        out["scaling_driver"] = None
        gone["scaling_driver"] = no_cpufreq
    governors: dict[str, str] = {}
    for other in cpus_online or [cpu]:
        try:
            governors[str(other)] = read_text(
                SYS_CPU / f"cpu{other}" / "cpufreq" / "scaling_governor"
            )
        except Unreadable:
            pass
    if governors:
        out["governors"] = governors
        values = set(governors.values())
        out["governor"] = values.pop() if len(values) == 1 else "mixed"
    else:
        out["governors"] = out["governor"] = None
        gone["governor"] = gone["governors"] = no_cpufreq
    out.update(_probe_turbo(cpufreq))
    if out["turbo"] is None:
        gone["turbo"] = out.pop("_turbo_reason")
    return out


def _probe_turbo(cpufreq: Path) -> dict[str, Any]:
    """Turbo state: intel_pstate ``no_turbo`` (1 = off) or cpufreq ``boost`` (1 = on)."""
    candidates = (
        (SYS_CPU / "intel_pstate" / "no_turbo", "0"),
        (SYS_CPU / "cpufreq" / "boost", "1"),
        (cpufreq / "boost", "1"),
    )
    for path, on_value in candidates:
        try:
            value = read_text(path)
        except Unreadable:
            continue
        return {"turbo": value == on_value, "turbo_control": str(path)}
    return {
        "turbo": None,
        "turbo_control": None,
        "_turbo_reason": "no intel_pstate/no_turbo nor cpufreq/boost "
        "(turbo not exposed: virtual machine or unsupported driver?)",
    }


def probe_memory_numa() -> dict[str, Any]:
    """Total memory (bytes, psutil) and the number of NUMA nodes (sysfs)."""
    out: dict[str, Any] = {"memory_total_bytes": int(psutil.virtual_memory().total)}
    nodes = [p for p in SYS_NODE.glob("node*") if p.name[4:].isdigit()]
    if nodes:
        out["numa_nodes"] = len(nodes)
    else:
        out["numa_nodes"] = None
        out["_unavailable"] = {"numa_nodes": f"no {SYS_NODE}/node* directories"}
    return out


def kernel_param(cmdline: str, name: str) -> str | None:
    """The value of one parameter on a kernel command line.

    Parameters
    ----------
    cmdline : str
        The command line (``/proc/cmdline``); what follows ``--`` is for init and ignored.
    name : str
        The parameter, e.g. ``isolcpus``.

    Returns
    -------
    str or None
        The value of the last ``name=value``, ``""`` for a bare flag, None when absent.
    """
    value: str | None = None
    for token in cmdline.split():
        if token == "--":
            break  # what follows is for init, not the kernel
        key, eq, val = token.partition("=")
        if key == name:
            value = val if eq else ""
    return value


def probe_kernel() -> dict[str, Any]:
    """Kernel release and version, its command line, and ``isolcpus``/``nohz_full`` on it."""
    out: dict[str, Any] = {
        "kernel_release": platform.release() or None,
        "kernel_version": platform.version() or None,
    }
    try:
        cmdline = read_text(PROC / "cmdline")
    except Unreadable as exc:
        out.update(kernel_cmdline=None, isolcpus=None, nohz_full=None)
        out["_unavailable"] = dict.fromkeys(("kernel_cmdline", "isolcpus", "nohz_full"), exc.reason)
        return out
    out["kernel_cmdline"] = cmdline
    out["isolcpus"] = kernel_param(cmdline, "isolcpus")
    out["nohz_full"] = kernel_param(cmdline, "nohz_full")
    return out


def probe_os_release() -> dict[str, Any]:
    """``PRETTY_NAME``, ``ID`` and ``VERSION_ID`` of /etc/os-release (platform module)."""
    try:
        info = platform.freedesktop_os_release()
    except OSError as exc:
        raise Unreadable(f"no /etc/os-release or /usr/lib/os-release ({exc})") from None
    return {
        "os_name": info.get("PRETTY_NAME") or info.get("NAME"),
        "os_id": info.get("ID"),
        "os_version_id": info.get("VERSION_ID"),
    }


def probe_libc() -> dict[str, Any]:
    """The C library and its version: ``os.confstr`` (glibc), else ``platform.libc_ver``."""
    try:
        value = os.confstr("CS_GNU_LIBC_VERSION")
    except (ValueError, OSError, AttributeError):
        value = None
    if not value:
        name, version = platform.libc_ver()
        value = f"{name} {version}".strip() if name else None
    if not value:
        raise Unreadable("neither os.confstr nor platform.libc_ver names the C library (musl?)")
    return {"libc": value}


def probe_python() -> dict[str, Any]:
    """Python version, implementation, build string, executable; benchrun version; host."""
    from benchrun.runner import __version__

    return {
        "python_version": platform.python_version(),
        "python_implementation": platform.python_implementation(),
        "python_build": sys.version,
        "python_executable": sys.executable or None,
        "benchrun_version": __version__,
        "hostname": socket.gethostname(),
        "platform": sys.platform,
    }
