"""CPU planning (with fake sysfs topologies) and the runner-pinning context manager.

Topologies are written by the test as the kernel would expose them; expected plans follow
from the rule in docs/design.md (last physical core for the workload, SMT siblings never
split, only allowed CPUs). Affinity effects are checked with the kernel's own answer
(os.sched_getaffinity on the thread, or printed by a child process).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchrun.runner.errors import UserError
from benchrun.runner.execute.pinning import (
    PinPlan,
    allowed_cpus,
    format_cpu_list,
    parse_cpu_list,
    physical_cores,
    pinned_runner,
    plan_pinning,
)


def fake_sysfs(tmp_path: Path, siblings: dict[int, str], name: str = "core_cpus_list") -> Path:
    """Write cpuN/topology/<name> files holding the given sibling lists."""
    for cpu, text in siblings.items():
        topo = tmp_path / f"cpu{cpu}" / "topology"
        topo.mkdir(parents=True)
        (topo / name).write_text(text + "\n")
    return tmp_path


# -- CPU list format ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "cpus"),
    [("0", (0,)), ("0-3", (0, 1, 2, 3)), ("0,2", (0, 2)), ("0-1,8-9,4", (0, 1, 4, 8, 9))],
)
def test_parse_cpu_list_kernel_examples(text: str, cpus: tuple[int, ...]) -> None:
    assert parse_cpu_list(text) == cpus


@pytest.mark.parametrize("text", ["a", "3-1", "1-x", "-1"])
def test_parse_cpu_list_rejects_garbage(text: str) -> None:
    with pytest.raises(ValueError):
        parse_cpu_list(text)


def test_format_cpu_list_compacts_runs() -> None:
    assert format_cpu_list([5, 0, 1, 2]) == "0-2,5"
    assert format_cpu_list([3]) == "3"


@given(st.sets(st.integers(min_value=0, max_value=300)))
def test_cpu_list_round_trip(cpus: set[int]) -> None:
    assert parse_cpu_list(format_cpu_list(cpus)) == tuple(sorted(cpus))


# -- planning ----------------------------------------------------------------------------


def test_auto_two_cores_no_smt(tmp_path: Path) -> None:
    sysfs = fake_sysfs(tmp_path, {0: "0", 1: "1"})
    plan = plan_pinning("auto", allowed=[0, 1], sysfs=sysfs)
    assert (plan.workload_cpus, plan.runner_cpus) == ((1,), (0,))


def test_auto_keeps_smt_siblings_together(tmp_path: Path) -> None:
    # Intel-style numbering: cpu N and N+4 share a core
    sysfs = fake_sysfs(tmp_path, {c: f"{c % 4},{c % 4 + 4}" for c in range(8)})
    plan = plan_pinning("auto", allowed=range(8), sysfs=sysfs)
    assert plan.workload_cpus == (3, 7)
    assert plan.runner_cpus == (0, 1, 2, 4, 5, 6)


def test_auto_reads_older_thread_siblings_name(tmp_path: Path) -> None:
    sysfs = fake_sysfs(tmp_path, {0: "0-1", 1: "0-1", 2: "2-3", 3: "2-3"}, "thread_siblings_list")
    plan = plan_pinning("auto", allowed=[0, 1, 2, 3], sysfs=sysfs)
    assert (plan.workload_cpus, plan.runner_cpus) == ((2, 3), (0, 1))


def test_auto_only_allowed_cpus_count(tmp_path: Path) -> None:
    # a container allowed {2, 3} on a machine whose cores are {0,2} and {1,3}
    sysfs = fake_sysfs(tmp_path, {0: "0,2", 1: "1,3", 2: "0,2", 3: "1,3"})
    plan = plan_pinning("auto", allowed=[2, 3], sysfs=sysfs)
    assert (plan.workload_cpus, plan.runner_cpus) == ((3,), (2,))


def test_auto_siblings_of_one_core_are_not_split(tmp_path: Path) -> None:
    sysfs = fake_sysfs(tmp_path, {0: "0-1", 1: "0-1"})
    plan = plan_pinning("auto", allowed=[0, 1], sysfs=sysfs)
    assert plan.workload_cpus is None and plan.runner_cpus is None
    assert "siblings" in plan.reason


def test_auto_one_cpu_pins_nothing(tmp_path: Path) -> None:
    plan = plan_pinning("auto", allowed=[5], sysfs=tmp_path)
    assert plan == PinPlan(None, None, plan.reason)
    assert "only CPU 5" in plan.reason


def test_auto_without_topology_treats_cpus_as_cores(tmp_path: Path) -> None:
    plan = plan_pinning("auto", allowed=[0, 1, 2], sysfs=tmp_path / "missing")
    assert (plan.workload_cpus, plan.runner_cpus) == ((2,), (0, 1))
    assert "unreadable" in plan.reason
    cores, known = physical_cores([0, 1, 2], tmp_path / "missing")
    assert cores == ((0,), (1,), (2,)) and known is False


def test_none_pins_nothing() -> None:
    plan = plan_pinning("none", allowed=[0, 1])
    assert plan.workload_cpus is None and plan.runner_cpus is None


def test_explicit_list_runner_avoids_workload_core(tmp_path: Path) -> None:
    sysfs = fake_sysfs(tmp_path, {c: f"{c % 4},{c % 4 + 4}" for c in range(8)})
    plan = plan_pinning((1,), allowed=range(8), sysfs=sysfs)
    assert plan.workload_cpus == (1,)
    assert plan.runner_cpus == (0, 2, 3, 4, 6, 7)  # 5 is CPU 1's sibling


def test_explicit_list_using_every_core_leaves_runner_unpinned(tmp_path: Path) -> None:
    sysfs = fake_sysfs(tmp_path, {0: "0", 1: "1"})
    plan = plan_pinning((0, 1), allowed=[0, 1], sysfs=sysfs)
    assert plan.workload_cpus == (0, 1) and plan.runner_cpus is None


@pytest.mark.parametrize(
    ("pin", "message"),
    [
        ((7,), r"CPU 7 not available to this process; valid CPUs: 0-1"),
        ((0, 7, 9), r"CPUs 7,9 not available .* valid CPUs: 0-1"),
        ((), r"empty; valid CPUs: 0-1"),
        ((1, 1), r"repeats a CPU"),
        (("1",), r"not a CPU number"),
        ("fast", r"'fast' is not valid; use 'auto', 'none' or a list of CPUs from 0-1"),
    ],
)
def test_bad_pin_is_a_user_error(pin: object, message: str) -> None:
    with pytest.raises(UserError, match=message):
        plan_pinning(pin, allowed=[0, 1])  # type: ignore[arg-type]


def test_this_machine_plan_is_consistent() -> None:
    usable = set(os.sched_getaffinity(0))
    plan = plan_pinning("auto")
    if plan.workload_cpus is None:
        assert plan.runner_cpus is None
        return
    assert plan.runner_cpus is not None
    assert set(plan.workload_cpus) | set(plan.runner_cpus) <= usable
    assert not set(plan.workload_cpus) & set(plan.runner_cpus)
    assert max(plan.workload_cpus) == max(usable)
    assert plan.to_dict()["workload_cpus"] == list(plan.workload_cpus)


# -- pinned_runner -----------------------------------------------------------------------

needs_two_cpus = pytest.mark.skipif(
    len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs in the affinity mask"
)


@needs_two_cpus
def test_pinned_runner_pins_all_threads_and_restores() -> None:
    cpus = allowed_cpus()
    before = os.sched_getaffinity(0)
    started = threading.Event()
    stop = threading.Event()
    tids: list[int] = []

    def worker() -> None:
        tids.append(threading.get_native_id())
        started.set()
        stop.wait(10)

    thread = threading.Thread(target=worker)
    thread.start()
    started.wait(5)
    try:
        plan = PinPlan((cpus[-1],), (cpus[0],), "test")
        with pinned_runner(plan):
            assert os.sched_getaffinity(0) == {cpus[0]}
            assert os.sched_getaffinity(tids[0]) == {cpus[0]}
            # a child started now inherits the runner's mask (reported by the kernel)
            out = subprocess.run(
                [sys.executable, "-c", "import os; print(sorted(os.sched_getaffinity(0)))"],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            assert out.strip() == str([cpus[0]])
        assert os.sched_getaffinity(0) == before
        assert os.sched_getaffinity(tids[0]) == before
    finally:
        stop.set()
        thread.join()


@needs_two_cpus
def test_pinned_runner_restores_after_exception() -> None:
    cpus = allowed_cpus()
    before = os.sched_getaffinity(0)
    with pytest.raises(RuntimeError, match="boom"):
        with pinned_runner(PinPlan((cpus[-1],), (cpus[0],), "test")):
            assert os.sched_getaffinity(0) == {cpus[0]}
            raise RuntimeError("boom")
    assert os.sched_getaffinity(0) == before


def test_pinned_runner_without_runner_cpus_changes_nothing() -> None:
    before = os.sched_getaffinity(0)
    with pinned_runner(PinPlan(None, None, "none")) as plan:
        assert plan.runner_cpus is None
        assert os.sched_getaffinity(0) == before
    assert os.sched_getaffinity(0) == before


def test_pinned_runner_bad_cpu_is_user_error_and_restores() -> None:
    before = os.sched_getaffinity(0)
    with pytest.raises(UserError, match="cannot pin the runner"):
        with pinned_runner(PinPlan(None, (4095,), "bad")):
            pass
    assert os.sched_getaffinity(0) == before
