"""Which Slurm jobs belong to a campaign: the mark they carry and the leftovers of a dead run.

Every job of a Slurm campaign is submitted with ``--comment=benchrun-campaign:DIR`` (DIR:
the campaign directory's absolute path). Only one benchrun runs a campaign directory at a
time (its ``.benchrun.lock``), so a job of this user that still carries the mark when a
run starts (or when the daemon finds its child dead) was left by a run that died without
closing it (SIGKILL, the daemon's death, power loss) and no one will ever serve it: it is
cancelled. Standard library only: the daemon imports this (docs/slurm.md, "The daemon and
--resume").
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from pathlib import Path

#: what the comment of a campaign's jobs starts with
COMMENT_PREFIX = "benchrun-campaign:"
#: seconds squeue/scancel may take when the daemon cleans up after a dead child
CLEANUP_TIMEOUT = 20.0


def campaign_comment(campaign_dir: Path) -> str:
    """The ``--comment`` of every job of the campaign in ``campaign_dir`` (absolute path)."""
    return COMMENT_PREFIX + str(Path(campaign_dir).resolve())


def squeue_argv() -> list[str]:
    """``squeue`` listing this user's jobs that have not ended: ``JOBID|COMMENT`` lines."""
    return ["squeue", "-h", "-u", str(os.getuid()), "-o", "%i|%k"]


def jobs_with_comment(squeue_output: str, comment: str) -> list[str]:
    """The job ids of :func:`squeue_argv`'s output whose comment is exactly ``comment``."""
    found = []
    for line in squeue_output.splitlines():
        job_id, sep, text = line.strip().partition("|")
        if sep and job_id and text == comment:
            found.append(job_id)
    return found


def cancel_leftover_jobs(campaign_dir: Path, timeout: float = CLEANUP_TIMEOUT) -> list[str]:
    """Cancel the jobs of the campaign in ``campaign_dir`` that Slurm still holds (pending,
    running, completing); for the daemon after its child died. Best effort: no Slurm on
    this host, or Slurm not answering within ``timeout`` seconds, cancels nothing.

    Returns
    -------
    list of str
        The job ids cancelled.
    """
    comment = campaign_comment(campaign_dir)
    try:
        listed = _run(squeue_argv(), timeout)
        if listed.returncode != 0:
            return []
        jobs = jobs_with_comment(listed.stdout, comment)
        if jobs:
            _run(["scancel", *jobs], timeout)
    except (OSError, subprocess.TimeoutExpired):
        return []
    return jobs


def _run(argv: Sequence[str], timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        list(argv),
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
