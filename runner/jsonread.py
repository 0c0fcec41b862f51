"""Parsed JSON from outside read into typed values: the one reader of stored and hostile JSON.

Everything benchrun reads back as JSON is hostile input (docs/security.md): the agent
protocol's messages from a peer, the records other runs leave on disk (the in-flight record,
the run records of a reservation), the store's JSON columns (the parsed experiment, the
settings, workload specs, metadata sections, the controller's verdict records) and the files
``benchrun analyze``/``compare`` import. Each is read once, at its boundary, into a typed
record; no unchecked value gets past it. Two ways, one set of rules:

- :func:`record_from_json` builds a dataclass from its fields' type hints (lists as tuples,
  objects as dataclasses, ``Literal`` words, unions, paths): for records whose JSON is
  their fields, such as the stored experiment.
- :class:`JsonFields` reads one object field by field with typed accessors (mypy checks what
  each returns): for records whose JSON is not just their fields (renamed keys, values
  checked against each other, messages of their own).

Types: ``int`` is a JSON integer (never ``true``/``false``), ``float`` a JSON number (an
integer counts), ``str`` a string, ``bool`` ``true``/``false``. Both raise
:class:`FieldError`, a ``ValueError`` whose one-line message names the field; the caller
adds the file or campaign and turns it into a :class:`~benchrun.runner.errors.UserError`.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import types
import typing
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal, TypeVar, Union, get_args, get_origin, overload

__all__ = ["FieldError", "JsonFields", "MISSING", "record_fields", "record_from_json"]

T = TypeVar("T", int, float, str, bool)
W = TypeVar("W", bound=str)
R = TypeVar("R")
V = TypeVar("V")


class FieldError(ValueError):
    """A field of parsed JSON is missing or has the wrong type (the message names it)."""


class _Missing:
    """The value of a field an object does not have (a field written as ``null`` is None,
    which some readers refuse and others read as their default); false, as None is."""

    def __repr__(self) -> str:
        return "MISSING"

    def __bool__(self) -> bool:
        return False


#: what :meth:`JsonFields.value` gives for a field the object does not have
MISSING = _Missing()


def _shown(value: object, limit: int = 80) -> str:
    """``value`` (parsed JSON) as an error message shows it: its JSON text, at most
    ``limit`` characters, with the characters a terminal acts on replaced by ``?``."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    text = "".join(c if c.isprintable() else "?" for c in text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _fits(value: object, kind: type) -> bool:
    """Whether ``value`` (parsed JSON) is a ``kind`` (``int``, ``float``, ``str`` or
    ``bool``): an integer counts as a float, ``true``/``false`` as no number."""
    if isinstance(value, bool):
        return kind is bool
    if kind is float:
        return isinstance(value, int | float)
    return isinstance(value, kind)


def _typed(value: object, kind: type[T]) -> T | None:
    """``value`` as ``kind`` when it is one (:func:`_fits`; an integer read as a float
    becomes one), else None."""
    if not _fits(value, kind):
        return None
    if kind is float and isinstance(value, int):
        return kind(value)
    return value if isinstance(value, kind) else None


def _name(kind: type) -> str:
    return {int: "an integer", float: "a number", str: "a string", bool: "true or false"}[kind]


