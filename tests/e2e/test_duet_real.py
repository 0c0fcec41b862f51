"""Duets of real processes (docs/duet.md): released together, on different CPUs that
alternate, timed, killed on a timeout; and a short duet campaign through ``benchrun run``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchrun.runner.execute.duet import duet_cpus, local_duet, plan_duet
from benchrun.runner.execute.executor import RoundSpec
from benchrun.runner.execute.local import LocalExecutor
from benchrun.runner.store.database import Store

pytestmark = pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="a duet needs two CPUs")


def _spec(
    name: str, argv: tuple[str, ...], cpus: tuple[int, ...], timeout: float = 10.0
) -> RoundSpec:
    return RoundSpec(name, argv, dict(os.environ), timeout, cpus=cpus)


def test_both_sides_start_together_on_their_own_cpus() -> None:
    plan = plan_duet("auto")
    ex = LocalExecutor(use_cgroup=False)
    try:
        for i in range(4):
            ca, cb = duet_cpus(plan, i)
            a, b = local_duet(
                ex,
                _spec("a", ("sleep", "0.05"), ca),
                _spec("b", ("sleep", "0.05"), cb),
            )
            assert a.status == b.status == "ok"
            assert abs(a.started_at - b.started_at) < 0.005
            assert 0.045 < a.wall_ns / 1e9 < 0.5 and 0.045 < b.wall_ns / 1e9 < 0.5
            # the intervals [started_at, started_at + wall] overlap
            assert a.started_at < b.started_at + b.wall_ns / 1e9
            assert b.started_at < a.started_at + a.wall_ns / 1e9
            assert a.cpus == ca and b.cpus == cb and a.cpus != b.cpus
            assert a.extra.get("duet") is True
    finally:
        ex.close()


def test_each_side_reports_its_own_cpu_and_output() -> None:
    ex = LocalExecutor(use_cgroup=False)
    code = "import os; print(sorted(os.sched_getaffinity(0)))"
    try:
        cpus = plan_duet("auto").cpus
        a, b = local_duet(
            ex,
            _spec("a", (sys.executable, "-c", code), (cpus[0],)),
            _spec("b", (sys.executable, "-c", code), (cpus[1],)),
        )
        assert a.stdout_tail.strip() == f"[{cpus[0]}]"
        assert b.stdout_tail.strip() == f"[{cpus[1]}]"
        assert a.stderr_tail == b.stderr_tail == ""  # the barrier's marker is not output
    finally:
        ex.close()


def test_a_side_that_times_out_is_killed_and_the_other_is_unharmed() -> None:
    ex = LocalExecutor(use_cgroup=False, kill_grace=0.1)
    try:
        t = time.monotonic()
        a, b = local_duet(
            ex,
            _spec("a", ("sleep", "30"), (0,), timeout=0.2),
            _spec("b", ("sh", "-c", "echo hi; exit 3"), (1,)),
        )
        assert time.monotonic() - t < 5
        assert a.status == "timeout"
        assert (b.status, b.exit_code, b.stdout_tail) == ("failed", 3, "hi\n")
        c, d = local_duet(
            ex,
            _spec("c", ("no-such-program-xyz",), (0,)),
            _spec("d", ("true",), (1,)),
        )
        assert c.status == "failed" and "cannot execute" in (c.reason or "")
        assert d.status == "ok"
    finally:
        ex.close()


def test_duet_campaign_through_benchrun_run(tmp_path: Path) -> None:
    (tmp_path / "e.yaml").write_text(
        "name: duet\n"
        f"output: {tmp_path / 'out'}\n"
        "settings: {rounds: 4, warmup_rounds: 0, duet: true}\n"
        "workloads:\n"
        "  - {name: a, command: 'sleep 0.02'}\n"
        "  - {name: b, command: 'sleep 0.02'}\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "benchrun.runner.cli", "run", str(tmp_path / "e.yaml")],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    if len(os.sched_getaffinity(0)) == 2:
        assert done.stderr.count("the runner shares a CPU with a workload") == 1
    with Store.open(tmp_path / "out" / "duet" / "benchrun.db") as store:
        campaign = store.campaign()
        rounds = {w.name: store.rounds(campaign.id, w.id) for w in store.workloads(campaign.id)}
    assert len(rounds["a"]) == len(rounds["b"]) == 4
    cpus_a = []
    for ra, rb in zip(rounds["a"], rounds["b"], strict=True):
        assert ra.pass_ == rb.pass_
        assert abs(ra.started_at - rb.started_at) < 0.005
        assert ra.cpus != rb.cpus
        cpus_a.append(ra.cpus)
    assert all(cpus_a[i] != cpus_a[i + 1] for i in range(3))


def test_system_says_whether_this_machine_can_run_duets() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "benchrun.runner.cli", "system", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    duet = json.loads(done.stdout)["duet"]
    assert duet["possible"] is True and duet["usable_cpus"] == len(os.sched_getaffinity(0))
    assert len(duet["cpus"]) == 2 and set(duet["smt_siblings"]) == {str(c) for c in duet["cpus"]}
    assert duet["runner_shares_cpu"] is (duet["usable_cpus"] == 2)
    human = subprocess.run(
        [sys.executable, "-m", "benchrun.runner.cli", "system"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "Duets" in human.stdout and "SMT siblings" in human.stdout
