"""The tree stays ruff-clean (house rule 7): lint and formatting, judged by ruff itself."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TREES = ["runner", "stats", "tests", "benchmarks"]


def _ruff() -> list[str]:
    exe = shutil.which("ruff")
    return [exe] if exe else [sys.executable, "-m", "ruff"]


def test_ruff_check_is_clean() -> None:
    proc = subprocess.run([*_ruff(), "check", *TREES], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_ruff_format_is_clean() -> None:
    proc = subprocess.run(
        [*_ruff(), "format", "--check", *TREES], cwd=REPO, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
