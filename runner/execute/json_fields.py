"""Reading one JSON object that came from outside, each field once, with its type checked.

The agent protocol's messages (:mod:`runner.execute.agent_messages`) and the records other
runs leave on disk (the in-flight record of :mod:`runner.execute.containment`, the run
records of :mod:`runner.execute.reservation`) are read from peers and files another user
may have written: hostile input (docs/security.md). Each record's ``from_json`` reads its
fields through a :class:`JsonFields`, which returns values of the type asked for or raises
:class:`FieldError` naming the field, so that no unchecked value gets past the boundary.

Types: ``int`` is a JSON integer (never ``true``/``false``), ``float`` a JSON number,
``str`` a string, ``bool`` ``true``/``false``. A JSON ``null`` counts as missing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar, overload

T = TypeVar("T", int, float, str, bool)


class FieldError(ValueError):
    """A field of a JSON object is missing or has the wrong type (the message names it)."""


def _typed(value: object, kind: type[T]) -> T | None:
    """``value`` as ``kind`` when it is one (an int counts as a float, a bool as no
    number), else None."""
    if isinstance(value, bool) and kind is not bool:
        return None
    if kind is float and isinstance(value, int):
        return kind(value)
    if isinstance(value, kind):
        return value
    return None


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
    """

    def __init__(self, data: object, what: str) -> None:
        if not isinstance(data, Mapping):
            raise FieldError(f"{what}: not a JSON object")
        self.data: Mapping[object, object] = data
        self.what = what

    def _fail(self, key: str, kind: type, value: object) -> FieldError:
        shown = "".join(c if c.isprintable() else "?" for c in repr(value))[:80]
        return FieldError(f"{self.what}: field {key!r} is {shown}, not {_name(kind)}")

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
