"""Fixtures of the report/compare/export tests: small real campaigns, run once per session.

Workloads print seeded readings (``random.seed`` from the round number plus a per-campaign
offset), so the truth is known: ``a`` is 100 ms, ``b`` is 200 ms in "old" and 220 ms
(10 % slower) in "new", ``c`` is 50 ms on both sides; each reading has 1 % Gaussian noise.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "e2e"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from e2e_util import start_benchrun, write_experiment  # noqa: E402
from shared_build import build_once  # noqa: E402

READINGS = 30  # per round
ROUNDS = 8


def _workload(py: str, name: str, mean: float, offset: int) -> str:
    code = (
        f"import random; random.seed({{round}} * 7919 + {offset}); "
        f"[print('time=%f' % ({mean} * (1 + 0.01 * random.gauss(0, 1)))) "
        f"for _ in range({READINGS})]"
    )
    return f"""
  - name: {name}
    command: ["{py}", "-c", "{code}"]
    metric: readings
    readings: {{pattern: 'time=([0-9.]+)', unit: ms, direction: lower_is_better}}"""


def start_campaign(
    directory: Path, name: str, means: dict[str, float], offset: int, rounds: int = ROUNDS
):
    """Start ``benchrun run`` of a fixed-mode campaign of seeded-readings workloads.

    The two campaigns run at once on two CPUs beside the other tests, so their rounds wait
    for CPUs; their readings are seeded, not timed, so no round is flagged contended
    (``contended_threshold: 1``) and the comparisons between them stay comparable."""
    py = sys.executable
    body = "".join(_workload(py, n, m, offset + i) for i, (n, m) in enumerate(means.items()))
    exp = write_experiment(
        directory,
        f"""\
name: {name}
output: {directory}
settings: {{rounds: {rounds}, warmup_rounds: 1, adaptive: false, seed: 5, pin: none,
            contended_threshold: 1}}
workloads:{body}
""",
        name=f"{name}.yaml",
    )
    return start_benchrun("run", str(exp), "-q")


@pytest.fixture(scope="session")
def campaigns(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two campaigns: ``old`` and ``new`` where only ``b`` became 10 % slower (run side by
    side: they only need to be correct, not precise, and it halves the wait); built once
    per test run, whichever xdist worker asks first (tests/shared_build.py)."""
    root = build_once(tmp_path_factory.mktemp("campaigns"), "report-campaigns", _run_both)
    return {name: root / name for name in ("old", "new")}


def _run_both(root: Path) -> None:
    procs = {
        "old": start_campaign(root, "old", {"a": 100.0, "b": 200.0, "c": 50.0}, 1000),
        "new": start_campaign(root, "new", {"a": 100.0, "b": 220.0, "c": 50.0}, 2000),
    }
    for proc in procs.values():
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
