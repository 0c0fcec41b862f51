"""JSON text of an imported file, parsed with one-line errors.

Besides syntax errors, :func:`parse_json` refuses what the parser itself cannot take: arrays
or objects nested deeper than Python's recursion limit (``[[[[...`` 100 000 deep) and
integers longer than Python converts (4300 digits); both are a :class:`UserError` naming the
file instead of a traceback.

The parsed document is then read once, at each importer's boundary, into typed records
(through :class:`runner.jsonread.JsonFields`).
"""

from __future__ import annotations

import json

from benchrun.runner.errors import UserError


def parse_json(text: str, source: str) -> object:
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
