"""Readers of hardware and software facts for the reproducibility record (docs/machine.md).

Each ``probe_*`` function reads one concept and returns its typed group of facts
(:mod:`runner.machine.facts`; a fact it could not read is None with its reason in the
group's ``unavailable``), or raises :class:`Unreadable` with a one-line reason. Paths are module constants read at call time,
so tests can point a probe at a fabricated tree; :mod:`runner.machine.envprobes` reads the
timer and the environment with the same conventions.
"""

from __future__ import annotations

import os
import platform
import re
import socket
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NamedTuple, TypeVar

import psutil

from benchrun.runner.config.cpulist import parse_kernel_cpu_list
from benchrun.runner.machine.facts import (
    Caches,
    Cores,
    CpuIdentity,
    Frequency,
    Kernel,
    Libc,
    Memory,
    OsRelease,
    PythonInfo,
    Smt,
)

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


T = TypeVar("T")


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


class CpuinfoNames(NamedTuple):
    """The names each fact of the CPU identity may have in one source, first one first."""

    model: tuple[str, ...]
    vendor: tuple[str, ...]
    flags: tuple[str, ...]
    microcode: tuple[str, ...]


#: the names in /proc/cpuinfo (x86, then ARM, then others)
CPUINFO_NAMES = CpuinfoNames(
    model=("model name", "Model", "cpu model"),
    vendor=("vendor_id", "CPU implementer"),
    flags=("flags", "Features"),
    microcode=("microcode",),
)
#: the names in py-cpuinfo's ``get_cpu_info()``
PY_CPUINFO_NAMES = CpuinfoNames(
    model=("brand_raw",), vendor=("vendor_id_raw",), flags=("flags",), microcode=()
)


def first_value(fields: Mapping[str, T], names: Sequence[str]) -> T | None:
    """The value of the first of ``names`` that ``fields`` has with a non-empty value, else
    None: a fact that key-value files (/proc/cpuinfo, os-release) name differently by
    architecture or distribution."""
    for name in names:
        value = fields.get(name)
        if value:
            return value
    return None


class CpuinfoBlock(NamedTuple):
    """The CPU identity as read from /proc/cpuinfo or py-cpuinfo (None: not given)."""

    model: str | None
    vendor: str | None
    flags: tuple[str, ...]
    microcode: str | None

    @classmethod
    def parse(cls, fields: Mapping[str, object], names: CpuinfoNames) -> CpuinfoBlock:
        """The identity in ``fields``: each fact under the first of its ``names`` that has
        a non-empty value; flags as a space-separated string or a list."""
        flags = first_value(fields, names.flags)
        if isinstance(flags, str):
            flags = flags.split()
        model, vendor = first_value(fields, names.model), first_value(fields, names.vendor)
        code = first_value(fields, names.microcode)
        return cls(
            str(model) if model is not None else None,
            str(vendor) if vendor is not None else None,
            tuple(str(f) for f in flags) if isinstance(flags, (list, tuple)) else (),
            str(code) if code is not None else None,
        )


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


def probe_cpu_identity() -> CpuIdentity:
    """CPU model, vendor, architecture, flags and microcode revision (``microcode``: the
    first CPU's ``microcode :`` line of /proc/cpuinfo, x86; None where the kernel does not
    give it).

    Read from /proc/cpuinfo (a few hundred microseconds); py-cpuinfo is the fallback only,
    because ``cpuinfo.get_cpu_info()`` measured 1.2 s on the development machine.
    """
    try:
        block = CpuinfoBlock.parse(_cpuinfo_first_block(), CPUINFO_NAMES)
        source = str(PROC / "cpuinfo")
        if not block.model:
            raise Unreadable(f"{source} has no model name")
    except Unreadable as first:
        try:
            import cpuinfo  # py-cpuinfo: slow, but portable

            info = cpuinfo.get_cpu_info()
            block = CpuinfoBlock.parse(info, PY_CPUINFO_NAMES)
        except Exception as exc:  # noqa: BLE001 - any failure of the fallback is a reason
            raise Unreadable(f"{first.reason}; py-cpuinfo failed: {exc}") from None
        source = "py-cpuinfo"
    flag_set = set(block.flags)
    return CpuIdentity(
        cpu_arch=platform.machine() or None,
        cpu_model=block.model,
        cpu_vendor=block.vendor,
        cpu_flags_count=len(flag_set),
        cpu_flags_notable=tuple(f for f in NOTABLE_FLAGS if f in flag_set),
        virtualized=("hypervisor" in flag_set) if flag_set else None,
        cpu_identity_source=source,
        microcode=block.microcode,
    )


