"""What a round of a whole campaign costs: benchrun's loop against a bare loop and hyperfine.

Runs, in one invocation and interleaved over ``--repeats`` repeats so that the machine's
drift hits every method alike:

  bare loop           ``subprocess.run(["true"])`` N times in Python (the floor)
  hyperfine -N        ``hyperfine -N --runs N true`` (when hyperfine is installed)
  benchrun fixed      ``benchrun run`` of a file with ``rounds: N`` and one workload ``true``
  benchrun adaptive   ``benchrun run`` adaptive, 2 and 10 workloads of ``true`` that never
                      satisfy the stopping rule (``ci_rel_width`` 1e-6), ``max_rounds`` N/k

Wall per round of a benchrun campaign is taken from the store: (start of the last round -
start of the first round) / (rounds - 1), so it holds the whole loop (launch, store,
collector, controller, display) and not the start-up, which is reported on its own
(process start to the first round's start). For the adaptive runs the per-round cost is
also given for the first and the last fifth of the rounds: a loop whose analysis grows with
the stored rounds shows it there.

Then one adaptive campaign (2 workloads) runs in this process under cProfile, and the
loop's time is split by phase from the cumulative times of the functions that make each
phase (launch: ``LocalExecutor.launch``; store: ``Store.add_round``; collect:
``collector.collect``; decide: ``Controller.decide``; display: every function of
runner/ui/display.py). cProfile slows Python code more than the child's run, so read the
phase shares, not their absolute values.

Usage: python benchmarks/loop_speed.py [--rounds 2000] [--repeats 3] [--json out.json]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FIXED = """name: {name}
output: {out}
settings: {{rounds: {rounds}, warmup_rounds: 0, pin: auto, seed: 1, min_round_time: 0s}}
workloads:
{workloads}
"""

ADAPTIVE = """name: {name}
output: {out}
settings:
  ci_rel_width: 0.000001
  max_rounds: {rounds}
  max_time: 1h
  warmup_rounds: 0
  min_round_time: 0s
  pin: auto
  seed: 1
