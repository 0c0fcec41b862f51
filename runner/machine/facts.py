"""The reproducibility record as typed values (docs/machine.md "The record").

Each probe of :mod:`runner.machine.probes` and :mod:`runner.machine.envprobes` returns one
frozen group of facts (:class:`CpuIdentity`, :class:`Frequency`, :class:`GitState`, ...);
the groups make up the four sections (:class:`HardwareFacts`, :class:`SoftwareFacts`,
:class:`TimerFacts`, :class:`EnvironmentFacts`) of one :class:`MachineFacts`.

The JSON stored in a campaign's metadata is written in one place,
:meth:`MachineFacts.to_json` (a section is ``{"_unavailable": {key: reason}, key: value,
...}``; an unreadable fact is ``null`` with its reason), and read back in one place,
:meth:`MachineFacts.from_stored`: any stored record (an old one, a node's, a hand-written
one) parses; a key the record lacks is ``None`` and listed in ``absent``, a value of the
wrong type is ``None`` with the reason ``the stored value is not ...``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from benchrun.runner.machine.revision import Revision
from benchrun.runner.machine.storedfacts import (
    Facts,
    StoredSection,
    failed_json,
    jsonable,
    section_json,
)
from benchrun.runner.machine.tuning_journal import Entry

__all__ = [
    "SCHEMA_VERSION",
    "Aslr",
    "Caches",
    "Clock",
    "RoundContainment",
    "SECTIONS",
    "Stored",
    "Cores",
    "CpuIdentity",
    "EnvironmentFacts",
    "Facts",
    "Frequency",
    "GitState",
    "HardwareFacts",
    "Isolation",
    "Kernel",
    "Libc",
    "Load",
    "MachineFacts",
    "Memory",
    "OsRelease",
    "PythonInfo",
    "Smt",
    "SoftwareFacts",
    "StoredSection",
    "TimerFacts",
    "Variables",
]

#: the version of the record's layout, stored as ``schema_version``
SCHEMA_VERSION = 1
#: the record's sections, in the order it stores them
SECTIONS = ("hardware", "software", "timer", "environment")

# ----------------------------------------------------------------------------- hardware


@dataclass(frozen=True, kw_only=True)
class CpuIdentity(Facts):
    """CPU model, vendor, architecture, flags (their count and the notable ones), whether
    a hypervisor flag is set, where they were read, and the microcode revision."""

    cpu_arch: str | None = None
    cpu_model: str | None = None
    cpu_vendor: str | None = None
    cpu_flags_count: int | None = None
    cpu_flags_notable: tuple[str, ...] | None = None
    virtualized: bool | None = None
    cpu_identity_source: str | None = None
    microcode: str | None = None

    @classmethod
    def read(cls, s: StoredSection) -> CpuIdentity:
        """The group in a stored hardware section."""
        return cls(
            cpu_arch=s.text("cpu_arch"),
            cpu_model=s.text("cpu_model"),
            cpu_vendor=s.text("cpu_vendor"),
            cpu_flags_count=s.integer("cpu_flags_count"),
            cpu_flags_notable=s.texts("cpu_flags_notable"),
            virtualized=s.flag("virtualized"),
            cpu_identity_source=s.text("cpu_identity_source"),
            microcode=s.text("microcode"),
            # after the reads: they note wrong types and missing keys
            unavailable=s.reasons_of(cls.keys()),
            absent=s.absent_of(cls.keys()),
        )


@dataclass(frozen=True, kw_only=True)
class Cores(Facts):
    """Logical and physical core counts, the online CPUs, the runner's CPU affinity."""

    cores_logical: int | None = None
    cores_physical: int | None = None
    cpus_online: tuple[int, ...] | None = None
    runner_affinity: tuple[int, ...] | None = None

    @classmethod
    def read(cls, s: StoredSection) -> Cores:
        """The group in a stored hardware section."""
        return cls(
            cores_logical=s.integer("cores_logical"),
            cores_physical=s.integer("cores_physical"),
            cpus_online=s.integers("cpus_online"),
            runner_affinity=s.integers("runner_affinity"),
            unavailable=s.reasons_of(cls.keys()),
            absent=s.absent_of(cls.keys()),
        )


