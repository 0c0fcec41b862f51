"""JSON text of an imported file, parsed with one-line errors.

Besides syntax errors, :func:`parse_json` refuses what the parser itself cannot take: arrays
or objects nested deeper than Python's recursion limit (``[[[[...`` 100 000 deep) and
integers longer than Python converts (4300 digits); both are a :class:`UserError` naming the
file instead of a traceback.

The parsed document is then read once, at each importer's boundary, into typed records:
each record declares its fields' checks in one table (:data:`FieldCheck`), applied by
:func:`checked_fields`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from benchrun.runner.errors import UserError


def parse_json(text: str, source: str) -> Any:
    """The parsed JSON document of ``text`` read from ``source`` (a file name).

    Raises
    ------
    UserError
        When the text is not JSON, nests too deeply to parse, or holds a number Python
        cannot convert; the message names ``source`` and, for syntax errors, the line.
    """
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise UserError(
            f"{source}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        ) from None
    except RecursionError:
        raise UserError(
            f"{source}: JSON nested too deeply (about a thousand levels of [ or {{); "
            "not a benchmark export"
        ) from None
    except ValueError as exc:  # e.g. an integer of more than 4300 digits
        detail = " ".join(str(exc).split())
        raise UserError(f"{source}: cannot parse the JSON ({detail})") from None


class _Missing:
    """The value of a field an object does not have (one written as ``null`` is None,
    which some fields refuse and others read as their default)."""

    def __repr__(self) -> str:
        return "MISSING"


#: what :func:`checked_fields` hands a field's check for a field the object does not have
MISSING = _Missing()

#: a field's check: (its parsed value, or :data:`MISSING`; where it is, ``FILE: a[0].b``)
#: -> the record field's value, or a :class:`UserError` naming ``where``
FieldCheck = Callable[[object, str], Any]


def checked_fields(
    raw: Mapping[str, object],
    checks: Mapping[str, FieldCheck],
    where: str,
    *,
    field_place: bool = True,
) -> dict[str, Any]:
    """Each field of the parsed object ``raw`` that ``checks`` names, through its check, in
    the table's order (the first bad field is the one reported); ``where``: the object's
    place, to which ``.field`` is added for the checks' messages (``field_place`` False:
    the checks get the object's place and name the field themselves)."""
    return {
        name: check(raw.get(name, MISSING), f"{where}.{name}" if field_place else where)
        for name, check in checks.items()
    }
