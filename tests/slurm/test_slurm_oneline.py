"""``--executor`` in the one-line form (issue 19): the experiment it stands for, bad
values as one line, and a one-line campaign through the real cluster."""

from __future__ import annotations

import os
import sqlite3
import subprocess
from pathlib import Path

import pytest
import yaml


def _benchrun(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["benchrun", *args], cwd=cwd, capture_output=True, text=True, timeout=300)


def test_print_config_writes_the_executor(tmp_path: Path) -> None:
    spec = "{kind: slurm, partition: beta, time: '0:10:00'}"
    done = _benchrun("run", "-c", "true", "--executor", spec, "--print-config", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    doc = yaml.safe_load(done.stdout)
    assert doc["executor"]["kind"] == "slurm" and doc["executor"]["partition"] == "beta"
    plain = _benchrun("run", "-c", "true", "--executor", "slurm", "--print-config", cwd=tmp_path)
    assert yaml.safe_load(plain.stdout)["executor"] == "slurm"
    local = _benchrun("run", "-c", "true", "--executor", "local", "--print-config", cwd=tmp_path)
    assert "executor" not in yaml.safe_load(local.stdout)


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ("nonsense", "expected local, slurm or a mapping"),
        ("{kind: slurm, time: 30}", "30 is ambiguous"),
        ("{kind: slurm, partiton: x}", "partiton"),
    ],
)
def test_bad_executor_values_are_one_line(tmp_path: Path, spec: str, words: str) -> None:
    done = _benchrun("run", "-c", "true", "--executor", spec, cwd=tmp_path)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("benchrun: error: --executor")
    assert words in lines[0] and "Traceback" not in done.stderr
    assert not (tmp_path / "results").exists()  # nothing started


@pytest.mark.usefixtures("slurm_cluster")
def test_a_one_line_campaign_runs_through_slurm(tmp_path: Path) -> None:
    done = _benchrun(
        "run",
        "-c",
        "true",
        "--executor",
        "{kind: slurm, partition: beta}",
        "--experiment-name",
        "ol",
        "--set",
        "rounds=3",
        "--set",
        "warmup_rounds=0",
        "--set",
        "pin=none",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert "slurm: submitted job" in done.stderr
    con = sqlite3.connect(tmp_path / "results" / "ol" / "benchrun.db")
    rows = con.execute("SELECT status, facts_json FROM round").fetchall()
    con.close()
    node = os.uname().nodename.split(".")[0]
    assert len(rows) == 3 and all(status == "ok" and node in facts for status, facts in rows)
