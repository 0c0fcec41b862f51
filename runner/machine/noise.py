"""Settings of the machine that add noise to measurements, and the commands that fix them.

One small rule function per setting (governor, turbo, SMT, load, ASLR, isolated CPUs),
applied in the order of :data:`RULES`; the rules and their sources are in docs/machine.md.
A fact the record could not read gives no warning, only an :class:`Unchecked` finding.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass

from benchrun.runner.config.cpulist import format_cpu_list
from benchrun.runner.machine.facts import Facts, MachineFacts

#: the load (runnable tasks, 1-minute average) per logical CPU above which we warn
LOAD_PER_CPU_LIMIT = 0.5


@dataclass(frozen=True)
class NoiseWarning:
    """One setting that adds noise: what it is, what was found, why it matters, the fix."""

    setting: str
    found: str
    why: str
    fix_command: str

    def to_dict(self) -> dict[str, str]:
        """JSON-serialisable form."""
        return asdict(self)


@dataclass(frozen=True)
class Unchecked:
    """A setting a rule could not check, because the record could not read its fact."""

    setting: str
    reason: str


#: what a rule reports: a warning, or that it could not check its setting
Finding = NoiseWarning | Unchecked
#: a rule: (record, workload CPUs or None) -> zero or more findings
Rule = Callable[[MachineFacts, list[int] | None], list[Finding]]


def _reason(group: Facts, key: str) -> str | None:
    """Why fact ``key`` of ``group`` cannot be checked: its stored reason (or the whole
    section's), ``not in the record`` when the record lacks it; None when it was read."""
    own = group.unavailable.get(key)
    if own is not None:
        return own
    if group.section_failed is not None:
        return group.section_failed
    return "not in the record" if key in group.absent else None


def _cpus(meta: MachineFacts, workload_cpus: Sequence[int] | None) -> list[int] | None:
    """The workload CPUs: as given, else as recorded, else None (not known)."""
    if workload_cpus is not None:
        return sorted({int(c) for c in workload_cpus})
    recorded = meta.environment.workload_cpus
    return sorted(set(recorded)) if recorded else None


def _cpu_text(cpus: list[int] | None) -> str:
    return format_cpu_list(cpus) if cpus else "<cpus>"


def governor_rule(meta: MachineFacts, cpus: list[int] | None) -> list[Finding]:
    """Warn when a workload CPU (every CPU if none is known) is not on ``performance``.

    Parameters
    ----------
    meta : MachineFacts
        A record (:func:`runner.machine.metadata.collect_facts`, or a stored one parsed).
    cpus : list of int or None
        The workload CPUs, sorted; None when not known.

    Returns
    -------
    list of Finding
        One :class:`NoiseWarning`, one :class:`Unchecked`, or nothing.
    """
    freq = meta.hardware.frequency
    governors = freq.governors
    if governors is None:
        return [Unchecked("CPU frequency governor", _reason(freq, "governors") or "not recorded")]
    checked = {c: g for c, g in governors.items() if cpus is None or int(c) in cpus}
    bad = {c: g for c, g in checked.items() if g != "performance"}
    if not bad:
        return []
    found = ", ".join(sorted(set(bad.values())))
    where = format_cpu_list(int(c) for c in bad)
    target = f"-c {where} " if cpus else ""
    return [
        NoiseWarning(
            "CPU frequency governor",
            f"{found} on CPU {where}",
            "the clock speed follows the load, so equal work takes unequal time "
            "from round to round",
            f"sudo cpupower {target}frequency-set -g performance",
        )
    ]


def turbo_rule(meta: MachineFacts, cpus: list[int] | None) -> list[Finding]:
    """Warn when turbo boost is on; the fix writes the control file the record names.

    Parameters and return as in :func:`governor_rule` (``cpus`` is not used).
    """
    freq = meta.hardware.frequency
    turbo, control = freq.turbo, freq.turbo_control or ""
    if turbo is None:
        return [Unchecked("turbo boost", _reason(freq, "turbo") or "not recorded")]
    if not turbo:
        return []
    if control.endswith("no_turbo"):
        fix = f"echo 1 | sudo tee {control}"
    else:
        fix = f"echo 0 | sudo tee {control or '/sys/devices/system/cpu/cpufreq/boost'}"
    return [
        NoiseWarning(
            "turbo boost",
            f"on ({control})" if control else "on",
            "the clock rises above nominal only while power and temperature allow, "
            "so the speed depends on what ran before and on the room",
            fix,
        )
    ]


def smt_rule(meta: MachineFacts, cpus: list[int] | None) -> list[Finding]:
    """Warn when an SMT sibling of a workload CPU is online (not itself a workload CPU);
    with no workload CPUs or no sibling map, warn when SMT is active at all.

    Parameters and return as in :func:`governor_rule`.
    """
    smt = meta.hardware.smt
    siblings, smt_active = smt.thread_siblings, smt.smt_active
    if cpus is not None and siblings is not None:
        busy = sorted(
            {s for c in cpus for s in siblings.get(str(c), ()) if s != c and s not in cpus}
        )
        if not busy:
            return []
        if len(busy) == 1:
            fix = f"echo 0 | sudo tee /sys/devices/system/cpu/cpu{busy[0]}/online"
        else:
            listed = " ".join(str(s) for s in busy)
            fix = (
                f"for c in {listed}; do echo 0 | sudo tee "
                "/sys/devices/system/cpu/cpu$c/online; done"
            )
        return [
            NoiseWarning(
                "SMT sibling online",
                f"CPU {format_cpu_list(busy)} shares a core with workload CPU {_cpu_text(cpus)}",
                "whatever runs on the sibling competes for the same core's execution "
                "units and caches",
                fix,
            )
        ]
    if smt_active is None and siblings is not None:
        smt_active = any(len(group) > 1 for group in siblings.values())
    if smt_active is None:
        why = _reason(smt, "thread_siblings") or _reason(smt, "smt_active")
        return [Unchecked("SMT siblings", why or "not recorded")]
    if not smt_active:
        return []
    return [
        NoiseWarning(
            "SMT (hyper-threading)",
            "active",
            "two logical CPUs share one core's execution units and caches; a "
            "workload may share its core with anything",
            "echo off | sudo tee /sys/devices/system/cpu/smt/control",
        )
    ]


def load_rule(meta: MachineFacts, cpus: list[int] | None) -> list[Finding]:
    """Warn when the 1-minute load per logical CPU is above :data:`LOAD_PER_CPU_LIMIT`.

    Parameters and return as in :func:`governor_rule` (``cpus`` is not used).
    """
    load, logical = meta.environment.load.load_average, meta.hardware.cores.cores_logical
    if not load or not logical:
        why = _reason(meta.environment.load, "load_average") or _reason(
            meta.hardware.cores, "cores_logical"
        )
        return [Unchecked("load average", why or "not recorded")]
    per_cpu = float(load[0]) / int(logical)
    if per_cpu <= LOAD_PER_CPU_LIMIT:
        return []
    return [
        NoiseWarning(
            "load average",
            f"{float(load[0]):.2f} over {logical} CPUs ({per_cpu:.2f} per CPU, "
            f"limit {LOAD_PER_CPU_LIMIT})",
            "other processes compete for CPUs, caches and memory bandwidth",
            "top -o %CPU   # stop or pause what is running, then measure",
        )
    ]


def aslr_rule(meta: MachineFacts, cpus: list[int] | None) -> list[Finding]:
    """Warn when address-space layout randomisation is on (``randomize_va_space`` != 0).

    Parameters and return as in :func:`governor_rule` (``cpus`` is not used).
    """
    aslr = meta.environment.aslr.aslr
    if aslr is None:
        return [Unchecked("ASLR", _reason(meta.environment.aslr, "aslr") or "not recorded")]
    if aslr == 0:
        return []
    return [
        NoiseWarning(
            "ASLR",
            f"randomize_va_space = {aslr}",
            "addresses of stack, heap and libraries change every run, which changes "
            "cache and TLB alignment and so the time (or run workloads under setarch -R)",
            "echo 0 | sudo tee /proc/sys/kernel/randomize_va_space",
        )
    ]


def isolation_rule(meta: MachineFacts, cpus: list[int] | None) -> list[Finding]:
    """Warn when no CPU is isolated, or a workload CPU is not among the isolated ones.

    Parameters and return as in :func:`governor_rule`.
    """
    isolated = meta.environment.isolation.isolated_cpus
    cpu_text = _cpu_text(cpus)
    grub = (
        f"add 'isolcpus={cpu_text} nohz_full={cpu_text} rcu_nocbs={cpu_text}' to "
        "GRUB_CMDLINE_LINUX in /etc/default/grub, then sudo update-grub and reboot"
    )
    if isolated is None:
        why = _reason(meta.environment.isolation, "isolated_cpus")
        return [Unchecked("isolated CPUs", why or "not recorded")]
    if not isolated:
        return [
            NoiseWarning(
                "isolated CPUs",
                "none",
                "the scheduler may put any task (and interrupts) on the workload CPUs",
                grub,
            )
        ]
    if cpus is None or set(cpus) <= set(isolated):
        return []
    missing = sorted(set(cpus) - set(isolated))
    return [
        NoiseWarning(
            "isolated CPUs",
            f"{format_cpu_list(isolated)} isolated; workload CPU {format_cpu_list(missing)} is not",
            "the scheduler may put any task on a workload CPU that is not isolated",
            grub,
        )
    ]


#: every rule, in the order its findings are listed
RULES: tuple[Rule, ...] = (
    governor_rule,
    turbo_rule,
    smt_rule,
    load_rule,
    aslr_rule,
    isolation_rule,
)


def assess(
    meta: MachineFacts | Mapping[str, object], workload_cpus: Sequence[int] | None = None
) -> list[Finding]:
    """Apply every rule of :data:`RULES` to a record.

    Parameters
    ----------
    meta : MachineFacts or Mapping
        A record, or the stored JSON object of one (parsed with
        :meth:`MachineFacts.from_stored`).
    workload_cpus : sequence of int, optional
        The CPUs the workloads run on; defaults to the record's
        ``environment.workload_cpus``. When neither is known, per-CPU rules look at every
        CPU (governor) or at the machine (SMT).

    Returns
    -------
    list of Finding
        The findings of every rule, in rule order.
    """
    facts = MachineFacts.from_stored(meta)
    cpus = _cpus(facts, workload_cpus)
    return [finding for rule in RULES for finding in rule(facts, cpus)]


def noise_warnings(
    meta: MachineFacts | Mapping[str, object], workload_cpus: Sequence[int] | None = None
) -> list[NoiseWarning]:
    """The noise settings found in a record, in rule order.

    Parameters are those of :func:`assess`.

    Returns
    -------
    list of NoiseWarning
        One per setting that adds noise; empty on a well-tuned machine.
    """
    return [f for f in assess(meta, workload_cpus) if isinstance(f, NoiseWarning)]


def unknown_noise_settings(
    meta: MachineFacts | Mapping[str, object], workload_cpus: Sequence[int] | None = None
) -> list[tuple[str, str]]:
    """The settings that could not be checked because their fact was unreadable.

    Parameters are those of :func:`assess`.

    Returns
    -------
    list of (str, str)
        ``(setting, reason)`` pairs, in rule order.
    """
    return [(f.setting, f.reason) for f in assess(meta, workload_cpus) if isinstance(f, Unchecked)]
