"""Why a workload's own CI under-covers at the width stop (issue 28, item 8): the collector
alone, no controller.

On iid normal series of mean 1 (sd chosen so that a normal-theory CI at 95 % reaches a
half-width of 5 % of the mean at N rounds: the oracle), :func:`runner.control.collector.collect`
runs after every round from round 8; the campaign stops at the first round whose series is
certified and whose CI half-width is at most 5 % of its mean. Printed per variant: the
coverage of the CI at the stop (binomial SE), rounds / N (median), and the median q and
n_q the collector chose at the stop. Variants: ``default`` (MSER-5 warm-up, the q/2q
envelope), ``nowarm`` (no MSER-5), ``no2q`` (no envelope), ``plain`` (neither),
``hK`` (default with at most K subsession means instead of 20; ``hall``: no cap, so q
is the smallest admissible size), ``sdupK`` (default, but the stop asks the half-width times 1 + K/sqrt(2(n_q - 1)), an
upper bound of the sd by K standard errors, to be within the target; the CI reported is
the usual one). Example (each line about a minute on this VM)::

    python benchmarks/own_ci_stop_diagnosis.py --n 200 --campaigns 300 default plain
    python benchmarks/own_ci_stop_diagnosis.py --n 600 --campaigns 300 default sdup1
"""

from __future__ import annotations

import argparse
import statistics

import numpy as np
from scipy import stats as sps

from benchrun.runner.control import collector
from benchrun.runner.control.collector import collect

WIDTH = 0.05
DEFAULT_MAX = collector.MAX_SUBSESSIONS
CONFIDENCE = 0.95


def stop(x: np.ndarray, variant: str) -> tuple[int, bool, int, int] | None:
    """Round of the stop, whether its CI contains 1, q and n_q; None without a stop."""
    kw: dict[str, object] = {}
    if variant in ("nowarm", "plain"):
        kw["warmup"] = "none"
    if variant in ("no2q", "plain"):
        kw["ci_2q"] = False
    k = float(variant[4:] or 1) if variant.startswith("sdup") else 0.0
    if variant.startswith("h"):
        # hK: at most K subsession means (collector.MAX_SUBSESSIONS); hall: no cap, q = q_min
        collector.MAX_SUBSESSIONS = 10**9 if variant == "hall" else int(variant[1:])
    else:
        collector.MAX_SUBSESSIONS = DEFAULT_MAX
    col = x.reshape(-1, 1)
    for r in range(8, len(x) + 1):
        s = collect(col[:r], confidence=CONFIDENCE, **kw)  # type: ignore[arg-type]
        if not s.enough or s.ci_low is None or s.ci_high is None or s.n_q is None or s.mean is None:
            continue
        half = (s.ci_high - s.ci_low) / 2 * (1 + k / np.sqrt(2 * (s.n_q - 1)))
        if half <= WIDTH * abs(s.mean):
            return r, s.ci_low <= 1.0 <= s.ci_high, int(s.q or 0), int(s.n_q)
    return None


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("variants", nargs="+")
    ap.add_argument("--n", type=int, default=200, help="the oracle's rounds N")
    ap.add_argument("--campaigns", type=int, default=300)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--phi", type=float, default=0.0, help="AR(1) coefficient of the series")
    args = ap.parse_args()
    # sd of the innovations so that the long-run sd makes the oracle N
    lr = WIDTH * np.sqrt(args.n) / sps.norm.ppf((1 + CONFIDENCE) / 2)
    sigma = lr * (1 - args.phi)

    def series(rng: np.random.Generator) -> np.ndarray:
        e = sigma * rng.standard_normal(4 * args.n + 400)
        if args.phi:
            from scipy.signal import lfilter

            e = lfilter([1.0], [1.0, -args.phi], e)[200:]
        return 1 + e[: 4 * args.n + 200]

    for variant in args.variants:
        rng = np.random.default_rng(args.seed)
        found = [stop(series(rng), variant) for _ in range(args.campaigns)]
        done = [f for f in found if f is not None]
        cov = float(np.mean([f[1] for f in done]))
        print(
            f"{variant:8s} N {args.n}: cov {cov:.3f} (SE {np.sqrt(cov * (1 - cov) / len(done)):.3f})"
            f", rounds/N {statistics.median(f[0] for f in done) / args.n:.2f}, q "
            f"{statistics.median(f[2] for f in done):g}, n_q {statistics.median(f[3] for f in done):g}"
            f", no stop {len(found) - len(done)}"
        )


if __name__ == "__main__":
    main()
