"""What running rounds through Slurm costs against running them locally (issue 19).

On a submit host that is also a node of the cluster (the one-node cluster of
tests/slurm/cluster.sh: ``export SLURM_CONF=/tmp/benchrun-slurm/slurm.conf``), in one
invocation, interleaved over ``--repeats`` blocks so that the machine's drift hits both:

  local    ``LocalExecutor.launch`` of ``true``, ``--rounds`` times per block
  slurm    ``SlurmExecutor.launch`` of ``true`` through one job's agent, as many times

For each executor: the round's measured wall time (what is stored: the child's spawn to
its reaping, on the node for Slurm) and the launch's cost on the submit host (the call to
``launch`` from start to return: for Slurm it adds the message round trip and the agent's
work), as medians and 95th percentiles in microseconds. Then the fixed costs of a job:
submission to the agent's hello and to the first round's outcome (``--jobs`` fresh jobs),
and what a lost job costs: ``scancel`` under a round of ``sleep 30`` until the failed
round is back, and the next launch (a new job) until its round is back.

Usage: SLURM_CONF=... python benchmarks/slurm_overhead.py [--rounds 500] [--repeats 3]
       [--jobs 3] [--partition alpha] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import threading
import time
from typing import Any

from benchrun.runner.config.experiment import SlurmSpec
from benchrun.runner.execute.executor import Executor, RoundSpec
from benchrun.runner.execute.local import LocalExecutor
from benchrun.runner.execute.pinning import pinned_runner, plan_pinning
from benchrun.runner.execute.slurm import SlurmExecutor


def spec(argv: tuple[str, ...], cpus: tuple[int, ...] | None = None) -> RoundSpec:
    return RoundSpec(workload="w", argv=argv, env=dict(os.environ), timeout=60.0, cpus=cpus)


def block(
    executor: Executor, rounds: int, cpus: tuple[int, ...] | None
) -> tuple[list[float], list[float]]:
    """``rounds`` launches of ``true``: (measured wall times, launch costs), in us."""
    walls, costs = [], []
    true = spec(("true",), cpus)
    for _ in range(rounds):
        t0 = time.perf_counter_ns()
        outcome = executor.launch(true)
        costs.append((time.perf_counter_ns() - t0) / 1e3)
        assert outcome.status == "ok", outcome.reason
        walls.append(outcome.wall_ns / 1e3)
    return walls, costs


def summary(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "median_us": statistics.median(ordered),
        "p95_us": ordered[int(0.95 * (len(ordered) - 1))],
        "mean_us": statistics.fmean(ordered),
    }


def run(
    args: argparse.Namespace,
    local: LocalExecutor,
    remote: SlurmExecutor,
    cpus: tuple[int, ...] | None,
    results: dict[str, Any],
) -> None:
    """The interleaved blocks and the lost job (see the module docstring)."""
    try:
        remote.launch(spec(("true",)))  # the job starts: its cost is measured below
        local.launch(spec(("true",)))
        data: dict[str, tuple[list[float], list[float]]] = {"local": ([], []), "slurm": ([], [])}
        for _ in range(args.repeats):
            for name, executor in (("local", local), ("slurm", remote)):
                walls, costs = block(executor, args.rounds, cpus if name == "local" else None)
                data[name][0].extend(walls)
                data[name][1].extend(costs)
        for name, (walls, costs) in data.items():
            results[name] = {"measured_wall": summary(walls), "launch_cost": summary(costs)}
        # what a lost job costs: scancel under a long round, then the next round
        job = remote.jobs[-1].job_id
        cancel_at: list[float] = []

        def cancel() -> None:
            cancel_at.append(time.monotonic())
            subprocess.run(["scancel", job], check=False)

        threading.Timer(1.0, cancel).start()
        lost = remote.launch(spec(("sleep", "30")))
        detected = time.monotonic() - cancel_at[0]
        t0 = time.monotonic()
        again = remote.launch(spec(("true",)))
        results["lost_job"] = {
            "reason": lost.reason,
            "scancel_to_failed_round_s": detected,
            "next_round_with_new_job_s": time.monotonic() - t0,
            "next_round_status": again.status,
        }
    finally:
        remote.close()
        local.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=500)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=3)
    parser.add_argument("--partition", default=None)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    slurm_spec = SlurmSpec(partition=args.partition, listen="127.0.0.1", max_resubmits=10)
    messages: list[str] = []
    local = LocalExecutor()
    remote = SlurmExecutor(slurm_spec, job_name="benchrun-overhead", on_message=messages.append)
    results: dict[str, Any] = {}
    # pin: auto on both sides, as a campaign does: the agent plans it on its node, and
    # this process (the local executor's runner) is pinned the same way here
    plan = plan_pinning("auto")
    with pinned_runner(plan):
        run(args, local, remote, plan.workload_cpus, results)
    firsts, agents = [], []
    for _ in range(args.jobs):
        fresh = SlurmExecutor(slurm_spec, job_name="benchrun-overhead", on_message=messages.append)
        try:
            fresh.launch(spec(("true",)))
            assert fresh.timings.to_first_round is not None
            firsts.append(fresh.timings.to_first_round)
            agents.append(fresh.timings.to_agent[0])
        finally:
            fresh.close()
    results["job_start"] = {
        "submit_to_agent_s": agents,
        "submit_to_first_round_s": firsts,
        "median_submit_to_first_round_s": statistics.median(firsts),
    }
    results["settings"] = vars(args)
    for name in ("local", "slurm"):
        r = results[name]
        print(
            f"{name:6} measured wall median {r['measured_wall']['median_us']:8.0f} us "
            f"p95 {r['measured_wall']['p95_us']:8.0f} us | launch cost median "
            f"{r['launch_cost']['median_us']:8.0f} us p95 {r['launch_cost']['p95_us']:8.0f} us"
        )
    extra = (
        results["slurm"]["launch_cost"]["median_us"] - results["local"]["launch_cost"]["median_us"]
    )
    print(f"slurm adds {extra:.0f} us per round (median launch cost, slurm - local)")
    print(
        "submit -> first round: "
        + ", ".join(f"{v:.2f} s" for v in firsts)
        + " (to agent: "
        + ", ".join(f"{v:.2f} s" for v in agents)
        + ")"
    )
    lost_job = results["lost_job"]
    print(
        f"lost job: {lost_job['reason']}; scancel -> failed round "
        f"{lost_job['scancel_to_failed_round_s']:.2f} s; next round on a new job "
        f"{lost_job['next_round_with_new_job_s']:.2f} s"
    )
    if args.json:
        with open(args.json, "w") as out:
            json.dump(results, out, indent=2)


if __name__ == "__main__":
    main()
