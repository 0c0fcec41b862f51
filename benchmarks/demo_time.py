"""Wall time and rounds of the demo experiment, for one or more source trees, interleaved.

Runs ``benchrun run configs/demo.yaml`` (real processes) ``--repeats`` times per source tree,
alternating the trees inside each repeat so that the machine's noise hits them alike. A
"tree" is a checkout of this repository (for instance a ``git worktree`` of an older
commit); its code is put first on PYTHONPATH and the demo runs from its ``configs/``.

Printed per tree: every run's wall time (s), steady rounds per workload, subsession size q
per workload and how the campaign stopped; then the median wall time and the median
rounds of each workload over the repeats, and the ratio of each tree's median wall time
to the first tree's (the baseline).

Usage:
  python benchmarks/demo_time.py [--trees . /tmp/wt_old] [--repeats 5] [--config configs/demo.yaml]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def run_demo(tree: Path, config: str, keep: Path | None = None) -> dict[str, object]:
    """Run the demo once with *tree*'s code; returns wall time (s), rounds and q per workload.

    With *keep*, the campaign directory is written under it (kept) instead of a temporary one.
    """
    env = dict(os.environ, PYTHONPATH=str(tree))
    entry = "import sys; from benchrun.runner.cli import main; sys.exit(main())"
    with contextlib.ExitStack() as stack:
        if keep is None:
            out = stack.enter_context(tempfile.TemporaryDirectory())
        else:
            keep.mkdir(parents=True, exist_ok=True)
            out = tempfile.mkdtemp(dir=keep)
        t = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-c", entry, "run", config, "-q", "-o", out],
            cwd=tree,
            env=env,
            capture_output=True,
            text=True,
        )
        wall = time.perf_counter() - t
        shown = subprocess.run(
            [sys.executable, "-c", entry, "show", out, "--json"],
            cwd=tree,
            env=env,
            capture_output=True,
            text=True,
        )
    if proc.returncode != 0 or shown.returncode != 0:
        raise SystemExit(f"demo failed in {tree}: {proc.stderr.strip() or shown.stderr.strip()}")
    data = json.loads(shown.stdout)
    if "workloads" not in data:  # a folder of campaigns: take the only one
        data = data["campaigns"][0] if "campaigns" in data else data
    rounds = {w["name"]: w["steady"] for w in data["workloads"]}
    q = {w["name"]: (w.get("summary") or {}).get("subsession_size") for w in data["workloads"]}
    return {"wall": wall, "rounds": rounds, "q": q, "stop": data.get("stop_reason", "")}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trees", nargs="+", default=["."], help="source trees (first = baseline)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--config", default="configs/demo.yaml", help="relative to each tree")
    ap.add_argument("--keep", type=Path, help="keep every run's campaign directory under KEEP")
    args = ap.parse_args()
    trees = [Path(t).resolve() for t in args.trees]
    runs: dict[Path, list[dict[str, object]]] = {t: [] for t in trees}
    for r in range(args.repeats):
        order = trees if r % 2 == 0 else list(reversed(trees))
        for tree in order:
            res = run_demo(tree, args.config, args.keep)
            runs[tree].append(res)
            short = "; ".join(f"{k}={v}(q={res['q'][k]})" for k, v in res["rounds"].items())
            stop = str(res["stop"]).split(":")[0]
            print(f"repeat {r + 1} {tree}: {res['wall']:.1f} s  {short}  [{stop}]", flush=True)
    base = statistics.median(float(x["wall"]) for x in runs[trees[0]])
    print("\nmedians over", args.repeats, "repeats:")
    for tree in trees:
        med = statistics.median(float(x["wall"]) for x in runs[tree])
        names = list(runs[tree][0]["rounds"])  # type: ignore[arg-type]
        rounds = {n: statistics.median(x["rounds"][n] for x in runs[tree]) for n in names}  # type: ignore[index]
        print(f"  {tree}: wall {med:.1f} s (x{med / base:.2f} of the first tree); rounds {rounds}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
