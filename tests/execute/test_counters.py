"""Counter metrics of a round's process tree, counted by the kernel (perf_event_open) or
by valgrind's cachegrind, checked against what the kernel and valgrind say themselves.

Real processes throughout. A test skips (with the reason) only where the machine lacks
the facility: no perf_event_open at all, or no valgrind for the cachegrind path.
"""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

import pytest
from other_user import as_other_user
from valgrind_refs import VALGRIND, valgrind_instructions

from benchrun.runner.config.experiment import COUNTER_METRICS
from benchrun.runner.errors import UserError
from benchrun.runner.execute.counters import (
    COUNTER_EVENTS,
    cachegrind_argv,
    cachegrind_total,
    plan_counters,
    probe_perf,
)
from benchrun.runner.execute.executor import RoundOutcome, RoundSpec
from benchrun.runner.execute.local import LocalExecutor

HAS_PERF = probe_perf("task_clock").available
HAS_PMU = probe_perf("instructions").available
needs_perf = pytest.mark.skipif(not HAS_PERF, reason="this kernel offers no perf_event_open")
needs_valgrind = pytest.mark.skipif(VALGRIND is None, reason="valgrind is not installed")


def launch(argv: list[str], counters: tuple[str, ...], timeout: float = 300) -> RoundOutcome:
    ex = LocalExecutor()
    try:
        spec = RoundSpec("w", tuple(argv), dict(os.environ), timeout, counters=counters)
        return ex.launch(spec)
    finally:
        ex.close()


def test_the_config_and_the_executor_name_the_same_counters() -> None:
    assert set(COUNTER_EVENTS) == set(COUNTER_METRICS)


@needs_perf
def test_task_clock_counts_the_grandchildren_like_wait4_does() -> None:
    """A shell whose grandchildren burn the CPU: the inherited task clock of the tree is the
    CPU time the kernel reports through wait4 for the reaped descendants (two different
    kernel paths), within the accounting's granularity."""
    burn = f"{sys.executable} -c 'sum(range(3_000_000))'"
    out = launch(["/bin/sh", "-c", f"{burn} & {burn}; wait"], ("task_clock",))
    assert out.status == "ok", out.reason
    (reading,) = out.counters
    assert (reading.metric, reading.source, reading.scope) == (
        "task_clock",
        "perf_event",
        "process tree",
    )
    cpu = out.user_s + out.sys_s
    assert cpu > 0.1  # both grandchildren ran
    assert reading.value == pytest.approx(cpu, rel=0.15, abs=0.03)


@needs_perf
def test_context_switches_count_every_sleep_of_a_child() -> None:
    """A child process that sleeps 40 times leaves the CPU at least 40 times."""
    code = "import time\nfor _ in range(40): time.sleep(0.001)"
    out = launch(["/bin/sh", "-c", f"{sys.executable} -c '{code}'; true"], ("context_switches",))
    assert out.status == "ok", out.reason
    (reading,) = out.counters
    assert reading.value >= 40


@needs_perf
def test_page_faults_grow_with_the_pages_a_process_touches() -> None:
    """Touching 64 MiB more (16 384 pages of 4 KiB, each faulted in once) adds at least
    that many page faults; the closed form is the page count."""
    touch = f"{sys.executable} -c 'b = bytearray({{n}}); b[::4096] = b\"x\" * len(b[::4096])'"
    small = launch(["/bin/sh", "-c", touch.format(n=1 << 20)], ("page_faults",))
    large = launch(["/bin/sh", "-c", touch.format(n=65 << 20)], ("page_faults",))
    assert small.status == large.status == "ok"
    extra = large.counters[0].value - small.counters[0].value
    pages = (64 << 20) // os.sysconf("SC_PAGE_SIZE")
    # transparent huge pages may fault several pages at once: at least a sixteenth
    assert pages / 16 <= extra <= pages * 1.5


