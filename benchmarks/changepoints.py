"""Change points in histories of known truth: benchrun's detector beside asv, Otava, ruptures.

Run: python benchmarks/changepoints.py [--reps 200] [--seed 31] [--rows ROW ...]
     (seeded; needs ``pip install asv apache-otava ruptures``, a detector whose package is
     missing is left out and said so; about 10 min at 200 reps on a busy 2-CPU VM, 5 of
     them benchrun's two columns)

The table of docs/history.md, "Change points" (issue 31 item 3). Each history is one
estimate per revision (a campaign's mean, around 100 units), with

- a per-campaign 95 % CI half-width drawn uniformly in 0.3 %..1 % (its standard error is
  the half-width / 1.96, and the estimate carries that error),
- a campaign-to-campaign sd of 0.5 % (the issue's example; ``tau``), and
- the truth of the row: steps of +1, 2, 3, 5, 10 % (at revision 18 of 30, as in the
  issue's acceptance case, or at a random revision between 10 and 90 of 100), a -5 %
  step, an up-and-down pair, slow creeps (a linear rise over a span of revisions), one
  outlying campaign (+10 % or -10 % anywhere, +5 % at the last revision), no change, a
  noisy runner (tau 1.5 %, Student-t noise with 3 degrees of freedom) with no change, and
  bimodal campaigns (each one +3 % with probability 0.3: two machine states) with no
  change.

Scores per row and detector, pooled over the ``reps`` histories: **prec** = detections
that are true / detections; **recall** = true change points found / true change points;
a detection is true within ±1 revision of a change point (each matched once), or, for a
creep, anywhere in the creep's span ±1 (found once the first is); **FA/100** = false
detections per 100 unchanged revisions (revisions that are not a change point nor in a
creep); an outlying campaign is not a change. ``-`` where the row has nothing to score.

Detectors: **benchrun** = ``stats.changepoint.find_changes`` (tau estimated from the
history), **benchrun τ** = the same told tau = 0.5 % (measured on the machine);
**asv** = ``asv.step_detect.detect_steps`` (every boundary of its piecewise-constant L1
fit, weights 2 / width of the 99 % CI as asv's publish gives them), **asv reg** = asv's
regressions (``detect_regressions`` at its default threshold of 5 %; upward only, as asv
reports them); **otava** = ``otava.analysis.compute_change_points`` at Otava's defaults
(window 50, p <= 0.001, no minimum magnitude), **otava 2%** = the same with a minimum
relative change of 2 %, **e-divisive** = Otava's implementation of the original E-Divisive
means of Matteson & James (2014) (``compute_change_points_orig``: 100 permutations,
p <= 0.001, i.e. no permutation as extreme; only with ``--detectors e-divisive``, it takes
about 0.2 s a history); **pelt** = ``ruptures.Pelt`` (L2 cost, minimum segment 2) on the
log values divided by the robust sd of their successive differences / sqrt 2, penalty
``2 ln n`` (BIC for a change of known variance: a location and a mean).
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from benchrun.stats.changepoint import find_changes

Detector = Callable[[np.ndarray, np.ndarray], list[int]]


@dataclass(frozen=True)
class Row:
    """One row of the table: how its histories are drawn."""

    name: str
    n: int
    #: (position or None for random, relative step) steps, in order
    steps: tuple[tuple[int | None, float], ...] = ()
    #: (start, end, total relative rise) of a linear creep
    creep: tuple[int, int, float] | None = None
    #: (position or None for random, relative size) of one outlying campaign
    outlier: tuple[int | None, float] | None = None
    tau: float = 0.005
    t_df: float | None = None
    #: (share, relative offset): a second mode, each campaign in it with this probability
    mode: tuple[float, float] | None = None


@dataclass
class Score:
    """Counts pooled over a row's histories."""

    detections: int = 0
    true_detections: int = 0
    truth: int = 0
    found: int = 0
    unchanged: int = 0
    false: int = 0
    seconds: float = 0.0
    fa_histories: list[int] = field(default_factory=list)

    def cells(self) -> tuple[str, str, str]:
        prec = f"{self.true_detections / self.detections:.2f}" if self.detections else "-"
        rec = f"{self.found / self.truth:.2f}" if self.truth else "-"
        fa = f"{100 * self.false / self.unchanged:.2f}" if self.unchanged else "-"
        return prec, rec, fa