def probe_cores() -> Cores:
    """Logical and physical core counts (psutil), online CPUs and the runner's affinity."""
    gone: dict[str, str] = {}
    physical = psutil.cpu_count(logical=False)
    if physical is None:
        gone["cores_physical"] = "psutil cannot count physical cores here"
    online: tuple[int, ...] | None = None
    try:
        online = parse_kernel_cpu_list(read_text(SYS_CPU / "online"))
    except Unreadable as exc:
        gone["cpus_online"] = exc.reason
    affinity: tuple[int, ...] | None = None
    if hasattr(os, "sched_getaffinity"):
        affinity = tuple(sorted(os.sched_getaffinity(0)))
    else:
        gone["runner_affinity"] = "os.sched_getaffinity is not available"
    return Cores(
        cores_logical=psutil.cpu_count(logical=True),
        cores_physical=physical,
        cpus_online=online,
        runner_affinity=affinity,
        unavailable=gone,
    )


def probe_smt(cpus_online: Sequence[int] | None) -> Smt:
    """SMT state (``smt/active``, ``smt/control``) and the SMT siblings of every online CPU.

    Parameters
    ----------
    cpus_online : sequence of int or None
        The online CPUs (from :func:`probe_cores`); None when unknown.

    Returns
    -------
    Smt
        ``smt_active``, ``smt_control`` and ``thread_siblings``, which maps a CPU number
        (as a string, for JSON) to the online CPUs that share its physical core, itself
        included; unreadable ones have their reason in ``unavailable``.
    """
    gone: dict[str, str] = {}
    active: bool | None = None
    try:
        active = read_text(SYS_CPU / "smt" / "active") == "1"
    except Unreadable as exc:
        logical, physical = psutil.cpu_count(), psutil.cpu_count(logical=False)
        if logical and physical:
            active = logical > physical
        else:
            gone["smt_active"] = exc.reason
    control: str | None = None
    try:
        control = read_text(SYS_CPU / "smt" / "control")
    except Unreadable as exc:
        gone["smt_control"] = exc.reason
    siblings: dict[str, tuple[int, ...]] | None = None
    try:
        siblings = _thread_siblings(cpus_online)
    except Unreadable as exc:
        gone["thread_siblings"] = exc.reason
    return Smt(smt_active=active, smt_control=control, thread_siblings=siblings, unavailable=gone)


def _thread_siblings(cpus_online: Sequence[int] | None) -> dict[str, tuple[int, ...]]:
    """Each online CPU (as a string) to the CPUs sharing its core (``thread_siblings_list``);
    :class:`Unreadable` when the online CPUs are unknown or one list is unreadable."""
    if not cpus_online:
        raise Unreadable("online CPUs unknown")
    return {
        str(cpu): parse_kernel_cpu_list(
            read_text(SYS_CPU / f"cpu{cpu}" / "topology" / "thread_siblings_list")
        )
        for cpu in cpus_online
    }


_SIZE_RE = re.compile(r"^\s*(\d+)\s*([KMG]?)", re.IGNORECASE)
_SIZE_UNIT = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3}


def probe_caches(cpu: int) -> Caches:
    """Cache sizes seen by one CPU, in bytes (one instance, not the sum over cores).

    Parameters
    ----------
    cpu : int
        The CPU whose ``/sys/devices/system/cpu/cpuN/cache/index*/{level,type,size}``
        are read.

    Returns
    -------
    Caches
        ``cache_l1d``, ``cache_l1i``, ``cache_l2``, ``cache_l3`` in bytes.

    Raises
    ------
    Unreadable
        The CPU has no cache directory.
    """
    base = SYS_CPU / f"cpu{cpu}" / "cache"
    if not base.is_dir():
        raise Unreadable(f"no {base}")
    sizes: dict[str, int] = {}
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
            key = f"cache_l{level}" if f"cache_l{level}" in Caches.keys() else None
        if key:
            sizes[key] = size
    found = {key: sizes.pop(key, None) for key in Caches.keys()}
    return Caches(
        cache_l1d=found["cache_l1d"],
        cache_l1i=found["cache_l1i"],
        cache_l2=found["cache_l2"],
        cache_l3=found["cache_l3"],
        unavailable={k: f"{base} lists no such cache" for k, v in found.items() if v is None},
    )


def _khz_to_mhz(path: Path) -> float:
    return int(read_text(path)) / 1000.0


