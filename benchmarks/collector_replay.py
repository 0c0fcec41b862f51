"""Replay recorded campaigns through the collector of one or more source trees.

For every workload of every given campaign database, the steady rounds are fed to
``runner.control.collector.collect`` one round at a time (prefixes of 5, 6, ... rounds), in a
subprocess per source tree (its code first on PYTHONPATH). Reported per series and tree:
the first prefix length (rounds) at which the collector has enough data, and the first at
which, in addition, the CI half-width is within each ``--targets`` fraction of the mean;
``-`` when never within the recorded rounds. The same recorded data go through every
tree, so a difference between trees is the code's, not the machine's: this is how a
collector change is checked against the demo on a noisy machine (record with
``python benchmarks/demo_time.py --keep DIR``).

Printed at the end: per tree, how many series reach each point at the same round as the
first tree, and the median and sum over series (a series that never gets there counts as
twice its recorded length).

Usage:
  python benchmarks/collector_replay.py --trees . /tmp/wt_old --dbs DIR/*/demo/benchrun.db
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

WORKER = r"""
import json, sqlite3, sys
from benchrun.runner.control.collector import collect

targets = [float(t) for t in sys.argv[1].split(",")]
out = {}
for db in sys.argv[2:]:
    conn = sqlite3.connect(db)
    names = [r[0] for r in conn.execute("SELECT name FROM workload ORDER BY id")]
    for name in names:
        rows = conn.execute(
            "SELECT round.id, reading.value FROM reading JOIN round ON round.id = reading.round_id"
            " JOIN workload w ON w.id = round.workload_id WHERE w.name = ? AND round.warmup = 0"
            " AND round.status = 'ok' ORDER BY round.id, reading.idx", (name,)).fetchall()
        by_round = {}
        for rid, v in rows:
            by_round.setdefault(rid, []).append(v)
        rounds = list(by_round.values())
        first = {"len": len(rounds)}
        for k in range(5, len(rounds) + 1):
            st = collect(rounds[:k])
            if not st.enough:
                continue
            first.setdefault("enough", k)
            for t in targets:
                if st.rel_half_width is not None and st.rel_half_width <= t:
                    first.setdefault(str(t), k)
        out[db + "::" + name] = first
json.dump(out, sys.stdout)
"""


def replay(tree: Path, dbs: list[str], targets: list[float]) -> dict[str, dict[str, int]]:
    """First enough / within-target prefix lengths (rounds) per series, with *tree*'s code."""
    env = dict(os.environ, PYTHONPATH=str(tree))
    proc = subprocess.run(
        [sys.executable, "-c", WORKER, ",".join(map(str, targets)), *dbs],
        env=env,
        cwd=tree,  # `python -c` puts the working directory first on sys.path
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"replay failed with {tree}: {proc.stderr.strip()[-500:]}")
    return json.loads(proc.stdout)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trees", nargs="+", default=["."], help="source trees (first = baseline)")
    ap.add_argument("--dbs", nargs="+", required=True, help="campaign databases")
    ap.add_argument("--targets", default="0.05,0.1", help="relative CI half-widths")
    args = ap.parse_args()
    targets = [float(t) for t in args.targets.split(",")]
    dbs = [str(Path(d).resolve()) for d in args.dbs]
    trees = [Path(t).resolve() for t in args.trees]
    results = {t: replay(t, dbs, targets) for t in trees}
    points = ["enough", *map(str, targets)]
    base = results[trees[0]]
    print(f"{'series':50s} {'len':>4s}  " + "  ".join(f"{t.name:>20s}" for t in trees))
    for key, first in base.items():
        cells = []
        for t in trees:
            f = results[t][key]
            cells.append("/".join(str(f.get(p, "-")) for p in points))
        label = key.split("::")[0][-25:] + "::" + key.split("::")[1]
        print(f"{label[-50:]:50s} {first['len']:4d}  " + "  ".join(f"{c:>20s}" for c in cells))
    print(f"\ncolumns: first round at which {' / '.join(points)} (CI half-width <= target)")
    for t in trees:
        res = results[t]
        same = {p: sum(res[k].get(p) == base[k].get(p) for k in base) for p in points}
        cost = {p: [res[k].get(p, 2 * res[k]["len"]) for k in res] for p in points}
        med = {p: statistics.median(v) for p, v in cost.items()}
        tot = {p: sum(v) for p, v in cost.items()}
        print(f"  {t}: same round as the first tree {same} of {len(base)}; median {med}; sum {tot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