@dataclass(frozen=True, kw_only=True)
class Smt(Facts):
    """SMT state and control, and each online CPU's siblings (CPU number as a string to
    the online CPUs sharing its core, itself included)."""

    smt_active: bool | None = None
    smt_control: str | None = None
    thread_siblings: Mapping[str, tuple[int, ...]] | None = None

    @classmethod
    def read(cls, s: StoredSection) -> Smt:
        """The group in a stored hardware section."""
        return cls(
            smt_active=s.flag("smt_active"),
            smt_control=s.text("smt_control"),
            thread_siblings=s.integer_lists("thread_siblings"),
            unavailable=s.reasons_of(cls.keys()),
            absent=s.absent_of(cls.keys()),
        )


@dataclass(frozen=True, kw_only=True)
class Caches(Facts):
    """Cache sizes seen by one CPU, in bytes (one instance, not the sum over cores)."""

    cache_l1d: int | None = None
    cache_l1i: int | None = None
    cache_l2: int | None = None
    cache_l3: int | None = None

    @classmethod
    def read(cls, s: StoredSection) -> Caches:
        """The group in a stored hardware section."""
        return cls(
            cache_l1d=s.integer("cache_l1d"),
            cache_l1i=s.integer("cache_l1i"),
            cache_l2=s.integer("cache_l2"),
            cache_l3=s.integer("cache_l3"),
            unavailable=s.reasons_of(cls.keys()),
            absent=s.absent_of(cls.keys()),
        )


@dataclass(frozen=True, kw_only=True)
class Frequency(Facts):
    """Frequency limits and current value of one CPU (MHz) and where the current value was
    read; the cpufreq driver; each online CPU's governor and their common value (or
    ``"mixed"``); turbo (True when on) and the file that says so."""

    freq_min_mhz: float | None = None
    freq_max_mhz: float | None = None
    freq_current_mhz: float | None = None
    freq_current_source: str | None = None
    scaling_driver: str | None = None
    governors: Mapping[str, str] | None = None
    governor: str | None = None
    turbo: bool | None = None
    turbo_control: str | None = None

    @classmethod
    def read(cls, s: StoredSection) -> Frequency:
        """The group in a stored hardware section."""
        return cls(
            freq_min_mhz=s.number("freq_min_mhz"),
            freq_max_mhz=s.number("freq_max_mhz"),
            freq_current_mhz=s.number("freq_current_mhz"),
            freq_current_source=s.text("freq_current_source"),
            scaling_driver=s.text("scaling_driver"),
            governors=s.text_map("governors"),
            governor=s.text("governor"),
            turbo=s.flag("turbo"),
            turbo_control=s.text("turbo_control"),
            unavailable=s.reasons_of(cls.keys()),
            absent=s.absent_of(cls.keys()),
        )


@dataclass(frozen=True, kw_only=True)
class Memory(Facts):
    """Total memory in bytes and the number of NUMA nodes."""

    memory_total_bytes: int | None = None
    numa_nodes: int | None = None

    @classmethod
    def read(cls, s: StoredSection) -> Memory:
        """The group in a stored hardware section."""
        return cls(
            memory_total_bytes=s.integer("memory_total_bytes"),
            numa_nodes=s.integer("numa_nodes"),
            unavailable=s.reasons_of(cls.keys()),
            absent=s.absent_of(cls.keys()),
        )


