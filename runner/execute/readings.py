"""Readings: the values a workload prints on stdout, as configured by a ReadingsSpec.

A round yields one or more readings (docs/methods.md vocabulary table: "round", "reading").
Two formats are understood:

- ``regex``: the pattern (exactly one capture group, Python ``re`` syntax) is searched
  with the ``regex`` module and ``MULTILINE`` (so ``^`` and ``$`` anchor at line
  boundaries); every match is one reading, converted with ``float()``. The search has a
  time limit (``match_timeout``) and serves signals while it runs, so a pattern that
  backtracks catastrophically fails the round instead of hanging the runner.
- ``jsonl``: every stdout line that parses as a JSON object holding ``field`` is one reading;
  the field must be a JSON number. Lines that are not JSON objects, or lack the field, are
  ignored (workloads may interleave log lines).

A capture or field that is not a finite number is an error (:class:`ReadingsError`), never
a skipped or invented value; so is a stdout with no reading at all, or with more than
``max_readings``. A spec that cannot work
(no pattern, a pattern with zero or two groups, an invalid regex, no field) is the user's
mistake and raises :class:`runner.errors.UserError`.
"""

from __future__ import annotations

import functools
import json
import math

import regex

from benchrun.runner.config.experiment import ReadingsSpec
from benchrun.runner.config.schema import MAX_READINGS
from benchrun.runner.errors import UserError

__all__ = ["ReadingsError", "check_readings_spec", "parse_readings"]

#: longest piece of offending output quoted in an error message (characters)
_QUOTE_LIMIT = 40


class ReadingsError(ValueError):
    """The output of a round holds no usable reading, or a reading that is not a number."""


@functools.lru_cache(maxsize=64)
def _compile(pattern: str) -> regex.Pattern[str]:
    try:
        compiled = regex.compile(pattern, regex.MULTILINE)
    except regex.error as exc:
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


def _too_many(limit: int) -> ReadingsError:
    return ReadingsError(
        f"more than {limit} readings in one round; raise readings: max_readings "
        f"(up to {MAX_READINGS}) if that many are expected"
    )


def _parse_regex(stdout: str, spec: ReadingsSpec) -> tuple[float, ...]:
    assert spec.pattern is not None
    pattern = spec.pattern
    compiled = _compile(pattern)
    values: list[float] = []
    matches = compiled.finditer(stdout, timeout=spec.match_timeout)
    try:
        for index, match in enumerate(matches, start=1):
            if index > spec.max_readings:
                raise _too_many(spec.max_readings)
            values.append(_reading(match, index, pattern))
    except TimeoutError:
        raise ReadingsError(
            f"searching {len(stdout)} characters of stdout for '{pattern}' took more than "
            f"{spec.match_timeout:g} s; nested quantifiers such as (a+)+ backtrack: simplify "
            "the pattern, or raise readings: match_timeout"
        ) from None
    if not values:
        raise ReadingsError(f"no reading matched '{pattern}' in stdout")
    return tuple(values)


def _reading(match: regex.Match[str], index: int, pattern: str) -> float:
    capture = match.group(1)
    what = f"reading {index} matched by '{pattern}'"
    if capture is None:
        raise ReadingsError(f"{what} has an empty capture group")
    try:
        value = float(capture)
    except ValueError:
        raise ReadingsError(f"{what} is not a number: {_quote(capture)}") from None
    return _finite(value, what)


def _parse_jsonl(stdout: str, field: str, limit: int) -> tuple[float, ...]:
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
        if len(values) == limit:
            raise _too_many(limit)
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
        return _parse_regex(stdout, spec)
    assert spec.field is not None
    return _parse_jsonl(stdout, spec.field, spec.max_readings)
