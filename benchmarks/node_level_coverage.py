"""Coverage of the grand mean's CIs when nodes vary (docs/methods.md §14, issue 19).

SIMS campaigns per row of k nodes with r independent means each, y_ij = mu + b_i + e_ij,
b_i ~ N(0, sigma_b²), e_ij ~ N(0, 1), mu = 10 (generated vectorised, one
``stats.node_variation`` call per campaign): the coverage of the node-mean interval
(t over the k node means), of the pooled interval (t over the N means, nodes ignored), of
the interval used (chosen by the F test at the collector's pooling level, 0.25), and how often the F test rejects.

    python benchmarks/node_level_coverage.py [--sims 3000] [--seed 20131]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchrun.runner.control.nodelevel import POOLING_ALPHA  # noqa: E402
from benchrun.stats.nodes import node_variation  # noqa: E402

ROWS = ((4, 8, 1.0), (3, 10, 1.0), (4, 8, 0.0), (8, 4, 0.5), (4, 8, 0.25), (2, 20, 0.5))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sims", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=20131)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    start = time.perf_counter()
    print(
        "| k nodes | r means per node | sigma_b | node CI covers | pooled CI covers "
        "| CI used covers | F test rejects |"
    )
    print("|---|---|---|---|---|---|---|")
    for k, r, sd_b in ROWS:
        y = 10.0 + rng.normal(0, sd_b, (args.sims, k, 1)) + rng.normal(0, 1, (args.sims, k, r))
        res = [node_variation(list(s), alpha=POOLING_ALPHA) for s in y]
        node = np.mean([x.node_ci_low <= 10 <= x.node_ci_high for x in res])
        pooled = np.mean([x.pooled_ci_low <= 10 <= x.pooled_ci_high for x in res])
        used = np.mean([x.ci_low <= 10 <= x.ci_high for x in res])
        rej = np.mean([x.differ for x in res])
        print(f"| {k} | {r} | {sd_b:g} | {node:.3f} | {pooled:.3f} | {used:.3f} | {rej:.3f} |")
    print(f"({args.sims} campaigns per row, seed {args.seed}, {time.perf_counter() - start:.1f} s)")


if __name__ == "__main__":
    main()
