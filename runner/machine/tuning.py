"""``benchrun system tune`` / ``reset`` and ``settings.tune``: quiet kernel settings, restored.

What is tuned, where the machine has it and allows it (docs/tuning.md): the cpufreq
governor of each benchmark CPU (``performance``), turbo/boost (off), the perf sampling rate
limit (``perf_event_max_sample_rate``, lowered to 1), the SMT siblings of the benchmark
CPUs (offline), the IRQ affinities (off the benchmark CPUs), and on request ASLR (off):
the plan is runner/machine/tuning_plan.py's. Every previous value goes to the journal
(runner/machine/tuning_journal.py) before the first file is written;
:func:`restore_locked` writes the journalled values back in reverse order and removes the
journal only when every one was taken. Who holds the tuning (a live campaign, a dead one,
a manual tune) is the journal's lock and owner: :func:`recover`.

Every function takes ``root``, the directory that stands for ``/`` (a fake sysfs/procfs
tree in tests).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

from benchrun.runner.config.cpulist import format_cpu_list
from benchrun.runner.errors import UserError
from benchrun.runner.machine.tuning_journal import (
    Entry,
    Journal,
    JournalStore,
    Owner,
    is_missing,
    journal_dir,
)
from benchrun.runner.machine.tuning_plan import Skip, plan, read_or_none, write_value


@dataclass(frozen=True)
class TuneReport:
    """What a tune did: the changes (before and after, in the order made), what was left
    and why, the journal that holds the previous values."""

    changes: tuple[Entry, ...]
    skipped: tuple[Skip, ...]
    journal: str

    def to_dict(self) -> dict[str, object]:
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

    def to_dict(self) -> dict[str, object]:
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
        after = read_or_none(root, step.path) or step.target
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


def owner_now(kind: str, campaign: str | None = None) -> Owner:
    """This process as the journal's owner: ``kind`` (manual or campaign), its pid, now."""
    return Owner(kind, os.getpid(), time.time(), campaign)


def system_tune(
    cpus: Sequence[int] | None,
    *,
    root: Path = Path("/"),
    directory: Path | None = None,
    aslr: bool = False,
) -> tuple[ResetReport | None, TuneReport]:
    """``benchrun system tune``: restore what a dead campaign left tuned, then tune until
    ``system reset``.

    Parameters
    ----------
    cpus : sequence of int or None
        The benchmark CPUs (:func:`~benchrun.runner.machine.tuning_plan.plan`).
    root : Path
        The directory standing for ``/`` (tests).
    directory : Path, optional
        The journal's directory (default :func:`journal_dir`).
    aslr : bool
        Turn ASLR off too.

    Returns
    -------
    (ResetReport or None, TuneReport)
        The restore of a dead campaign's tuning (None when there was none), the tune.

    Raises
    ------
    UserError
        A live campaign keeps the machine tuned; the journal or its directory is refused.
    """
    with JournalStore(directory or journal_dir(), create=True) as store:
        if not store.try_lock():
            raise _busy(store)
        journal = store.read()
        recovered = (
            restore_locked(store, root) if journal and journal.owner.kind == "campaign" else None
        )
        return recovered, tune_locked(store, root, cpus, owner_now("manual"), aslr=aslr)


def system_reset(*, root: Path = Path("/"), directory: Path | None = None) -> ResetReport | None:
    """``benchrun system reset``: restore every journalled value, a manual tune's or a dead
    campaign's.

    Parameters are those of :func:`system_tune`.

    Returns
    -------
    ResetReport or None
        What was restored and refused; None when there is no journal.

    Raises
    ------
    UserError
        A live campaign keeps the machine tuned (it restores at its end); the journal or
        its directory is refused.
    """
    with JournalStore(directory or journal_dir(), create=False) as store:
        if store.fd is None:
            return None
        if not store.try_lock():
            raise _busy(store)
        return restore_locked(store, root)


def recover(*, root: Path = Path("/"), directory: Path | None = None) -> ResetReport | None:
    """Restore what a campaign that died left tuned: its journal remains and nobody holds
    its lock. Called at every ``benchrun run`` and at the daemon's start.

    Parameters are those of :func:`system_tune`.

    Returns
    -------
    ResetReport or None
        The restore; None when there is nothing of the kind (no journal, a manual tune's,
        a live campaign's).

    Raises
    ------
    UserError
        The journal or its directory is refused.
    """
    with JournalStore(directory or journal_dir(), create=False) as store:
        if store.fd is None:
            return None
        journal = store.read()
        if journal is None or journal.owner.kind != "campaign" or not store.try_lock():
            return None
        journal = store.read()  # as it is under the lock
        if journal is None or journal.owner.kind != "campaign":
            return None
        return restore_locked(store, root)


def current_journal(directory: Path | None = None) -> tuple[Journal | None, bool]:
    """The journal as it is now (what is tuned), for ``benchrun system``, and whether a
    live process holds its lock (a campaign keeping the machine tuned); (None, False)
    when there is none."""
    with JournalStore(directory or journal_dir(), create=False) as store:
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

    def to_dict(self) -> dict[str, object]:
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
    """Tune for a campaign and hold the journal's lock while it runs; restore on the way
    out (its end, an exception, SIGINT/SIGTERM turned into an interruption). A SIGKILLed
    process leaves the journal and a free lock, which :func:`recover` restores.

    Parameters
    ----------
    cpus : sequence of int or None
        The campaign's workload CPUs (None: not pinned).
    campaign : str
        The campaign's directory (named in the journal and in messages).
    root, directory
        As :func:`system_tune`.
    restored : list, optional
        Receives the report of the restore at the end.

    Yields
    ------
    CampaignTuning
        What was tuned; no change, with a note, when another live campaign or a ``system
        tune`` holds the machine tuned (left as it is).
    """
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
        report = tune_locked(store, root, cpus, owner_now("campaign", campaign))
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


def recorded_changes(record: object) -> str | None:
    """The changes of a campaign's ``tuning`` metadata record (:meth:`TuneReport.to_dict`)
    as one line (:func:`change_lines`, joined by ``; ``); None when it names none. A
    change that is not an object of four strings (:meth:`Entry.from_stored`) is left out."""
    return changes_line(Entry.changes_of(record))


def changes_line(entries: Sequence[Entry]) -> str | None:
    """``entries`` as one line (:func:`change_lines`, joined by ``; ``); None when none."""
    return "; ".join(change_lines(entries)) or None


def setting_names(names: Sequence[str]) -> str:
    """Settings named in one line, IRQs in one range: ``perf_event_max_sample_rate, IRQ
    24-43 affinity``."""
    irqs = [int(n.split()[1]) for n in names if n.startswith("IRQ ") and n.endswith(" affinity")]
    rest = [n for n in names if not (n.startswith("IRQ ") and n.endswith(" affinity"))]
    return ", ".join(rest + ([f"IRQ {format_cpu_list(irqs)} affinity"] if irqs else []))
