"""Duet against interleaved passes on this machine, in one invocation (issue 20's proof).

Runs real processes through ``benchrun run`` (fixed mode, ``--passes`` passes each):

- ``duet``: ``sum(range(N))`` against ``sum(range(1.02 N))``, ``settings.duet: true``;
- ``interleaved``: the same pair, one round after the other in each pass (the default);

then, from the stored rounds, the 95 % CI of the ratio b/a of wall times by three
analyses: ``paired`` (t interval of the per-pass log ratios: what a duet and an
interleaved pass each give), and ``independent`` (Welch on the two workloads' log times,
the pairing ignored; interleaved data). Each CI's relative width is also given per
minute of measurement: width x sqrt(measuring minutes), the width a campaign measuring
for one minute would reach (widths shrink as 1/sqrt(time)). Measuring time is from the
first round's start to the last round's end.

The duet campaigns run a solo pass every ``--solo-every`` passes (both sides alone, one
after the other: docs/duet.md "Asymmetric interference"), so their minutes include those
passes; the duet pair's asymmetry estimate (ratio in duet over ratio alone) is printed
with its CI and each side's slowdown in a duet.

Then ``--twins`` duet campaigns of identical commands (``sum(range(N))`` against itself):
how many paired CIs exclude 1 (false separations; about 5 % of them are expected at 95 %),
and how many asymmetry checks flag the twins (the same rate is expected).

    python benchmarks/duet.py                      # about 2 minutes on a 2-core VM
    python benchmarks/duet.py --passes 40 --twins 3 --n 1000000
    python benchmarks/duet.py --passes 12 --twins 1 --twin-passes 12 --n 200000  # smoke

The figures describe this machine on this day; on a 2-CPU machine the runner shares a
CPU with one side of every duet (docs/duet.md).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

from scipy import stats as sps

EXPERIMENT = """\
name: {name}
output: results
settings:
  adaptive: false
  rounds: {passes}
  warmup_rounds: 2
  duet: {duet}
workloads:
  - name: a
    command: [{python}, -c, "sum(range({na}))"]
  - name: b
    command: [{python}, -c, "sum(range({nb}))"]
"""


def run_campaign(
    where: Path, name: str, passes: int, duet: bool, na: int, nb: int, solo_every: int = 5
) -> list[tuple[int, str, float, float]]:
    """Run one campaign; its steady ok rounds as (pass, workload, started_at, wall s)."""
    path = where / f"{name}.yaml"
    text = EXPERIMENT.format(
        name=name,
        passes=passes,
        duet=f"{{solo_every: {solo_every}}}" if duet else "false",
        python=sys.executable,
        na=na,
        nb=nb,
    )
    path.write_text(text)
    done = subprocess.run(
        [sys.executable, "-m", "benchrun.runner.cli", "run", str(path), "--quiet", "--new"],
        cwd=where,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise SystemExit(f"{name}: benchrun run failed:\n{done.stderr}")
    db = sqlite3.connect(where / "results" / name / "benchrun.db")
    rows = db.execute(
        "SELECT r.pass, w.name, r.started_at, r.wall_ns / 1e9 FROM round r "
        "JOIN workload w ON w.id = r.workload_id "
        "WHERE r.status = 'ok' AND r.warmup = 0 ORDER BY r.seq"
    ).fetchall()
    db.close()
    return [(int(p), str(w), float(s), float(t)) for p, w, s, t in rows]


def asymmetry(where: Path, name: str) -> dict[str, object] | None:
    """The duet campaign's asymmetry check (its ``duet-asymmetry`` event; docs/duet.md)."""
    db = sqlite3.connect(where / "results" / name / "benchrun.db")
    row = db.execute(
        "SELECT data_json FROM event WHERE kind = 'duet-asymmetry' ORDER BY id DESC LIMIT 1"
    ).fetchone()
    db.close()
    data = json.loads(row[0]) if row and row[0] else None
    return data if data and data.get("computed") else None


def asymmetry_text(check: dict[str, object] | None) -> str:
    if check is None:
        return "no asymmetry check (fewer than two solo passes)"
    return (
        f"asymmetry {check['asymmetry']:.4f} [{check['low']:.4f}, {check['high']:.4f}] "
        f"({check['n_solo']} solo passes; alone b/a {check['solo_ratio']:.4f}; slowdown in "
        f"a duet: a {check['slowdown_a']:.3f}x, b {check['slowdown_b']:.3f}x)"
        + (" ASYMMETRIC" if check["flagged"] else "")
    )


def measuring_minutes(rounds: list[tuple[int, str, float, float]]) -> float:
    start = min(r[2] for r in rounds)
    end = max(r[2] + r[3] for r in rounds)
    return (end - start) / 60.0


