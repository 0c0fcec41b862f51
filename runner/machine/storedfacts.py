"""The JSON conventions of the reproducibility record (docs/machine.md "The record").

:class:`Facts` is a group of facts read by one probe, with why some were not read;
:func:`section_json` writes groups as one stored section (``{"_unavailable": {key:
reason}, key: value, ...}``); :class:`StoredSection` reads a stored section back with
typed reads that never raise. The groups and sections themselves are in
:mod:`runner.machine.facts`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import TypeVar

#: what a stored section has under a key it lacks
_MISSING = object()

#: the fields of :class:`Facts` that are bookkeeping, not facts of the record
_BOOKKEEPING = frozenset({"unavailable", "absent"})

F = TypeVar("F", bound="Facts")


def jsonable(value: object) -> object:
    """``value`` with tuples as lists and mappings as dicts (what ``json`` writes)."""
    if isinstance(value, tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    return value


@dataclass(frozen=True, kw_only=True)
class Facts:
    """A group of facts read by one probe. Every fact is a field (named as its JSON key)
    whose value is None when it was not read.

    ``unavailable``: why a fact was not read, by key (``"*"``: the whole section);
    ``absent``: the keys a stored record lacked (only set by :meth:`MachineFacts.from_stored`).
    """

    unavailable: Mapping[str, str] = field(default_factory=dict)
    absent: frozenset[str] = frozenset()

    @classmethod
    def keys(cls) -> tuple[str, ...]:
        """The JSON keys of the facts of this group, in the order they are written."""
        return tuple(f.name for f in fields(cls) if f.name not in _BOOKKEEPING)

    @classmethod
    def unknown(cls: type[F], reason: str) -> F:
        """The group with every fact None for ``reason`` (its probe failed)."""
        return cls(unavailable=dict.fromkeys(cls.keys(), reason))

    def pairs(self) -> list[tuple[str, object]]:
        """``(key, JSON value)`` of every fact, in :meth:`keys` order."""
        values = asdict(self)
        return [(key, jsonable(values[key])) for key in self.keys()]

    @property
    def section_failed(self) -> str | None:
        """Why the whole section could not be read (its ``*`` reason), else None."""
        match self.unavailable:
            case {"*": str(reason)}:
                return reason
        return None

    def why(self, key: str) -> str | None:
        """Why fact ``key`` is unknown: its stored reason, or the whole section's (``*``)
        when the record lacks the key; None when the fact was read (even as None)."""
        own = self.unavailable.get(key)
        if own is not None:
            return own
        return self.section_failed if key in self.absent else None


class StoredSection:
    """One section of a stored record, being parsed into :class:`Facts` groups.

    Each typed read returns the stored value when it has the type asked for; a missing
    key is noted (:meth:`absent_of`), a value of another type is None with a reason
    (:meth:`reasons_of`). Reads never raise.

    Parameters
    ----------
    raw : object
        The stored section (anything: a non-mapping is an empty section).
    """

    def __init__(self, raw: object) -> None:
        self.raw: Mapping[str, object] = raw if isinstance(raw, Mapping) else {}
        match self.raw:
            case {"_unavailable": Mapping() as gone}:
                self.gone = {str(k): str(v) for k, v in gone.items()}
            case _:
                self.gone = {}
        self.wrong: dict[str, str] = {}
        self.missing: set[str] = set()

    @property
    def failed(self) -> str | None:
        """The reason stored for the whole section (``_unavailable["*"]``), else None."""
        match self.gone:
            case {"*": reason}:
                return reason
        return None

    @property
    def listed(self) -> int:
        """How many facts the section lists as unreadable: the entries of its stored
        ``_unavailable`` (an object, or a list of keys); 0 when it has none."""
        match self.raw:
            case {"_unavailable": Mapping() | list() as gone}:
                return len(gone)
        return 0

    def holds(self, key: str) -> bool:
        """Whether this object stores something under ``key``: a value that is not null,
        empty nor false (a value of the wrong kind is held all the same)."""
        return bool(self.raw.get(key))

    def section(self, key: str) -> StoredSection:
        """The section stored under ``key`` of this object (an empty one when missing)."""
        return StoredSection(self._raw(key))

    def _raw(self, key: str) -> object:
        """The stored value of ``key``; None, noted as missing, when there is none."""
        value = self.raw.get(key, _MISSING)
        if value is _MISSING:
            self.missing.add(key)
            return None
        return value

    def _bad(self, key: str, what: str) -> None:
        self.wrong[key] = f"the stored value is not {what}"

    def text(self, key: str) -> str | None:
        """A string fact."""
        value = self._raw(key)
        if value is None or isinstance(value, str):
            return value
        self._bad(key, "a string")
        return None

    def integer(self, key: str) -> int | None:
        """An integer fact (a bool is not one)."""
        value = self._raw(key)
        if value is None or (isinstance(value, int) and not isinstance(value, bool)):
            return value
        self._bad(key, "an integer")
        return None

    def number(self, key: str) -> float | None:
        """A number fact (int or float, kept as stored; a bool is not one)."""
        value = self._raw(key)
        if value is None or (isinstance(value, (int, float)) and not isinstance(value, bool)):
            return value
        self._bad(key, "a number")
        return None

    def flag(self, key: str) -> bool | None:
        """A true/false fact."""
        value = self._raw(key)
        if value is None or isinstance(value, bool):
            return value
        self._bad(key, "true or false")
        return None

    def integers(self, key: str) -> tuple[int, ...] | None:
        """A list of integers (CPU numbers)."""
        value = self._raw(key)
        if isinstance(value, list) and all(
            isinstance(v, int) and not isinstance(v, bool) for v in value
        ):
            return tuple(value)
        if value is not None:
            self._bad(key, "a list of integers")
        return None

    def numbers(self, key: str) -> tuple[float, ...] | None:
        """A list of numbers (load averages)."""
        value = self._raw(key)
        if isinstance(value, list) and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in value
        ):
            return tuple(value)
        if value is not None:
            self._bad(key, "a list of numbers")
        return None

    def texts(self, key: str) -> tuple[str, ...] | None:
        """A list of strings."""
        value = self._raw(key)
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return tuple(value)
        if value is not None:
            self._bad(key, "a list of strings")
        return None

    def text_map(self, key: str) -> Mapping[str, str] | None:
        """A mapping of strings to strings (CPU number to governor)."""
        value = self._raw(key)
        if isinstance(value, Mapping) and all(isinstance(v, str) for v in value.values()):
            return {str(k): v for k, v in value.items()}
        if value is not None:
            self._bad(key, "a mapping of strings")
        return None

    def optional_text_map(self, key: str) -> Mapping[str, str | None] | None:
        """A mapping of strings to strings or null (environment variables)."""
        value = self._raw(key)
        if isinstance(value, Mapping) and all(
            v is None or isinstance(v, str) for v in value.values()
        ):
            return {str(k): v for k, v in value.items()}
        if value is not None:
            self._bad(key, "a mapping of strings or nulls")
        return None

    def integer_lists(self, key: str) -> Mapping[str, tuple[int, ...]] | None:
        """A mapping of strings to lists of integers (CPU number to its SMT siblings)."""
        value = self._raw(key)
        if isinstance(value, Mapping) and all(
            isinstance(v, list) and all(isinstance(i, int) and not isinstance(i, bool) for i in v)
            for v in value.values()
        ):
            return {str(k): tuple(v) for k, v in value.items()}
        if value is not None:
            self._bad(key, "a mapping of integer lists")
        return None

    def reasons_of(self, keys: Iterable[str]) -> dict[str, str]:
        """The stored reasons of ``keys`` (and ``*``), then the wrong types read so far."""
        wanted = set(keys) | {"*"}
        out = {k: v for k, v in self.gone.items() if k in wanted}
        out.update((k, v) for k, v in self.wrong.items() if k in wanted)
        return out

    def absent_of(self, keys: Iterable[str]) -> frozenset[str]:
        """Which of ``keys`` the stored section lacks (read so far)."""
        return frozenset(self.missing.intersection(keys))


def section_json(*groups: Facts) -> dict[str, object]:
    """One section's JSON: ``_unavailable`` (every group's reasons, in order), then every
    group's facts in order."""
    gone: dict[str, str] = {}
    out: dict[str, object] = {"_unavailable": gone}
    for group in groups:
        gone.update(group.unavailable)
        out.update(group.pairs())
    return out


def failed_json(reason: str) -> dict[str, object]:
    """A section that could not be built at all."""
    return {"_unavailable": {"*": reason}}
