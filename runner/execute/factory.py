"""The executor an experiment asks for (``executor:`` in its file, docs/slurm.md)."""

from __future__ import annotations

import dataclasses
import functools
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from benchrun.runner.config.experiment import NODE_TYPE_PARAM, Experiment
from benchrun.runner.config.placeholders import LAUNCH_TIME
from benchrun.runner.execute.local import LocalExecutor

if TYPE_CHECKING:
    from benchrun.runner.config.experiment import SlurmSpec
    from benchrun.runner.execute.fleet import FleetExecutor
    from benchrun.runner.execute.slurm import SharedCheck, SlurmExecutor


def make_executor(
    experiment: Experiment, *, on_message: Callable[[str], None] | None = None
) -> LocalExecutor | SlurmExecutor | FleetExecutor:
    """A :class:`LocalExecutor` for ``executor: local`` (the default), a
    :class:`SlurmExecutor` for the experiment's ``executor:`` mapping, or with
    ``node_types:`` a :class:`FleetExecutor` holding one SlurmExecutor per node type.

    All have ``close()``; use ``contextlib.closing``. ``on_message`` is told the Slurm
    executors' events (job submitted, started, ended, resubmitted); default: stderr. In a
    fleet each event is prefixed with its node type (``alpha: slurm job 12 ...``).
    """
    spec = experiment.executor
    if spec is None:
        return LocalExecutor(stay_in_cgroup=True)
    if not spec.node_types:
        return _slurm(experiment, spec, experiment.names, f"benchrun-{experiment.name}", on_message)
    from benchrun.runner.execute.fleet import FleetExecutor as Fleet  # fleets only

    routes = {w.name: str(w.params.get(NODE_TYPE_PARAM)) for w in experiment.workloads}
    members: dict[str, SlurmExecutor] = {}
    # the types' jobs carry the campaign's one comment: none may take another's for a
    # job left by a dead run (SlurmExecutor own_jobs)
    own_jobs: set[str] = set()
    for i, (name, type_spec) in enumerate(spec.node_types):
        names = tuple(w for w, t in routes.items() if t == name)
        tell = on_message if on_message is not None else _to_stderr
        members[name] = _slurm(
            experiment,
            _own_port(type_spec, i),
            names,
            f"benchrun-{experiment.name}-{name}",
            functools.partial(_prefixed, tell, name),
            own_jobs,
        )
    return Fleet(members, routes)


def _slurm(
    experiment: Experiment,
    spec: SlurmSpec,
    names: tuple[str, ...],
    job_name: str,
    on_message: Callable[[str], None] | None,
    own_jobs: set[str] | None = None,
) -> SlurmExecutor:
    """The SlurmExecutor of ``spec`` for the workloads ``names`` of ``experiment``;
    ``own_jobs``: the job ids of this run, shared by a fleet's executors."""
    from benchrun.runner.execute.slurm import SlurmExecutor as Slurm  # Slurm campaigns only
    from benchrun.runner.execute.slurm import SlurmOptions
    from benchrun.runner.execute.slurm_jobs import campaign_comment

    chosen = [w for w in experiment.workloads if w.name in names]
    options = SlurmOptions(
        job_name=job_name[:128],
        pin=experiment.settings.pin,
        checks=tuple(c for c in shared_checks(experiment) if c.workload in names),
        env_keys=frozenset(experiment.settings.env) | {k for w in chosen for k in w.env},
        # marks the campaign's jobs: a later run cancels those a dead run left
        comment=campaign_comment(experiment.campaign_dir),
    )
    return Slurm(spec, options, on_message=on_message, own_jobs=own_jobs)


def _own_port(spec: SlurmSpec, index: int) -> SlurmSpec:
    """``spec`` listening on PORT + ``index`` when ``listen:`` gives a port: the node
    types' executors listen at the same time, each on its own port."""
    listen = spec.listen
    if listen is None or listen.count(":") != 1:
        return spec
    host, port = listen.rsplit(":", 1)
    if not port.isdigit() or int(port) == 0:
        return spec
    return dataclasses.replace(spec, listen=f"{host}:{int(port) + index}")


def _prefixed(tell: Callable[[str], None], node_type: str, text: str) -> None:
    tell(f"{node_type}: {text}")


def _to_stderr(text: str) -> None:
    print(f"benchrun: {text}", file=sys.stderr, flush=True)


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
