"""The experiment of a stored campaign, rebuilt from what its store holds.

``benchrun run DIR --resume`` continues the campaign in the directory DIR without its
experiment file or command line: the store holds the experiment's text (a file's text,
or the one the one-line form made) and the settings it ran with (``--set`` and
``--baseline`` applied), so the experiment is the stored text with the stored settings
(:func:`stored_experiment_text`), loaded like a file.

Every other reader of a stored campaign (show, report, export, comparisons) needs the
parsed :class:`Experiment` only for what its text says (``compare:`` groups, the executor,
the matrix), never with this machine's files checked: the store keeps it parsed, as JSON
(``campaign.experiment_json``, schema 6; docs/design.md "The store"), written once when the
campaign starts (:func:`experiment_to_json`) and read back into the typed record by
:func:`experiment_from_json`, so nothing parses YAML when a campaign is read. The JSON holds
every field of the :class:`Experiment` and its dataclasses except ``settings`` (stored on
their own, ``campaign.settings_json``) and ``source_text`` (``campaign.config_text``); it is
built from the dataclasses' fields and read back by their type hints, so a field added to
them is stored and read without a change here. Never pickle: the store is a file another
user may write (docs/security.md); the reader checks every value's type.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, TypeVar, Union, get_args, get_origin

from benchrun.runner.config.experiment import Experiment, Settings
from benchrun.runner.errors import UserError

__all__ = [
    "record_from_json",
    "experiment_from_json",
    "experiment_to_json",
    "stored_experiment_text",
    "stored_settings",
]

#: fields of :class:`Experiment` the JSON leaves out: stored in columns of their own
_NOT_STORED = ("settings", "source_text")

_R = TypeVar("_R")


def stored_settings(settings: Mapping[str, object]) -> dict[str, object]:
    """A ``settings:`` mapping equivalent to the stored ``settings`` (every field of
    :class:`runner.config.experiment.Settings` as JSON): keys this benchrun does not know
    are left out, and so is ``rounds`` of an adaptive campaign (adaptive mode ignores it and
    the file format refuses it)."""
    from benchrun.runner.config.schema import SETTINGS_KEYS, key_names

    known = set(key_names(SETTINGS_KEYS))
    out = {k: v for k, v in settings.items() if k in known}
    if out.get("adaptive", True):
        out.pop("rounds", None)
    return out


def stored_experiment_text(config_text: str, settings: Mapping[str, object]) -> str:
    """``config_text`` (an experiment file as stored) with its ``settings:`` replaced by the
    stored ``settings`` (:func:`stored_settings`), as YAML text to load like a file."""
    import yaml  # only `benchrun run DIR --resume` reads the text

    try:
        data = yaml.safe_load(config_text)
    except yaml.YAMLError as exc:
        raise UserError(f"the stored experiment text is not YAML ({exc})") from None
    except ValueError as exc:  # an integer past Python's int_max_str_digits
        raise UserError(f"the stored experiment text cannot be read ({exc})") from None
    if not isinstance(data, dict):
        raise UserError("the stored experiment text is not an experiment (not a mapping)")
    data["settings"] = stored_settings(settings)
    return str(yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=1000))


# -- the parsed experiment as JSON (schema 6) -------------------------------------------------


def _plain(value: object) -> object:
    """``value`` (a field of the experiment's dataclasses) as JSON values: a dataclass as
    an object of its fields, tuples as lists, a path as its text; TypeError for anything
    else that is not a JSON value."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    if value is None or isinstance(value, str | int | float | bool):
        return value
    raise TypeError(f"cannot store {type(value).__name__} in the experiment's JSON")


def experiment_to_json(experiment: Experiment) -> str:
    """The JSON text of ``experiment`` as the store keeps it (module docstring): every field
    but ``settings`` and ``source_text``, keys sorted."""
    doc = {
        f.name: _plain(getattr(experiment, f.name))
        for f in dataclasses.fields(Experiment)
        if f.name not in _NOT_STORED
    }
    return json.dumps(doc, sort_keys=True, allow_nan=False)


class _Bad(ValueError):
    """A stored value that does not have its field's type: ``where`` it is, and what."""

    def __init__(self, where: str, what: str) -> None:
        super().__init__(f"{where or 'the top level'}: {what}")


def _shown(value: object) -> str:
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."


@functools.cache
def _hints(cls: type) -> dict[str, object]:
    """The resolved type hints of a dataclass's fields (their annotations are strings)."""
    return typing.get_type_hints(cls)


def _decode(value: object, hint: object, where: str) -> object:
    """``value`` (parsed JSON) as a value of the type ``hint`` (a field's type hint of the
    experiment's dataclasses): lists become tuples, objects dataclasses, text a path; raises
    :class:`_Bad` where a value does not have the type."""
    origin, args = get_origin(hint), get_args(hint)
    if hint is Any or hint is object:
        return value
    if hint is type(None):
        if value is not None:
            raise _Bad(where, f"expected null, found {_shown(value)}")
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
            except _Bad as exc:
                problems.append(exc)
        raise problems[0]
    if origin is Literal:
        if value not in args:
            raise _Bad(
                where, f"expected one of {', '.join(map(repr, args))}, found {_shown(value)}"
            )
        return value
    if origin is tuple:
        if not isinstance(value, list):
            raise _Bad(where, f"expected a list, found {_shown(value)}")
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_decode(v, args[0], f"{where}[{i}]") for i, v in enumerate(value))
        if len(value) != len(args):
            raise _Bad(where, f"expected a list of {len(args)}, found {len(value)} items")
        return tuple(
            _decode(v, a, f"{where}[{i}]") for i, (v, a) in enumerate(zip(value, args, strict=True))
        )
    if origin in (Mapping, dict):
        if not isinstance(value, dict):
            raise _Bad(where, f"expected an object, found {_shown(value)}")
        return {k: _decode(v, args[1], f"{where}.{k}") for k, v in value.items()}
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return record_from_json(hint, value, where)
    if hint is Path:
        if not isinstance(value, str):
            raise _Bad(where, f"expected a path, found {_shown(value)}")
        return Path(value)
    if hint is float:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
    elif hint is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif hint in (str, bool):
        ok = isinstance(value, hint)
    else:  # pragma: no cover - a field type the experiment's dataclasses do not use
        raise _Bad(where, f"cannot read a value of type {hint}")
    if not ok:
        raise _Bad(where, f"expected {getattr(hint, '__name__', hint)}, found {_shown(value)}")
    return value


