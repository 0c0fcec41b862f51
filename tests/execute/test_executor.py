"""LocalExecutor with real processes.

References are outside the executor: what the child itself reports (its affinity, its
environment, its CPU time, its VmHWM), an external monotonic clock around the call, the
exit status conventions of POSIX, and outputs the test generates deterministically.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchrun.runner.config.experiment import ReadingsSpec
from benchrun.runner.errors import UserError
from benchrun.runner.execute.executor import RoundOutcome, RoundSpec
from benchrun.runner.execute.local import LocalExecutor

PY = sys.executable
ENV = {k: os.environ[k] for k in ("PATH", "HOME", "LANG") if k in os.environ}


@pytest.fixture(params=[True, False], ids=["pidfd", "waitid-thread"])
def ex(request: pytest.FixtureRequest) -> Iterator[LocalExecutor]:
    executor = LocalExecutor(kill_grace=0.3, drain_grace=0.5, use_pidfd=request.param)
    yield executor
    executor.close()


@pytest.fixture
def ex1() -> Iterator[LocalExecutor]:
    executor = LocalExecutor(kill_grace=0.3, drain_grace=0.5)
    yield executor
    executor.close()


def spec(*argv: str, timeout: float = 10.0, **kw: object) -> RoundSpec:
    return RoundSpec(workload="w", argv=argv, env=kw.pop("env", ENV), timeout=timeout, **kw)  # type: ignore[arg-type]


def timed(executor: LocalExecutor, s: RoundSpec) -> tuple[RoundOutcome, float]:
    t = time.monotonic()
    out = executor.launch(s)
    return out, time.monotonic() - t


def gone(pid: int, within: float = 3.0) -> bool:
    """True when ``pid`` no longer exists (reparented orphans are reaped by init)."""
    end = time.monotonic() + within
    while time.monotonic() < end:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.02)
    return False


# -- success, pinning, environment ------------------------------------------------------


def test_child_sees_the_pinned_cpus_and_runner_mask_is_restored(ex1: LocalExecutor) -> None:
    before = os.sched_getaffinity(0)
    for cpu in sorted(before):
        out = ex1.launch(
            spec(PY, "-c", "import os; print(sorted(os.sched_getaffinity(0)))", cpus=(cpu,))
        )
        assert out.status == "ok", out.reason
        assert out.stdout_tail.strip() == str([cpu])  # the kernel's answer, from the child
        assert out.cpus == (cpu,)
        assert os.sched_getaffinity(0) == before


def test_unpinned_child_inherits_the_runner_mask(ex1: LocalExecutor) -> None:
    out = ex1.launch(spec(PY, "-c", "import os; print(sorted(os.sched_getaffinity(0)))"))
    assert out.stdout_tail.strip() == str(sorted(os.sched_getaffinity(0)))
    assert out.cpus is None


def test_cpu_outside_the_mask_fails_without_starting(ex1: LocalExecutor) -> None:
    before = os.sched_getaffinity(0)
    out = ex1.launch(spec("true", cpus=(4095,)))
    assert out.status == "failed" and out.reason is not None
    assert out.reason.startswith("cannot pin to CPUs [4095]")
    assert os.sched_getaffinity(0) == before


def test_environment_is_exactly_the_given_one(ex1: LocalExecutor) -> None:
    env = {"PATH": os.environ["PATH"], "BENCHRUN_X": "a b=c"}
    out = ex1.launch(spec("env", env=env))
    assert out.status == "ok"
    assert sorted(out.stdout_tail.splitlines()) == sorted(f"{k}={v}" for k, v in env.items())


def test_cwd(ex1: LocalExecutor, tmp_path: Path) -> None:
    out = ex1.launch(spec("pwd", "-P", cwd=str(tmp_path)))
    assert out.stdout_tail.strip() == str(tmp_path.resolve())


def test_shell_only_when_asked(ex1: LocalExecutor) -> None:
    assert ex1.launch(spec("echo $((1+2))", shell=True)).stdout_tail == "3\n"
    assert ex1.launch(spec("echo", "$((1+2))")).stdout_tail == "$((1+2))\n"


def test_child_has_its_own_session(ex1: LocalExecutor) -> None:
    code = "import os; print(os.getpid() == os.getpgid(0) == os.getsid(0))"
    assert ex1.launch(spec(PY, "-c", code)).stdout_tail.strip() == "True"


# -- measurements -------------------------------------------------------------------------


def test_wall_time_of_sleep(ex: LocalExecutor) -> None:
    out, external = timed(ex, spec("sleep", "0.2"))
    assert out.status == "ok" and out.exit_code == 0
    assert 0.2 <= out.wall_ns / 1e9 < 0.5
    assert out.wall_ns / 1e9 <= external


def test_cpu_time_of_busy_loop_matches_childs_own_clock(ex1: LocalExecutor) -> None:
    code = (
        "import os\n"
        "while os.times().user < 0.2:\n"
        "    for _ in range(20000): pass\n"
        "print(os.times().user)"
    )
    out = ex1.launch(spec(PY, "-c", code))
    child_user = float(out.stdout_tail)
    assert out.user_s > 0.1
    # wait4 sees at least what the child counted for itself, plus at most its exit
    assert child_user - 0.011 <= out.user_s <= child_user + 0.05
    assert out.user_s + out.sys_s <= out.wall_ns / 1e9 + 0.02


def test_max_rss_of_200_mb_allocation(ex1: LocalExecutor) -> None:
    code = (
        "buf = bytearray(b'x') * (200 * 2**20)\n"
        "print([l for l in open('/proc/self/status') if l.startswith('VmHWM')][0].split()[1])"
    )
    out = ex1.launch(spec(PY, "-c", code))
    vmhwm_kib = int(out.stdout_tail)  # the kernel's high-water mark of the child's own image
    assert vmhwm_kib > 150 * 1024
    # ru_maxrss is sampled at exit, after the interpreter released a little memory: the two
    # kernel counters agree to within 1 MiB
    assert out.max_rss_kib >= vmhwm_kib - 1024
    assert out.max_rss_kib > 150 * 1024


def test_max_rss_floor_is_the_runner_peak(ex1: LocalExecutor) -> None:
    import resource

    out = ex1.launch(spec("true"))
    runner_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    floor = out.extra["max_rss_floor_kib"]
    assert isinstance(floor, int) and 0 < floor <= runner_peak


# -- failures -----------------------------------------------------------------------------


def test_exit_code_is_failed_with_tails(ex1: LocalExecutor) -> None:
    code = "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)"
    out = ex1.launch(spec(PY, "-c", code))
    assert (out.status, out.reason, out.exit_code) == ("failed", "exit code 3", 3)
    assert (out.stdout_tail, out.stderr_tail) == ("out\n", "err\n")


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGSEGV])
def test_killed_by_signal(ex1: LocalExecutor, sig: signal.Signals) -> None:
    code = f"import os, signal; os.kill(os.getpid(), {int(sig)})"
    out = ex1.launch(spec(PY, "-c", code))
    assert out.status == "failed"
    assert out.reason == f"killed by signal {sig.name}"
    assert out.exit_code == -int(sig)


def test_missing_executable(ex1: LocalExecutor) -> None:
    out = ex1.launch(spec("/nonexistent/benchrun-no-such-program"))
    assert out.status == "failed" and out.exit_code is None
    assert out.reason == (
        "cannot execute '/nonexistent/benchrun-no-such-program': No such file or directory"
    )


def test_not_executable(ex1: LocalExecutor, tmp_path: Path) -> None:
    script = tmp_path / "script.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(0o644)
    out = ex1.launch(spec(str(script)))
    assert out.status == "failed"
    assert out.reason == f"cannot execute {str(script)!r}: Permission denied"


def test_missing_cwd(ex1: LocalExecutor, tmp_path: Path) -> None:
    where = str(tmp_path / "nope")
    out = ex1.launch(spec("true", cwd=where))
    assert out.status == "failed"
    assert out.reason == f"cannot enter working directory {where!r}: No such file or directory"


def test_bad_specs_raise_before_starting(ex1: LocalExecutor) -> None:
    with pytest.raises(UserError, match="one string"):
        ex1.launch(spec("echo", "a", shell=True))
    with pytest.raises(UserError, match="empty"):
        ex1.launch(spec())
    with pytest.raises(UserError, match="capture groups"):
        ex1.launch(spec("true", readings=ReadingsSpec(pattern="x")))


# -- timeouts and stubborn descendants ---------------------------------------------------


def test_timeout_kills_sleep(ex: LocalExecutor) -> None:
    out, external = timed(ex, spec("sleep", "30", timeout=0.5))
    assert out.status == "timeout"
    assert out.reason == "timed out after 0.5 s"
    assert external < 5.0
    assert 0.5 <= out.wall_ns / 1e9 <= external


def test_timeout_with_grandchild_holding_the_pipe(ex: LocalExecutor) -> None:
    # the grandchild ignores SIGTERM and keeps stdout open; SIGKILL to the group ends it
    cmd = "trap '' TERM; sleep 30 & echo $!; sleep 30"
    out, external = timed(ex, spec(cmd, shell=True, timeout=0.5))
    assert out.status == "timeout"
    assert external < 5.0
    assert gone(int(out.stdout_tail))


def test_normal_exit_with_grandchild_holding_the_pipe(ex1: LocalExecutor) -> None:
    out, external = timed(ex1, spec("sleep 30 & echo $!", shell=True))
    assert out.status == "ok"
    assert external < 3.0  # drain_grace 0.5 s, then the group is killed
    assert out.wall_ns / 1e9 < 0.5  # wall time ends when the shell is reaped
    assert out.extra.get("descendants_killed") is True
    assert gone(int(out.stdout_tail))


def test_chatty_child_does_not_block_and_tails_are_bounded(ex1: LocalExecutor) -> None:
    # 8 MiB on stdout and 8 MiB on stderr, interleaved, each line numbered
    code = (
        "import sys\n"
        "for i in range(8 * 2**20 // 16):\n"
        "    line = f'{i:015d}\\n'\n"
        "    sys.stdout.write(line); sys.stderr.write(line)\n"
    )
    out, external = timed(ex1, spec(PY, "-c", code, output_limit=1000))
    assert out.status == "ok"
    n = 8 * 2**20 // 16
    expected = "".join(f"{i:015d}\n" for i in range(n - 63, n))[-1000:]
    assert out.stdout_tail == expected and out.stderr_tail == expected
    assert out.extra["stdout_bytes"] == out.extra["stderr_bytes"] == 8 * 2**20
    assert external < 20.0


# -- readings -------------------------------------------------------------------------------


def test_regex_readings(ex1: LocalExecutor) -> None:
    code = "for v in (1.5, 2.25, 3): print(f'time={v} ms')"
    rs = ReadingsSpec(pattern=r"time=([0-9.]+) ms", unit="ms")
    out = ex1.launch(spec(PY, "-c", code, readings=rs))
    assert out.status == "ok" and out.readings == (1.5, 2.25, 3.0)


def test_jsonl_readings(ex1: LocalExecutor) -> None:
    code = "import json\nprint('hello')\nfor v in (10, 20.5): print(json.dumps({'ns': v}))"
    out = ex1.launch(spec(PY, "-c", code, readings=ReadingsSpec(format="jsonl", field="ns")))
    assert out.readings == (10.0, 20.5)


def test_no_reading_is_failed_with_output_kept(ex1: LocalExecutor) -> None:
    rs = ReadingsSpec(pattern=r"time=([0-9.]+) ms")
    out = ex1.launch(spec("echo", "garbage", readings=rs))
    assert out.status == "failed" and out.exit_code == 0 and out.readings == ()
    assert out.reason == "no reading matched 'time=([0-9.]+) ms' in stdout"
    assert out.stdout_tail == "garbage\n"


def test_readings_parse_whole_stdout_beyond_the_tail(ex1: LocalExecutor) -> None:
    code = "print('time=7 ms'); print('x' * 100000)"
    rs = ReadingsSpec(pattern=r"time=([0-9.]+) ms")
    out = ex1.launch(spec(PY, "-c", code, readings=rs, output_limit=100))
    assert out.readings == (7.0,) and len(out.stdout_tail) == 100


def test_stdout_over_the_readings_limit_fails() -> None:
    executor = LocalExecutor(readings_stdout_limit=1000)
    try:
        code = "print('time=7 ms'); print('x' * 5000)"
        rs = ReadingsSpec(pattern=r"time=([0-9.]+) ms")
        out = executor.launch(spec(PY, "-c", code, readings=rs))
        assert out.status == "failed" and out.reason is not None
        assert "stdout exceeded" in out.reason and out.readings == ()
    finally:
        executor.close()


# -- interrupt ----------------------------------------------------------------------------


def test_interrupt_from_another_thread(ex: LocalExecutor) -> None:
    t0 = time.monotonic()  # before the timer starts: it cannot fire earlier than 0.3 s
    timer = threading.Timer(0.3, ex.interrupt)
    timer.start()
    out = ex.launch(spec("sleep", "30"))
    external = time.monotonic() - t0
    timer.join()
    assert out.status == "interrupted"
    assert 0.3 <= external < 5.0


def test_interrupt_from_a_signal_handler(ex1: LocalExecutor) -> None:
    old = signal.signal(signal.SIGALRM, lambda signum, frame: ex1.interrupt())
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.3)
        out, external = timed(ex1, spec("sleep", "30"))
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    assert out.status == "interrupted" and external < 5.0


def test_interrupt_between_rounds_stops_the_next_one(ex1: LocalExecutor, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    ex1.interrupt()
    out = ex1.launch(spec("touch", str(marker)))
    assert out.status == "interrupted" and not marker.exists()
    assert ex1.launch(spec("true")).status == "ok"  # consumed
    ex1.interrupt()
    ex1.clear_interrupt()
    assert ex1.launch(spec("true")).status == "ok"


def test_outcome_extra_is_json_serialisable(ex1: LocalExecutor) -> None:
    out = ex1.launch(spec("true"))
    json.dumps(dict(out.extra))


def test_impossible_environment_fails_without_raising(ex1: LocalExecutor) -> None:
    out = ex1.launch(spec("true", env={"A=B": "1"}))
    assert out.status == "failed"
    assert out.reason == "cannot start: illegal environment variable name"


def test_changed_environment_is_not_served_from_cache(ex1: LocalExecutor) -> None:
    path = os.environ["PATH"]
    assert ex1.launch(spec("env", env={"PATH": path, "V": "1"})).stdout_tail.count("V=1") == 1
    assert "V=2" in ex1.launch(spec("env", env={"PATH": path, "V": "2"})).stdout_tail


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs")
def test_pinned_child_under_a_pinned_runner(ex1: LocalExecutor) -> None:
    from benchrun.runner.execute.pinning import PinPlan, pinned_runner

    cpus = sorted(os.sched_getaffinity(0))
    code = "import os; print(sorted(os.sched_getaffinity(0)))"
    with pinned_runner(PinPlan((cpus[-1],), (cpus[0],), "test")):
        out = ex1.launch(spec(PY, "-c", code, cpus=(cpus[-1],)))
        assert os.sched_getaffinity(0) == {cpus[0]}
    assert out.stdout_tail.strip() == str([cpus[-1]])


def test_infinite_timeout(ex1: LocalExecutor) -> None:
    assert ex1.launch(spec("true", timeout=float("inf"))).status == "ok"


def test_exception_in_a_signal_handler_kills_and_reaps_the_child(
    ex1: LocalExecutor, tmp_path: Path
) -> None:
    pidfile = tmp_path / "pid"

    def boom(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGALRM, boom)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.3)
        with pytest.raises(KeyboardInterrupt):
            ex1.launch(spec(f"echo $$ > {pidfile}; exec sleep 30", shell=True))
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    with pytest.raises(ProcessLookupError):  # killed and reaped: no zombie left behind
        os.kill(int(pidfile.read_text()), 0)