ROWS: tuple[Row, ...] = (
    Row("no change, 30", 30),
    Row("no change, 60", 60),
    Row("no change, 100", 100),
    Row("noisy runner (tau 1.5 %, t3), 60", 60, tau=0.015, t_df=3.0),
    Row("outlier +10 %, 30", 30, outlier=(None, 0.10)),
    Row("outlier -10 %, 100", 100, outlier=(None, -0.10)),
    Row("outlier +5 % at the last, 30", 30, outlier=(29, 0.05)),
    *(Row(f"step +{p:g} % at r18, 30", 30, steps=((17, p / 100),)) for p in (1, 2, 3, 5, 10)),
    *(Row(f"step +{p:g} % anywhere, 100", 100, steps=((None, p / 100),)) for p in (1, 2, 3, 5, 10)),
    Row("step -5 % at r31, 60", 60, steps=((30, -0.05),)),
    Row("+3 % at r31, -3 % at r61, 90", 90, steps=((30, 0.03), (60, -0.03))),
    Row("creep +5 % over r21..r40, 60", 60, creep=(20, 40, 0.05)),
    Row("creep +3 % over r01..r100, 100", 100, creep=(0, 100, 0.03)),
    Row("creep +10 % over r26..r75, 100", 100, creep=(25, 75, 0.10)),
    Row("bimodal (+3 % in 30 % of campaigns), 60", 60, mode=(0.3, 0.03)),
    # this VM's campaign-to-campaign variation: a between-campaign sd of 3.5-6.9 % of the
    # log mean, measured with repeated campaigns (docs/conditions.md)
    Row("VM noise (tau 5 %), no change, 30", 30, tau=0.05),
    Row("VM noise (tau 5 %), step +10 % at r18, 30", 30, tau=0.05, steps=((17, 0.10),)),
    Row("VM noise (tau 5 %), step +20 % at r18, 30", 30, tau=0.05, steps=((17, 0.20),)),
)