@dataclass(frozen=True)
class HardwareFacts:
    """The record's ``hardware`` section; ``facts_for_cpu``: the CPU whose caches and
    frequency limits were read; ``failed``: why the whole section is missing."""

    identity: CpuIdentity = field(default_factory=CpuIdentity)
    cores: Cores = field(default_factory=Cores)
    smt: Smt = field(default_factory=Smt)
    caches: Caches = field(default_factory=Caches)
    frequency: Frequency = field(default_factory=Frequency)
    memory: Memory = field(default_factory=Memory)
    facts_for_cpu: int | None = None
    failed: str | None = None

    def to_json(self) -> dict[str, object]:
        """The stored JSON section."""
        if self.failed is not None:
            return failed_json(self.failed)
        out = section_json(
            self.identity, self.cores, self.smt, self.caches, self.frequency, self.memory
        )
        out["facts_for_cpu"] = self.facts_for_cpu
        return out

    @classmethod
    def read(cls, s: StoredSection) -> HardwareFacts:
        """The section as stored (see :meth:`MachineFacts.from_stored`)."""
        return cls(
            CpuIdentity.read(s),
            Cores.read(s),
            Smt.read(s),
            Caches.read(s),
            Frequency.read(s),
            Memory.read(s),
            s.integer("facts_for_cpu"),
            s.failed,
        )


# ----------------------------------------------------------------------------- software


@dataclass(frozen=True, kw_only=True)
class Kernel(Facts):
    """Kernel release and version, its command line, ``isolcpus``/``nohz_full`` on it."""

    kernel_release: str | None = None
    kernel_version: str | None = None
    kernel_cmdline: str | None = None
    isolcpus: str | None = None
    nohz_full: str | None = None

    @classmethod
    def read(cls, s: StoredSection) -> Kernel:
        """The group in a stored software section."""
        return cls(
            kernel_release=s.text("kernel_release"),
            kernel_version=s.text("kernel_version"),
            kernel_cmdline=s.text("kernel_cmdline"),
            isolcpus=s.text("isolcpus"),
            nohz_full=s.text("nohz_full"),
            unavailable=s.reasons_of(cls.keys()),
            absent=s.absent_of(cls.keys()),
        )


@dataclass(frozen=True, kw_only=True)
class OsRelease(Facts):
    """``PRETTY_NAME`` (else ``NAME``), ``ID`` and ``VERSION_ID`` of os-release."""

    os_name: str | None = None
    os_id: str | None = None
    os_version_id: str | None = None

    @classmethod
    def read(cls, s: StoredSection) -> OsRelease:
        """The group in a stored software section."""
        return cls(
            os_name=s.text("os_name"),
            os_id=s.text("os_id"),
            os_version_id=s.text("os_version_id"),
            unavailable=s.reasons_of(cls.keys()),
            absent=s.absent_of(cls.keys()),
        )


@dataclass(frozen=True, kw_only=True)
class Libc(Facts):
    """The C library and its version (``glibc 2.36``)."""

    libc: str | None = None

    @classmethod
    def read(cls, s: StoredSection) -> Libc:
        """The group in a stored software section."""
        return cls(
            libc=s.text("libc"),
            unavailable=s.reasons_of(cls.keys()),
            absent=s.absent_of(cls.keys()),
        )


@dataclass(frozen=True, kw_only=True)
class PythonInfo(Facts):
    """The Python running benchrun, benchrun's version, the host name and platform."""

    python_version: str | None = None
    python_implementation: str | None = None
    python_build: str | None = None
    python_executable: str | None = None
    benchrun_version: str | None = None
    hostname: str | None = None
    platform: str | None = None

    @classmethod
    def read(cls, s: StoredSection) -> PythonInfo:
        """The group in a stored software section."""
        return cls(
            python_version=s.text("python_version"),
            python_implementation=s.text("python_implementation"),
            python_build=s.text("python_build"),
            python_executable=s.text("python_executable"),
            benchrun_version=s.text("benchrun_version"),
            hostname=s.text("hostname"),
            platform=s.text("platform"),
            unavailable=s.reasons_of(cls.keys()),
            absent=s.absent_of(cls.keys()),
        )


