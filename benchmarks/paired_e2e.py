"""How often real campaigns on this machine end decided, and how fast (issue 14's proof).

Runs, REPEATS times each, with real processes through ``benchrun run``:

- ``demo``: the README's demo (configs/demo.yaml, its own 50 s budget);
- ``twins``: two identical commands (``sum(range(3000000))``); should end "equivalent";
- ``two-percent``: ``sum(range(3000000))`` vs ``sum(range(3060000))`` (2 % more work);
  should end "separated" with the larger one slower.

and prints, per experiment and comparison mode, how many runs met every condition, the
verdicts, the ratio and its CI, passes and wall time; for the two paired workloads of
``twins`` and ``two-percent`` also the passes used against the fixed-sample oracle computed
from the run's own per-pass log ratios d (n* = ((z_{1-α/2} + z_{0.8})·sd(d)/mean(d))², α
0.01, over the passes both ran uncontended and steady; issue 28). Example::

    python benchmarks/paired_e2e.py --repeats 10
    python benchmarks/paired_e2e.py --only two-percent --modes paired independent --repeats 3

Machines here are noisy and have 2 cores: the figures describe this machine on this day;
run them in one invocation when comparing modes.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

PAIR = """\
name: {name}
output: results
settings:
  ci_rel_width: 0.01
  max_time: {max_time}
  max_rounds: 2000
  min_round_time: 0
  comparison: {mode}
workloads:
  - name: a
    command: ["python3", "-c", "sum(range(3000000))"]
  - name: b
    command: ["python3", "-c", "sum(range({n_b}))"]
