"""Coverage of 95 % CIs of the mean on AR(1) data (docs/methods.md §3-4; docs/subsessions.md).

For each φ in {0, 0.5, 0.9} and several series lengths n, simulates SERIES stationary AR(1)
series x_t = φ x_{t-1} + e_t (e_t iid N(0, 1), true mean 0) and reports, for each method,
the share of issued CIs that contain 0 ("cov"), the share of series refused ("ref",
"not enough data"), and the mean subsession size q of the issued CIs:

- naive: Student t over the raw readings (what most tools print);
- benchrun: ``stats.autocorr.subsession_size`` then Student t over subsession means;
- Pilot 0.2/50 and Pilot 0.1/200 (strict): ``pilot_subsession_size`` with those presets.

Refused series are neither covered nor missed; read "cov" together with "ref".

    python benchmarks/ci_coverage.py [--series 2000] [--seed 1] [--quick]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from scipy import signal
from scipy import stats as sps

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchrun.stats.autocorr import pilot_subsession_size, subsession_size  # noqa: E402

GRID = {
    0.0: (20, 50, 200, 1000),
    0.5: (50, 100, 200, 500, 1000),
    0.9: (300, 500, 1000, 2000, 3000, 5000, 10000),
}
QUICK = {0.0: (50, 200), 0.5: (200, 1000), 0.9: (1000, 5000)}


def ar1(phi: float, n: int, reps: int, rng: np.random.Generator) -> np.ndarray:
    e = rng.standard_normal((reps, n))
    x0 = rng.standard_normal(reps) / np.sqrt(1.0 - phi * phi)
    y, _ = signal.lfilter([1.0], [1.0, -phi], e, axis=1, zi=(phi * x0)[:, None])
    return y


def t_covers(b: np.ndarray) -> bool:
    h = b.size
    half = sps.t.ppf(0.975, h - 1) * b.std(ddof=1) / np.sqrt(h)
    return bool(abs(b.mean()) <= half)


def evaluate(x: np.ndarray) -> dict[str, tuple[float, float, float]]:
    """method -> (coverage of issued CIs, refusal rate, mean q of issued CIs)."""
    reps, n = x.shape
    out: dict[str, tuple[float, float, float]] = {}
    m = x.mean(axis=1)
    half = sps.t.ppf(0.975, n - 1) * x.std(axis=1, ddof=1) / np.sqrt(n)
    out["naive"] = (float(np.mean(np.abs(m) <= half)), 0.0, 1.0)
    rules = {
        "benchrun": lambda row: subsession_size(row, 0.95),
        "pilot 0.2/50": lambda row: pilot_subsession_size(row, 0.2, 50),
        "pilot 0.1/200": lambda row: pilot_subsession_size(row, 0.1, 200),
    }
    for name, rule in rules.items():
        cov = issued = 0
        qs = []
        for row in x:
            c = rule(row)
            if not c.enough:
                continue
            h = n // c.q
            b = row[: h * c.q].reshape(h, c.q).mean(axis=1)
            issued += 1
            cov += t_covers(b)
            qs.append(c.q)
        out[name] = (
            cov / issued if issued else float("nan"),
            1.0 - issued / reps,
            float(np.mean(qs)) if qs else float("nan"),
        )
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--series", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--quick", action="store_true", help="fewer lengths")
    args = ap.parse_args()
    grid = QUICK if args.quick else GRID
    rng = np.random.default_rng(args.seed)
    print(f"AR(1), 95 % CIs, {args.series} series per row, seed {args.seed}")
    print("cov = coverage of issued CIs; ref = share refused (not enough data); q = mean q\n")
    methods = ("naive", "benchrun", "pilot 0.2/50", "pilot 0.1/200")
    head = f"{'phi':>4} {'tau':>5} {'n':>6} " + " ".join(f"{m:>22}" for m in methods)
    print(head)
    print(f"{'':>17} " + " ".join(f"{'cov   ref      q':>22}" for _ in methods))
    t0 = time.perf_counter()
    for phi, lengths in grid.items():
        tau = (1 + phi) / (1 - phi)
        for n in lengths:
            res = evaluate(ar1(phi, n, args.series, rng))
            cells = []
            for m in methods:
                c, r, q = res[m]
                cov = "  -  " if np.isnan(c) else f"{c:.3f}"
                qq = "-" if np.isnan(q) else f"{q:.0f}"
                cells.append(f"{cov:>6} {r:5.2f} {qq:>7}")
            print(f"{phi:4.1f} {tau:5.1f} {n:6d} " + " ".join(f"{c:>22}" for c in cells))
    print(f"\n({time.perf_counter() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