@needs_valgrind
def test_cachegrind_total_sums_every_process_of_the_tree(tmp_path: Path) -> None:
    """The parse of cachegrind's output files against valgrind's own report of the same
    run ("I refs" in each process's log): a shell running two programs is three
    processes, and the total is their sum to the instruction."""
    assert VALGRIND is not None
    out_dir = tmp_path / "cg"
    out_dir.mkdir()
    tree = ["/bin/sh", "-c", "/bin/true; /bin/echo hi"]
    argv = [a for a in cachegrind_argv(VALGRIND, out_dir, tree) if a != "-q"]
    argv.insert(1, f"--log-file={tmp_path}/log.%p")
    subprocess.run(argv, check=True, capture_output=True)
    assert len(list(out_dir.iterdir())) == 3  # sh, true, echo
    said = [
        int(m.group(1).replace(",", ""))
        for log in tmp_path.glob("log.*")
        if (m := re.search(r"I\s+refs:\s+([\d,]+)", log.read_text()))
    ]
    assert len(said) == 3
    assert cachegrind_total(out_dir) == sum(said)
    assert list(out_dir.iterdir()) == []  # read and removed


@needs_valgrind
def test_cachegrind_total_is_none_without_a_summary(tmp_path: Path) -> None:
    (tmp_path / "cachegrind.1.out").write_text("events: Ir\nfl=x\n")  # cut short
    assert cachegrind_total(tmp_path) is None


@pytest.mark.skipif(HAS_PMU, reason="a PMU counts instructions here; cachegrind is not used")
@needs_valgrind
def test_the_race_ratio_agrees_with_valgrinds_own(tmp_path: Path) -> None:
    """issue 33's race: sum(range(3000000)) against sum(range(3060000)), instructions
    counted through the executor (source cachegrind: no PMU here), against valgrind's own
    instruction counts of the same commands run by the test: ratios within 0.5 %."""
    small = ["python3", "-c", "sum(range(3000000))"]
    large = ["python3", "-c", "sum(range(3060000))"]
    ours = []
    for argv in (small, large):
        counts = []
        for _ in range(2):
            out = launch(argv, ("instructions",))
            assert out.status == "ok", out.reason
            (reading,) = out.counters
            assert (reading.source, reading.scope) == ("cachegrind", "process tree, user space")
            counts.append(reading.value)
        ours.append(statistics.median(counts))
    theirs = [valgrind_instructions(argv, tmp_path) for argv in (small, large)]
    assert ours[1] / ours[0] > 1.01  # the right order, clearly apart
    assert ours[1] / ours[0] == pytest.approx(theirs[1] / theirs[0], rel=0.005)


@pytest.mark.skipif(HAS_PMU, reason="a PMU counts instructions here; valgrind is not needed")
def test_instructions_without_pmu_or_valgrind_is_one_line() -> None:
    with pytest.raises(UserError) as err:
        plan_counters(("instructions",), "/nonexistent-benchrun-path")
    text = str(err.value)
    assert "\n" not in text and "valgrind" in text and "instructions" in text


@pytest.mark.skipif(HAS_PMU, reason="this machine has a PMU")
def test_a_hardware_counter_without_pmu_is_one_line() -> None:
    with pytest.raises(UserError) as err:
        plan_counters(("cycles",))
    assert "\n" not in str(err.value) and "cycles" in str(err.value)


@needs_perf
def test_a_failing_round_keeps_no_counts_and_a_missing_command_fails() -> None:
    failed = launch(["/bin/sh", "-c", "exit 3"], ("task_clock",))
    assert (failed.status, failed.exit_code, failed.counters) == ("failed", 3, ())
    missing = launch(["/nonexistent/benchrun-cmd"], ("task_clock",))
    assert missing.status == "failed" and missing.counters == ()


@needs_perf
@pytest.mark.skipif(os.geteuid() != 0, reason="plays the user nobody: needs root")
def test_an_unprivileged_user_counts_user_space_as_perf_event_paranoid_says() -> None:
    """As ``nobody``, the kernel's ``perf_event_paranoid`` decides (Documentation/admin-guide/
    perf-security.rst): <= 1 counts the kernel's part too, 2 user space only, and a
    kernel with Debian's level 3 refuses unprivileged counting altogether."""
    paranoid = int(Path("/proc/sys/kernel/perf_event_paranoid").read_text())

    # a forked child that dropped to nobody (tests/other_user.py): nothing of the source
    # tree need be readable by nobody, the module is imported already
    def probe() -> list[bool]:
        probe_perf.cache_clear()  # the parent's (root's) answer is cached
        p = probe_perf("task_clock")
        return [p.available, p.user_only]

    available, user_only = (str(v) for v in as_other_user(probe))
    if paranoid <= 1:
        assert (available, user_only) == ("True", "False")
    elif paranoid == 2:
        assert (available, user_only) == ("True", "True")
    else:
        assert (available, user_only) in {("True", "True"), ("False", "False")}