@dataclass(frozen=True)
class SoftwareFacts:
    """The record's ``software`` section; ``failed``: why the whole section is missing."""

    kernel: Kernel = field(default_factory=Kernel)
    os_release: OsRelease = field(default_factory=OsRelease)
    libc: Libc = field(default_factory=Libc)
    python: PythonInfo = field(default_factory=PythonInfo)
    failed: str | None = None

    def to_json(self) -> dict[str, object]:
        """The stored JSON section."""
        if self.failed is not None:
            return failed_json(self.failed)
        return section_json(self.kernel, self.os_release, self.libc, self.python)

    @classmethod
    def read(cls, s: StoredSection) -> SoftwareFacts:
        """The section as stored (see :meth:`MachineFacts.from_stored`)."""
        return cls(Kernel.read(s), OsRelease.read(s), Libc.read(s), PythonInfo.read(s), s.failed)


# -------------------------------------------------------------------------------- timer


@dataclass(frozen=True, kw_only=True)
class Clock(Facts):
    """The clock rounds are timed with: its name and implementation, whether it can be
    adjusted, its declared and smallest measured step and the cost of one call (ns), the
    kernel's clock source and the available ones."""

    clock: str | None = None
    implementation: str | None = None
    adjustable: bool | None = None
    declared_resolution_ns: float | None = None
    measured_resolution_ns: int | None = None
    overhead_ns: float | None = None
    clocksource: str | None = None
    clocksources_available: str | None = None

    @classmethod
    def read(cls, s: StoredSection) -> Clock:
        """The group in a stored timer section."""
        return cls(
            clock=s.text("clock"),
            implementation=s.text("implementation"),
            adjustable=s.flag("adjustable"),
            declared_resolution_ns=s.number("declared_resolution_ns"),
            measured_resolution_ns=s.integer("measured_resolution_ns"),
            overhead_ns=s.number("overhead_ns"),
            clocksource=s.text("clocksource"),
            clocksources_available=s.text("clocksources_available"),
            unavailable=s.reasons_of(cls.keys()),
            absent=s.absent_of(cls.keys()),
        )


@dataclass(frozen=True)
class TimerFacts:
    """The record's ``timer`` section; ``failed``: why the whole section is missing."""

    clock: Clock = field(default_factory=Clock)
    failed: str | None = None

    def to_json(self) -> dict[str, object]:
        """The stored JSON section."""
        return failed_json(self.failed) if self.failed is not None else section_json(self.clock)

    @classmethod
    def read(cls, s: StoredSection) -> TimerFacts:
        """The section as stored (see :meth:`MachineFacts.from_stored`)."""
        return cls(Clock.read(s), s.failed)


# -------------------------------------------------------------------------- environment


@dataclass(frozen=True, kw_only=True)
class Load(Facts):
    """Load average over 1, 5 and 15 minutes."""

    load_average: tuple[float, ...] | None = None

    @classmethod
    def read(cls, s: StoredSection) -> Load:
        """The group in a stored environment section."""
        return cls(
            load_average=s.numbers("load_average"),
            unavailable=s.reasons_of(cls.keys()),
            absent=s.absent_of(cls.keys()),
        )


@dataclass(frozen=True, kw_only=True)
class Aslr(Facts):
    """``randomize_va_space`` (0 off, 1 partial, 2 full) and what it means."""

    aslr: int | None = None
    aslr_meaning: str | None = None

    @classmethod
    def read(cls, s: StoredSection) -> Aslr:
        """The group in a stored environment section."""
        return cls(
            aslr=s.integer("aslr"),
            aslr_meaning=s.text("aslr_meaning"),
            unavailable=s.reasons_of(cls.keys()),
            absent=s.absent_of(cls.keys()),
        )