def paired_ci(rounds: list[tuple[int, str, float, float]]) -> tuple[float, float, float, int]:
    """Ratio b/a and its 95 % CI from the per-pass log ratios (t interval); passes used."""
    by_pass: dict[int, dict[str, float]] = {}
    for p, w, _, t in rounds:
        by_pass.setdefault(p, {})[w] = t
    d = [math.log(v["b"] / v["a"]) for v in by_pass.values() if "a" in v and "b" in v]
    n = len(d)
    mean = sum(d) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in d) / (n - 1))
    half = float(sps.t.ppf(0.975, n - 1)) * sd / math.sqrt(n)
    return math.exp(mean), math.exp(mean - half), math.exp(mean + half), n


def independent_ci(
    rounds: list[tuple[int, str, float, float]],
) -> tuple[float, float, float, int]:
    """Ratio b/a and its 95 % CI by Welch on the log times, the pairing ignored."""
    a = [math.log(t) for _, w, _, t in rounds if w == "a"]
    b = [math.log(t) for _, w, _, t in rounds if w == "b"]
    ma, mb = sum(a) / len(a), sum(b) / len(b)
    va = sum((x - ma) ** 2 for x in a) / (len(a) - 1) / len(a)
    vb = sum((x - mb) ** 2 for x in b) / (len(b) - 1) / len(b)
    df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    half = float(sps.t.ppf(0.975, df)) * math.sqrt(va + vb)
    diff = mb - ma
    return math.exp(diff), math.exp(diff - half), math.exp(diff + half), min(len(a), len(b))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2_000_000, help="work of a: sum(range(N))")
    parser.add_argument("--passes", type=int, default=60, help="steady passes per campaign")
    parser.add_argument("--twins", type=int, default=5, help="duet campaigns of A against A")
    parser.add_argument("--twin-passes", type=int, default=30, help="passes per twin campaign")
    parser.add_argument(
        "--solo-every",
        type=int,
        default=5,
        help="duet solo_every: one solo pass (asymmetry check) in this many; 0: none",
    )
    args = parser.parse_args()
    na, nb = args.n, int(round(args.n * 1.02))
    cpus = len(os.sched_getaffinity(0))
    print(f"# {cpus} usable CPUs; a: sum(range({na})), b: sum(range({nb})) (2 % more work)")
    print(f"# {args.passes} steady passes per campaign; 95 % CIs of the ratio b/a of wall times")
    with tempfile.TemporaryDirectory(prefix="benchrun-duet-") as tmp:
        where = Path(tmp)
        results = []
        duet = run_campaign(where, "duet", args.passes, True, na, nb, args.solo_every)
        inter = run_campaign(where, "interleaved", args.passes, False, na, nb)
        for label, rounds, ci in (
            ("duet, paired", duet, paired_ci),
            ("interleaved, paired", inter, paired_ci),
            ("interleaved, independent", inter, independent_ci),
        ):
            ratio, low, high, n = ci(rounds)
            minutes = measuring_minutes(rounds)
            width = (high - low) / ratio
            results.append((label, ratio, low, high, n, minutes, width))
        print(
            f"{'analysis':<26} {'ratio':>7} {'95 % CI':>17} {'n':>4} {'minutes':>8} "
            f"{'rel width':>10} {'width/min':>10}"
        )
        for label, ratio, low, high, n, minutes, width in results:
            print(
                f"{label:<26} {ratio:7.4f} [{low:.4f}, {high:.4f}] {n:4d} {minutes:8.3f} "
                f"{width * 100:9.2f}% {width * math.sqrt(minutes) * 100:9.2f}%"
            )
        if args.solo_every:
            print(
                f"# the duet campaign's minutes include its solo passes (one in "
                f"{args.solo_every}, two rounds each, one after the other)"
            )
        print(f"duet pair: {asymmetry_text(asymmetry(where, 'duet'))}")
        false_sep = 0
        flagged = 0
        lines = []
        for i in range(args.twins):
            name = f"twins{i}"
            rounds = run_campaign(where, name, args.twin_passes, True, na, na, args.solo_every)
            ratio, low, high, n = paired_ci(rounds)
            excluded = not low <= 1.0 <= high
            false_sep += excluded
            check = asymmetry(where, name)
            flagged += bool(check and check["flagged"])
            lines.append(
                f"  twins {i}: ratio {ratio:.4f} [{low:.4f}, {high:.4f}] ({n} duets)"
                + (" EXCLUDES 1" if excluded else "")
                + f"; {asymmetry_text(check)}"
            )
        print(f"# identical twins in duet: {args.twins} campaigns of {args.twin_passes} passes")
        print("\n".join(lines))
        print(f"false separations: {false_sep} of {args.twins}")
        print(f"twins flagged asymmetric: {flagged} of {args.twins}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
