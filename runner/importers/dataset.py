"""The one in-memory shape of imported measurements: :class:`Dataset`.

Every importer (CSV long form, hyperfine, pyperf, Google Benchmark) returns a
:class:`Dataset`: readings grouped by a key ``(system, benchmark, workload)`` in time
order, one unit and one direction for the whole file (docs/methods.md §1: every metric carries
a unit and a direction). ``benchrun analyze`` hands the arrays to ``stats``; nothing here
computes a statistic.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Literal

import numpy as np

from benchrun.runner.errors import UserError
from benchrun.runner.format import printable

Direction = Literal["lower_is_better", "higher_is_better"]

#: (system, benchmark, workload); parts the data does not have are None
GroupKey = tuple[str | None, str | None, str | None]

#: substrings of a unit that mark a rate (larger is better); everything else is a cost
_RATE_MARKERS = ("/s", "/sec", "per s", "ops", "op/s", "flop", "hz", "throughput", "qps", "rps")


def direction_for_unit(unit: str) -> Direction:
    """Guess the direction of a metric from its unit (docs/methods.md §1).

    Costs (``s``, ``ms``, ``ns``, ``J``, ``bytes``) are ``lower_is_better``; rates
    (``ops/s``, ``MB/s``, ``GFLOP/s``, ``Hz``) are ``higher_is_better``. An empty or unknown
    unit counts as a cost; the command line can override the guess.
    """
    text = unit.strip().lower()
    if any(marker in text for marker in _RATE_MARKERS):
        return "higher_is_better"
    return "lower_is_better"


def _printable_key(key: GroupKey) -> GroupKey:
    """``key`` with each part's unprintable characters escaped (``\\x1b``)."""
    a, b, c = key
    return (
        None if a is None else printable(a),
        None if b is None else printable(b),
        None if c is None else printable(c),
    )


def display_name(key: GroupKey) -> str:
    """Human name of a group: the present parts of its key joined by ``/``."""
    parts = [part for part in key if part is not None]
    return "/".join(parts) if parts else "(all)"


def _benchmark_label(key: GroupKey) -> str:
    """Name of a group within one system: benchmark and workload parts joined."""
    parts = [part for part in key[1:] if part is not None]
    return "/".join(parts) if parts else "(all)"


@dataclass(frozen=True)
class Pairing:
    """Two systems (or two groups) lined up benchmark by benchmark.

    ``benchmarks[i]`` names the benchmark whose readings are ``a[i]`` (system ``a_name``)
    and ``b[i]`` (system ``b_name``); this is the benchmark x runs layout that
    ``stats.speedup_suite``, ``stats.hpt`` and the resampling functions take.
    """

    a_name: str
    b_name: str
    benchmarks: tuple[str, ...]
    a: tuple[np.ndarray, ...]
    b: tuple[np.ndarray, ...]