"""


def _experiments(tmp: Path, max_time: str, mode: str) -> dict[str, Path]:
    out = {"demo": REPO / "configs" / "demo.yaml"}
    for name, n_b in (("twins", 3000000), ("two-percent", 3060000)):
        path = tmp / f"{name}-{mode}.yaml"
        path.write_text(PAIR.format(name=name, max_time=max_time, mode=mode, n_b=n_b))
        out[name] = path
    return out


def _one(path: Path, out: Path, mode: str, extra: list[str] | None = None) -> dict[str, object]:
    t0 = time.monotonic()
    cmd = [
        sys.executable,
        "-m",
        "benchrun.runner.cli",
        "run",
        str(path),
        "-o",
        str(out),
        "-q",
        "--new",
    ]
    cmd += ["--set", f"comparison={mode}"]
    for kv in extra or []:
        cmd += ["--set", kv]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO)
    wall = time.monotonic() - t0
    name = path.stem if path.parent != REPO / "configs" else "demo"
    name = "demo" if name == "demo" else name.rsplit("-", 1)[0]
    db = out / name / "benchrun.db"
    con = sqlite3.connect(db)
    (data,) = con.execute(
        "SELECT data_json FROM event WHERE kind = 'verdicts' ORDER BY id DESC LIMIT 1"
    ).fetchone()
    # the passes at which each pair's verdict was declared (a pair at its own looks; the
    # stop can come later, when the ratio CI must still narrow to ci_rel_width)
    declared = [
        json.loads(row[0]).get("passes")
        for row in con.execute(
            "SELECT data_json FROM event WHERE kind = 'pair-verdict' ORDER BY id"
        )
    ]
    con.close()
    doc = json.loads(data)
    pairs = [
        {
            k: p.get(k)
            for k in ("a", "b", "verdict", "test", "ratio", "ratio_low", "ratio_high", "passes")
        }
        for p in doc["pairs"]
    ]
    return {
        "rc": proc.returncode,
        "met": bool(doc.get("conditions_met")),
        "wall_s": wall,
        "pairs": pairs,
        "reason": doc.get("reason", "")[:160],
        "oracle": _oracle(db) if name != "demo" else None,
        "verdict_passes": declared[0] if declared else None,
    }


def _oracle(db: Path, alpha: float = 0.01, power: float = 0.8) -> float | None:
    """n* of the fixed-sample two-sided test from the run's own d = ln b - ln a (passes
    where both workloads have a steady, ok, uncontended round)."""
    from statistics import NormalDist

    con = sqlite3.connect(db)
    rows = con.execute(
        "SELECT w.name, r.pass, r.wall_ns FROM round r JOIN workload w ON w.id = r.workload_id "
        "WHERE r.status = 'ok' AND r.warmup = 0 AND instr(r.flags, 'contended') = 0"
    ).fetchall()
    con.close()
    by: dict[int, dict[str, int]] = {}
    for name, p, wall in rows:
        by.setdefault(p, {})[name] = wall
    import math

    d = [math.log(v["b"] / v["a"]) for v in by.values() if "a" in v and "b" in v]
    if len(d) < 3 or statistics.mean(d) == 0:
        return None
    z = NormalDist().inv_cdf
    return ((z(1 - alpha / 2) + z(power)) * statistics.stdev(d) / statistics.mean(d)) ** 2


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--only", nargs="*", default=["demo", "twins", "two-percent"])
    ap.add_argument("--modes", nargs="*", default=["paired"])
    ap.add_argument("--max-time", default="3m", help="budget of the twins and 2 %% pair")
    ap.add_argument("--json", metavar="FILE", help="also write every run as JSON")
    ap.add_argument(
        "--set",
        dest="sets",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a setting for every run (repeatable), e.g. ci_rel_width=null",
    )
    args = ap.parse_args(argv)
    runs: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for rep in range(args.repeats):
            for mode in args.modes:
                exps = _experiments(tmp, args.max_time, mode)
                for name in args.only:
                    r = _one(exps[name], tmp / f"out-{rep}-{mode}", mode, args.sets)
                    r.update(experiment=name, mode=mode, repeat=rep)
                    runs.append(r)
                    verdicts = ", ".join(
                        f"{p['a']}~{p['b']} {p['verdict']} {p['test']} "
                        f"{p['ratio'] or float('nan'):.4f} "
                        f"[{p['ratio_low'] or float('nan'):.4f}, {p['ratio_high'] or float('nan'):.4f}] "
                        f"{p['passes']} passes"
                        for p in r["pairs"]  # type: ignore[attr-defined]
                    )
                    oracle = r.get("oracle")
                    passes = r["pairs"][0]["passes"] if r["pairs"] else None  # type: ignore[index]
                    at = r.get("verdict_passes")
                    vs = (
                        f"; oracle {oracle:.0f} passes, used/oracle {passes / oracle:.2f}"
                        if isinstance(oracle, float) and passes
                        else ""
                    )
                    if isinstance(oracle, float) and isinstance(at, int):
                        vs += f"; verdict at {at} passes, verdict/oracle {at / oracle:.2f}"
                    print(
                        f"{name:12s} {mode:11s} #{rep}: met={r['met']} {r['wall_s']:.1f} s: "
                        f"{verdicts}{vs}",
                        flush=True,
                    )
    print("\n| experiment | mode | runs | all met | decided as expected | median wall s (range) |")
    print("|---|---|---|---|---|---|")
    for name in args.only:
        for mode in args.modes:
            rs = [r for r in runs if r["experiment"] == name and r["mode"] == mode]
            if not rs:
                continue
            met = sum(bool(r["met"]) for r in rs)
            walls = [float(r["wall_s"]) for r in rs]  # type: ignore[arg-type]

            def expected(r: dict[str, object], name: str = name) -> bool:
                pairs = r["pairs"]
                assert isinstance(pairs, list)
                if name == "twins":
                    return [p["verdict"] for p in pairs] == ["equivalent"]
                if name == "two-percent":
                    return [(p["a"], p["b"], p["verdict"]) for p in pairs] == [
                        ("a", "b", "separated")
                    ]
                return all(p["verdict"] in ("separated", "equivalent") for p in pairs)

            ok = sum(expected(r) for r in rs)
            ratios = [
                float(r["verdict_passes"]) / float(r["oracle"])  # type: ignore[arg-type]
                for r in rs
                if isinstance(r.get("oracle"), float) and isinstance(r.get("verdict_passes"), int)
            ]
            if ratios:
                print(
                    f"{name} {mode}: verdict passes / oracle median {statistics.median(ratios):.2f} "
                    f"({min(ratios):.2f}-{max(ratios):.2f}) over {len(ratios)} runs"
                )
            print(
                f"| {name} | {mode} | {len(rs)} | {met} | {ok} | {statistics.median(walls):.1f} "
                f"({min(walls):.1f}-{max(walls):.1f}) |"
            )
    if args.json:
        Path(args.json).write_text(json.dumps(runs, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