@dataclass(frozen=True, kw_only=True)
class Isolation(Facts):
    """The CPUs isolated from the scheduler (empty: none)."""

    isolated_cpus: tuple[int, ...] | None = None

    @classmethod
    def read(cls, s: StoredSection) -> Isolation:
        """The group in a stored environment section."""
        return cls(
            isolated_cpus=s.integers("isolated_cpus"),
            unavailable=s.reasons_of(cls.keys()),
            absent=s.absent_of(cls.keys()),
        )


@dataclass(frozen=True, kw_only=True)
class Variables(Facts):
    """The environment variables the experiment sets or names (None: not set)."""

    variables: Mapping[str, str | None] | None = None

    @classmethod
    def read(cls, s: StoredSection) -> Variables:
        """The group in a stored environment section."""
        return cls(
            variables=s.optional_text_map("variables"),
            unavailable=s.reasons_of(cls.keys()),
            absent=s.absent_of(cls.keys()),
        )


@dataclass(frozen=True, kw_only=True)
class GitState(Facts):
    """Commit, dirty flag and top directory of the git repository holding the experiment."""

    git_commit: str | None = None
    git_dirty: bool | None = None
    git_repository: str | None = None

    @classmethod
    def read(cls, s: StoredSection) -> GitState:
        """The group in a stored environment section."""
        return cls(
            git_commit=s.text("git_commit"),
            git_dirty=s.flag("git_dirty"),
            git_repository=s.text("git_repository"),
            unavailable=s.reasons_of(cls.keys()),
            absent=s.absent_of(cls.keys()),
        )


@dataclass(frozen=True)
class EnvironmentFacts:
    """The record's ``environment`` section: the workload CPUs (None: not given) and what
    the probes read; ``failed``: why the whole section is missing."""

    workload_cpus: tuple[int, ...] | None = None
    load: Load = field(default_factory=Load)
    aslr: Aslr = field(default_factory=Aslr)
    isolation: Isolation = field(default_factory=Isolation)
    variables: Variables = field(default_factory=Variables)
    git: GitState = field(default_factory=GitState)
    failed: str | None = None

    def to_json(self) -> dict[str, object]:
        """The stored JSON section."""
        if self.failed is not None:
            return failed_json(self.failed)
        out: dict[str, object] = {
            "_unavailable": {},
            "workload_cpus": jsonable(self.workload_cpus),
        }
        merged = section_json(self.load, self.aslr, self.isolation, self.variables, self.git)
        out.update(merged)  # its _unavailable replaces the empty one, in the first place
        return out

    @classmethod
    def read(cls, s: StoredSection) -> EnvironmentFacts:
        """The section as stored (see :meth:`MachineFacts.from_stored`)."""
        return cls(
            s.integers("workload_cpus"),
            Load.read(s),
            Aslr.read(s),
            Isolation.read(s),
            Variables.read(s),
            GitState.read(s),
            s.failed,
        )


# ------------------------------------------------------------------ campaign's keys


@dataclass(frozen=True, kw_only=True)
class RoundContainment(Facts):
    """How each round's processes were contained (the ``containment`` a campaign adds to
    its record, runner/execute/containment.py ``containment_record``): ``kind``
    (``cgroup`` or ``process group``), a one-line ``detail``, and ``wait_source``, the
    signal of each round's CPU wait."""

    kind: str | None = None
    detail: str | None = None
    wait_source: str | None = None

    @classmethod
    def read(cls, s: StoredSection) -> RoundContainment:
        """The stored ``containment`` object."""
        return cls(
            kind=s.text("kind"),
            detail=s.text("detail"),
            wait_source=s.text("wait_source"),
            unavailable=s.reasons_of(cls.keys()),
            absent=s.absent_of(cls.keys()),
        )


