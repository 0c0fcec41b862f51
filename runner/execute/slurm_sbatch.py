"""The batch job of a Slurm campaign, as text: sbatch's command line and the job's script.

Pure functions of typed inputs (the experiment's :class:`SlurmSpec`, the job's name and
mark, where the agents connect): no I/O, no Slurm. The job runs benchrun's agent
(:mod:`runner.execute.agent`), one per node through ``srun`` when it has several, told
where to connect on its command line and its token in its environment (``ps`` shows
command lines to everyone). docs/slurm.md, "How a campaign runs".
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass

from benchrun.runner.config.experiment import SlurmSpec
from benchrun.runner.execute.agent import TOKEN_ENV

#: the module a job runs: benchrun's agent (runner/execute/agent.py) with the node's
#: metadata collector (runner/machine/nodes.py) for its hello
AGENT_MODULE = "benchrun.runner.campaign.node_agent"
#: where the agent job's stdout/stderr go on its node (``%j``: the job id)
AGENT_LOG = "/tmp/benchrun-agent-%j.out"


@dataclass(frozen=True)
class AgentJob:
    """What one agent job is: ``python`` (the interpreter on the nodes with benchrun),
    the submit host's ``host`` and ``port`` the agents connect to, and ``nodes``, how
    many nodes (one agent each) the job has."""

    python: str
    host: str
    port: int
    nodes: int = 1

    @property
    def target(self) -> str:
        """``HOST:PORT`` (``[HOST]:PORT`` for an IPv6 address), the agent's ``--connect``."""
        host, port = self.host, self.port
        return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def batch_script(job: AgentJob, token: str) -> str:
    """The job's script (sbatch reads it on stdin): ``token`` exported as
    ``$BENCHRUN_AGENT_TOKEN``, then the agent started with ``exec``, through
    ``srun --nodes=N --ntasks=N --ntasks-per-node=1`` when the job has N > 1 nodes."""
    count = job.nodes
    launcher = f"srun --nodes={count} --ntasks={count} --ntasks-per-node=1 " if count > 1 else ""
    return (
        "#!/bin/sh\n"
        "# benchrun's agent (docs/slurm.md): runs the rounds the submit host sends\n"
        f"{TOKEN_ENV}={shlex.quote(token)}\n"
        f"export {TOKEN_ENV}\n"
        f"exec {launcher}{shlex.quote(job.python)} -m {AGENT_MODULE} "
        f"--connect {shlex.quote(job.target)}\n"
    )


def sbatch_options(
    spec: SlurmSpec, job_name: str, comment: str | None, node_count: int
) -> list[str]:
    """The sbatch options of every job: ``--job-name``, ``--output`` (:data:`AGENT_LOG`),
    ``--comment`` (the campaign's mark, when given), then the executor's keys
    (``--partition``, ``--constraint``, ``--account``, ``--nodes`` or ``--nodelist``
    with ``--nodes=node_count``, ``--time`` as ``D-HH:MM:SS``, ``--exclusive``), then
    ``spec.sbatch_args`` as given."""
    s = spec
    options = [f"--job-name={job_name}", f"--output={AGENT_LOG}"]
    if comment is not None:
        options.append(f"--comment={comment}")
    if s.partition:
        options.append(f"--partition={s.partition}")
    if s.constraint:
        options.append(f"--constraint={s.constraint}")
    if s.account:
        options.append(f"--account={s.account}")
    if isinstance(s.nodes, int):
        options.append(f"--nodes={s.nodes}")
    else:
        options += [f"--nodelist={','.join(s.nodes)}", f"--nodes={node_count}"]
    time_text = s.time_text()
    if time_text is not None:
        options.append(f"--time={time_text}")
    if s.exclusive:
        options.append("--exclusive")
    return options + list(s.sbatch_args)


def sbatch_argv(options: Sequence[str]) -> list[str]:
    """The command that submits a job with ``options`` (its script on stdin):
    ``sbatch --parsable OPTIONS``, which prints ``JOBID`` or ``JOBID;CLUSTER``."""
    return ["sbatch", "--parsable", *options]
