"""What ``benchrun system tune`` changes: each setting's file, its value now, its tuned value.

One plan function per setting (governor, turbo, perf sampling rate, ASLR, SMT siblings, IRQ
affinity), each returning the :class:`Step` s to make and the :class:`Skip` s (what this
machine lacks, what is tuned already); :func:`plan` puts them in the order they are made.
The files are those runner/machine/probes.py reads and runner/machine/noise.py names in
its fixes (docs/tuning.md "What is tuned"); each function takes ``root``, the directory
that stands for ``/`` (a fake sysfs/procfs tree in tests). Nothing here writes.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from benchrun.runner.config.cpulist import format_cpu_list, parse_kernel_cpu_list

#: the value ``perf_event_max_sample_rate`` is lowered to (what pyperf's ``system tune``
#: writes): a sampling perf event interrupts a benchmark at most once a second
SAMPLE_RATE = "1"
#: sysfs and procfs files, relative to the root
CPU_DIR = "sys/devices/system/cpu"
SAMPLE_RATE_PATH = "proc/sys/kernel/perf_event_max_sample_rate"
ASLR_PATH = "proc/sys/kernel/randomize_va_space"
IRQ_DIR = "proc/irq"
NO_TURBO_PATH = f"{CPU_DIR}/intel_pstate/no_turbo"
BOOST_PATH = f"{CPU_DIR}/cpufreq/boost"


@dataclass(frozen=True)
class Step:
    """A planned change: the setting, its file (relative to the root), its value now and
    the value to write."""

    setting: str
    path: str
    before: str
    target: str


@dataclass(frozen=True)
class Skip:
    """A setting left as it is, and why. ``kind``: ``absent`` (this machine does not have
    it), ``done`` (already as tuned), ``root`` (needs root), ``refused`` (the kernel
    refused the write)."""

    setting: str
    reason: str
    kind: str


# -- reading and writing the kernel's files -------------------------------------------


def read_value(path: Path) -> str:
    """The stripped content of a sysfs or procfs file (``OSError`` as the kernel says)."""
    with open(path, encoding="ascii", errors="replace") as f:
        return f.read(65536).strip()


def write_value(path: Path, value: str) -> None:
    """Write ``value`` and a newline to a sysfs or procfs file in one ``write``, never
    through a symbolic link at its last component; ``OSError`` when the kernel refuses."""
    fd = os.open(path, os.O_WRONLY | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        os.write(fd, (value + "\n").encode("ascii"))
    finally:
        os.close(fd)


def read_or_none(root: Path, rel: str) -> str | None:
    """The value of file ``rel`` under ``root``, None when it cannot be read (absent)."""
    try:
        return read_value(root / rel)
    except OSError:
        return None


def parse_mask(text: str) -> set[int]:
    """The CPUs of a kernel hex mask (``/proc/irq/default_smp_affinity``: ``3``,
    ``ff,ffffffff``)."""
    bits = int(text.replace(",", ""), 16)
    return {i for i in range(bits.bit_length()) if bits >> i & 1}


def format_mask(cpus: Iterable[int], like: str) -> str:
    """``cpus`` as a kernel hex mask as wide as ``like`` (32-bit groups joined by commas)."""
    width = len(like.replace(",", ""))
    digits = format(sum(1 << c for c in set(cpus)), f"0{width}x")
    groups: list[str] = []
    while digits:
        groups.insert(0, digits[-8:])
        digits = digits[:-8]
    return ",".join(groups)


def online_cpus(root: Path) -> list[int]:
    """The online CPUs (``/sys/devices/system/cpu/online``); [] when unreadable."""
    text = read_or_none(root, f"{CPU_DIR}/online")
    try:
        return list(parse_kernel_cpu_list(text)) if text else []
    except ValueError:
        return []


# -- what to change --------------------------------------------------------------------


def governor_plan(root: Path, cpus: Sequence[int]) -> tuple[list[Step], list[Skip]]:
    """``performance`` for each of ``cpus`` whose cpufreq governor is another one."""
    steps, absent, done = [], [], []
    for cpu in cpus:
        rel = f"{CPU_DIR}/cpu{cpu}/cpufreq/scaling_governor"
        now = read_or_none(root, rel)
        if now is None:
            absent.append(cpu)
            continue
        offered = read_or_none(root, f"{CPU_DIR}/cpu{cpu}/cpufreq/scaling_available_governors")
        if offered is not None and "performance" not in offered.split():
            absent.append(cpu)
        elif now == "performance":
            done.append(cpu)
        else:
            steps.append(Step(f"governor CPU {cpu}", rel, now, "performance"))
    skips = []
    if absent:
        skips.append(
            Skip(
                "CPU frequency governor",
                f"no cpufreq performance governor on CPU {format_cpu_list(absent)} "
                "(no cpufreq driver: virtual machine or cpufreq disabled?)",
                "absent",
            )
        )
    if done:
        skips.append(
            Skip(
                "CPU frequency governor",
                f"performance already on CPU {format_cpu_list(done)}",
                "done",
            )
        )
    return steps, skips


def turbo_plan(root: Path) -> tuple[list[Step], list[Skip]]:
    """Turbo off: intel_pstate ``no_turbo`` 1, else cpufreq ``boost`` 0."""
    for rel, off in ((NO_TURBO_PATH, "1"), (BOOST_PATH, "0")):
        now = read_or_none(root, rel)
        if now is None:
            continue
        name = f"turbo ({rel.rsplit('/', 1)[-1]})"
        if now == off:
            return [], [Skip(name, "already off", "done")]
        return [Step(name, rel, now, off)], []
    return [], [
        Skip(
            "turbo",
            "no intel_pstate/no_turbo nor cpufreq/boost (turbo not exposed: virtual machine?)",
            "absent",
        )
    ]


def sample_rate_plan(root: Path) -> tuple[list[Step], list[Skip]]:
    """``perf_event_max_sample_rate`` lowered to :data:`SAMPLE_RATE`."""
    now = read_or_none(root, SAMPLE_RATE_PATH)
    name = "perf_event_max_sample_rate"
    if now is None:
        return [], [Skip(name, f"no /{SAMPLE_RATE_PATH} (kernel without perf events?)", "absent")]
    if now == SAMPLE_RATE:
        return [], [Skip(name, f"already {SAMPLE_RATE}", "done")]
    return [Step(name, SAMPLE_RATE_PATH, now, SAMPLE_RATE)], []


def aslr_plan(root: Path) -> tuple[list[Step], list[Skip]]:
    """ASLR off (``randomize_va_space`` 0)."""
    now = read_or_none(root, ASLR_PATH)
    if now is None:
        return [], [Skip("ASLR", f"no /{ASLR_PATH}", "absent")]
    if now == "0":
        return [], [Skip("ASLR", "already off", "done")]
    return [Step("ASLR (randomize_va_space)", ASLR_PATH, now, "0")], []


def smt_plan(root: Path, cpus: Sequence[int]) -> tuple[list[Step], list[Skip]]:
    """Each online SMT sibling of a benchmark CPU that is not one itself: offline."""
    siblings: set[int] = set()
    for cpu in cpus:
        text = read_or_none(root, f"{CPU_DIR}/cpu{cpu}/topology/thread_siblings_list")
        if text is None:
            return [], [Skip("SMT siblings", f"no topology of CPU {cpu}", "absent")]
        siblings |= set(parse_kernel_cpu_list(text)) - set(cpus)
    if not siblings:
        control = read_or_none(root, f"{CPU_DIR}/smt/control")
        why = f" (smt/control: {control})" if control else ""
        return [], [
            Skip(
                "SMT siblings",
                f"CPU {format_cpu_list(cpus)} has no other thread online{why}",
                "done",
            )
        ]
    steps, skips = [], []
    for sib in sorted(siblings):
        rel = f"{CPU_DIR}/cpu{sib}/online"
        now = read_or_none(root, rel)
        if now is None:
            skips.append(
                Skip(f"SMT sibling CPU {sib}", "cannot be taken offline (no online file)", "absent")
            )
        elif now == "1":
            steps.append(Step(f"SMT sibling CPU {sib} online", rel, now, "0"))
    return steps, skips


def irq_plan(
    root: Path, cpus: Sequence[int], offline: Iterable[int] = ()
) -> tuple[list[Step], list[Skip]]:
    """Every IRQ whose affinity includes a benchmark CPU: that CPU removed (to the other
    online CPUs when none would be left); the default affinity of new IRQs likewise.
    ``offline``: CPUs the plan takes offline (SMT siblings)."""
    bench = set(cpus)
    rest = sorted(set(online_cpus(root)) - bench - set(offline))
    if not rest:
        return [], [
            Skip(
                "IRQ affinity",
                "every online CPU is a benchmark CPU: no CPU to move IRQs to",
                "absent",
            )
        ]
    irq_root = root / IRQ_DIR
    try:
        names = sorted((n for n in os.listdir(irq_root) if n.isdigit()), key=int)
    except OSError:
        return [], [Skip("IRQ affinity", f"no /{IRQ_DIR}", "absent")]
    steps = []
    for n in names:
        rel = f"{IRQ_DIR}/{n}/smp_affinity_list"
        now = read_or_none(root, rel)
        if now is None:
            continue
        try:
            current = set(parse_kernel_cpu_list(now))
        except ValueError:
            continue
        if current & bench:
            target = sorted(current - bench - set(offline)) or rest
            steps.append(Step(f"IRQ {n} affinity", rel, now, format_cpu_list(target)))
    rel = f"{IRQ_DIR}/default_smp_affinity"
    now = read_or_none(root, rel)
    if now is not None:
        try:
            current = parse_mask(now)
        except ValueError:
            current = set()
        if current & bench:
            target = sorted(current - bench - set(offline)) or rest
            steps.append(Step("default IRQ affinity", rel, now, format_mask(target, now)))
    skips = (
        [] if steps else [Skip("IRQ affinity", f"no IRQ on CPU {format_cpu_list(cpus)}", "done")]
    )
    return steps, skips


def plan(
    root: Path, cpus: Sequence[int] | None, *, aslr: bool = False
) -> tuple[list[Step], list[Skip]]:
    """Every change a tune makes, in the order made (restored in reverse): governor,
    turbo, sample rate, ASLR (``aslr``), SMT siblings, IRQ affinity. ``cpus``: the
    benchmark CPUs; None (not pinned): governors of every online CPU, no SMT nor IRQ step."""
    steps: list[Step] = []
    skips: list[Skip] = []
    bench = list(cpus) if cpus is not None else online_cpus(root)
    parts = [governor_plan(root, bench), turbo_plan(root), sample_rate_plan(root)]
    if aslr:
        parts.append(aslr_plan(root))
    if cpus is None:
        parts.append(
            ([], [Skip("SMT siblings and IRQ affinity", "no benchmark CPUs (pin: none)", "absent")])
        )
    else:
        smt = smt_plan(root, cpus)
        offline = [int(Path(s.path).parent.name[len("cpu") :]) for s in smt[0]]
        parts += [smt, irq_plan(root, cpus, offline)]
    for s, k in parts:
        steps += s
        skips += k
    return steps, skips
