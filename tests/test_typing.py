"""mypy over benchrun.runner and benchrun.stats reports no error.

The folders install under the ``benchrun`` namespace, which mypy cannot see from the
source tree, so the test links them into a scratch ``benchrun/`` directory and checks the
packages by their installed names.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_mypy_reports_no_error(tmp_path: Path) -> None:
    root = tmp_path / "src"
    (root / "benchrun").mkdir(parents=True)
    for name in ("runner", "stats"):
        os.symlink(REPO / name, root / "benchrun" / name)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "-p",
            "benchrun.runner",
            "-p",
            "benchrun.stats",
            "--config-file",
            str(REPO / "pyproject.toml"),
            "--cache-dir",
            str(REPO / ".mypy_cache"),
        ],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