def probe_frequency(cpu: int, cpus_online: Sequence[int] | None) -> Frequency:
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
    Frequency
        ``freq_min_mhz``, ``freq_max_mhz``, ``freq_current_mhz`` (MHz) and their source,
        ``scaling_driver``, ``governors`` (every online CPU to its scaling governor),
        ``governor`` (their common value or ``"mixed"``), ``turbo`` (True when turbo or
        boost is on) and ``turbo_control`` (the file that says so).
    """
    gone: dict[str, str] = {}
    cpufreq = SYS_CPU / f"cpu{cpu}" / "cpufreq"
    no_cpufreq = f"no {cpufreq} (no cpufreq driver: virtual machine or cpufreq disabled?)"
    have_cpufreq = cpufreq.is_dir()
    try:
        fallback = psutil.cpu_freq()
    except Exception:  # noqa: BLE001 - the fallback failing must not hide the sysfs facts
        fallback = None
    limits: dict[str, float | None] = {}
    for key, name, attr in (
        ("freq_min_mhz", "cpuinfo_min_freq", "min"),
        ("freq_max_mhz", "cpuinfo_max_freq", "max"),
    ):
        try:
            limits[key] = _khz_to_mhz(cpufreq / name)
        except (Unreadable, ValueError) as exc:
            value = getattr(fallback, attr, 0.0) if fallback is not None else 0.0
            limits[key] = float(value) if value else None
            if limits[key] is None:
                gone[key] = no_cpufreq if not have_cpufreq else getattr(exc, "reason", str(exc))
    current: float | None = None
    current_source: str | None = None
    try:
        current = _khz_to_mhz(cpufreq / "scaling_cur_freq")
        current_source = str(cpufreq / "scaling_cur_freq")
    except (Unreadable, ValueError):
        if fallback is not None and fallback.current:
            current = float(fallback.current)
            current_source = "psutil.cpu_freq (on a VM: the nominal value)"
        else:
            gone["freq_current_mhz"] = no_cpufreq
    driver: str | None = None
    try:
        driver = read_text(cpufreq / "scaling_driver")
    except Unreadable:
        gone["scaling_driver"] = no_cpufreq
    governors: dict[str, str] = {}
    for other in cpus_online or [cpu]:
        try:
            governors[str(other)] = read_text(
                SYS_CPU / f"cpu{other}" / "cpufreq" / "scaling_governor"
            )
        except Unreadable:
            pass
    governor: str | None = None
    if governors:
        values = set(governors.values())
        governor = values.pop() if len(values) == 1 else "mixed"
    else:
        gone["governor"] = gone["governors"] = no_cpufreq
    turbo = _probe_turbo(cpufreq)
    if turbo.turbo is None:
        gone["turbo"] = TURBO_UNEXPOSED
    return Frequency(
        freq_min_mhz=limits["freq_min_mhz"],
        freq_max_mhz=limits["freq_max_mhz"],
        freq_current_mhz=current,
        freq_current_source=current_source,
        scaling_driver=driver,
        governors=governors or None,
        governor=governor,
        turbo=turbo.turbo,
        turbo_control=turbo.control,
        unavailable=gone,
    )


#: why turbo is unknown when no control file exists
TURBO_UNEXPOSED = (
    "no intel_pstate/no_turbo nor cpufreq/boost "
    "(turbo not exposed: virtual machine or unsupported driver?)"
)


class Turbo(NamedTuple):
    """Turbo state (True: on; None: not exposed) and the file that says so."""

    turbo: bool | None
    control: str | None


def _probe_turbo(cpufreq: Path) -> Turbo:
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
        return Turbo(value == on_value, str(path))
    return Turbo(None, None)


def probe_memory_numa() -> Memory:
    """Total memory (bytes, psutil) and the number of NUMA nodes (sysfs)."""
    total = int(psutil.virtual_memory().total)
    nodes = [p for p in SYS_NODE.glob("node*") if p.name[4:].isdigit()]
    if nodes:
        return Memory(memory_total_bytes=total, numa_nodes=len(nodes))
    return Memory(
        memory_total_bytes=total,
        unavailable={"numa_nodes": f"no {SYS_NODE}/node* directories"},
    )


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


def probe_kernel() -> Kernel:
    """Kernel release and version, its command line, and ``isolcpus``/``nohz_full`` on it."""
    release, version = platform.release() or None, platform.version() or None
    try:
        cmdline = read_text(PROC / "cmdline")
    except Unreadable as exc:
        return Kernel(
            kernel_release=release,
            kernel_version=version,
            unavailable=dict.fromkeys(("kernel_cmdline", "isolcpus", "nohz_full"), exc.reason),
        )
    return Kernel(
        kernel_release=release,
        kernel_version=version,
        kernel_cmdline=cmdline,
        isolcpus=kernel_param(cmdline, "isolcpus"),
        nohz_full=kernel_param(cmdline, "nohz_full"),
    )


def probe_os_release() -> OsRelease:
    """``PRETTY_NAME``, ``ID`` and ``VERSION_ID`` of /etc/os-release (platform module)."""
    try:
        info = platform.freedesktop_os_release()
    except OSError as exc:
        raise Unreadable(f"no /etc/os-release or /usr/lib/os-release ({exc})") from None
    return OsRelease(
        os_name=first_value(info, ("PRETTY_NAME", "NAME")),
        os_id=first_value(info, ("ID",)),
        os_version_id=first_value(info, ("VERSION_ID",)),
    )


def probe_libc() -> Libc:
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
    return Libc(libc=value)


def probe_python() -> PythonInfo:
    """Python version, implementation, build string, executable; benchrun version; host."""
    from benchrun.runner import __version__

    return PythonInfo(
        python_version=platform.python_version(),
        python_implementation=platform.python_implementation(),
        python_build=sys.version,
        python_executable=sys.executable or None,
        benchrun_version=__version__,
        hostname=socket.gethostname(),
        platform=sys.platform,
    )
