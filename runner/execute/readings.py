"""Readings: the values a workload prints on stdout, as configured by a ReadingsSpec.

A round yields one or more readings (docs/methods.md vocabulary table: "round", "reading").
Two formats are understood:

- ``regex``: the pattern (exactly one capture group) is searched with ``re.MULTILINE``
  (so ``^`` and ``$`` anchor at line boundaries); every match is one reading, converted with
  ``float()``.
- ``jsonl``: every stdout line that parses as a JSON object holding ``field`` is one reading;
  the field must be a JSON number. Lines that are not JSON objects, or lack the field, are
  ignored (workloads may interleave log lines).

A capture or field that is not a finite number is an error (:class:`ReadingsError`), never
a skipped or invented value; so is a stdout with no reading at all. A spec that cannot work
(no pattern, a pattern with zero or two groups, an invalid regex, no field) is the user's
mistake and raises :class:`runner.errors.UserError`.
"""

from __future__ import annotations

import functools
import json
import math
import re

from benchrun.runner.config.experiment import ReadingsSpec
from benchrun.runner.errors import UserError

__all__ = ["ReadingsError", "check_readings_spec", "parse_readings"]

#: longest piece of offending output quoted in an error message (characters)
_QUOTE_LIMIT = 40


class ReadingsError(ValueError):
    """The output of a round holds no usable reading, or a reading that is not a number."""


@functools.lru_cache(maxsize=64)
def _compile(pattern: str) -> re.Pattern[str]:
    try:
        compiled = re.compile(pattern, re.MULTILINE)
    except re.error as exc:
        raise UserError(f"readings: pattern '{pattern}' is not a valid regex: {exc}") from None
    if compiled.groups != 1:
        raise UserError(
            f"readings: pattern '{pattern}' has {compiled.groups} capture groups; it needs "
            "exactly one, around the number (use (?:...) for other groups)"
        )
    return compiled


def check_readings_spec(spec: ReadingsSpec) -> None:
    """Raise :class:`UserError` if ``spec`` cannot yield readings (checked before a launch)."""
    if spec.format == "regex":
        if not spec.pattern:
            raise UserError("readings: format 'regex' needs a 'pattern' with one capture group")
        _compile(spec.pattern)
    elif spec.format == "jsonl":
        if not spec.field:
            raise UserError("readings: format 'jsonl' needs a 'field' naming the JSON key")
    else:
        raise UserError(f"readings: unknown format {spec.format!r}; valid: 'regex', 'jsonl'")


def _quote(text: str) -> str:
    return repr(text if len(text) <= _QUOTE_LIMIT else text[:_QUOTE_LIMIT] + "...")


def _finite(value: float, what: str) -> float:
    if not math.isfinite(value):
        raise ReadingsError(f"{what} is not a finite number: {value!r}")
    return value


def _parse_regex(stdout: str, pattern: str) -> tuple[float, ...]:
    compiled = _compile(pattern)
    values: list[float] = []
    for index, match in enumerate(compiled.finditer(stdout), start=1):
        capture = match.group(1)
        what = f"reading {index} matched by '{pattern}'"
        if capture is None:
            raise ReadingsError(f"{what} has an empty capture group")
        try:
            value = float(capture)
        except ValueError:
            raise ReadingsError(f"{what} is not a number: {_quote(capture)}") from None
        values.append(_finite(value, what))
    if not values:
        raise ReadingsError(f"no reading matched '{pattern}' in stdout")
    return tuple(values)


def _parse_jsonl(stdout: str, field: str) -> tuple[float, ...]:
    values: list[float] = []
    for lineno, line in enumerate(stdout.splitlines(), start=1):
        text = line.strip()
        if not text.startswith("{"):
            continue
        try:
            obj = json.loads(text)
        except ValueError:
            continue
        if not isinstance(obj, dict) or field not in obj:
            continue
        raw = obj[field]
        what = f"field '{field}' on stdout line {lineno}"
        # bool is a subclass of int in Python but not a number in JSON
        if isinstance(raw, bool) or not isinstance(raw, (int, float)):
            raise ReadingsError(f"{what} is not a number: {_quote(json.dumps(raw))}")
        values.append(_finite(float(raw), what))
    if not values:
        raise ReadingsError(f"no JSON line with field '{field}' in stdout")
    return tuple(values)


def parse_readings(stdout: str, spec: ReadingsSpec) -> tuple[float, ...]:
    """Every reading in ``stdout``, in order of appearance, as floats in ``spec.unit``.

    Raises :class:`ReadingsError` when there is no reading or one is not a finite number
    (the round is then "failed"), and :class:`UserError` when ``spec`` itself is unusable.

    >>> parse_readings("time=1.5 ms\\ntime=2 ms\\n", ReadingsSpec(pattern=r"time=([0-9.]+) ms"))
    (1.5, 2.0)
    """
    check_readings_spec(spec)
    if spec.format == "regex":
        assert spec.pattern is not None
        return _parse_regex(stdout, spec.pattern)
    assert spec.field is not None
    return _parse_jsonl(stdout, spec.field)
