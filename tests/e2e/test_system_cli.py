"""End-to-end tests of ``benchrun system`` (in process, and once as a real process; the
real machine).

Expected values come from the test process itself (os, psutil, platform, files read
directly), never from runner.machine.metadata.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import psutil
from e2e_util import cli

ASLR_FILE = Path("/proc/sys/kernel/randomize_va_space")
ASLR_FIX = "echo 0 | sudo tee /proc/sys/kernel/randomize_va_space"


def _benchrun(*args: str) -> subprocess.CompletedProcess[str]:
    """``benchrun ARGS`` in process (e2e_util.cli), 100 columns wide."""
    return cli(*args, env={"COLUMNS": "100"})


def _benchrun_module(*args: str) -> subprocess.CompletedProcess[str]:
    """``python -m benchrun.runner.cli ARGS``: a separate process."""
    return subprocess.run(
        [sys.executable, "-m", "benchrun.runner.cli", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "COLUMNS": "100"},
    )


def test_system_json_holds_the_key_facts() -> None:
    done = _benchrun("system", "--json")
    assert done.returncode == 0, done.stderr
    meta = json.loads(done.stdout)
    assert meta["hardware"]["cores_logical"] == os.cpu_count()
    assert meta["hardware"]["memory_total_bytes"] == psutil.virtual_memory().total
    assert meta["software"]["kernel_release"] == platform.release()
    assert meta["software"]["python_version"] == platform.python_version()
    assert meta["timer"]["overhead_ns"] > 0
    try:
        aslr: int | None = int(ASLR_FILE.read_text())
    except OSError:
        aslr = None
    assert meta["environment"]["aslr"] == aslr
    assert meta["environment"]["workload_cpus"] is None


def test_system_prints_sections_and_noise_warnings() -> None:
    done = _benchrun("system", "--cpus", "0")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    positions = [out.find(title) for title in ("Hardware", "Software", "Timer", "Environment")]
    assert all(p >= 0 for p in positions) and positions == sorted(positions)
    assert "Noise warnings" in out
    assert platform.release() in out
    try:
        aslr_on = int(ASLR_FILE.read_text()) != 0
    except OSError:
        aslr_on = None
    if aslr_on is None:
        assert "? ASLR" in out  # listed as not checked
    else:
        assert (ASLR_FIX in out) is aslr_on
    isolated = Path("/sys/devices/system/cpu/isolated")
    if isolated.exists() and not isolated.read_text().strip():
        assert "isolcpus=0" in out  # the fix names the workload CPU


def test_bad_cpu_list_is_a_one_line_error() -> None:
    done = _benchrun_module("system", "--cpus", "one")  # the exit status of a real process
    assert done.returncode == 2
    assert done.stderr.strip().startswith("benchrun: error: --cpus")
    assert "Traceback" not in done.stderr
