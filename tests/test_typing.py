"""``mypy runner stats`` (run from the repository root) reports no error.

The folders install under the ``benchrun`` namespace; ``.mypy-path/benchrun/`` holds
symlinks to them so that mypy resolves ``benchrun.runner`` and ``benchrun.stats`` imports
from the source tree (``mypy_path`` in pyproject.toml).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_mypy_reports_no_error() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "runner", "stats"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
