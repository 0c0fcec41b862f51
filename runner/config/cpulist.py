"""CPU lists in the Linux ``cpuset`` notation ("0-3,8,10-11") and the CPUs this process may use.

:func:`parse_cpu_list` raises ``ValueError`` with a one-line message;
:mod:`runner.config.experiment` adds file and line.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

_RANGE = re.compile(r"^\s*(\d+)\s*(?:-\s*(\d+)\s*)?$")

#: JSON-Schema ``pattern`` for a CPU-list string
CPU_LIST_PATTERN = r"^\s*\d+\s*(?:-\s*\d+\s*)?(?:,\s*\d+\s*(?:-\s*\d+\s*)?)*$"

#: the highest CPU number a list may name (Linux's NR_CPUS is at most 8192): a range such as
#: "0-99999999999" would otherwise be expanded into a set of that many numbers
MAX_CPU = 65535

CPU_LIST_HINT = 'write CPU numbers and ranges like "1", "2-3" or "0,2-3", or a list like [1, 3]'


def available_cpus() -> frozenset[int]:
    """CPUs this process may run on: ``os.sched_getaffinity(0)`` where it exists, else
    ``range(os.cpu_count())``."""
    if hasattr(os, "sched_getaffinity"):
        return frozenset(os.sched_getaffinity(0))
    return frozenset(range(os.cpu_count() or 1))


def format_cpu_list(cpus: Iterable[int]) -> str:
    """``{0, 1, 2, 5}`` -> ``"0-2,5"`` (the inverse of :func:`parse_cpu_list`)."""
    ordered = sorted(set(cpus))
    parts: list[str] = []
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        parts.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(parts)


def parse_cpu_list(value: object, available: Iterable[int] | None = None) -> tuple[int, ...]:
    """Parse ``value`` into a sorted tuple of distinct CPU numbers.

    ``value`` is an int, a list of ints, or a string of comma-separated numbers and
    inclusive ranges ``a-b`` (a <= b). With ``available`` given, every CPU must be in it
    (pass :func:`available_cpus` to check against this machine).
    """
    cpus: set[int] = set()
    if isinstance(value, bool) or value is None:
        raise ValueError(f"expected a CPU list, got {value!r}; {CPU_LIST_HINT}")
    if isinstance(value, int):
        items: list[object] = [value]
    elif isinstance(value, (list, tuple)):
        items = list(value)
        if not items:
            raise ValueError(f"empty CPU list; {CPU_LIST_HINT}")
    elif isinstance(value, str):
        items = []
        if not value.strip():
            raise ValueError(f"empty CPU list; {CPU_LIST_HINT}")
        for part in value.split(","):
            match = _RANGE.match(part)
            if match is None:
                raise ValueError(f"bad CPU list {value!r}: {part.strip()!r}; {CPU_LIST_HINT}")
            if any(len(g) > len(str(MAX_CPU)) for g in match.groups() if g is not None):
                raise ValueError(
                    f"bad CPU list {value[:40]!r}: CPU numbers go up to {MAX_CPU}; {CPU_LIST_HINT}"
                )
            lo = int(match.group(1))
            hi = int(match.group(2)) if match.group(2) is not None else lo
            if hi > MAX_CPU:
                raise ValueError(
                    f"bad CPU range {part.strip()!r}: CPU numbers go up to {MAX_CPU} "
                    f"(Linux's most); {CPU_LIST_HINT}"
                )
            if hi < lo:
                raise ValueError(
                    f"bad CPU range {part.strip()!r} in {value!r}: the end is below the start; "
                    f"write it as {hi}-{lo}"
                )
            cpus.update(range(lo, hi + 1))
    else:
        raise ValueError(f"expected a CPU list, got {type(value).__name__}; {CPU_LIST_HINT}")
    for item in items:
        if isinstance(item, bool) or not isinstance(item, int) or not 0 <= item <= MAX_CPU:
            shown = item if not isinstance(item, int) or item.bit_length() < 64 else "(huge)"
            raise ValueError(f"bad CPU {shown!r} in the list; {CPU_LIST_HINT}")
        cpus.add(item)
    if available is not None:
        allowed = frozenset(available)
        missing = sorted(cpus - allowed)
        if missing:
            which = "CPU" if len(missing) == 1 else "CPUs"
            raise ValueError(
                f"{which} {format_cpu_list(missing)} not available on this machine; "
                f"available: {format_cpu_list(allowed)}"
            )
    return tuple(sorted(cpus))


def parse_kernel_cpu_list(text: str) -> tuple[int, ...]:
    """Parse the kernel's CPU list format (``"0-3,8,10-11"``, as in sysfs) into sorted CPU
    numbers; empty text gives ``()``, anything malformed raises ``ValueError``."""
    cpus: set[int] = set()
    for part in text.strip().split(","):
        part = part.strip()
        if not part:
            continue
        first, sep, last = part.partition("-")
        try:
            lo = int(first)
            hi = int(last) if sep else lo
        except ValueError:
            raise ValueError(f"not a CPU list: {text.strip()!r}") from None
        if lo < 0 or hi < lo:
            raise ValueError(f"not a CPU list: {text.strip()!r}")
        cpus.update(range(lo, hi + 1))
    return tuple(sorted(cpus))
