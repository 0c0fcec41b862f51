"""Helpers for tests that tune this machine for real (docs/tuning.md): the kernel's
``perf_event_max_sample_rate`` set to a known value, and every value ``system tune`` may
change here (the sample rate, the IRQ affinities) put back in teardown whatever happened.

The tests that use it take a machine-wide ``flock`` (and share one xdist group), so two
of them never change the same kernel value at once.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

#: the setting the real tests watch, and the value they set first (issue 33)
SAMPLE_RATE = Path("/proc/sys/kernel/perf_event_max_sample_rate")
MARK = "54321"
#: one lock for every real tuning test of every pytest process on the machine
LOCK = Path("/tmp/benchrun-test-real-tuning.lock")
#: xdist group of the real tuning tests (one worker runs them all)
GROUP = "real-tuning"


def _writable() -> bool:
    # access(2), not a trial write: a write here could undo another test's value
    return os.geteuid() == 0 and os.access(SAMPLE_RATE, os.W_OK)


#: mark for a test that writes the real sample rate (root, and a kernel that allows it)
needs_real_sample_rate = pytest.mark.skipif(
    not _writable(), reason="needs root and a writable /proc/sys/kernel/perf_event_max_sample_rate"
)


def _affinities() -> dict[Path, str]:
    found = {}
    for path in [
        *Path("/proc/irq").glob("*/smp_affinity_list"),
        Path("/proc/irq/default_smp_affinity"),
    ]:
        try:
            found[path] = path.read_text().strip()
        except OSError:
            pass
    return found


@contextmanager
def real_sample_rate(value: str = MARK) -> Iterator[str]:
    """Set the real sample rate to ``value`` for the block; afterwards put back the sample
    rate and every IRQ affinity as they were before, whatever the block did. Yields the
    value set."""
    LOCK.touch(exist_ok=True)
    with open(LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        original = SAMPLE_RATE.read_text().strip()
        affinities = _affinities()
        try:
            SAMPLE_RATE.write_text(value + "\n")
            yield value
        finally:
            SAMPLE_RATE.write_text(original + "\n")
            for path, text in affinities.items():
                try:
                    if path.read_text().strip() != text:
                        path.write_text(text + "\n")
                except OSError:
                    pass  # an IRQ the kernel does not let move (it was not moved either)


def read_sample_rate() -> str:
    """The kernel's value now."""
    return SAMPLE_RATE.read_text().strip()
