"""What a round of a whole campaign costs: benchrun's loop against a bare loop and hyperfine.

Runs, in one invocation and interleaved over ``--repeats`` repeats so that the machine's
drift hits every method alike:

  bare loop           ``subprocess.run(["true"])`` N times in Python (the floor)
  hyperfine -N        ``hyperfine -N --runs N true`` (when hyperfine is installed)
  benchrun fixed      ``benchrun run`` of a file with ``rounds: N`` and one workload ``true``
                      (``pin: auto``, as every benchrun method here; and once with
                      ``pin: none``, which like hyperfine and the bare loop pins nothing)
  benchrun adaptive   ``benchrun run`` adaptive, 2 and 10 workloads of ``true`` that never
                      satisfy the stopping rule (``ci_rel_width`` 1e-6), ``max_rounds`` N/k

Each benchrun campaign runs in a fresh directory. Wall per round of a benchrun campaign is
taken from the store: (start of the last round - start of the first round) / (rounds - 1),
so it holds the whole loop (launch, store, collector, controller, display) and not the
start-up, which is reported on its own (process start to the first round's start). For
every campaign the per-round cost is also given for the first and the last fifth of the
rounds: a loop whose analysis grows with the stored rounds shows it there.

``--before DIR`` runs every benchrun method a second time with ``PYTHONPATH=DIR``, where
``DIR/benchrun/runner`` and ``DIR/benchrun/stats`` hold another version of the code (e.g.
the commit before a change, from ``git archive``), interleaved with the current code, so
one invocation gives the before/after table.

Then one fixed campaign (N rounds) and one adaptive campaign (2 workloads, N/2 rounds each)
run in a child process under cProfile, and the loop's time is split by phase from the
cumulative times of disjoint functions (launch: ``LocalExecutor.launch``; store:
``Store.add_round`` and ``Store.commit_group``, the group commit; collect: the adaptive loop's ``stats`` and ``pass_series``; decide:
``Controller.decide``; status: ``write_status``; display: every function of
runner/ui/display.py, own time). cProfile slows Python code more than the child's run, so
read the phase shares, not their absolute values.

``--timers R`` also runs R fixed campaigns (N rounds of ``true``) per version in a child
process with a few functions of the loop wrapped in ``perf_counter_ns`` timers (:data:`TIMERS`:
the spawn and its hand-off to the pinned thread, ``Popen``, the watch, the in-flight record,
the store), about 0.2 us per call, and prints microseconds per round in each: close to
what an unprofiled run spends there.

``--readings N`` (0 to skip) checks that the change does not shift what a round measures:
fixed campaigns of N rounds of ``true`` and of ``python3 -c pass`` (current code, and the
``--before`` code when given, interleaved), and per campaign the median, the interquartile
range and the 10th-90th percentile range of the stored wall times; medians over repeats.

Usage: python benchmarks/loop_speed.py [--rounds 2000] [--repeats 3] [--before DIR]
       [--readings 300] [--timers 0] [--no-profile] [--json out.json]
"""

from __future__ import annotations

import argparse
import contextlib
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
from typing import Any

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


def _workloads(k: int, command: str = '["true"]') -> str:
    return "\n".join(f"  - {{name: t{i}, command: {command}}}" for i in range(k))


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


def _rounds(db: Path) -> list[tuple[float, int]]:
    """(started_at, wall_ns) of the newest campaign's rounds, in launch order."""
    with contextlib.closing(sqlite3.connect(db)) as conn:
        (cid,) = conn.execute("SELECT max(id) FROM campaign").fetchone()
        return conn.execute(
            "SELECT started_at, wall_ns FROM round WHERE campaign_id = ? ORDER BY seq", (cid,)
        ).fetchall()


def _env(src: str | None) -> dict[str, str]:
    env = dict(os.environ)
    if src:
        env["PYTHONPATH"] = src
    return env


def run_benchrun(text: str, name: str, tmp: Path, src: str | None) -> list[tuple[float, int]]:
    """Run ``benchrun run`` on ``text`` (quiet, fresh directory) with the code in ``src``
    (None: the current code); returns the rounds and, first, (process start, 0)."""
    exp = tmp / f"{name}.yaml"
    exp.write_text(text)
    shutil.rmtree(tmp / "out" / name, ignore_errors=True)
    t0 = time.time()
    subprocess.run(
        [sys.executable, "-m", "benchrun.runner.cli", "run", str(exp), "-q", "--new"],
        check=True,
        capture_output=True,
        env=_env(src),
        cwd=tmp,
    )
    return [(t0, 0), *_rounds(tmp / "out" / name / "benchrun.db")]


