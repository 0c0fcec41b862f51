"""Fixtures of the Slurm tests (issue 19).

``slurm_cluster`` (session): the one-node cluster of ``tests/slurm/cluster.sh`` on this
machine, started once if it does not answer yet and left running. Tests that use it are
skipped, with the reason, when the tests do not run as root (the script installs Debian
packages and starts the daemons as root), and nowhere else: as root, a cluster that does
not come up fails them. The other tests of this folder need no Slurm.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
SCRIPT = HERE / "cluster.sh"
STATE = Path(os.environ.get("BENCHRUN_SLURM_STATE", "/tmp/benchrun-slurm"))
CONF = STATE / "slurm.conf"


def _answers() -> bool:
    if not CONF.exists() or shutil.which("sinfo") is None:
        return False
    done = subprocess.run(
        ["sinfo", "-h", "-o", "%T"],
        env={**os.environ, "SLURM_CONF": str(CONF)},
        capture_output=True,
        text=True,
        timeout=30,
    )
    return done.returncode == 0 and bool(done.stdout.split())


@pytest.fixture(scope="session")
def slurm_cluster() -> Iterator[Path]:
    """The path of the running cluster's slurm.conf (``$SLURM_CONF`` is set to it)."""
    if os.geteuid() != 0:
        pytest.skip(
            "the Slurm tests need root: tests/slurm/cluster.sh installs slurm-wlm and munge "
            "and starts slurmctld/slurmd as root"
        )
    STATE.mkdir(parents=True, exist_ok=True)
    # pytest-xdist workers each run this: one starts the cluster, the others wait for it
    with open(STATE / ".start.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not _answers():
            done = subprocess.run(
                ["bash", str(SCRIPT), "start"], capture_output=True, text=True, timeout=600
            )
            if done.returncode != 0 or not _answers():
                # as root the cluster must come up (.ci/run starts it): a failure, not a skip
                said = " ".join((done.stderr or done.stdout).split())[-300:]
                pytest.fail(f"tests/slurm/cluster.sh start failed (exit {done.returncode}): {said}")
    old = os.environ.get("SLURM_CONF")
    os.environ["SLURM_CONF"] = str(CONF)
    yield CONF
    if old is None:
        os.environ.pop("SLURM_CONF", None)
    else:
        os.environ["SLURM_CONF"] = old