class JsonFields:
    """The fields of one JSON object read from outside.

    Parameters
    ----------
    data : object
        What ``json.loads`` returned; :class:`FieldError` unless it is an object.
    what : str
        What the object is, for the errors (``"round spec"``).

    A JSON ``null`` counts as missing for every accessor but :meth:`value`.
    """

    def __init__(self, data: object, what: str) -> None:
        if not isinstance(data, Mapping):
            raise FieldError(f"{what}: not a JSON object")
        self.data: Mapping[object, object] = data
        self.what = what

    def _fail(self, key: str, kind: type, value: object) -> FieldError:
        return FieldError(f"{self.what}: field {key!r} is {_repr(value)}, not {_name(kind)}")

    def has(self, key: str) -> bool:
        """Whether the object has the field ``key`` (even a ``null`` one)."""
        return key in self.data

    def value(self, key: str) -> object:
        """The field ``key`` as parsed, unchecked (:data:`MISSING` when the object does not
        have it): for a reader whose own check narrows it, with a message of its own."""
        return self.data.get(key, MISSING)

    def check(self, key: str, check: Callable[[object, str], V], *, place: bool = True) -> V:
        """The field ``key`` through the reader's own ``check``, which gets its value as
        parsed (:data:`MISSING` when the object does not have it, None for ``null``) and
        its place, ``what.key`` (``place`` False: ``what``, and the check names the field
        itself), and returns the value of the record's field or raises an error naming
        the place (a file's format with messages of its own: runner/importers/)."""
        return check(self.value(key), f"{self.what}.{key}" if place else self.what)

    def required(self, key: str, kind: type[T]) -> T:
        """The field ``key`` as ``kind``; :class:`FieldError` when it is missing or null or
        another type."""
        value = self.data.get(key)
        if value is None:
            raise FieldError(f"{self.what}: field {key!r} is missing")
        typed = _typed(value, kind)
        if typed is None:
            raise self._fail(key, kind, value)
        return typed

    @overload
    def optional(self, key: str, kind: type[T]) -> T | None: ...

    @overload
    def optional(self, key: str, kind: type[T], default: T) -> T: ...

    def optional(self, key: str, kind: type[T], default: T | None = None) -> T | None:
        """The field ``key`` as ``kind``, ``default`` when it is missing or null;
        :class:`FieldError` when it has another type."""
        value = self.data.get(key)
        if value is None:
            return default
        typed = _typed(value, kind)
        if typed is None:
            raise self._fail(key, kind, value)
        return typed

    def loose(self, key: str, kind: type[T]) -> T | None:
        """The field ``key`` as ``kind``, None when it is missing, null or another type
        (a field only shown or compared, which a wrong value must not make fatal)."""
        return _typed(self.data.get(key), kind)

    def finite(self, key: str) -> float:
        """The field ``key``, a finite number, as a float; :class:`FieldError` when it is
        missing, null, not a number, NaN or infinite."""
        value = self.optional_finite(key)
        if value is None:
            raise FieldError(f"{self.what}: field {key!r} is missing")
        return value

    def optional_finite(self, key: str) -> float | None:
        """The field ``key``, a finite number, as a float; None when it is missing or null;
        :class:`FieldError` when it is not a number, NaN or infinite."""
        value = self.optional(key, float)
        if value is not None and not math.isfinite(value):
            raise FieldError(f"{self.what}: field {key!r} is {value}, not a finite number")
        return value

    def one_of(self, key: str, allowed: tuple[W, ...]) -> W:
        """The field ``key``, one of the words ``allowed``; :class:`FieldError` otherwise."""
        value = self.data.get(key)
        for word in allowed:
            if value == word:
                return word
        if value is None:
            raise FieldError(f"{self.what}: field {key!r} is missing")
        raise FieldError(
            f"{self.what}: field {key!r} is {_repr(value)}, not one of {', '.join(allowed)}"
        )

    def items(self, key: str, kind: type[T]) -> tuple[T, ...] | None:
        """The field ``key``, a list of ``kind``, as a tuple; None when it is missing or
        null; :class:`FieldError` when it is no list or an item has another type."""
        value = self.data.get(key)
        if value is None:
            return None
        if not isinstance(value, list):
            raise FieldError(f"{self.what}: field {key!r} is not a list")
        out: list[T] = []
        for item in value:
            typed = _typed(item, kind)
            if typed is None:
                raise self._fail(f"{key}[{len(out)}]", kind, item)
            out.append(typed)
        return tuple(out)

    def raw_list(self, key: str) -> list[object] | None:
        """The field ``key`` when it is a list (its items unchecked: each is read by the
        caller), None when it is missing or null; :class:`FieldError` when it is not a
        list."""
        value = self.data.get(key)
        if value is None:
            return None
        if not isinstance(value, list):
            raise FieldError(f"{self.what}: field {key!r} is not a list")
        return value

    def object(self, key: str) -> dict[str, object] | None:
        """The field ``key``, a JSON object, as a new dict (its values unchecked: they are
        passed on as JSON); None when it is missing or null; :class:`FieldError` when it
        is not an object."""
        value = self.data.get(key)
        if value is None:
            return None
        if not isinstance(value, dict):
            raise FieldError(f"{self.what}: field {key!r} is not a JSON object")
        return {str(k): v for k, v in value.items()}

    def strings(self, key: str) -> dict[str, str] | None:
        """The field ``key``, a JSON object of strings (an environment), as a dict; None
        when it is missing or null; :class:`FieldError` otherwise."""
        value = self.object(key)
        if value is None:
            return None
        for name, item in value.items():
            if not isinstance(item, str):
                raise self._fail(f"{key}[{name!r}]", str, item)
        return {name: str(item) for name, item in value.items()}


