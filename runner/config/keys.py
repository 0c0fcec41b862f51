"""What a key of the experiment file is: its kind, bounds and sentence (:class:`Key`), the
caps that refuse absurd values, and :func:`setting`, the one declaration of a setting.

A setting of ``settings:`` (and a key of ``settings.duet``) is declared once, as a field of
:class:`runner.config.settings.Settings` made by :func:`setting`: its name, type and
default are the field's, its kind, bounds and description the :class:`Key` in the field's
metadata, its line in ``benchrun init``'s example the :class:`InitLine` beside it.
:func:`declared_keys` reads the keys back in field order; the validator, the JSON Schema
(runner/config/schema.py), ``init``'s example and the docs table
(runner/config/settingsdoc.py) all start from it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import MISSING, dataclass, field, fields, replace
from typing import Any

#: caps that refuse absurd values at validation (they would overflow SQLite's 64-bit
#: integers, run for years, or exhaust memory); each message says the cap
INT64_MAX = 2**63 - 1
MAX_ROUNDS = 100_000_000
MAX_CONSECUTIVE_FAILURES = 10_000
MAX_TIMEOUT = 7 * 86400.0  # seconds
MAX_CAMPAIGN_TIME = 366 * 86400.0  # seconds
MAX_MIN_ROUND_TIME = 3600.0  # seconds
MAX_MATCH_TIMEOUT = 60.0  # seconds
MAX_READINGS = 10_000_000
MAX_WORK = 10**15
MAX_WORKLOADS = 1_000_000
MAX_OUTPUT_LIMIT = 2**30  # bytes
MAX_MEMORY_LIMIT = 2**60  # bytes
#: the largest ``confidence``: closer to 1, ``1 - (1 - confidence) / 2`` divided over a
#: campaign's comparisons rounds to 1.0 in floating point, the normal quantile is
#: infinite and the controller's sample-size arithmetic overflows (issue 29); six nines
#: leaves room for 10^8 comparisons and is far past any interval worth waiting for
MAX_CONFIDENCE = 0.999999
#: most passes between two solo passes of a duet campaign
MAX_SOLO_EVERY = 1_000_000

SIMPLE_KINDS = (
    "int",
    "number",
    "bool",
    "str",
    "enum",
    "enum_list",
    "duration",
    "size",
    "str_list",
    "str_map",
)


@dataclass(frozen=True)
class Key:
    """One key of a section: its kind, bounds and the sentence ``benchrun schema`` shows."""

    name: str
    kind: str
    doc: str
    required: bool = False
    nullable: bool = False
    choices: tuple[str, ...] = ()
    minimum: float | None = None  # inclusive
    exclusive_minimum: float | None = None
    exclusive_maximum: float | None = None
    maximum: float | None = None  # inclusive: a cap that refuses absurd values


@dataclass(frozen=True)
class InitLine:
    """A setting's line in ``benchrun init``'s example: the value written (YAML text),
    the comment beside it (one string per line) and whether the line is commented out
    (a key shown but not set, such as ``# rounds: 10``)."""

    value: str
    comment: tuple[str, ...]
    commented_out: bool = False


def setting(
    default: Any = MISSING,
    *,
    kind: str,
    doc: str,
    init: tuple[str, ...] | None = None,
    commented_out: bool = False,
    factory: Callable[[], Any] | None = None,
    nullable: bool = False,
    choices: tuple[str, ...] = (),
    minimum: float | None = None,
    exclusive_minimum: float | None = None,
    exclusive_maximum: float | None = None,
    maximum: float | None = None,
) -> Any:
    """A field of ``Settings`` that carries its key: ``default`` (or ``factory``), the
    :class:`Key` (kind, bounds, ``doc``: the sentence of the JSON Schema and the docs
    table; its name is the field's) and ``init``: the value ``benchrun init`` writes,
    then the lines of its comment (None: a key of a section ``init`` shows as one value,
    such as ``settings.duet``'s)."""
    key = Key(
        "",
        kind,
        doc,
        nullable=nullable,
        choices=choices,
        minimum=minimum,
        exclusive_minimum=exclusive_minimum,
        exclusive_maximum=exclusive_maximum,
        maximum=maximum,
    )
    meta: dict[str, Key | InitLine] = {"key": key}
    if init is not None:
        meta["init"] = InitLine(init[0], init[1:], commented_out)
    if factory is not None:
        return field(default_factory=factory, metadata=meta)
    return field(default=default, metadata=meta)


def declared_keys(cls: type) -> tuple[Key, ...]:
    """The :class:`Key` of every field of dataclass ``cls`` declared with :func:`setting`,
    in field order, named after its field."""
    return tuple(
        replace(f.metadata["key"], name=f.name) for f in fields(cls) if "key" in f.metadata
    )


def declared_init_lines(cls: type) -> dict[str, InitLine]:
    """Field name -> :class:`InitLine` of every field of ``cls`` declared with :func:`setting`."""
    return {f.name: f.metadata["init"] for f in fields(cls) if "init" in f.metadata}


def declared_default(cls: type, name: str) -> Any:
    """The default of field ``name`` of dataclass ``cls`` (its factory called)."""
    f = next(f for f in fields(cls) if f.name == name)
    if f.default_factory is not MISSING:
        return f.default_factory()
    return f.default