def _fields(
    value: object, cls: type, where: str, skip: tuple[str, ...] = (), lenient: bool = False
) -> dict[str, object]:
    """The keyword arguments of dataclass ``cls`` from the JSON object ``value``: each
    stored field decoded by its type hint; a field the object lacks keeps its default
    (a store written before the field existed), keys of no field are ignored;
    ``lenient``: so is a value not of its field's type."""
    if not isinstance(value, Mapping):
        raise _Bad(where, f"expected an object, found {_shown(value)}")
    hints = _hints(cls)
    out: dict[str, object] = {}
    for f in dataclasses.fields(cls):
        if f.name in skip or f.name not in value:
            continue
        try:
            out[f.name] = _decode(value[f.name], hints[f.name], f"{where}.{f.name}".lstrip("."))
        except _Bad:
            if not lenient:
                raise
    return out


def record_from_json(cls: type[_R], value: object, where: str = "", *, lenient: bool = False) -> _R:
    """The dataclass ``cls`` (of runner/config/) from the parsed JSON object ``value``, each
    field decoded by its type hint (lists as tuples, objects as dataclasses; module
    docstring): a missing field takes its default, an unknown key is ignored. A value not of
    its field's type raises :class:`ValueError` naming where it is, or with ``lenient``
    takes the field's default (a record written by an older benchrun, read as it was)."""
    return cls(**_fields(value, cls, where, lenient=lenient))


def experiment_from_json(
    text: str, *, settings: Settings, source_text: str, display: str
) -> Experiment:
    """The :class:`Experiment` stored as ``text`` (:func:`experiment_to_json`), with the
    campaign's stored ``settings`` and experiment text ``source_text``.

    Raises :class:`UserError` (one line naming ``display``, the campaign) when ``text`` is
    not JSON or a value is not of its field's type."""
    try:
        doc = json.loads(text)
        fields = _fields(doc, Experiment, "", skip=_NOT_STORED)
        return Experiment(**fields, settings=settings, source_text=source_text)  # type: ignore[arg-type]
    except (ValueError, RecursionError, TypeError) as exc:
        reason = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
        raise UserError(
            f"{display}: the stored experiment (campaign.experiment_json) cannot be read: "
            f"{reason}; the store was written by another program or damaged"
        ) from None