def _repr(value: object) -> str:
    """``value`` as :class:`JsonFields`' messages show it: Python's repr, 80 characters at
    most, the characters a terminal acts on as ``?``."""
    return "".join(c if c.isprintable() else "?" for c in repr(value))[:80]


# -- dataclasses decoded by their fields' type hints -------------------------------------------


def _bad(where: str, what: str) -> FieldError:
    return FieldError(f"{where or 'the top level'}: {what}")


@functools.cache
def _hints(cls: type) -> dict[str, object]:
    """The resolved type hints of a dataclass's fields (their annotations are strings)."""
    return typing.get_type_hints(cls)


def _decode(value: object, hint: object, where: str) -> object:
    """``value`` (parsed JSON) as a value of the type ``hint`` (a dataclass field's type
    hint): lists become tuples, objects dataclasses or dicts, text a path; raises
    :class:`FieldError` where a value does not have the type."""
    origin, args = get_origin(hint), get_args(hint)
    if hint is Any or hint is object:
        return value
    if hint is type(None):
        if value is not None:
            raise _bad(where, f"expected null, found {_shown(value, 40)}")
        return None
    if origin in (Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        problems = []
        for member in args:
            if member is type(None):
                continue
            try:
                return _decode(value, member, where)
            except FieldError as exc:
                problems.append(exc)
        raise problems[0]
    if origin is Literal:
        if value not in args:
            raise _bad(
                where, f"expected one of {', '.join(map(repr, args))}, found {_shown(value, 40)}"
            )
        return value
    if origin is tuple:
        if not isinstance(value, list):
            raise _bad(where, f"expected a list, found {_shown(value, 40)}")
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_decode(v, args[0], f"{where}[{i}]") for i, v in enumerate(value))
        if len(value) != len(args):
            raise _bad(where, f"expected a list of {len(args)}, found {len(value)} items")
        return tuple(
            _decode(v, a, f"{where}[{i}]") for i, (v, a) in enumerate(zip(value, args, strict=True))
        )
    if origin in (Mapping, dict):
        if not isinstance(value, dict):
            raise _bad(where, f"expected an object, found {_shown(value, 40)}")
        return {k: _decode(v, args[1], f"{where}.{k}") for k, v in value.items()}
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return record_from_json(hint, value, where)
    if hint is Path:
        if not isinstance(value, str):
            raise _bad(where, f"expected a path, found {_shown(value, 40)}")
        return Path(value)
    if not isinstance(hint, type) or hint not in (int, float, str, bool):  # pragma: no cover
        raise _bad(where, f"cannot read a value of type {hint}")  # a type no record uses
    if not _fits(value, hint):
        raise _bad(where, f"expected {_name(hint)}, found {_shown(value, 40)}")
    return value  # as parsed: an integer stored for a float field stays the integer it was


def record_fields(
    cls: type, value: object, where: str = "", *, skip: tuple[str, ...] = (), lenient: bool = False
) -> dict[str, object]:
    """The keyword arguments of dataclass ``cls`` from the JSON object ``value``, each
    decoded by its field's type hint (:func:`record_from_json`), but the fields named in
    ``skip`` (the caller passes those)."""
    if not isinstance(value, Mapping):
        raise _bad(where, f"expected an object, found {_shown(value, 40)}")
    hints = _hints(cls)
    out: dict[str, object] = {}
    for f in dataclasses.fields(cls):
        if f.name in skip or f.name not in value:
            continue
        try:
            out[f.name] = _decode(value[f.name], hints[f.name], f"{where}.{f.name}".lstrip("."))
        except FieldError:
            if not lenient:
                raise
    return out


def record_from_json(cls: type[R], value: object, where: str = "", *, lenient: bool = False) -> R:
    """The dataclass ``cls`` from the parsed JSON object ``value``, each field decoded by its
    type hint (lists as tuples, objects as dataclasses, ``Literal`` words, ``X | None``,
    paths; ``float`` takes an integer, ``int`` and ``float`` never ``true``/``false``): a
    missing field takes its default, an unknown key is ignored.

    A value not of its field's type raises :class:`FieldError` naming where it is
    (``where.workloads[0].command[1]: expected a string, found 1``), or with ``lenient`` takes
    the field's default (a record written by an older benchrun, read as it was). What the
    record receives is checked against the same hints mypy checks its users with."""
    return cls(**record_fields(cls, value, where, lenient=lenient))
