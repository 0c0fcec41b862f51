"""Instruction counts as valgrind itself reports them, for tests that check benchrun's
counters against a value benchrun's code did not compute (docs/metrics.md)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

#: valgrind on PATH (None: the tests that need it skip)
VALGRIND = shutil.which("valgrind")


def valgrind_instructions(argv: list[str], log_dir: Path) -> int:
    """Instructions of ``argv`` and every child, the sum of the "I refs" line of each
    process's log (valgrind's own summary), run with cachegrind as benchrun runs it; the
    files it writes in ``log_dir`` (made when missing) are removed afterwards."""
    assert VALGRIND is not None
    log_dir.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            VALGRIND,
            "--tool=cachegrind",
            "--cache-sim=no",
            "--trace-children=yes",
            f"--cachegrind-out-file={log_dir}/cg.%p",
            f"--log-file={log_dir}/log.%p",
            *argv,
        ],
        check=True,
        capture_output=True,
    )
    total = 0
    for log in sorted(log_dir.glob("log.*")):
        m = re.search(r"I\s+refs:\s+([\d,]+)", log.read_text())
        assert m is not None, log.read_text()
        total += int(m.group(1).replace(",", ""))
    for f in [*log_dir.glob("log.*"), *log_dir.glob("cg.*")]:
        f.unlink()
    return total
