"""Durations ("500ms", "90s", "1h30m") and byte sizes ("64KiB") as written in experiment files.

Both parsers accept a bare number (seconds, bytes) or a string. They raise ``ValueError``
with a one-line message saying what is valid; :mod:`runner.config.experiment` adds file and line.
"""

from __future__ import annotations

import math
import re

#: seconds per duration unit (SI prefixes on the second, then minutes, hours, days)
DURATION_UNITS: dict[str, float] = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "sec": 1.0,
    "m": 60.0,
    "min": 60.0,
    "h": 3600.0,
    "d": 86400.0,
}

_NUMBER = r"(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?"
_UNIT = "|".join(sorted((re.escape(u) for u in DURATION_UNITS), key=len, reverse=True))
_DURATION_PART = re.compile(rf"\s*({_NUMBER})\s*({_UNIT})")

#: JSON-Schema ``pattern`` for a duration string (used by ``benchrun schema``)
DURATION_PATTERN = rf"^\s*(?:{_NUMBER}|(?:{_NUMBER}\s*(?:{_UNIT})\s*)+)\s*$"

DURATION_HINT = (
    "use seconds as a number, or a number with a unit "
    "(ns, us, ms, s, m or min, h, d), e.g. 500ms, 90s, 30m, 2h, 1h30m"
)


def parse_duration(value: object) -> float:
    """Return the duration ``value`` in seconds (float, >= 0).

    A number is seconds. A string is one or more ``<number><unit>`` parts that are summed
    ("1h30m" = 5400 s); a string holding only a number is seconds. Booleans, negative or
    non-finite values and unknown units raise ``ValueError``.
    """
    if isinstance(value, bool) or value is None:
        raise ValueError(f"expected a duration, got {value!r}; {DURATION_HINT}")
    if isinstance(value, (int, float)):
        seconds = float(value)
    elif isinstance(value, str):
        seconds = _parse_duration_text(value)
    else:
        raise ValueError(f"expected a duration, got {type(value).__name__}; {DURATION_HINT}")
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(f"duration must be a finite number >= 0, got {value!r}")
    return seconds


def _parse_duration_text(text: str) -> float:
    stripped = text.strip()
    try:
        return float(stripped)
    except ValueError:
        pass
    total = 0.0
    pos = 0
    while pos < len(stripped):
        match = _DURATION_PART.match(stripped, pos)
        if match is None:
            raise ValueError(f"bad duration {text!r}; {DURATION_HINT}")
        total += float(match.group(1)) * DURATION_UNITS[match.group(2)]
        pos = match.end()
        # a unit must not run straight into letters ("5 parsecs" -> "5 p..." is rejected)
        if pos < len(stripped) and stripped[pos].isalpha():
            raise ValueError(f"bad duration {text!r}; {DURATION_HINT}")
    if pos == 0:
        raise ValueError(f"bad duration {text!r}; {DURATION_HINT}")
    return total


#: Slurm's time forms: M, M:S, H:M:S, D-H, D-H:M, D-H:M:S (sbatch --time)
_SLURM_TIME = re.compile(r"^\s*(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?\s*$")
#: JSON-Schema ``pattern`` of a Slurm time with a colon or a day count
SLURM_TIME_PATTERN = r"^\s*(?:\d+-\d+(?::\d+){0,2}|\d+(?::\d+){1,2})\s*$"

JOB_TIME_HINT = (
    "write Slurm's form with a colon (1:00:00 is one hour, 30:00 thirty minutes, "
    "2-00:00:00 two days) or a duration with a unit (90m, 2h)"
)


def parse_job_time(value: object, written: str | None = None) -> float:
    """A Slurm job time limit in seconds (float > 0).

    ``written`` is the value's text in the file when YAML read it as a number (YAML 1.1
    reads ``1:00:00`` as 3600). Slurm's forms (``M:S``, ``H:M:S``, ``D-H``, ``D-H:M``,
    ``D-H:M:S``) are read as Slurm reads them; a string with a unit as a benchrun duration
    (``90m``). A bare number is refused: Slurm reads it as minutes, benchrun's durations
    as seconds, and guessing would be off by 60 times.
    """
    text = written if written is not None else value
    if isinstance(text, bool) or text is None:
        raise ValueError(f"expected a time limit, got {text!r}; {JOB_TIME_HINT}")
    if isinstance(text, (int, float)) or (isinstance(text, str) and _bare_number(text)):
        raise ValueError(
            f"{text!r} is ambiguous (Slurm reads a bare number as minutes, benchrun as "
            f"seconds); {JOB_TIME_HINT}"
        )
    if not isinstance(text, str):
        raise ValueError(f"expected a time limit, got {type(text).__name__}; {JOB_TIME_HINT}")
    match = _SLURM_TIME.match(text)
    if match is not None and (":" in text or "-" in text):
        days, first, second, third = (int(g) if g else None for g in match.groups())
        if days is not None:  # D-H, D-H:M, D-H:M:S
            seconds = days * 86400 + (first or 0) * 3600 + (second or 0) * 60 + (third or 0)
        elif third is not None:  # H:M:S
            seconds = (first or 0) * 3600 + (second or 0) * 60 + third
        else:  # M:S
            seconds = (first or 0) * 60 + (second or 0)
        return float(seconds)
    try:
        return parse_duration(text)
    except ValueError:
        raise ValueError(f"bad time limit {text!r}; {JOB_TIME_HINT}") from None


def _bare_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


#: bytes per size unit: decimal (kB, MB, GB) and binary (KiB, MiB, GiB); matched
#: case-insensitively
SIZE_UNITS: dict[str, int] = {
    "b": 1,
    "kb": 1000,
    "mb": 1000**2,
    "gb": 1000**3,
    "kib": 1024,
    "mib": 1024**2,
    "gib": 1024**3,
}

_SIZE = re.compile(r"^\s*(\d+(?:\.\d*)?)\s*([A-Za-z]*)\s*$")

#: JSON-Schema ``pattern`` for a size string
SIZE_PATTERN = r"^\s*\d+(?:\.\d*)?\s*(?:[bB]|[kKmMgG][iI]?[bB])?\s*$"

SIZE_HINT = (
    "use bytes as an integer, or a number with a unit (B, kB, MB, GB, KiB, MiB, GiB), e.g. 64KiB"
)


def parse_size(value: object) -> int:
    """Return the byte size ``value`` as an int (>= 0).

    An integer is bytes; a string is ``<number><unit>`` with a decimal (kB = 1000 B) or
    binary (KiB = 1024 B) unit, case-insensitive. Fractions are rounded down to whole bytes.
    """
    if isinstance(value, bool) or value is None:
        raise ValueError(f"expected a size in bytes, got {value!r}; {SIZE_HINT}")
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"size must be >= 0 bytes, got {value}")
        return value
    if isinstance(value, float):
        raise ValueError(f"expected a whole number of bytes, got {value!r}; {SIZE_HINT}")
    if not isinstance(value, str):
        raise ValueError(f"expected a size in bytes, got {type(value).__name__}; {SIZE_HINT}")
    match = _SIZE.match(value)
    unit = match.group(2).lower() if match else ""
    if match is None or (unit and unit not in SIZE_UNITS):
        raise ValueError(f"bad size {value!r}; {SIZE_HINT}")
    return int(float(match.group(1)) * SIZE_UNITS.get(unit, 1))
