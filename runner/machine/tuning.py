"""``benchrun system tune`` / ``reset`` and ``settings.tune``: quiet kernel settings, restored.

What is tuned, where the machine has it and allows it (docs/tuning.md): the cpufreq
governor of each benchmark CPU (``performance``), turbo/boost (off), the perf sampling rate
limit (``perf_event_max_sample_rate``, lowered to :data:`SAMPLE_RATE`), the SMT siblings of
the benchmark CPUs (offline), the IRQ affinities (off the benchmark CPUs), and on request
ASLR (off). The files are those runner/machine/probes.py reads and runner/machine/noise.py
names in its fixes. Every previous value goes to the journal (runner/machine/tuning_journal.py)
before the file is written; :func:`restore` writes the journalled values back in reverse
order and removes the journal only when every one was taken.

Every function takes ``root``, the directory that stands for ``/`` (a fake sysfs/procfs
tree in tests).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from benchrun.runner.config.cpulist import format_cpu_list, parse_kernel_cpu_list
from benchrun.runner.errors import UserError
from benchrun.runner.machine.tuning_journal import (
    Entry,
    Journal,
    JournalStore,
    Owner,
    is_missing,
    journal_dir,
)

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


@dataclass(frozen=True)
class TuneReport:
    """What a tune did: the changes (before and after, in the order made), what was left
    and why, the journal that holds the previous values."""

    changes: tuple[Entry, ...]
    skipped: tuple[Skip, ...]
    journal: str

    def to_dict(self) -> dict[str, Any]:
        """JSON form (the campaign's metadata and ``tuned`` event)."""
        return {
            "journal": self.journal,
            "changes": [asdict(e) for e in self.changes],
            "skipped": [asdict(s) for s in self.skipped],
        }

    @property
    def needs_root(self) -> tuple[Skip, ...]:
        """The settings left because only root may write them."""
        return tuple(s for s in self.skipped if s.kind == "root")


@dataclass(frozen=True)
class ResetReport:
    """What a restore did: the entries written back (in the order written), those the
    kernel refused (each with why; kept in the journal), those whose file is gone, and
    whether the journal was removed."""

    restored: tuple[Entry, ...]
    refused: tuple[tuple[Entry, str], ...]
    gone: tuple[Entry, ...]
    journal: str
    removed: bool
    owner: Owner | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON form (the campaign's ``tuning-restored`` event)."""
        return {
            "journal": self.journal,
            "journal_removed": self.removed,
            "restored": [asdict(e) for e in self.restored],
            "refused": [{**asdict(e), "reason": why} for e, why in self.refused],
            "gone": [asdict(e) for e in self.gone],
            "owner": asdict(self.owner) if self.owner else None,
        }

    def lines(self) -> list[str]:
        """One line per refused value, one for the gone ones, one summary."""
        out = [
            f"{e.setting}: the kernel refused {e.before!r} ({why}); kept in {self.journal}"
            for e, why in self.refused
        ]
        if self.gone:
            out.append(
                f"{len(self.gone)} setting(s) no longer exist, nothing to restore: "
                + ", ".join(e.setting for e in self.gone)
            )
        if self.restored:
            out.append(
                f"restored {len(self.restored)} setting(s): "
                + "; ".join(change_lines(self.restored, back=True))
            )
        return out


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


def _read(root: Path, rel: str) -> str | None:
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
    text = _read(root, f"{CPU_DIR}/online")
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
        now = _read(root, rel)
        if now is None:
            absent.append(cpu)
            continue
        offered = _read(root, f"{CPU_DIR}/cpu{cpu}/cpufreq/scaling_available_governors")
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
        now = _read(root, rel)
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
    now = _read(root, SAMPLE_RATE_PATH)
    name = "perf_event_max_sample_rate"
    if now is None:
        return [], [Skip(name, f"no /{SAMPLE_RATE_PATH} (kernel without perf events?)", "absent")]
    if now == SAMPLE_RATE:
        return [], [Skip(name, f"already {SAMPLE_RATE}", "done")]
    return [Step(name, SAMPLE_RATE_PATH, now, SAMPLE_RATE)], []


def aslr_plan(root: Path) -> tuple[list[Step], list[Skip]]:
    """ASLR off (``randomize_va_space`` 0)."""
    now = _read(root, ASLR_PATH)
    if now is None:
        return [], [Skip("ASLR", f"no /{ASLR_PATH}", "absent")]
    if now == "0":
        return [], [Skip("ASLR", "already off", "done")]
    return [Step("ASLR (randomize_va_space)", ASLR_PATH, now, "0")], []


def smt_plan(root: Path, cpus: Sequence[int]) -> tuple[list[Step], list[Skip]]:
    """Each online SMT sibling of a benchmark CPU that is not one itself: offline."""
    siblings: set[int] = set()
    for cpu in cpus:
        text = _read(root, f"{CPU_DIR}/cpu{cpu}/topology/thread_siblings_list")
        if text is None:
            return [], [Skip("SMT siblings", f"no topology of CPU {cpu}", "absent")]
        siblings |= set(parse_kernel_cpu_list(text)) - set(cpus)
    if not siblings:
        control = _read(root, f"{CPU_DIR}/smt/control")
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
        now = _read(root, rel)
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
        now = _read(root, rel)
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
    now = _read(root, rel)
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


# -- tune and restore ------------------------------------------------------------------


def _may_write(path: Path) -> bool:
    return os.geteuid() == 0 or os.access(path, os.W_OK)


def tune_locked(
    store: JournalStore, root: Path, cpus: Sequence[int] | None, owner: Owner, *, aslr: bool = False
) -> TuneReport:
    """Make the changes of :func:`plan` that this process may write.

    Every previous value is written to the journal (one durable write) before the first
    change; then each file is written and read back; a write the kernel refuses is taken
    out of the journal again (at the end, with one more write). A crash in between leaves
    entries whose ``before`` is still the current value: restoring them changes nothing.

    Parameters
    ----------
    store : JournalStore
        The journal's directory, its lock held.
    root : Path
        The directory standing for ``/``.
    cpus : sequence of int or None
        The benchmark CPUs (:func:`plan`).
    owner : Owner
        Who tunes (kept from an existing journal, whose entries stay before the new ones).
    aslr : bool
        Turn ASLR off too.

    Returns
    -------
    TuneReport
        The changes made (``after`` as read back), what was left and why.
    """
    existing = store.read()
    journal = existing or Journal(str(root), owner)
    if journal.root != str(root):
        raise UserError(
            f"{store.path} holds settings of root {journal.root}; `benchrun system reset` them first"
        )
    steps, skips = plan(root, cpus, aslr=aslr)
    root_only = [s.setting for s in steps if not _may_write(root / s.path)]
    steps = [s for s in steps if _may_write(root / s.path)]
    if root_only:
        skips.append(Skip(setting_names(root_only), "needs root", "root"))
    if not steps:
        return TuneReport((), tuple(skips), str(store.path))
    planned = tuple(Entry(s.setting, s.path, s.before, s.target) for s in steps)
    store.write(journal.with_entries(journal.entries + planned))  # before any change
    changes: list[Entry] = []
    for step in steps:
        try:
            write_value(root / step.path, step.target)
        except OSError as exc:
            why = f"the kernel refused {step.target!r} ({exc.strerror or exc})"
            skips.append(Skip(step.setting, why, "refused"))
            continue
        after = _read(root, step.path) or step.target
        changes.append(Entry(step.setting, step.path, step.before, after))
    entries = journal.entries + tuple(changes)
    if entries:
        if entries != journal.entries + planned:
            store.write(journal.with_entries(entries))
    else:
        store.remove()  # every write refused: nothing to restore
    return TuneReport(tuple(changes), tuple(skips), str(store.path))


def restore_locked(store: JournalStore, root: Path) -> ResetReport | None:
    """Write every journalled value back, last change first; remove the journal when every
    one was taken, else keep the refused ones in it. None when there is no journal.
    ``store``'s lock must be held."""
    journal = store.read()
    if journal is None:
        return None
    if journal.root != str(root):
        raise UserError(
            f"{store.path} holds settings of root {journal.root}, not {root}; reset with that root"
        )
    restored: list[Entry] = []
    refused: list[tuple[Entry, str]] = []
    gone: list[Entry] = []
    for entry in reversed(journal.entries):
        try:
            write_value(root / entry.path, entry.before)
        except OSError as exc:
            if is_missing(exc):
                gone.append(entry)
            else:
                refused.append((entry, exc.strerror or str(exc)))
            continue
        restored.append(entry)
    kept = tuple(e for e in journal.entries if any(e == r for r, _ in refused))
    if kept:
        store.write(journal.with_entries(kept))
    else:
        store.remove()
    return ResetReport(
        tuple(restored), tuple(refused), tuple(gone), str(store.path), not kept, journal.owner
    )


def _busy(store: JournalStore) -> UserError:
    journal = store.read()
    who = journal.owner.describe() if journal else "another benchrun process"
    return UserError(
        f"{who} holds the machine tuned ({store.path}) and restores it when it ends; "
        "stop it (or wait) and try again"
    )


def _owner(kind: str, campaign: str | None = None) -> Owner:
    return Owner(kind, os.getpid(), time.time(), campaign)


def system_tune(
    cpus: Sequence[int] | None,
    *,
    root: Path = Path("/"),
    directory: Path | None = None,
    aslr: bool = False,
) -> tuple[ResetReport | None, TuneReport]:
    """``benchrun system tune``: first restore what a dead campaign left tuned, then tune
    (kept until ``system reset``). Returns (that restore or None, the tune)."""
    with JournalStore(directory or journal_dir(), create=True) as store:
        if not store.try_lock():
            raise _busy(store)
        journal = store.read()
        recovered = (
            restore_locked(store, root) if journal and journal.owner.kind == "campaign" else None
        )
        return recovered, tune_locked(store, root, cpus, _owner("manual"), aslr=aslr)


def system_reset(*, root: Path = Path("/"), directory: Path | None = None) -> ResetReport | None:
    """``benchrun system reset``: restore every journalled value (a dead campaign's too);
    None when nothing is tuned. Refused while a live campaign keeps the machine tuned."""
    try:
        store = JournalStore(directory or journal_dir(), create=False)
    except FileNotFoundError:
        return None
    with store:
        if store.fd is None:
            return None
        if not store.try_lock():
            raise _busy(store)
        return restore_locked(store, root)


def recover(*, root: Path = Path("/"), directory: Path | None = None) -> ResetReport | None:
    """Restore what a campaign that died tuned (its lock is free, its journal remains):
    at every ``benchrun run`` and at the daemon's start. None when there is nothing of
    the kind (no journal, a manual tune's, or a live campaign's)."""
    try:
        store = JournalStore(directory or journal_dir(), create=False)
    except FileNotFoundError:
        return None
    with store:
        if store.fd is None:
            return None
        journal = store.read()
        if journal is None or journal.owner.kind != "campaign" or not store.try_lock():
            return None
        return restore_locked(store, root)


def current_journal(directory: Path | None = None) -> tuple[Journal | None, bool]:
    """The journal as it is now (what is tuned), for ``benchrun system``, and whether a
    live process holds its lock (a campaign keeping the machine tuned); (None, False)
    when there is none."""
    try:
        store = JournalStore(directory or journal_dir(), create=False)
    except FileNotFoundError:
        return None, False
    with store:
        journal = store.read()
        if journal is None:
            return None, False
        return journal, not store.try_lock()


@dataclass(frozen=True)
class CampaignTuning:
    """A ``settings.tune`` campaign's tuning: what it changed (None when it did not tune),
    what a dead campaign had left and was restored first, and why it did not tune."""

    report: TuneReport | None
    recovered: ResetReport | None
    note: str | None

    def to_dict(self) -> dict[str, Any]:
        """JSON form (the campaign's metadata ``tuning`` and its ``tuned`` event)."""
        return {
            **(self.report.to_dict() if self.report else {"changes": [], "skipped": []}),
            "note": self.note,
            "recovered": self.recovered.to_dict() if self.recovered else None,
        }


@contextmanager
def campaign_tuning(
    cpus: Sequence[int] | None,
    campaign: str,
    *,
    root: Path = Path("/"),
    directory: Path | None = None,
    restored: list[ResetReport] | None = None,
) -> Iterator[CampaignTuning]:
    """Tune for a campaign and keep the lock while it runs; restore on the way out
    (normal end, exception, SIGINT/SIGTERM turned into an interruption). A SIGKILLed
    process leaves the journal, which :func:`recover` restores. The machine is left as it
    is when another live campaign or a ``system tune`` holds it tuned. ``restored``
    receives the final restore's report."""
    with JournalStore(directory or journal_dir(), create=True) as store:
        if not store.try_lock():
            journal = store.read()
            who = journal.owner.describe() if journal else "another benchrun process"
            yield CampaignTuning(
                None, None, f"the machine is kept tuned by {who}; this campaign runs with that"
            )
            return
        journal = store.read()
        recovered = (
            restore_locked(store, root) if journal and journal.owner.kind == "campaign" else None
        )
        journal = store.read()
        if journal is not None:
            store.unlock()
            yield CampaignTuning(
                None,
                recovered,
                f"the machine is tuned by {journal.owner.describe()} ({store.path}); left as it is",
            )
            return
        report = tune_locked(store, root, cpus, _owner("campaign", campaign))
        try:
            yield CampaignTuning(report, recovered, None)
        finally:
            done = restore_locked(store, root)
            if done is not None and restored is not None:
                restored.append(done)


def change_lines(entries: Sequence[Entry], *, back: bool = False) -> list[str]:
    """The changes as short text, IRQs with the same values in one: ``IRQ 24-43
    affinity: 0-1 -> 0``; ``back``: the restore's direction (after -> before)."""
    out: list[str] = []
    irqs: dict[tuple[str, str], list[int]] = {}
    for e in entries:
        a, b = (e.after, e.before) if back else (e.before, e.after)
        if e.setting.startswith("IRQ ") and e.setting.endswith(" affinity"):
            irqs.setdefault((a, b), []).append(int(e.setting.split()[1]))
            continue
        out.append(f"{e.setting}: {a} -> {b}")
    for (a, b), numbers in irqs.items():
        out.append(f"IRQ {format_cpu_list(numbers)} affinity: {a} -> {b}")
    return out


def setting_names(names: Sequence[str]) -> str:
    """Settings named in one line, IRQs in one range: ``perf_event_max_sample_rate, IRQ
    24-43 affinity``."""
    irqs = [int(n.split()[1]) for n in names if n.startswith("IRQ ") and n.endswith(" affinity")]
    rest = [n for n in names if not (n.startswith("IRQ ") and n.endswith(" affinity"))]
    return ", ".join(rest + ([f"IRQ {format_cpu_list(irqs)} affinity"] if irqs else []))