def loop_figures(rows: list[tuple[float, int]]) -> dict[str, float]:
    """Seconds: ``per_round`` over the whole campaign, ``first``/``last`` over its first and
    last fifth of rounds, ``startup`` from process start to the first round's start."""
    t0 = rows[0][0]
    s = [r[0] for r in rows[1:]]
    n = len(s)
    fifth = max(2, n // 5)
    return {
        "rounds": n,
        "per_round": (s[-1] - s[0]) / (n - 1),
        "first": (s[fifth - 1] - s[0]) / (fifth - 1),
        "last": (s[-1] - s[-fifth]) / (fifth - 1),
        "startup": s[0] - t0,
    }


def reading_figures(rows: list[tuple[float, int]]) -> dict[str, float]:
    """Milliseconds: median, interquartile range, 10-90 % range of the stored wall times."""
    walls = sorted(r[1] / 1e6 for r in rows[1:])
    q = statistics.quantiles(walls, n=20)  # 5 %, 10 %, ..., 95 %
    return {
        "median": statistics.median(walls),
        "iqr": q[14] - q[4],
        "p10_p90": q[17] - q[1],
    }


#: phase -> (module path suffix, function name or None for every function of the module)
PHASES: dict[str, tuple[str, str | None]] = {
    "launch": ("execute/local.py", "launch"),
    "store": ("store/database.py", "add_round|commit_group"),
    "collect": ("campaign/adaptive.py", "stats|pass_series"),
    "decide": ("control/controller.py", "decide"),
    "status": ("campaign/adaptive.py", "write_status"),
    "display": ("ui/display.py", None),
}


def profile_one(exp: str) -> dict[str, float]:
    """Seconds per round of each phase of the campaign ``exp`` run in this process."""
    from benchrun.runner.cli import main

    prof = cProfile.Profile()
    with contextlib.redirect_stdout(io.StringIO()):
        prof.enable()
        main(["run", exp, "-q", "--new"])
        prof.disable()
    text = Path(exp).read_text()
    name = text.split("name: ", 1)[1].split("\n", 1)[0]
    out_dir = text.split("output: ", 1)[1].split("\n", 1)[0]
    rounds = len(_rounds(Path(out_dir) / name / "benchrun.db"))
    st = pstats.Stats(prof, stream=io.StringIO())
    out = dict.fromkeys(PHASES, 0.0)
    total = 0.0
    for (file, _line, func), (_cc, _nc, tt, ct, _callers) in st.stats.items():  # type: ignore[attr-defined]
        if func == "run_campaign" and file.endswith("campaign/run.py"):
            total = max(total, ct)
        for phase, (suffix, names) in PHASES.items():
            if not file.endswith(suffix):
                continue
            if names is None:  # a whole module: own time only, nested calls not doubled
                out[phase] += tt
            elif func in names.split("|"):
                out[phase] += ct
    result = {k: v / rounds for k, v in out.items()}
    result["loop total"] = total / rounds
    result["other"] = result["loop total"] - sum(out.values()) / rounds
    return result


#: (module, attribute path, label) of the functions the low-overhead timers wrap; nested
#: ones are indented under the function that calls them
TIMERS: tuple[tuple[str, str, str], ...] = (
    ("benchrun.runner.campaign.session", "RoundLauncher.launch", "round (launch + store)"),
    ("benchrun.runner.execute.local", "LocalExecutor.launch", "  executor.launch"),
    ("benchrun.runner.execute.local", "LocalExecutor._spawn", "    spawn (hand-off + Popen)"),
    ("subprocess", "Popen.__init__", "      Popen"),
    ("benchrun.runner.execute.local", "LocalExecutor._watch", "    watch (child runs, reap)"),
    ("benchrun.runner.execute.local", "record_inflight", "    in-flight record"),
    ("benchrun.runner.execute.local", "clear_inflight", "    in-flight record aside"),
    ("benchrun.runner.execute.containment", "Containment.end_round", "    cgroup check"),
    ("benchrun.runner.campaign.session", "RoundLauncher._store", "  store + report"),
    ("benchrun.runner.store.database", "Store.add_round", "    add_round"),
    ("benchrun.runner.store.database", "Store.commit_group", "    commit_group"),
)


def timers_one(exp: str) -> dict[str, float]:
    """Seconds per round spent in each function of :data:`TIMERS` during the campaign
    ``exp`` run in this process: each wrapped with two ``perf_counter_ns`` calls (about
    0.2 us a call), so unlike cProfile the figures are close to an unprofiled run's."""
    import importlib

    from benchrun.runner.cli import main

    spent: dict[str, int] = dict.fromkeys((t[2] for t in TIMERS), 0)

    def wrap(owner: Any, attr: str, label: str) -> None:
        inner = getattr(owner, attr)

        def timed(*args: Any, **kwargs: Any) -> Any:
            t = time.perf_counter_ns()
            try:
                return inner(*args, **kwargs)
            finally:
                spent[label] += time.perf_counter_ns() - t

        setattr(owner, attr, timed)

    for module, path, label in TIMERS:
        owner: Any = importlib.import_module(module)
        *parents, attr = path.split(".")
        for p in parents:
            owner = getattr(owner, p)
        if hasattr(owner, attr):
            wrap(owner, attr, label)
    t0 = time.perf_counter_ns()
    with contextlib.redirect_stdout(io.StringIO()):
        main(["run", exp, "-q", "--new"])
    total = time.perf_counter_ns() - t0
    text = Path(exp).read_text()
    name = text.split("name: ", 1)[1].split("\n", 1)[0]
    out_dir = text.split("output: ", 1)[1].split("\n", 1)[0]
    rounds = len(_rounds(Path(out_dir) / name / "benchrun.db"))
    out = {k: v / 1e9 / rounds for k, v in spent.items()}
    out["whole run / rounds"] = total / 1e9 / rounds
    return out


def phases(
    text: str, name: str, tmp: Path, src: str | None, how: str = "--profile-one"
) -> dict[str, float]:
    """:func:`profile_one` (or with ``how="--timers-one"`` :func:`timers_one`) in a child
    process running the code in ``src``."""
    exp = tmp / f"{name}.yaml"
    exp.write_text(text)
    shutil.rmtree(tmp / "out" / name, ignore_errors=True)
    done = subprocess.run(
        [sys.executable, __file__, how, str(exp)],
        check=True,
        capture_output=True,
        text=True,
        env=_env(src),
        cwd=tmp,
    )
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def _median_rows(rows: list[dict[str, float]]) -> dict[str, float]:
    return {k: statistics.median(r[k] for r in rows) for k in rows[0]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=2000, help="rounds of `true` per method")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--before", metavar="DIR", help="PYTHONPATH of the code to compare with")
    ap.add_argument(
        "--readings", type=int, default=300, help="rounds per readings-shift campaign (0: skip)"
    )
    ap.add_argument("--no-profile", action="store_true", help="skip the cProfile phase split")
    ap.add_argument("--json", help="also write the figures to this file")
    ap.add_argument(
        "--timers",
        type=int,
        default=0,
        metavar="R",
        help="also time the loop's functions in R fixed campaigns per version (low overhead)",
    )
    ap.add_argument("--profile-one", help=argparse.SUPPRESS)
    ap.add_argument("--timers-one", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.profile_one:
        print(json.dumps(profile_one(args.profile_one)))
        return 0
    if args.timers_one:
        print(json.dumps(timers_one(args.timers_one)))
        return 0
    n = args.rounds
    has_hf = shutil.which("hyperfine") is not None
    versions: list[tuple[str, str | None]] = [("", None)]
    if args.before:
        versions.insert(0, (" (before)", str(Path(args.before).resolve())))
    per: dict[str, list[dict[str, float]]] = {}
    shift: dict[str, list[dict[str, float]]] = {}
    prof: dict[str, dict[str, float]] = {}
    timed: dict[str, list[dict[str, float]]] = {}
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        out = tmp / "out"
        fixed = FIXED.format(name="fixed", out=out, rounds=n, workloads=_workloads(1))
        unpinned = FIXED.format(
            name="unpinned", out=out, rounds=n, workloads=_workloads(1)
        ).replace("pin: auto", "pin: none")
        ad2 = ADAPTIVE.format(name="adaptive2", out=out, rounds=n // 2, workloads=_workloads(2))
        ad10 = ADAPTIVE.format(name="adaptive10", out=out, rounds=n // 10, workloads=_workloads(10))
        rd_true = FIXED.format(
            name="rd_true", out=out, rounds=args.readings, workloads=_workloads(1)
        )
        rd_py = FIXED.format(
            name="rd_py",
            out=out,
            rounds=args.readings,
            workloads=_workloads(1, '["python3", "-c", "pass"]'),
        )
        for _ in range(args.repeats):
            per.setdefault("bare loop", []).append({"per_round": bare_loop(n)})
            if has_hf:
                per.setdefault("hyperfine -N", []).append({"per_round": hyperfine(n)})
            for label, text, name in (
                ("fixed", fixed, "fixed"),
                ("fixed pin: none", unpinned, "unpinned"),
                ("adaptive x2", ad2, "adaptive2"),
                ("adaptive x10", ad10, "adaptive10"),
            ):
                for tag, src in versions:
                    rows = run_benchrun(text, name, tmp, src)
                    per.setdefault(f"benchrun {label}{tag}", []).append(loop_figures(rows))
            if args.readings:
                for label, text, name in (
                    ("true", rd_true, "rd_true"),
                    ("python3 -c pass", rd_py, "rd_py"),
                ):
                    for tag, src in versions:
                        rows = run_benchrun(text, name, tmp, src)
                        shift.setdefault(f"{label}{tag}", []).append(reading_figures(rows))
        tfixed = FIXED.format(name="tfixed", out=out, rounds=n, workloads=_workloads(1))
        for _ in range(args.timers):
            for tag, src in versions:
                row = phases(tfixed, "tfixed", tmp, src, "--timers-one")
                timed.setdefault(f"fixed{tag}", []).append(row)
        if not args.no_profile:
            pfixed = FIXED.format(name="pfixed", out=out, rounds=n, workloads=_workloads(1))
            pad2 = ADAPTIVE.format(name="pad2", out=out, rounds=n // 2, workloads=_workloads(2))
            for tag, src in versions:
                prof[f"fixed{tag}"] = phases(pfixed, "pfixed", tmp, src)
                prof[f"adaptive x2{tag}"] = phases(pad2, "pad2", tmp, src)
    ref_name = "hyperfine -N" if has_hf else "bare loop"
    med = {m: _median_rows(rows) for m, rows in per.items()}
    ref = med[ref_name]["per_round"] if med else 1.0  # --repeats 0: no table of methods
    print(
        f"python {sys.version.split()[0]}, CPUs {sorted(os.sched_getaffinity(0))}, {n} rounds of "
        f"`true` per method, medians over {args.repeats} repeats; ratio to {ref_name}; "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    if med:
        print(
            f"{'method':<32} {'ms/round':>9} {'ratio':>6} {'first 1/5':>10} {'last 1/5':>9} "
            f"{'startup s':>10}"
        )
    for m, row in med.items():
        first = f"{row['first'] * 1e3:10.3f}" if "first" in row else f"{'-':>10}"
        last = f"{row['last'] * 1e3:9.3f}" if "last" in row else f"{'-':>9}"
        start = f"{row['startup']:10.3f}" if "startup" in row else f"{'-':>10}"
        print(
            f"{m:<32} {row['per_round'] * 1e3:9.3f} {row['per_round'] / ref:6.2f} {first} "
            f"{last} {start}"
        )
    shift_med = {m: _median_rows(rows) for m, rows in shift.items()}
    if shift_med:
        print(f"\nstored wall times, {args.readings} rounds per campaign (fixed, pin: auto), ms:")
        print(f"{'workload':<26} {'median':>9} {'IQR':>8} {'p10-p90':>8}")
        for m, row in shift_med.items():
            print(f"{m:<26} {row['median']:9.4f} {row['iqr']:8.4f} {row['p10_p90']:8.4f}")
    if prof:
        names = list(prof)
        print("\nunder cProfile, ms per round by phase (shares matter, not absolute values):")
        print(f"{'phase':<11}" + "".join(f" {k:>22}" for k in names))
        for phase in next(iter(prof.values())):
            print(f"{phase:<11}" + "".join(f" {prof[k][phase] * 1e3:22.3f}" for k in names))
    if timed:
        tmed = {k: _median_rows(rows) for k, rows in timed.items()}
        print(
            f"\nfixed mode, {n} rounds of `true`, us per round in each function (timers "
            f"around them, medians over {args.timers} campaigns; nested ones indented):"
        )
        print(f"{'function':<30}" + "".join(f" {k:>16}" for k in tmed))
        for label in next(iter(tmed.values())):
            print(f"{label:<30}" + "".join(f" {tmed[k].get(label, 0.0) * 1e6:16.1f}" for k in tmed))
    if args.json:
        doc: dict[str, Any] = {"medians": med, "readings": shift_med, "phases": prof}
        if timed:
            doc["timers"] = {k: _median_rows(rows) for k, rows in timed.items()}
        Path(args.json).write_text(json.dumps(doc, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
