"""The conditions a stored campaign ran under, and which differences make two campaigns
not comparable (issue 27; docs/conditions.md).

A comparison between campaigns (``benchrun compare``, ``run --baseline``, the CI gate)
assumes both ran on the same machine in the same state. :class:`Conditions` is what a
campaign says about that: the machine's fingerprint (from its metadata record), the load
at its start, the share of its rounds flagged ``contended``, and per workload a level
shift (the collector's ``level_shift_at``) and drift (``stats.drift_check``).
:func:`compare_conditions` lists the differences between two campaigns and says which are
*material*: a difference that can move timings by more than the gate's usual threshold,
so that a verdict across it would say more about the machine than about the code. Which
facts are material, and why, is docs/conditions.md's table; the thresholds are
:data:`CONTENDED_MATERIAL` and :data:`DRIFT_MATERIAL`.

Data benchrun did not measure (hyperfine, pyperf, CSV files, an export without metadata)
has unknown conditions: they are stated as unknown and never make a comparison "not
comparable" (:func:`unknown_conditions`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from benchrun.runner.execute.contention import flagged_contended
from benchrun.runner.results.estimate import estimate_from
from benchrun.runner.results.settings import campaign_settings
from benchrun.runner.store.database import CampaignRow, RoundRow, Store, WorkloadRow

#: a side whose share of contended rounds is above this is not comparable: even with the
#: contended rounds left out, the rest ran on a busy machine, with contention below the
#: flag's threshold (docs/conditions.md)
CONTENDED_MATERIAL = 0.10

#: a workload whose level moved by more than this within a campaign (the span of its
#: block means, stats.drift_check, when the drift test rejects) is not comparable: its
#: mean depends on when the campaign stopped, by as much as a gate's threshold
DRIFT_MATERIAL = 0.10

#: a difference in the 1-minute load at the start larger than this is noted
LOAD_NOTED = 0.5

#: what a :class:`Fingerprint` holds: (field, label in the lines, section, metadata key)
FINGERPRINT_FACTS: tuple[tuple[str, str, str, str], ...] = (
    ("cpu_model", "cpu model", "hardware", "cpu_model"),
    ("microcode", "microcode", "hardware", "microcode"),
    ("kernel", "kernel", "software", "kernel_release"),
    ("governor", "governor", "hardware", "governor"),
    ("smt", "smt", "hardware", "smt_active"),
    ("cpu_count", "cpu count", "hardware", "cores_logical"),
    ("benchrun_version", "benchrun", "software", "benchrun_version"),
    ("python_version", "python", "software", "python_version"),
)

#: the facts whose difference is material whatever the workload (docs/conditions.md)
MATERIAL_FACTS = ("cpu_model", "microcode", "kernel", "governor", "smt", "cpu_count")

UNKNOWN = "unknown"


@dataclass(frozen=True)
class Fingerprint:
    """The machine and software a campaign ran with (its metadata record; None: not known).

    ``smt`` is whether SMT was active; ``cpu_count`` the logical CPUs; the versions are
    benchrun's and the Python interpreter's that ran benchrun.
    """

    cpu_model: str | None = None
    microcode: str | None = None
    kernel: str | None = None
    governor: str | None = None
    smt: bool | None = None
    cpu_count: int | None = None
    benchrun_version: str | None = None
    python_version: str | None = None


@dataclass(frozen=True)
class WorkloadConditions:
    """One workload's conditions in one campaign.

    ``rounds``: its measured rounds (not warm-up; status ok, or flagged contended);
    ``contended``: how many of them carry the ``contended`` flag; ``level_shift_at``: the 0-based index among the
    steady rounds of the first round at a new level the collector found (None: none, or a
    benchrun that does not look for one), ``level_shift_change`` its relative size;
    ``drift``: the drift line's text when the drift test rejected (None otherwise),
    ``drift_span``: the span of its block means, relative (0.12 = 12 %); ``python``: its
    command runs a Python interpreter (``python``, ``python3.12`` ...).
    """

    name: str
    rounds: int = 0
    contended: int = 0
    level_shift_at: int | None = None
    level_shift_change: float | None = None
    drift: str | None = None
    drift_span: float | None = None
    python: bool = False

    @property
    def level_shift(self) -> str | None:
        """``"at round 18 (+135 %)"`` (1-based among the steady rounds, as the collector's
        note says it), None without a level shift."""
        if self.level_shift_at is None:
            return None
        size = (
            "" if self.level_shift_change is None else f" ({100 * self.level_shift_change:+.0f} %)"
        )
        return f"at round {self.level_shift_at + 1}{size}"


@dataclass(frozen=True)
class Conditions:
    """What a stored campaign says about the conditions it ran under (module docstring).

    ``known`` is False for data benchrun did not measure: then every fact is unknown.
    ``load`` is the 1-minute load average at the campaign's start; ``rounds`` and
    ``contended`` count the measured rounds of every workload and those flagged contended.
    """

    label: str
    known: bool
    fingerprint: Fingerprint
    load: float | None = None
    rounds: int = 0
    contended: int = 0
    workloads: tuple[WorkloadConditions, ...] = ()
    campaign_id: int | None = None

    @property
    def contended_share(self) -> float | None:
        """Contended rounds / measured rounds (0 when none is flagged); None: unknown."""
        if not self.known or self.rounds == 0:
            return None
        return self.contended / self.rounds

    def workload(self, name: str) -> WorkloadConditions | None:
        """The conditions of workload ``name``, None when this side does not have it."""
        return next((w for w in self.workloads if w.name == name), None)

    def line(self) -> str:
        """One line for people: ``Intel Xeon, microcode 0x1, kernel 6.1.0, governor unknown,
        SMT off, 2 CPUs, benchrun 0.1.0, Python 3.11.7; load 0.42; 0 % of 120 rounds
        contended``, plus level shifts and drift of workloads that have them."""
        if not self.known:
            return "conditions unknown (not measured by benchrun)"
        f = self.fingerprint
        smt = UNKNOWN if f.smt is None else ("on" if f.smt else "off")
        parts = [
            f"{_shown(f.cpu_model)}, microcode {_shown(f.microcode)}, kernel {_shown(f.kernel)}, "
            f"governor {_shown(f.governor)}, SMT {smt}, {_shown(f.cpu_count)} CPUs, "
            f"benchrun {_shown(f.benchrun_version)}, Python {_shown(f.python_version)}",
            f"load {_shown(self.load)} at the start",
        ]
        share = self.contended_share
        parts.append(
            f"{UNKNOWN} share of contended rounds"
            if share is None
            else f"{100 * share:.0f} % of {self.rounds} rounds contended"
        )
        shifts = [f"{w.name} {w.level_shift}" for w in self.workloads if w.level_shift is not None]
        if shifts:
            parts.append("level shift: " + ", ".join(shifts))
        drifts = [f"{w.name} {_pct(w.drift_span)}" for w in self.workloads if w.drift]
        if drifts:
            parts.append("drift: " + ", ".join(drifts))
        return "; ".join(parts)

    def to_dict(self) -> dict[str, object]:
        """JSON-safe: every field, and ``contended_share`` and ``line``."""
        out = asdict(self)
        out["workloads"] = [asdict(w) for w in self.workloads]
        out["contended_share"] = self.contended_share
        out["line"] = self.line()
        return out


def _shown(value: Any) -> str:
    return UNKNOWN if value is None else str(value)


def _pct(span: float | None) -> str:
    return "(span unknown)" if span is None else f"(span {100 * span:.1f} %)"


def _fact(metadata: Mapping[str, object], section: str, key: str) -> object:
    """The value of ``key`` in the ``section`` object of a metadata record (parsed JSON,
    walked generically); None when either is missing."""
    part = metadata.get(section)
    return part.get(key) if isinstance(part, Mapping) else None


#: how a metadata value becomes the :class:`Fingerprint` field's (the rest: text or None)
_FACT_CONVERT: dict[str, Callable[[object], Any]] = {
    "smt": lambda v: v if isinstance(v, bool) else None,
    "cpu_count": lambda v: v if isinstance(v, int) and not isinstance(v, bool) else None,
}


def _text(v: object) -> str | None:
    return None if v is None else str(v)


def fingerprint_of(metadata: Mapping[str, object] | None) -> Fingerprint:
    """The :class:`Fingerprint` in a campaign's metadata record (docs/machine.md); facts
    the record lacks (or a campaign stored without one) are None."""
    if not isinstance(metadata, Mapping):
        return Fingerprint()
    values = {
        name: _FACT_CONVERT.get(name, _text)(_fact(metadata, section, key))
        for name, _, section, key in FINGERPRINT_FACTS
    }
    return Fingerprint(**values)


def start_load(metadata: Mapping[str, object] | None) -> float | None:
    """The 1-minute load average of the record (``environment.load_average[0]``), None
    when it was not read."""
    if not isinstance(metadata, Mapping):
        return None
    load = _fact(metadata, "environment", "load_average")
    if isinstance(load, (list, tuple)) and load:
        load = load[0]
    return float(load) if isinstance(load, (int, float)) and not isinstance(load, bool) else None


_PYTHON = re.compile(r"^(python|pypy)[0-9.]*$")


def runs_python(command: Any) -> bool:
    """True when a stored command (argv list or shell string) starts with a Python
    interpreter: ``python3``, ``/usr/bin/python3.12``, ``pypy3``."""
    if isinstance(command, str):
        command = command.split()
    if not isinstance(command, (list, tuple)) or not command:
        return False
    return bool(_PYTHON.match(os.path.basename(str(command[0]))))


def is_contended(flags: object) -> bool:
    """True when a round's ``flags`` (comma-separated text) hold ``contended``; False for
    anything else (an export is a file anyone can write)."""
    return isinstance(flags, str) and flagged_contended(flags)


def conditions_of(
    campaign: CampaignRow,
    workloads: Sequence[WorkloadRow],
    rounds: Iterable[RoundRow],
    collected: Mapping[str, Mapping[str, object] | None],
    drift: Mapping[str, Mapping[str, object] | None],
    label: str | None = None,
) -> Conditions:
    """The :class:`Conditions` of a stored campaign.

    Parameters
    ----------
    campaign, workloads, rounds
        The campaign's rows (runner/store).
    collected
        Workload name -> the collector's result as a dict (``WorkloadResult.collected``);
        its ``level_shift_at`` (when the collector gives one) is the level shift.
    drift
        Workload name -> ``WorkloadResult.drift`` (stats.drift_check with its text).
    label
        How the side is named (default: ``NAME (campaign ID)``).
    """
    from benchrun.runner.results.workloads import drift_from

    by_id = {w.id: w for w in workloads}
    measured: dict[str, int] = {w.name: 0 for w in workloads}
    contended: dict[str, int] = {w.name: 0 for w in workloads}
    for r in rounds:
        w = by_id.get(r.workload_id)
        # a contended round counts whatever status the contention part gives it
        if w is None or r.warmup or (r.status != "ok" and not is_contended(r.flags)):
            continue
        measured[w.name] += 1
        contended[w.name] += is_contended(r.flags)
    per = []
    for w in workloads:
        e = estimate_from(collected.get(w.name))
        check = drift_from(drift.get(w.name))
        drifted = check is not None and check.drifted
        lo, hi = (check.level_low, check.level_high) if check is not None else (None, None)
        per.append(
            WorkloadConditions(
                name=w.name,
                rounds=measured[w.name],
                contended=contended[w.name],
                level_shift_at=None if e is None else e.level_shift_at,
                level_shift_change=None if e is None else e.level_shift_change,
                drift=check.describe() if check is not None and drifted else None,
                drift_span=float(hi - lo)
                if drifted and lo is not None and hi is not None
                else None,
                python=runs_python(w.spec.get("command")),
            )
        )
    return Conditions(
        label=label or f"{campaign.name} (campaign {campaign.id})",
        known=True,
        fingerprint=fingerprint_of(campaign.metadata),
        load=start_load(campaign.metadata),
        rounds=sum(measured.values()),
        contended=sum(contended.values()),
        workloads=tuple(per),
        campaign_id=campaign.id,
    )


def campaign_conditions(
    store: Store, campaign: CampaignRow, label: str | None = None
) -> Conditions:
    """:func:`conditions_of` read from ``store`` (the workloads' results computed as
    ``benchrun show`` does)."""
    from benchrun.runner.results.workloads import workload_results

    results = workload_results(
        store, campaign, float(campaign_settings(campaign.settings).confidence)
    )
    return conditions_of(
        campaign,
        store.workloads(campaign.id),
        store.rounds(campaign.id),
        {r.name: r.collected for r in results},
        {r.name: r.drift for r in results},
        label,
    )


def unknown_conditions(label: str) -> Conditions:
    """The conditions of data benchrun did not measure: every fact unknown."""
    return Conditions(label=label, known=False, fingerprint=Fingerprint())


@dataclass(frozen=True)
class Difference:
    """One difference between two sides' conditions.

    ``what`` names it (``kernel``, ``contended rounds``, ``level shift``); ``old``/``new``
    are the values as shown; ``material`` says whether it makes the comparison not
    comparable; ``workloads`` the workloads it concerns (empty: all of them).
    """

    what: str
    old: str
    new: str
    material: bool
    workloads: tuple[str, ...] = ()

    def text(self) -> str:
        """``kernel 6.1.0 vs 6.5.0`` (``old vs new``), with the workloads it concerns."""
        who = f" ({', '.join(self.workloads)})" if self.workloads else ""
        return f"{self.what}{who}: {self.old} vs {self.new}"


@dataclass(frozen=True)
class ConditionsComparison:
    """Result of :func:`compare_conditions`: both sides and their differences."""

    old: Conditions
    new: Conditions
    differences: tuple[Difference, ...]

    def reasons(self, name: str) -> list[str]:
        """The material differences that concern workload ``name``, as text."""
        return [
            d.text()
            for d in self.differences
            if d.material and (not d.workloads or name in d.workloads)
        ]

    @property
    def material(self) -> bool:
        """True when any difference is material (for some workload)."""
        return any(d.material for d in self.differences)

    def lines(self) -> list[str]:
        """``old: ...``, ``new: ...``, then ``differ (material): ...`` and ``differ
        (noted): ...`` lines; ``the same on both sides`` when nothing differs."""
        out = [f"old: {self.old.line()}", f"new: {self.new.line()}"]
        material = [d.text() for d in self.differences if d.material]
        noted = [d.text() for d in self.differences if not d.material]
        if material:
            out.append("differ (material): " + "; ".join(material))
        if noted:
            out.append("differ (noted): " + "; ".join(noted))
        if not (material or noted):
            out.append("the same on both sides")
        return out

    def to_dict(self) -> dict[str, object]:
        return {
            "old": self.old.to_dict(),
            "new": self.new.to_dict(),
            "differences": [asdict(d) for d in self.differences],
            "material": self.material,
        }


def _minor(version: str | None) -> str | None:
    """``3.11.7`` -> ``3.11``; None stays None."""
    if version is None:
        return None
    return ".".join(version.split(".")[:2])


def _fingerprint_differences(
    old: Conditions, new: Conditions, python_workloads: tuple[str, ...]
) -> list[Difference]:
    out = []
    for name, label, _, _ in FINGERPRINT_FACTS:
        a, b = getattr(old.fingerprint, name), getattr(new.fingerprint, name)
        if a == b:
            continue
        shown_a, shown_b = _shown(a), _shown(b)
        if isinstance(a, bool) or isinstance(b, bool):
            shown_a = UNKNOWN if a is None else ("on" if a else "off")
            shown_b = UNKNOWN if b is None else ("on" if b else "off")
        known = a is not None and b is not None
        if name in MATERIAL_FACTS:
            out.append(Difference(label, shown_a, shown_b, known))
        elif name == "benchrun_version":
            out.append(Difference(label, shown_a, shown_b, known and _minor(a) != _minor(b)))
        elif name == "python_version":
            material = known and _minor(a) != _minor(b) and bool(python_workloads)
            out.append(
                Difference(label, shown_a, shown_b, material, python_workloads if material else ())
            )
    return out


def compare_conditions(
    old: Conditions, new: Conditions, names: Sequence[str]
) -> ConditionsComparison:
    """The differences between two sides' conditions, over the compared workloads ``names``.

    Material (docs/conditions.md): a different CPU model, microcode, kernel, governor, SMT
    state or CPU count; a different benchrun major.minor version; a different Python
    major.minor version for the workloads that run Python; a share of contended rounds
    above :data:`CONTENDED_MATERIAL` on either side; a level shift in a compared workload
    on either side; a drift of a compared workload whose span exceeds
    :data:`DRIFT_MATERIAL`. Noted only: the load at the start (differing by more than
    :data:`LOAD_NOTED`), patch versions, a smaller drift, some contended rounds, and any
    fact unknown on one side (a side benchrun did not measure is never material).
    """
    both = old.known and new.known
    diffs: list[Difference] = []
    if both:
        python = tuple(
            n
            for n in names
            if any((w := side.workload(n)) is not None and w.python for side in (old, new))
        )
        diffs.extend(_fingerprint_differences(old, new, python))
    elif old.known != new.known:
        diffs.append(
            Difference(
                "conditions",
                old.label if old.known else UNKNOWN,
                new.label if new.known else UNKNOWN,
                False,
            )
        )
    if (
        both
        and old.load is not None
        and new.load is not None
        and abs(old.load - new.load) > LOAD_NOTED
    ):
        diffs.append(Difference("load at the start", f"{old.load:g}", f"{new.load:g}", False))
    shares = [old.contended_share, new.contended_share]
    if any(s for s in shares):
        material = any(s is not None and s > CONTENDED_MATERIAL for s in shares)
        diffs.append(
            Difference(
                "contended rounds",
                UNKNOWN if shares[0] is None else f"{100 * shares[0]:.0f} %",
                UNKNOWN if shares[1] is None else f"{100 * shares[1]:.0f} %",
                material,
            )
        )
    for n in names:
        wo, wn = old.workload(n), new.workload(n)
        shift_o = None if wo is None else wo.level_shift
        shift_n = None if wn is None else wn.level_shift
        if shift_o is not None or shift_n is not None:
            diffs.append(
                Difference(
                    "level shift",
                    "none" if shift_o is None else shift_o,
                    "none" if shift_n is None else shift_n,
                    True,
                    (n,),
                )
            )
        drifts = [(w.drift, w.drift_span) if w is not None else (None, None) for w in (wo, wn)]
        if any(d for d, _ in drifts):
            material = any(d and s is not None and s > DRIFT_MATERIAL for d, s in drifts)
            shown = [("drift " + _pct(s)) if d else "none" for d, s in drifts]
            diffs.append(Difference("drift", shown[0], shown[1], material, (n,)))
    return ConditionsComparison(old, new, tuple(diffs))