def draw(row: Row, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """One history: estimates, standard errors and the true change points."""
    n = row.n
    half = rng.uniform(0.003, 0.01, n)
    e = half / 1.96
    if row.t_df is None:
        noise = row.tau * rng.standard_normal(n)
    else:
        noise = row.tau * rng.standard_t(row.t_df, n) / math.sqrt(row.t_df / (row.t_df - 2))
    y = math.log(100.0) + noise + e * rng.standard_normal(n)
    truth = []
    for at, size in row.steps:
        k = int(rng.integers(10, n - 10)) if at is None else at
        y[k:] += math.log1p(size)
        truth.append(k)
    if row.creep is not None:
        a, b, total = row.creep
        ramp = np.clip((np.arange(n) - a + 1) / (b - a), 0.0, 1.0)
        y += math.log1p(total) * ramp
    if row.mode is not None:
        share, offset = row.mode
        y += math.log1p(offset) * (rng.random(n) < share)
    if row.outlier is not None:
        at, size = row.outlier
        k = int(rng.integers(0, n)) if at is None else at
        y[k] += math.log1p(size)
    x = np.exp(y)
    return x, e * x, sorted(truth)


def score(row: Row, found: list[int], truth: list[int], s: Score) -> None:
    """Add one history's detections to the row's counts (module docstring)."""
    s.detections += len(found)
    if row.creep is not None:
        a, b, _ = row.creep
        inside = [k for k in found if a - 1 <= k <= b + 1]
        s.true_detections += len(inside)
        s.truth += 1
        s.found += bool(inside)
        s.false += len(found) - len(inside)
        s.unchanged += row.n - (b - a)
        return
    left = list(truth)
    hits = 0
    for k in sorted(found):
        near = [t for t in left if abs(t - k) <= 1]
        if near:
            left.remove(min(near, key=lambda t: abs(t - k)))
            hits += 1
    s.true_detections += hits
    s.truth += len(truth)
    s.found += hits
    s.false += len(found) - hits
    s.unchanged += row.n - len(truth)


def detectors() -> tuple[dict[str, Detector], list[str]]:
    """The detectors whose packages are installed, and a note for each one missing."""
    out: dict[str, Detector] = {
        "benchrun": lambda x, s: find_changes(x, s).indices,
        "benchrun τ": lambda x, s: find_changes(x, s, tau=0.005).indices,
    }
    missing = []
    if importlib.util.find_spec("asv") is not None:
        from asv import step_detect

        def asv_steps(x: np.ndarray, s: np.ndarray) -> list[int]:
            steps = step_detect.detect_steps(list(x), list(1.0 / (2.576 * s)))
            return [int(left) for left, *_ in steps[1:]]

        def asv_regressions(x: np.ndarray, s: np.ndarray) -> list[int]:
            steps = step_detect.detect_steps(list(x), list(1.0 / (2.576 * s)))
            _, _, jumps = step_detect.detect_regressions(steps, 0.05)
            return [int(after) for _, after, *_ in jumps or []]

        out["asv"] = asv_steps
        out["asv reg"] = asv_regressions
    else:
        missing.append("asv (pip install asv)")
    if importlib.util.find_spec("otava") is not None:
        from otava.analysis import compute_change_points, compute_change_points_orig

        def otava(x: np.ndarray, s: np.ndarray, magnitude: float = 0.0) -> list[int]:
            cps, _ = compute_change_points(list(x), min_magnitude=magnitude)
            return [int(c.index) for c in cps]

        out["otava"] = otava
        out["otava 2%"] = lambda x, s: otava(x, s, 0.02)

        def e_divisive(x: np.ndarray, s: np.ndarray) -> list[int]:
            cps, _ = compute_change_points_orig(list(x), seed=1)
            return [int(c.index) for c in cps]

        out["e-divisive"] = e_divisive
    else:
        missing.append("Apache Otava (pip install apache-otava)")
    if importlib.util.find_spec("ruptures") is not None:
        import ruptures

        def pelt(x: np.ndarray, s: np.ndarray) -> list[int]:
            y = np.log(x)
            d = np.diff(y)
            sd = 1.4826 * np.median(np.abs(d - np.median(d))) / math.sqrt(2)
            algo = ruptures.Pelt(model="l2", min_size=2, jump=1).fit(y / max(sd, 1e-12))
            return [int(k) for k in algo.predict(pen=2 * math.log(len(y)))[:-1]]

        out["pelt"] = pelt
    else:
        missing.append("ruptures (pip install ruptures)")
    return out, missing


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--seed", type=int, default=31)
    parser.add_argument("--rows", nargs="*", help="only the rows whose name holds one of these")
    parser.add_argument("--detectors", nargs="*", help="only these detectors")
    args = parser.parse_args()
    found, missing = detectors()
    if args.detectors:
        found = {k: v for k, v in found.items() if k in args.detectors}
    else:  # slow (about 0.2 s a history): only when asked for
        found.pop("e-divisive", None)
    for note in missing:
        print(f"not installed, left out: {note}")
    names = list(found)
    print(f"{args.reps} histories per row, seed {args.seed}; cells: prec / recall / FA per 100")
    print("| row | " + " | ".join(names) + " |")
    print("| --- |" + " --- |" * len(names))
    total = {k: 0.0 for k in names}
    for i, row in enumerate(ROWS):
        if args.rows and not any(r in row.name for r in args.rows):
            continue
        rng = np.random.default_rng([args.seed, i])
        histories = [draw(row, rng) for _ in range(args.reps)]
        cells = []
        for name in names:
            s = Score()
            t0 = time.perf_counter()
            for x, se, truth in histories:
                score(row, found[name](x, se), truth, s)
            total[name] += time.perf_counter() - t0
            cells.append(" / ".join(s.cells()))
        print(f"| {row.name} | " + " | ".join(cells) + " |", flush=True)
    print("seconds per detector: " + ", ".join(f"{k} {v:.0f}" for k, v in total.items()))


if __name__ == "__main__":
    main()