workloads:
{workloads}
"""


def _workloads(k: int) -> str:
    return "\n".join(f'  - {{name: t{i}, command: ["true"]}}' for i in range(k))


def bare_loop(n: int) -> float:
    """Seconds per round of a bare ``subprocess.run(["true"])`` loop."""
    t = time.perf_counter()
    for _ in range(n):
        subprocess.run(["true"], check=True)
    return (time.perf_counter() - t) / n


def hyperfine(n: int) -> float:
    """Seconds per round of one ``hyperfine -N --runs n true`` invocation (whole wall)."""
    t = time.perf_counter()
    subprocess.run(
        ["hyperfine", "-N", "--runs", str(n), "--warmup", "0", "--style", "none", "true"],
        check=True,
        capture_output=True,
    )
    return (time.perf_counter() - t) / n


def _starts(db: Path) -> list[float]:
    with sqlite3.connect(db) as conn:
        return [r[0] for r in conn.execute("SELECT started_at FROM round ORDER BY seq")]


def benchrun(text: str, name: str, tmp: Path) -> dict[str, float]:
    """Run ``benchrun run`` on ``text`` (quiet) and read its per-round cost from the store.

    Returns seconds: ``per_round`` over the whole campaign, ``first``/``last`` over its
    first and last fifth of rounds, ``startup`` from process start to the first round's
    start, ``wall`` the whole command.
    """
    exp = tmp / f"{name}.yaml"
    exp.write_text(text)
    t0 = time.time()
    subprocess.run(
        [sys.executable, "-m", "benchrun.runner.cli", "run", str(exp), "-q", "--new"],
        check=True,
        capture_output=True,
    )
    wall = time.time() - t0
    s = _starts(tmp / "out" / name / "benchrun.db")
    n = len(s)
    fifth = max(2, n // 5)
    return {
        "rounds": n,
        "per_round": (s[-1] - s[0]) / (n - 1),
        "first": (s[fifth - 1] - s[0]) / (fifth - 1),
        "last": (s[-1] - s[-fifth]) / (fifth - 1),
        "startup": s[0] - t0,
        "wall": wall,
    }


#: phase -> (module path suffix, function name or None for every function of the module)
PHASES: dict[str, tuple[str, str | None]] = {
    "launch": ("execute/local.py", "launch"),
    "store": ("store/database.py", "add_round"),
    "collect": ("control/collector.py", "collect"),
    "decide": ("control/controller.py", "decide"),
    "display": ("ui/display.py", None),
}


def phases(text: str, tmp: Path) -> dict[str, float]:
    """Seconds per round of each phase of an in-process adaptive campaign under cProfile."""
    from benchrun.runner.cli import main

    exp = tmp / "profiled.yaml"
    exp.write_text(text)
    prof = cProfile.Profile()
    prof.enable()
    main(["run", str(exp), "-q", "--new"])
    prof.disable()
    rounds = len(_starts(tmp / "out" / "profiled" / "benchrun.db"))
    st = pstats.Stats(prof, stream=io.StringIO())
    out: dict[str, float] = {}
    total = 0.0
    for (file, _line, func), (_cc, _nc, _tt, ct, _callers) in st.stats.items():  # type: ignore[attr-defined]
        if func in ("run_campaign",) and file.endswith("campaign/run.py"):
            total = max(total, ct)
        for phase, (suffix, name) in PHASES.items():
            if file.endswith(suffix) and (name is None or func == name):
                if name is None:  # a whole module: own time only, nested calls not doubled
                    out[phase] = out.get(phase, 0.0) + _tt
                else:
                    out[phase] = out.get(phase, 0.0) + ct
    result = {k: v / rounds for k, v in out.items()}
    result["loop total"] = total / rounds
    result["other"] = result["loop total"] - sum(out.values()) / rounds
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=2000, help="rounds of `true` per method")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", help="also write the figures to this file")
    args = ap.parse_args(argv)
    n = args.rounds
    has_hf = shutil.which("hyperfine") is not None
    per: dict[str, list[dict[str, float]]] = {}
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        out = tmp / "out"
        fixed = FIXED.format(name="fixed", out=out, rounds=n, workloads=_workloads(1))
        ad2 = ADAPTIVE.format(name="adaptive2", out=out, rounds=n // 2, workloads=_workloads(2))
        ad10 = ADAPTIVE.format(name="adaptive10", out=out, rounds=n // 10, workloads=_workloads(10))
        for _ in range(args.repeats):
            per.setdefault("bare loop", []).append({"per_round": bare_loop(n)})
            if has_hf:
                per.setdefault("hyperfine -N", []).append({"per_round": hyperfine(n)})
            per.setdefault("benchrun fixed", []).append(benchrun(fixed, "fixed", tmp))
            per.setdefault("benchrun adaptive x2", []).append(benchrun(ad2, "adaptive2", tmp))
            per.setdefault("benchrun adaptive x10", []).append(benchrun(ad10, "adaptive10", tmp))
        prof = phases(
            ADAPTIVE.format(name="profiled", out=out, rounds=n // 4, workloads=_workloads(2)),
            tmp,
        )
    ref_name = "hyperfine -N" if has_hf else "bare loop"
    med = {
        m: {k: statistics.median(r[k] for r in rows) for k in rows[0]} for m, rows in per.items()
    }
    ref = med[ref_name]["per_round"]
    print(
        f"python {sys.version.split()[0]}, CPUs {sorted(os.sched_getaffinity(0))}, {n} rounds of "
        f"`true` per method, medians over {args.repeats} repeats; ratio to {ref_name}"
    )
    print(
        f"{'method':<22} {'ms/round':>9} {'ratio':>6} {'first 1/5':>10} {'last 1/5':>9} {'startup s':>10}"
    )
    for m, row in med.items():
        first = f"{row['first'] * 1e3:10.3f}" if "first" in row else f"{'-':>10}"
        last = f"{row['last'] * 1e3:9.3f}" if "last" in row else f"{'-':>9}"
        start = f"{row['startup']:10.3f}" if "startup" in row else f"{'-':>10}"
        print(
            f"{m:<22} {row['per_round'] * 1e3:9.3f} {row['per_round'] / ref:6.2f} {first} {last} {start}"
        )
    print("\nadaptive x2 under cProfile, ms per round by phase:")
    for k, v in prof.items():
        print(f"  {k:<11} {v * 1e3:8.3f}")
    if args.json:
        Path(args.json).write_text(json.dumps({"medians": med, "phases": prof}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
