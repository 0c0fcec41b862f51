"""The executor an experiment asks for (``executor:`` in its file, docs/slurm.md)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from benchrun.runner.config.experiment import Experiment
from benchrun.runner.config.placeholders import LAUNCH_TIME
from benchrun.runner.execute.local import LocalExecutor

if TYPE_CHECKING:
    from benchrun.runner.execute.slurm import SharedCheck, SlurmExecutor


def make_executor(
    experiment: Experiment, *, on_message: Callable[[str], None] | None = None
) -> LocalExecutor | SlurmExecutor:
    """A :class:`LocalExecutor` for ``executor: local`` (the default), else a
    :class:`SlurmExecutor` for the experiment's ``executor:`` mapping.

    Both have ``close()``; use ``contextlib.closing``. ``on_message`` is told the Slurm
    executor's events (job submitted, started, ended, resubmitted); default: stderr.
    """
    spec = experiment.executor
    if spec is None:
        return LocalExecutor(stay_in_cgroup=True)
    from benchrun.runner.execute.slurm import SlurmExecutor as Slurm  # Slurm campaigns only
    from benchrun.runner.execute.slurm_jobs import campaign_comment

    return Slurm(
        spec,
        job_name=f"benchrun-{experiment.name}"[:128],
        pin=experiment.settings.pin,
        checks=shared_checks(experiment),
        env_keys=frozenset(experiment.settings.env)
        | {k for w in experiment.workloads for k in w.env},
        on_message=on_message,
        # marks the campaign's jobs: a later run cancels those a dead run left
        comment=campaign_comment(experiment.campaign_dir),
    )


def shared_checks(experiment: Experiment) -> tuple[SharedCheck, ...]:
    """What each workload needs on a node: its directory, and its program when the
    command is not run by a shell and its program is not filled in at launch time."""
    base = str(experiment.source_path.parent) if experiment.source_path else None
    from benchrun.runner.execute.slurm import SharedCheck

    checks = []
    for w in experiment.workloads:
        program = None
        if not w.shell and w.command and not any(f"{{{p}}}" in w.command[0] for p in LAUNCH_TIME):
            program = w.command[0]
        path = w.env.get("PATH", experiment.settings.env.get("PATH"))
        checks.append(SharedCheck(w.name, w.cwd or base, program, path))
    return tuple(checks)