@dataclass(frozen=True)
class Dataset:
    """Readings of one or more groups, each in time order, with one unit and direction.

    ``groups`` maps a :data:`GroupKey` to a read-only 1-D float array (first-seen order);
    ``unit`` is the unit of every value (``"s"``, ``"ns"``, ``"ops/s"``, or ``""``);
    ``source_format`` is ``"csv"``, ``"hyperfine"``, ``"pyperf"`` or ``"gbench"``;
    ``direction`` says whether smaller values are better; ``source`` names the file(s);
    ``notes`` are sentences the importer wants shown beside the results (excluded
    aggregates, failed runs, debug builds...).

    ``processes`` says what a process is, when the file says it (docs/imported-data.md):
    for a group key, the number of values each process contributed, in file order (their
    sum is the group's length; a pyperf run, a hyperfine run, a Google Benchmark
    repetition). Groups without an entry (CSV, benchrun exports) have no process structure
    and are analysed as one series of readings. ``process_word`` names the unit for people
    (``"process"`` or ``"repetition"``).

    ``rounds`` says what a round is, for data benchrun measured (its export, JSON or CSV):
    for a group key, the number of analysed readings of each round, in launch order (their
    sum is the group's length). Such a group is analysed as benchrun analysed it, by the
    collector of runner/control/collector.py over its rounds (warm-up already left out),
    so ``analyze`` and ``compare`` give the estimate and CI the campaign's report shows.
    """

    groups: Mapping[GroupKey, np.ndarray]
    unit: str
    source_format: str
    direction: Direction = "lower_is_better"
    source: str = ""
    notes: tuple[str, ...] = field(default_factory=tuple)
    processes: Mapping[GroupKey, tuple[int, ...]] = field(default_factory=dict)
    process_word: str = "process"
    rounds: Mapping[GroupKey, tuple[int, ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Names, units and notes come from a file anyone may have written: they are kept
        # with unprintable characters escaped (runner/format.py printable), so no output of
        # analyze or compare, terminal, JSON or report, carries a terminal escape sequence
        safe = {key: _printable_key(key) for key in self.groups}
        frozen: dict[GroupKey, np.ndarray] = {}
        for key, values in self.groups.items():
            arr = np.array(values, dtype=float).ravel()
            arr.setflags(write=False)
            if safe[key] in frozen:
                raise UserError(
                    f"{printable(self.source)}: two groups are both named "
                    f"{display_name(safe[key])!r} once their unprintable characters are "
                    "escaped; rename one"
                )
            frozen[safe[key]] = arr
        object.__setattr__(self, "groups", MappingProxyType(frozen))
        for name in ("processes", "rounds"):
            parts = {safe.get(k, k): v for k, v in getattr(self, name).items()}
            object.__setattr__(self, name, self._split(parts, frozen, name))
        object.__setattr__(self, "notes", tuple(printable(n) for n in self.notes))
        object.__setattr__(self, "unit", printable(self.unit))
        object.__setattr__(self, "source", printable(self.source))

    @staticmethod
    def _split(
        parts: Mapping[GroupKey, tuple[int, ...]], groups: Mapping[GroupKey, np.ndarray], word: str
    ) -> Mapping[GroupKey, tuple[int, ...]]:
        """``parts`` (values per process or per round, by group) checked against the groups;
        entries of groups left out (by :meth:`select`) are dropped."""
        sizes: dict[GroupKey, tuple[int, ...]] = {}
        for key, counts in parts.items():
            if key not in groups:
                continue  # a group left out by select(): its structure goes too
            counts = tuple(int(c) for c in counts)
            if any(c < 1 for c in counts) or sum(counts) != groups[key].size:
                raise ValueError(
                    f"{word} of {display_name(key)!r} hold {sum(counts)} values in "
                    f"{len(counts)} {word}, the group has {groups[key].size}"
                )
            sizes[key] = counts
        return MappingProxyType(sizes)

    def _values_by(self, key: GroupKey, counts: tuple[int, ...] | None) -> list[np.ndarray] | None:
        if counts is None:
            return None
        bounds = np.cumsum((0, *counts))
        values = self.groups[key]
        return [values[lo:hi] for lo, hi in zip(bounds[:-1], bounds[1:], strict=True)]

    # -------------------------------------------------------------- processes
    def process_values(self, key: GroupKey) -> list[np.ndarray] | None:
        """The values of ``key`` split by process (file order), or None when the file does
        not say what a process is (then the readings are one series)."""
        return self._values_by(key, self.processes.get(key))

    def round_values(self, key: GroupKey) -> list[np.ndarray] | None:
        """The analysed readings of ``key`` split by benchrun round (launch order), or None
        for data benchrun did not measure."""
        return self._values_by(key, self.rounds.get(key))

    # ----------------------------------------------------------------- naming
    @property
    def names(self) -> list[str]:
        """Display names of the groups, in data order."""
        return [display_name(key) for key in self.groups]

    @property
    def has_systems(self) -> bool:
        """True when at least one group has a ``system`` part."""
        return any(key[0] is not None for key in self.groups)

    @property
    def systems(self) -> list[str]:
        """Distinct ``system`` values in data order."""
        return _unique(key[0] for key in self.groups if key[0] is not None)

    @property
    def benchmarks(self) -> list[str]:
        """Distinct benchmark labels (benchmark and workload parts) in data order."""
        return _unique(_benchmark_label(key) for key in self.groups)

    def named(self) -> dict[str, np.ndarray]:
        """The groups keyed by display name (data order)."""
        return {display_name(key): values for key, values in self.groups.items()}

    # -------------------------------------------------------------- selection
    def select(
        self,
        system: str | None = None,
        benchmark: str | None = None,
        workload: str | None = None,
    ) -> Dataset:
        """The groups whose key matches every part given (None = any)."""
        wanted = (system, benchmark, workload)
        kept = {
            key: values
            for key, values in self.groups.items()
            if all(w is None or w == part for w, part in zip(wanted, key, strict=True))
        }
        return replace(self, groups=kept)

    def with_direction(self, direction: Direction) -> Dataset:
        """The same data with ``direction`` overridden (e.g. from the command line)."""
        return replace(self, direction=direction)

    def for_system(self, system: str) -> dict[str, np.ndarray]:
        """Benchmark label -> readings of one system (the benchmark x runs layout)."""
        if system not in self.systems:
            raise UserError(
                f"{self.source}: no system {system!r}; systems in the data: "
                f"{', '.join(self.systems) or '(none)'}"
            )
        return {
            _benchmark_label(key): values for key, values in self.groups.items() if key[0] == system
        }

    def group(self, name: str) -> np.ndarray:
        """Readings of the group whose display name is ``name``."""
        named = self.named()
        if name not in named:
            raise UserError(
                f"{self.source}: no group {name!r}; groups in the data: {', '.join(named)}"
            )
        return named[name]

    def pair(self, a: str, b: str) -> Pairing:
        """Line up A and B benchmark by benchmark.

        With a ``system`` column, ``a`` and ``b`` are systems and the benchmarks are the
        benchmark labels both have (every benchmark must be present on both sides: a
        one-sided benchmark is an error, not silently dropped). Without one, ``a`` and
        ``b`` are group display names and the pairing has a single benchmark.
        """
        if a == b:
            raise UserError(f"A and B are the same ({a!r}); name two different systems")
        if self.has_systems:
            left, right = self.for_system(a), self.for_system(b)
            only_a = [name for name in left if name not in right]
            only_b = [name for name in right if name not in left]
            if only_a or only_b:
                missing = [f"{n} (only in {a})" for n in only_a]
                missing += [f"{n} (only in {b})" for n in only_b]
                raise UserError(
                    f"{self.source}: benchmarks not measured on both systems: {', '.join(missing)}"
                )
            names = tuple(left)
            return Pairing(
                a, b, names, tuple(left[n] for n in names), tuple(right[n] for n in names)
            )
        va, vb = self.group(a), self.group(b)
        return Pairing(a, b, (f"{a} vs {b}",), (va,), (vb,))


def _unique(items: Iterable[str]) -> list[str]:
    seen: dict[str, None] = {}
    for item in items:
        seen.setdefault(item, None)
    return list(seen)


def merge(datasets: list[Dataset]) -> Dataset:
    """Combine datasets read from several files into one.

    Files without a ``system`` part get the file's label (its stem) as system, so
    ``analyze speedup old.json new.json --baseline old --candidate new`` works the way
    ``pyperf compare_to`` users expect. Units must agree; a group key that appears in two
    files is an error (the files would otherwise be silently concatenated).
    """
    if len(datasets) == 1:
        return datasets[0]
    units = {d.unit for d in datasets}
    if len(units) > 1:
        raise UserError(
            "the files use different units ("
            + ", ".join(f"{d.source}: {d.unit or 'none'}" for d in datasets)
            + "); convert them to one unit first"
        )
    directions = {d.direction for d in datasets}
    groups: dict[GroupKey, np.ndarray] = {}
    processes: dict[GroupKey, tuple[int, ...]] = {}
    rounds: dict[GroupKey, tuple[int, ...]] = {}
    origin: dict[GroupKey, str] = {}
    for d in datasets:
        label = _file_label(d.source)
        for key, values in d.groups.items():
            new_key: GroupKey = key if key[0] is not None else (label, key[1], key[2])
            if new_key in groups:
                raise UserError(
                    f"group {display_name(new_key)!r} appears in both {origin[new_key]} and "
                    f"{d.source}; give the files different names or a system column"
                )
            groups[new_key] = values
            origin[new_key] = d.source
            if key in d.processes:
                processes[new_key] = d.processes[key]
            if key in d.rounds:
                rounds[new_key] = d.rounds[key]
    formats = _unique(d.source_format for d in datasets)
    notes = tuple(n for d in datasets for n in d.notes)
    return Dataset(
        groups=groups,
        unit=datasets[0].unit,
        source_format="+".join(formats),
        direction=datasets[0].direction if len(directions) == 1 else "lower_is_better",
        source=", ".join(d.source for d in datasets),
        notes=notes,
        processes=processes,
        process_word=datasets[0].process_word,
        rounds=rounds,
    )


def _file_label(source: str) -> str:
    name = source.rsplit("/", 1)[-1]
    for suffix in (".gz", ".json", ".csv", ".tsv"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    return name or source


#: the largest magnitude of a value the statistics take: fourth powers of such values
#: (Welch-Satterthwaite degrees of freedom square a variance; kurtosis) still sum to a
#: finite float; 1e80 overflows Welch's degrees of freedom, 1e155 the variance itself
MAX_MAGNITUDE = 1e50


def out_of_range(where: str, value: float | None = None) -> UserError:
    """The error for a value beyond :data:`MAX_MAGNITUDE` (``value`` None: too large to
    convert to a float at all)."""
    shown = "" if value is None else f" {value:.4g}"
    return UserError(
        f"{where}: value{shown} is out of range: values must lie within "
        f"±{MAX_MAGNITUDE:g} for the statistics not to overflow; give them in a larger unit"
    )


def parse_number(text: object, where: str) -> float:
    """A finite float from a JSON number or CSV cell, else a :class:`UserError` naming ``where``.

    NaN and infinities are refused: a reading that is not a number cannot be summarised
    honestly, and silently dropping it would change n. So are values beyond
    :data:`MAX_MAGNITUDE`, whose powers overflow the statistics.
    """
    if isinstance(text, bool) or text is None:
        raise UserError(f"{where}: expected a number, got {json_type(text)}")
    if isinstance(text, int | float):
        try:
            value = float(text)
        except OverflowError:
            raise out_of_range(where) from None
    elif isinstance(text, str):
        cell = text.strip()
        if not cell:
            raise UserError(f"{where}: empty value")
        try:
            value = float(cell)
        except ValueError:
            shown = cell if len(cell) <= 40 else cell[:40] + "..."
            raise UserError(f"{where}: value {shown!r} is not a number") from None
    else:
        raise UserError(f"{where}: expected a number, got {json_type(text)}")
    if not np.isfinite(value):
        raise UserError(f"{where}: value {text!r} is not finite (NaN or infinity)")
    if abs(value) > MAX_MAGNITUDE:
        raise out_of_range(where, value)
    return value


def json_type(value: object) -> str:
    """How a parsed JSON value is called in an error message ("null", "an array"...)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "text"
    if isinstance(value, int | float):
        return "a number"
    return type(value).__name__