@dataclass(frozen=True)
class Stored:
    """What a stored metadata object holds besides the record's facts (read by
    :meth:`MachineFacts.from_stored`; nothing on a record collected here).

    ``present``: there is a record (an object, not empty); ``sections``: those of
    :data:`SECTIONS` it holds (not null nor empty: one that is not an object is held,
    its facts unknown), in that order; ``unreadable``: how many facts of those sections it
    lists as unreadable (their ``_unavailable`` entries); ``containment``, ``tuning`` and
    ``revision``: the keys a campaign adds, how its rounds were contained, what
    ``settings.tune`` changed (:meth:`Entry.changes_of`, docs/tuning.md) and the revision
    of the code it measured (:meth:`Revision.from_dict`; None when not recorded).
    """

    present: bool = False
    sections: tuple[str, ...] = ()
    unreadable: int = 0
    containment: RoundContainment = field(default_factory=RoundContainment)
    tuning: tuple[Entry, ...] = ()
    revision: Revision | None = None

    @classmethod
    def read(cls, s: StoredSection) -> Stored:
        """What the stored object ``s`` holds (its facts are read by the sections)."""
        held = tuple(k for k in SECTIONS if s.holds(k))
        return cls(
            present=bool(s.raw),
            sections=held,
            unreadable=sum(s.section(k).listed for k in held),
            containment=RoundContainment.read(s.section("containment")),
            tuning=Entry.changes_of(s.section("tuning").raw),
            revision=Revision.from_dict(s.section("revision").raw),
        )


# ------------------------------------------------------------------------------ record


@dataclass(frozen=True)
class MachineFacts:
    """The reproducibility record of one machine at one moment.

    ``schema_version``: :data:`SCHEMA_VERSION` when collected; ``collected_at``: UTC, ISO
    8601 to the second; ``collection_seconds``: what collecting took; ``stored``: what
    the stored metadata held besides these (empty when collected here, not written by
    :meth:`to_json`).
    """

    hardware: HardwareFacts = field(default_factory=HardwareFacts)
    software: SoftwareFacts = field(default_factory=SoftwareFacts)
    timer: TimerFacts = field(default_factory=TimerFacts)
    environment: EnvironmentFacts = field(default_factory=EnvironmentFacts)
    schema_version: int | None = SCHEMA_VERSION
    collected_at: str | None = None
    collection_seconds: float | None = None
    stored: Stored = field(default_factory=Stored)

    def to_json(self) -> dict[str, object]:
        """The JSON object stored as a campaign's metadata (before the keys the campaign
        adds: ``revision``, ``containment``, ``tuning``, ...)."""
        return {
            "schema_version": self.schema_version,
            "collected_at": self.collected_at,
            "hardware": self.hardware.to_json(),
            "software": self.software.to_json(),
            "timer": self.timer.to_json(),
            "environment": self.environment.to_json(),
            "collection_seconds": self.collection_seconds,
        }

    @classmethod
    def from_stored(cls, doc: object) -> MachineFacts:
        """The record in a stored metadata object (a campaign's, a node's).

        Parameters
        ----------
        doc : object
            The parsed JSON; of the keys a campaign adds, ``containment``, ``tuning`` and
            ``revision`` are read into ``stored`` (with which sections the object holds),
            the others (``executor``, ...) are ignored.

        Returns
        -------
        MachineFacts
            Never raises: a missing section or key reads as None (listed in the group's
            ``absent``), a value of the wrong type as None with the reason ``the stored
            value is not ...``; anything but a mapping is an empty record.
        """
        match doc:
            case MachineFacts():
                return doc
            case Mapping():
                s = StoredSection(doc)
                return cls(
                    HardwareFacts.read(s.section("hardware")),
                    SoftwareFacts.read(s.section("software")),
                    TimerFacts.read(s.section("timer")),
                    EnvironmentFacts.read(s.section("environment")),
                    s.integer("schema_version"),
                    s.text("collected_at"),
                    s.number("collection_seconds"),
                    Stored.read(s),
                )
        return cls(schema_version=None)
