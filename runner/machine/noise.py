"""Settings of the machine that add noise to measurements, and the commands that fix them.

Rules (docs/methods.md §11; HOEFLER Rule 10 asks that such settings be reported; pyperf's
``system tune`` and LibSciBench document the same list): frequency governor not
``performance``; turbo/boost on; an SMT sibling of a workload CPU online; 1-minute load
above 0.5 per logical CPU; ASLR on; no isolated CPUs (or workload CPUs not among them).

A fact the record could not read (``null`` with a reason in ``_unavailable``) produces no
warning; :func:`unknown_noise_settings` lists it so the user knows it was not checked.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from benchrun.runner.machine.probes import format_cpu_list

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


def _get(meta: Mapping[str, Any], section: str, key: str) -> tuple[Any, str | None]:
    """(value, reason-if-unreadable) of one fact of the record."""
    sec = meta.get(section) or {}
    gone = sec.get("_unavailable") or {}
    if key in gone:
        return None, str(gone[key])
    if "*" in gone:
        return None, str(gone["*"])
    if key not in sec:
        return None, "not in the record"
    return sec[key], None


def _cpus(meta: Mapping[str, Any], workload_cpus: Sequence[int] | None) -> list[int] | None:
    if workload_cpus is not None:
        return sorted({int(c) for c in workload_cpus})
    recorded = (meta.get("environment") or {}).get("workload_cpus")
    return sorted({int(c) for c in recorded}) if recorded else None


def _assess(
    meta: Mapping[str, Any], workload_cpus: Sequence[int] | None
) -> tuple[list[NoiseWarning], list[tuple[str, str]]]:
    """Apply every rule; return the warnings and the (setting, reason) pairs not checked."""
    cpus = _cpus(meta, workload_cpus)
    cpu_text = format_cpu_list(cpus) if cpus else "<cpus>"
    warnings: list[NoiseWarning] = []
    unknown: list[tuple[str, str]] = []

    # 1. frequency governor
    governors, reason = _get(meta, "hardware", "governors")
    if governors is None:
        unknown.append(("CPU frequency governor", reason or "not recorded"))
    else:
        checked = {c: g for c, g in governors.items() if cpus is None or int(c) in cpus}
        bad = {c: g for c, g in checked.items() if g != "performance"}
        if bad:
            found = ", ".join(sorted(set(bad.values())))
            where = format_cpu_list(int(c) for c in bad)
            target = f"-c {format_cpu_list(int(c) for c in bad)} " if cpus else ""
            warnings.append(
                NoiseWarning(
                    "CPU frequency governor",
                    f"{found} on CPU {where}",
                    "the clock speed follows the load, so equal work takes unequal time "
                    "from round to round",
                    f"sudo cpupower {target}frequency-set -g performance",
                )
            )

    # 2. turbo / boost
    turbo, reason = _get(meta, "hardware", "turbo")
    control = (meta.get("hardware") or {}).get("turbo_control") or ""
    if turbo is None:
        unknown.append(("turbo boost", reason or "not recorded"))
    elif turbo:
        if control.endswith("no_turbo"):
            fix = f"echo 1 | sudo tee {control}"
        else:
            fix = f"echo 0 | sudo tee {control or '/sys/devices/system/cpu/cpufreq/boost'}"
        warnings.append(
            NoiseWarning(
                "turbo boost",
                f"on ({control})" if control else "on",
                "the clock rises above nominal only while power and temperature allow, "
                "so the speed depends on what ran before and on the room",
                fix,
            )
        )

    # 3. SMT siblings of the workload CPUs
    siblings, reason = _get(meta, "hardware", "thread_siblings")
    smt_active, smt_reason = _get(meta, "hardware", "smt_active")
    if cpus is not None and siblings is not None:
        busy = sorted(
            {s for c in cpus for s in siblings.get(str(c), []) if s != c and s not in cpus}
        )
        if busy:
            if len(busy) == 1:
                fix = f"echo 0 | sudo tee /sys/devices/system/cpu/cpu{busy[0]}/online"
            else:
                listed = " ".join(str(s) for s in busy)
                fix = (
                    f"for c in {listed}; do echo 0 | sudo tee "
                    "/sys/devices/system/cpu/cpu$c/online; done"
                )
            warnings.append(
                NoiseWarning(
                    "SMT sibling online",
                    f"CPU {format_cpu_list(busy)} shares a core with workload CPU {cpu_text}",
                    "whatever runs on the sibling competes for the same core's execution "
                    "units and caches",
                    fix,
                )
            )
    else:
        if smt_active is None and siblings is not None:
            smt_active = any(len(group) > 1 for group in siblings.values())
        if smt_active is None:
            unknown.append(("SMT siblings", reason or smt_reason or "not recorded"))
        elif smt_active:
            warnings.append(
                NoiseWarning(
                    "SMT (hyper-threading)",
                    "active",
                    "two logical CPUs share one core's execution units and caches; a "
                    "workload may share its core with anything",
                    "echo off | sudo tee /sys/devices/system/cpu/smt/control",
                )
            )

    # 4. load
    load, reason = _get(meta, "environment", "load_average")
    logical, lreason = _get(meta, "hardware", "cores_logical")
    if load is None or not logical:
        unknown.append(("load average", reason or lreason or "not recorded"))
    else:
        per_cpu = float(load[0]) / int(logical)
        if per_cpu > LOAD_PER_CPU_LIMIT:
            warnings.append(
                NoiseWarning(
                    "load average",
                    f"{float(load[0]):.2f} over {logical} CPUs ({per_cpu:.2f} per CPU, "
                    f"limit {LOAD_PER_CPU_LIMIT})",
                    "other processes compete for CPUs, caches and memory bandwidth",
                    "top -o %CPU   # stop or pause what is running, then measure",
                )
            )

    # 5. ASLR
    aslr, reason = _get(meta, "environment", "aslr")
    if aslr is None:
        unknown.append(("ASLR", reason or "not recorded"))
    elif int(aslr) != 0:
        warnings.append(
            NoiseWarning(
                "ASLR",
                f"randomize_va_space = {aslr}",
                "addresses of stack, heap and libraries change every run, which changes "
                "cache and TLB alignment and so the time (or run workloads under setarch -R)",
                "echo 0 | sudo tee /proc/sys/kernel/randomize_va_space",
            )
        )

    # 6. isolated CPUs
    isolated, reason = _get(meta, "environment", "isolated_cpus")
    grub = (
        f"add 'isolcpus={cpu_text} nohz_full={cpu_text} rcu_nocbs={cpu_text}' to "
        "GRUB_CMDLINE_LINUX in /etc/default/grub, then sudo update-grub and reboot"
    )
    if isolated is None:
        unknown.append(("isolated CPUs", reason or "not recorded"))
    elif not isolated:
        warnings.append(
            NoiseWarning(
                "isolated CPUs",
                "none",
                "the scheduler may put any task (and interrupts) on the workload CPUs",
                grub,
            )
        )
    elif cpus is not None and not set(cpus) <= set(isolated):
        missing = sorted(set(cpus) - set(isolated))
        warnings.append(
            NoiseWarning(
                "isolated CPUs",
                f"{format_cpu_list(isolated)} isolated; workload CPU "
                f"{format_cpu_list(missing)} is not",
                "the scheduler may put any task on a workload CPU that is not isolated",
                grub,
            )
        )
    return warnings, unknown


def noise_warnings(
    meta: Mapping[str, Any], workload_cpus: Sequence[int] | None = None
) -> list[NoiseWarning]:
    """The noise settings found in a record from :func:`runner.machine.metadata.collect_metadata`.

    ``workload_cpus`` defaults to the record's ``environment.workload_cpus``; when neither
    is known, per-CPU rules look at every CPU (governor) or the machine (SMT).
    """
    return _assess(meta, workload_cpus)[0]


def unknown_noise_settings(
    meta: Mapping[str, Any], workload_cpus: Sequence[int] | None = None
) -> list[tuple[str, str]]:
    """(setting, reason) for each noise rule that could not be checked (fact unreadable)."""
    return _assess(meta, workload_cpus)[1]
