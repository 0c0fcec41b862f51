"""Small adaptive campaigns with known truth for the tests of ``show``, the report and the
export of paired comparisons (tests/e2e/test_show_paired.py, tests/report/test_report_paired*.py).

Each workload prints one reading per round: ``MEAN x f(round) x (1 + SD % noise)``, the
noise seeded by the round and a per-workload salt, ``f(r) = 1 + DRIFT sin(2 pi r / 30)``
a level that wanders like a drifting machine. In adaptive mode every active workload gets
one round per pass, so ``{round}`` is the pass for workloads that run in every pass: the
drift of ``a`` and ``b`` is shared by the pass and cancels in their per-pass ratio
(truth: b/a = 1.10), while each one's own series wanders by ±25 %.

- ``paired``: a (100 ms), b (110 ms), both drifting; c (50 ms, no drift) that
  ``compare: [[a, b]]`` compares with nothing.
- ``budget``: a and b 0.3 % apart with 5 % noise, ``comparison: independent`` (Welch),
  ``max_rounds: 40``: ends on the budget with the pair undecided (too close to separate,
  too noisy to show equivalent within 1 %).
- ``alone``: one workload, so no comparison at all.
"""

from __future__ import annotations

import sys
from pathlib import Path

from e2e_util import start_benchrun

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from shared_build import build_once  # noqa: E402

WORKLOAD = """\
import math, random, sys
r, mean, drift, sd, salt = (int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]),
                            float(sys.argv[4]), int(sys.argv[5]))
rng = random.Random(r * 1000 + salt)
f = 1 + drift * math.sin(2 * math.pi * r / 30.0)
print("v=%.6f" % (mean * f * (1 + sd / 100 * rng.gauss(0, 1))))
"""

SETTINGS = """\
settings:
  pin: none
  warmup_rounds: 0
  min_round_time: 0
  max_time: 3m
  seed: 3
"""

#: the truth of the paired campaign
TRUE_RATIO = 1.10


def _workload(name: str, mean: float, drift: float, sd: float, salt: int) -> str:
    py = sys.executable
    return f"""  - name: {name}
    command: ["{py}", "workload.py", "{{round}}", "{mean}", "{drift}", "{sd}", "{salt}"]
    readings: {{pattern: 'v=([0-9.]+)', unit: ms}}
"""


EXPERIMENTS = {
    "paired": SETTINGS
    + "  max_rounds: 300\n  ci_rel_width: 0.05\nworkloads:\n"
    + _workload("a", 100.0, 0.25, 1.0, 1)
    + _workload("b", 110.0, 0.25, 1.0, 2)
    + _workload("c", 50.0, 0.0, 2.0, 3)
    + "compare:\n  - [a, b]\n",
    "budget": SETTINGS
    + "  max_rounds: 40\n  comparison: independent\nworkloads:\n"
    + _workload("a", 100.0, 0.0, 5.0, 1)
    + _workload("b", 100.3, 0.0, 5.0, 2),
    "alone": SETTINGS + "  ci_rel_width: 0.05\nworkloads:\n" + _workload("c", 50.0, 0.0, 2.0, 3),
}


def run_campaigns(root: Path, names: tuple[str, ...] = tuple(EXPERIMENTS)) -> dict[str, Path]:
    """The named campaigns, run side by side once per test run (tests/shared_build.py: the
    show, report and export tests of every xdist worker read the same campaigns); their
    campaign directories. What ``benchrun run`` printed is in ``DIR/NAME.stdout`` beside
    ``DIR/out``; it exits 0 on a budget stop (without ``--fail-on-unmet``). ``root``: a
    directory of this run's ``tmp_path_factory``."""
    built = build_once(root, "paired-" + "-".join(names), lambda d: _run(d, names))
    return {name: built / "out" / name for name in names}


def _run(root: Path, names: tuple[str, ...]) -> None:
    (root / "workload.py").write_text(WORKLOAD)
    procs = {}
    for name in names:
        path = root / f"{name}.yaml"
        path.write_text(f"name: {name}\noutput: {root / 'out'}\n" + EXPERIMENTS[name])
        procs[name] = start_benchrun("run", str(path), "-q")
    for name, proc in procs.items():
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, f"{name}: {err}{out}"
        (root / f"{name}.stdout").write_text(out)
