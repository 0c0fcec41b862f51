"""The suite on both CPUs (pytest-xdist: ``-n auto --dist loadgroup --no-loadscope-reorder``
in pyproject.toml; docs/testing.md).

- A module whose tests share a module-scoped fixture (a real campaign, an export) runs on
  one worker: its tests get ``xdist_group`` (the module's path), so the fixture is built
  once instead of once per worker; so do the fuzz modules, whose last test checks the
  peak memory of the process that ran the others (``SAME_PROCESS``). Session fixtures
  that run campaigns are shared across workers by tests/shared_build.py instead.
- Under xdist the longest tests are sent first (longest-processing-time-first
  scheduling), so that the run does not end with one worker busy on a 30 s test that was
  collected last while the other waits. ``HEAVY`` holds the measured seconds of the
  longest tests (2-core VM, docs/testing.md); the order of everything else is unchanged.
- An xdist worker starts with ``COLUMNS=80`` and ``LINES=24`` in its environment, which
  a serial run does not have; benchrun (and every ``benchrun`` child) would then fit its
  tables to 80 columns instead of the 160 of a pipe. Workers get the controller's values.
- ``BENCHRUN_CONTENDED=keep``: experiments that do not set ``contended`` analyse their
  contended rounds (docs/contention.md). The two workers share both CPUs, so real rounds
  of one test wait for the other's; with the default (exclude) they would be left out and
  replaced, and tests of counts and budgets would measure the suite's load. The tests of
  contention set the policy in their experiments (tests/campaign/test_contention.py).
"""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest

_TERMINAL = ("COLUMNS", "LINES")


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node) -> None:  # type: ignore[no-untyped-def]  # xdist's hook
    """(controller) what the workers' environment should hold of ``_TERMINAL``."""
    node.workerinput["benchrun_terminal"] = {k: os.environ.get(k) for k in _TERMINAL}
    # the workers inherit the controller's BENCHRUN_CPU_LOCK_DIR; each makes its own
    node.workerinput["benchrun_own_lock_dir"] = bool(_OWN_LOCK_DIR)


#: the CPU lock directory this pytest process made (removed at its end)
_OWN_LOCK_DIR: list[str] = []


def pytest_unconfigure(config: pytest.Config) -> None:
    for path in _OWN_LOCK_DIR:
        shutil.rmtree(path, ignore_errors=True)


def pytest_configure(config: pytest.Config) -> None:
    # each pytest process (each xdist worker) reserves CPUs in a directory of its own, so
    # that the `benchrun run` of one worker's test never waits for, or is refused by, the
    # other worker's (docs/reservation.md); tests of the reservation set their own
    worker = getattr(config, "workerinput", {})
    if "BENCHRUN_CPU_LOCK_DIR" not in os.environ or worker.get("benchrun_own_lock_dir"):
        _OWN_LOCK_DIR.append(tempfile.mkdtemp(prefix="benchrun-cpus-"))
        os.environ["BENCHRUN_CPU_LOCK_DIR"] = _OWN_LOCK_DIR[0]
    os.environ.setdefault("BENCHRUN_CONTENDED", "keep")
    wanted = getattr(config, "workerinput", {}).get("benchrun_terminal")
    for key, value in (wanted or {}).items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


#: seconds of the longest tests or module groups, measured serially (nodeid prefixes)
HEAVY: dict[str, float] = {
    "tests/slurm/test_slurm_cluster.py::test_a_job_that_hits_its_time_limit": 80,
    "tests/slurm/test_slurm_cluster.py::test_a_job_cancelled_mid_campaign_then_resumed": 11,
    "tests/e2e/test_adaptive.py::test_calibration_grows_work_and_per_work_normalises": 36,
    "tests/e2e/test_run.py::test_demo_stops_by_itself_with_every_pair_decided": 33,
    "tests/test_typing.py": 25,
    "tests/fuzz/test_fuzz_experiments.py": 35,
    "tests/fuzz/test_fuzz_imports.py": 22,
    "tests/e2e/test_show_paired.py": 40,
    "tests/report/test_report_paired.py": 34,
    "tests/e2e/test_no_tracebacks.py": 55,
    "tests/store/test_corruption.py": 48,
    "tests/daemon/test_crash_recovery.py": 20,
    "tests/control/test_paired_controller.py": 45,
    "tests/control/test_controller.py": 15,
    "tests/e2e/test_leftovers.py": 15,
    "tests/e2e/test_run.py::test_sigkill_then_resume_stores_every_round_exactly_once": 13,
    "tests/e2e/test_adaptive.py::test_interrupt_then_resume_finishes_without_repeating": 12,
    "tests/report/test_report_chromium.py": 12,
    "tests/report/test_history_page.py": 15,
    "tests/stats/test_hpt.py::test_r_speedup_non_increasing_in_r": 13,
    "tests/analyze/test_analyze_scaling.py": 12,
    "tests/e2e/test_show_hooks.py": 30,
    "tests/e2e/test_sweep_bisect.py": 145,
    "tests/stats/test_speedup.py::test_no_speedup_is_rarely_called_a_speedup": 10,
}


#: modules whose last test checks what the others did to the process (its peak memory)
SAME_PROCESS = ("tests/fuzz/test_fuzz_experiments.py", "tests/fuzz/test_fuzz_imports.py")


def _weight(nodeid: str) -> float:
    return max((s for prefix, s in HEAVY.items() if nodeid.startswith(prefix)), default=0.0)


def _module_fixture(item: pytest.Item) -> bool:
    """The test uses a module-scoped fixture of the suite (not one of pytest's)."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    return any(
        defs and defs[-1].scope == "module" and defs[-1].baseid
        for defs in info.name2fixturedefs.values()
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    groups: dict[str, float] = {}
    for item in items:
        group = item.nodeid.split("::")[0]
        if _module_fixture(item) or group in SAME_PROCESS:
            item.add_marker(pytest.mark.xdist_group(group))
            groups[group] = max(groups.get(group, 0.0), _weight(item.nodeid))
    if not hasattr(config, "workerinput"):  # serial: collection order
        return

    def key(item: pytest.Item) -> float:
        group = item.nodeid.split("::")[0]
        return -(groups[group] if group in groups else _weight(item.nodeid))

    items.sort(key=key)  # stable: the rest keeps its order
