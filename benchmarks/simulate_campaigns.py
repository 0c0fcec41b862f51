"""Simulated campaigns: does the adaptive controller keep its error rates? (docs/methods.md §10)

Drives the REAL :class:`runner.control.controller.Controller` and :func:`runner.control.collector.collect`
(with ``direction="lower_is_better"``, as the loop passes for time metrics)
on synthetic workloads whose truth is known (no processes), and runs four other stopping
rules on exactly the same data:

- ``benchrun``: adaptive mode with the default settings (alpha 0.01, margin 1 %,
  ci_rel_width 5 %, min_rounds 5, max_rounds 500), one call of collect + decide per round,
  rounds only for the workloads the controller lists as active; ``benchrun-obf`` the same
  with O'Brien-Fleming-like alpha spending (little alpha at the early looks).
- ``hyperfine``: a fixed count of max(10, ⌈3 s / round time⌉) rounds (round time 0.1 s, so
  30), then Welch's t-test per adjacent pair at alpha on the raw round values (what
  hyperfine's ``welch_ttest.py`` script does), and a Student t CI over the raw rounds.
- ``pilot-quick`` / ``pilot-strict``: Pilot's rule as documented (PILOT; docs/methods.md §3):
  after every round, q = the smallest batch size whose batch means have |lag-1 r| <= limit
  with >= h batch means (quick: 0.8 and 30; strict: 0.1 and 200), stop a workload when the
  CI full width is <= 20 % (quick) or 10 % (strict) of the mean; then Welch's test on the
  subsession means per adjacent pair at alpha. Pilot removes warm-up only at the start of
  a session, so within-round transients stay in its series.
- ``naive``: Welch's t-test on the raw round values of every pair after every round, a
  pair is "separated" at its first p < alpha, and the campaign stops when every adjacent
  pair is separated (or at max_rounds).

Scenarios (each workload independent; cv = coefficient of variation of one round value):
``normal`` iid N, cv 1 %; ``lognormal`` right-skewed, ``μ(1 + c(e^{σZ} - e^{σ²/2}))`` with
σ = 0.5 (skewness 1.75; ``lognormal-heavy``: σ = 1, skewness 6.2), cv 1 %; ``ar1`` one value per round, AR(1) φ = 0.7 across rounds (τ = 5.7), marginal cv 1 %;
``warmup`` 50 readings per round with a transient ``0.3μ·e^{-i/2}`` at the start of every
round, reading cv 3 %; ``process`` 50 readings per round, reading cv 3 %, and each round
(process) has its own level, sd 1 % (the round means' sd is 2.6x the 0.42 % the readings
imply); ``ar1-0.9`` one workload, 10 readings per round from one AR(1) chain with φ = 0.9
(τ = 19), reading cv 2 % (coverage only). Suites: 2 workloads 0 %, 0.5 %, 2 %, 10 % apart,
and 5 workloads with neighbours 0 %, 0.5 %, 2 %, 10 % apart.

Columns: **wrong** = share of campaigns with at least one wrong verdict (a pair called
separated that is truly equal or in the wrong order, or called equivalent while truly
>= margin apart); **undec** = share ending with an undecided pair; **cov** = share of
issued 95 % CIs containing the true (steady-state) mean, with **ref** = share of workloads
with no CI; **rounds/oracle** = median (p90) over campaigns of rounds used / the rounds an
oracle needs that knows the true variance and autocorrelation time: per workload
max(min_rounds, width formula, fixed-n power-0.8 Welch or TOST formula at level alpha for
each adjacent pair), equal allocation, the normal approximation (docs/controller.md);
**rounds/max(oracle, certified)** (benchrun only) = the same with each workload's oracle
rounds raised to the round count at which benchrun first trusted its CI (8 subsessions
whose size the autocorrelation rule accepts, docs/methods.md §3), i.e. the cost of the stopping
rule beyond certifying that the subsession means are independent; **certified rounds** =
median over campaigns of that count summed over the workloads. These campaigns give the
controller no per-pass series, so their pairs are compared by Welch on each workload's
own subsession means (the rows predate paired comparisons and stay as they were).

**Drift rows** (second table; docs/methods.md §13, the issue's "Proof"): a machine whose speed
drifts, ``y_wp = mu_w·f_p·e_wp`` with f_p shared by every workload of pass p and lognormal
noise e (cv 2 %); ln f is an AR(1) with φ 0.99 and sd 10 % (``drift-ar1``; 5 % and 15 %
with --full), a random walk reaching sd 10 % after 400 passes (``drift-walk``), a sinusoid
of amplitude 10 %, random phase and period 200-400 passes (``drift-sine``), or 0
(``no-drift``). The data are indexed by pass, not by a workload's own round count: a
campaign's data is (k, passes) and a workload that runs in pass p reads its value of pass
p, so an idle workload never sees f_p. Suites: 2 workloads 0 %, 0.5 %, 2 %, 10 % apart,
and 3 workloads (a, b 2 % slower, c equal to a). Methods: ``benchrun`` (the loop of
runner/campaign/adaptive.py: collect per workload and a ``runner.control.pairing.PassSeries`` updated
after every pass, ``comparison: paired``), ``benchrun-indep`` (the same with ``comparison:
independent``), ``hyperfine`` and ``pilot-*`` as above but running the workloads one after
the other, one round per pass (w0 in passes 0, 1, ..., w1 from the pass after w0's last
round). Columns: **wrong** = campaigns in which any verdict declared during the campaign
is wrong; **undec** = campaigns ending with an undecided pair; **met** = campaigns whose
stop had every condition met (``Decision.met``, not a budget); **ratio cov** = issued CIs
of b/a for the reported pairs containing mu_b/mu_a (benchrun: ``PairStatus.ratio_low`` /
``ratio_high`` at the stop; hyperfine and Pilot: the delta-method CI of the ratio of their
two means, ``stats.paired.ratio_of_means_ci``), **no ratio CI** = pairs without one;
**passes** = median (p90) passes at the stop (hyperfine and Pilot: passes = rounds).
Targets (printed below the table for benchrun): wrong <= alpha + 2 SE, ratio CI coverage
>= 94 %, and the median passes of a 2 % pair within 2x the no-drift row.

    python benchmarks/simulate_campaigns.py [--campaigns 200] [--seed 1] [--full] [--jobs 1]
        [--drift] [--only scenario:suite,...] [--methods m,...]

The default grid (19 rows, 6 methods, 200 campaigns each) took 20 minutes on a busy 2-core
machine; its 12 drift rows (5 methods) take about 20 CPU-minutes more, nearly all of it in
benchrun's two rules (``--drift`` runs only those; ``--jobs 2`` runs the campaigns on two
processes, with the same figures: about 10 minutes on two idle cores). ``--full`` adds the
0.5 % pair and the other drift rows (26 in all, about 25 minutes with ``--jobs 2``);
``--methods benchrun`` and ``--only`` run a part.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import math
import sys
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import signal
from scipy import stats as sps
from scipy.special import ndtri

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchrun.runner.control.collector import collect  # noqa: E402
from benchrun.runner.control.controller import Controller, ControllerParams  # noqa: E402
from benchrun.runner.control.pairing import PassSeries  # noqa: E402
from benchrun.stats.paired import ratio_of_means_ci  # noqa: E402
from benchrun.stats.sequential import SPENDING_KINDS  # noqa: E402

PARAMS = ControllerParams(max_time=None)
ROUND_TIME = 0.1  # seconds, for the hyperfine-like count
PILOT = {"pilot-quick": (0.8, 30, 0.20), "pilot-strict": (0.1, 200, 0.10)}
METHODS = ("benchrun", "benchrun-obf", "hyperfine", "pilot-quick", "pilot-strict", "naive")


# ----------------------------------------------------------------------------- data
@dataclass(frozen=True)
class Scenario:
    name: str
    per_round: int  # readings per round
    make: Callable[[np.ndarray, int, int, np.random.Generator], np.ndarray]
    v1: Callable[[float], float]  # variance of the campaign mean x rounds (oracle)
    label: str


def _ar1(phi: float, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """Stationary AR(1) along the last axis, unit marginal variance."""
    e = rng.standard_normal(shape) * math.sqrt(1 - phi * phi)
    x0 = rng.standard_normal(shape[:-1])
    y, _ = signal.lfilter([1.0], [1.0, -phi], e, axis=-1, zi=(phi * x0)[..., None])
    return y


def _normal(mu: np.ndarray, c: int, r: int, rng: np.random.Generator) -> np.ndarray:
    z = rng.standard_normal((c, mu.size, r, 1))
    return mu[None, :, None, None] * (1 + 0.01 * z)


def _lognormal_with(sigma: float) -> Callable[..., np.ndarray]:
    """Right-skewed round values μ(1 + c(e^{σZ} - e^{σ²/2})) with cv 1 %."""
    sd = math.sqrt((math.exp(sigma**2) - 1) * math.exp(sigma**2))  # sd of e^{σZ}

    def make(mu: np.ndarray, c: int, r: int, rng: np.random.Generator) -> np.ndarray:
        z = np.exp(sigma * rng.standard_normal((c, mu.size, r, 1))) - math.exp(sigma**2 / 2)
        return mu[None, :, None, None] * (1 + 0.01 / sd * z)

    return make


def _ar1_rounds(mu: np.ndarray, c: int, r: int, rng: np.random.Generator) -> np.ndarray:
    y = _ar1(0.7, (c, mu.size, r), rng)[..., None]
    return mu[None, :, None, None] * (1 + 0.01 * y)


WARM_READINGS = 50


def _warmup(mu: np.ndarray, c: int, r: int, rng: np.random.Generator) -> np.ndarray:
    i = np.arange(WARM_READINGS)
    transient = 0.3 * np.exp(-i / 2.0)
    z = rng.standard_normal((c, mu.size, r, WARM_READINGS))
    return mu[None, :, None, None] * (1 + transient + 0.03 * z)


AR9_READINGS = 10
PROCESS_SD = 0.01  # sd of a round's (process's) own level, relative


def _process(mu: np.ndarray, c: int, r: int, rng: np.random.Generator) -> np.ndarray:
    level = PROCESS_SD * rng.standard_normal((c, mu.size, r, 1))
    z = rng.standard_normal((c, mu.size, r, WARM_READINGS))
    return mu[None, :, None, None] * (1 + level + 0.03 * z)


def _ar1_readings(mu: np.ndarray, c: int, r: int, rng: np.random.Generator) -> np.ndarray:
    y = _ar1(0.9, (c, mu.size, r * AR9_READINGS), rng).reshape(c, mu.size, r, AR9_READINGS)
    return mu[None, :, None, None] * (1 + 0.02 * y)


SCENARIOS = {
    "normal": Scenario("normal", 1, _normal, lambda m: (0.01 * m) ** 2, "iid normal, cv 1 %"),
    "lognormal": Scenario(
        "lognormal",
        1,
        _lognormal_with(0.5),
        lambda m: (0.01 * m) ** 2,
        "lognormal σ 0.5 (skewness 1.75), cv 1 %",
    ),
    "lognormal-heavy": Scenario(
        "lognormal-heavy",
        1,
        _lognormal_with(1.0),
        lambda m: (0.01 * m) ** 2,
        "lognormal σ 1 (skewness 6.2), cv 1 %",
    ),
    "ar1": Scenario(
        "ar1", 1, _ar1_rounds, lambda m: (0.01 * m) ** 2 * 1.7 / 0.3, "AR(1) φ 0.7 over rounds"
    ),
    "warmup": Scenario(
        "warmup",
        WARM_READINGS,
        _warmup,
        lambda m: (0.03 * m) ** 2 / WARM_READINGS,
        "50 readings/round, warm-up transient",
    ),
    "process": Scenario(
        "process",
        WARM_READINGS,
        _process,
        lambda m: (PROCESS_SD * m) ** 2 + (0.03 * m) ** 2 / WARM_READINGS,
        "50 readings/round, each round its own level (sd 1 %)",
    ),
    "ar1-0.9": Scenario(
        "ar1-0.9",
        AR9_READINGS,
        _ar1_readings,
        lambda m: (0.02 * m) ** 2 * 19 / AR9_READINGS,
        "AR(1) φ 0.9, 10 readings/round",
    ),
}


def _suite(steps: tuple[float, ...]) -> np.ndarray:
    return np.cumprod((1.0,) + tuple(1 + s for s in steps))


SUITES = {
    "2w 0%": _suite((0.0,)),
    "2w 0.5%": _suite((0.005,)),
    "2w 2%": _suite((0.02,)),
    "2w 10%": _suite((0.10,)),
    "5w mix": _suite((0.0, 0.005, 0.02, 0.10)),
    "1w": _suite(()),
    "3w 2%": np.array([1.0, 1.02, 1.0]),  # a, b 2 % slower, c equal to a (drift rows)
}

DEFAULT_GRID = [
    ("normal", "2w 0%"),
    ("normal", "2w 0.5%"),
    ("normal", "2w 2%"),
    ("normal", "2w 10%"),
    ("normal", "5w mix"),
    ("lognormal", "2w 0%"),
    ("lognormal", "2w 2%"),
    ("lognormal", "5w mix"),
    ("lognormal-heavy", "2w 0%"),
    ("ar1", "2w 0%"),
    ("ar1", "2w 2%"),
    ("ar1", "2w 10%"),
    ("warmup", "2w 0%"),
    ("warmup", "2w 2%"),
    ("warmup", "5w mix"),
    ("process", "2w 0%"),
    ("process", "2w 2%"),
    ("ar1-0.9", "1w"),
    ("normal", "1w"),
]
FULL_GRID = [
    (s, u)
    for s in ("normal", "lognormal", "lognormal-heavy", "ar1", "warmup", "process")
    for u in SUITES
    if u != "1w"
] + [("ar1-0.9", "1w"), ("normal", "1w")]


# ----------------------------------------------------------------------------- drift (by pass)
DRIFT_SD = 0.10  # sd of ln f (AR(1)), sd after WALK_PASSES passes (walk), amplitude (sine)
DRIFT_PHI = 0.99
WALK_PASSES = 400
SINE_PERIOD = (200.0, 400.0)  # passes, drawn uniformly per campaign
DRIFT_CV = 0.02  # cv of the lognormal noise e_wp


@dataclass(frozen=True)
class Drift:
    """A machine whose speed drifts: ``y_wp = mu_w·f_p·e_wp``, pass-indexed (see run_benchrun_passes).

    ``make(campaigns, passes, sd, rng)`` returns ln f, shape (campaigns, passes); ``sd``
    its size (see DRIFT_SD)."""

    name: str
    make: Callable[[int, int, float, np.random.Generator], np.ndarray]
    sd: float
    label: str


def _no_drift(c: int, p: int, sd: float, rng: np.random.Generator) -> np.ndarray:
    return np.zeros((c, p))


def _drift_ar1(c: int, p: int, sd: float, rng: np.random.Generator) -> np.ndarray:
    return sd * _ar1(DRIFT_PHI, (c, p), rng)


def _drift_walk(c: int, p: int, sd: float, rng: np.random.Generator) -> np.ndarray:
    steps = rng.standard_normal((c, p)) * (sd / math.sqrt(WALK_PASSES))
    steps[:, 0] = 0.0
    return np.cumsum(steps, axis=1)


def _drift_sine(c: int, p: int, sd: float, rng: np.random.Generator) -> np.ndarray:
    phase = rng.uniform(0.0, 2 * math.pi, (c, 1))
    period = rng.uniform(*SINE_PERIOD, (c, 1))
    return sd * np.sin(2 * math.pi * np.arange(p)[None, :] / period + phase)


DRIFTS = {
    "no-drift": Drift("no-drift", _no_drift, 0.0, "f_p = 1"),
    "drift-ar1": Drift(
        "drift-ar1", _drift_ar1, DRIFT_SD, f"ln f AR(1) φ {DRIFT_PHI}, sd {DRIFT_SD:.0%}"
    ),
    "drift-walk": Drift(
        "drift-walk",
        _drift_walk,
        DRIFT_SD,
        f"ln f random walk, sd {DRIFT_SD:.0%} after {WALK_PASSES} passes",
    ),
    "drift-sine": Drift(
        "drift-sine",
        _drift_sine,
        DRIFT_SD,
        f"ln f = {DRIFT_SD:.0%}·sin, period {SINE_PERIOD[0]:.0f}-{SINE_PERIOD[1]:.0f} passes",
    ),
    "drift-ar1-5%": Drift("drift-ar1-5%", _drift_ar1, 0.05, f"ln f AR(1) φ {DRIFT_PHI}, sd 5%"),
    "drift-ar1-15%": Drift("drift-ar1-15%", _drift_ar1, 0.15, f"ln f AR(1) φ {DRIFT_PHI}, sd 15%"),
}

DRIFT_SUITES = ("2w 0%", "2w 0.5%", "2w 2%", "2w 10%", "3w 2%")
#: the default drift rows (about 10 minutes with --jobs 2); the 0.5 % pair, which needs
#: 300-500 passes with or without drift, and the other rows are in DRIFT_FULL_GRID
DRIFT_GRID = [(d, u) for d in ("no-drift", "drift-ar1") for u in DRIFT_SUITES if u != "2w 0.5%"]
DRIFT_GRID += [(d, u) for d in ("drift-walk", "drift-sine") for u in ("2w 0%", "2w 2%")]
DRIFT_FULL_GRID = [
    (d, u) for d in ("no-drift", "drift-ar1", "drift-walk", "drift-sine") for u in DRIFT_SUITES
] + [(d, u) for d in ("drift-ar1-5%", "drift-ar1-15%") for u in ("2w 0%", "2w 2%", "3w 2%")]
DRIFT_METHODS = ("benchrun", "benchrun-indep", "hyperfine", "pilot-quick", "pilot-strict")


def drift_data(drift: Drift, mu: np.ndarray, passes: int, key: list[int], c: int) -> np.ndarray:
    """(k, passes) values ``mu_w·f_p·e_wp`` of campaign ``c``. The noise e depends on the
    suite and campaign only and f on the drift kind and campaign only, so rows share them
    (the no-drift row has the same e as the drift rows)."""
    seed, d_index, s_index = key
    sigma = math.sqrt(math.log1p(DRIFT_CV**2))
    e = sigma * np.random.default_rng([seed, 1000, s_index, c]).standard_normal((mu.size, passes))
    f = drift.make(1, passes, drift.sd, np.random.default_rng([seed, 1001 + d_index, c]))
    return mu[:, None] * np.exp(f + e)


# ----------------------------------------------------------------------------- outcomes
@dataclass
class Outcome:
    """One campaign of one method: verdicts on pairs (i better than j), CIs, rounds."""

    verdicts: list[tuple[int, int, str]]
    cis: list[tuple[float, float] | None]
    rounds: np.ndarray
    undecided: bool
    #: per workload, the first round count at which its CI was trusted (benchrun only)
    certified: np.ndarray | None = None
    #: drift rows: (a, b, low, high) of the CI of mu_b/mu_a per reported pair (None: no CI)
    ratio_cis: list[tuple[int, int, float | None, float | None]] | None = None
    #: drift rows: passes (benchrun) or time slots (a method running one round per pass)
    passes: int | None = None
    #: benchrun: every condition met at the stop (Decision.met)
    met: bool | None = None


def _welch_p(m1, v1, n1, m2, v2, n2):  # noqa: ANN001, ANN202 - vectorised helper
    se2 = v1 / n1 + v2 / n2
    with np.errstate(divide="ignore", invalid="ignore"):
        t = (m1 - m2) / np.sqrt(se2)
        df = se2**2 / ((v1 / n1) ** 2 / (n1 - 1) + (v2 / n2) ** 2 / (n2 - 1))
        p = 2 * sps.t.sf(np.abs(t), df)
    return np.where(se2 > 0, p, np.where(m1 == m2, 1.0, 0.0))


def _adjacent_welch(means, vars_, ns, alpha) -> tuple[list[tuple[int, int, str]], bool]:  # noqa: ANN001
    order = np.argsort(means, kind="stable")
    out, undecided = [], False
    for a, b in zip(order[:-1], order[1:], strict=True):
        p = float(_welch_p(means[a], vars_[a], ns[a], means[b], vars_[b], ns[b]))
        if p < alpha:
            out.append((int(a), int(b), "separated"))
        else:
            undecided = True
    return out, undecided


def _t_ci(m: float, v: float, n: int) -> tuple[float, float] | None:
    if n < 2:
        return None
    h = float(sps.t.ppf(0.975, n - 1)) * math.sqrt(v / n)
    return (m - h, m + h)


# ----------------------------------------------------------------------------- methods
def run_benchrun(data: np.ndarray, params: ControllerParams = PARAMS) -> Outcome:
    """One campaign driven by the real controller; ``data`` is (k, max_rounds, readings)."""
    k = data.shape[0]
    names = [f"w{i}" for i in range(k)]
    ctrl = Controller(params, [(n, "lower_is_better") for n in names])
    used = {n: 0 for n in names}
    first: dict[str, int] = {}
    stats: dict = {}
    active = list(names)
    while True:
        for i, n in enumerate(names):
            if n in active:
                used[n] += 1
                stats[n] = collect(
                    data[i, : used[n]], confidence=params.confidence, direction="lower_is_better"
                )
                if stats[n].enough and n not in first:
                    first[n] = used[n]
        d = ctrl.decide(stats, used, 0.0)
        if d.stop:
            break
        active = list(d.active)
    index = {n: i for i, n in enumerate(names)}
    verdicts = [(index[p.a], index[p.b], p.verdict) for p in d.pairs if p.verdict != "undecided"]
    cis = [
        (s.ci_low, s.ci_high) if s is not None and s.ci_low is not None else None
        for s in (stats.get(n) for n in names)
    ]
    return Outcome(
        verdicts,
        cis,
        np.array([used[n] for n in names]),
        any(p.verdict == "undecided" for p in d.pairs),
        np.array([first.get(n, used[n]) for n in names]),
    )


def run_hyperfine(data: np.ndarray, alpha: float) -> Outcome:
    n = max(10, math.ceil(3.0 / ROUND_TIME))
    x = data[:, :n, :].mean(axis=2)
    m, v = x.mean(axis=1), x.var(axis=1, ddof=1)
    verdicts, undecided = _adjacent_welch(m, v, np.full(m.size, n), alpha)
    cis = [_t_ci(m[i], v[i], n) for i in range(m.size)]
    return Outcome(verdicts, cis, np.full(m.size, n), undecided)


def _pilot_one(series: np.ndarray, per_round: int, limit: float, h_min: int, width: float):  # noqa: ANN202
    """Pilot's rule on one workload: (rounds, q, batch means) at its stop, or budget."""
    max_r = series.size // per_round
    cs = np.concatenate(([0.0], np.cumsum(series)))
    last = None
    for r in range(1, max_r + 1):
        n = r * per_round
        if n < h_min:
            continue
        m = cs[n] / n
        for q in range(1, n // h_min + 1):
            h = n // q
            b = (cs[q : h * q + 1 : q] - cs[0 : h * q : q]) / q
            d = b - m
            den = float(d @ d)
            r1 = 0.0 if den == 0 else float(d[:-1] @ d[1:]) / den
            if abs(r1) <= limit:
                last = (r, q, b)
                half = float(sps.t.ppf(0.975, h - 1)) * b.std(ddof=1) / math.sqrt(h)
                if 2 * half <= width * abs(b.mean()):
                    return last
                break
    if last is not None and last[0] == max_r:
        return last
    return (max_r, None, None)


def run_pilot(data: np.ndarray, preset: str, alpha: float) -> Outcome:
    limit, h_min, width = PILOT[preset]
    k, max_r, per_round = data.shape
    means, vars_, ns, cis, rounds = [], [], [], [], []
    for i in range(k):
        r, q, b = _pilot_one(data[i].reshape(-1), per_round, limit, h_min, width)
        rounds.append(r)
        if b is None:
            means.append(float(data[i, :r].mean()))
            vars_.append(np.nan)
            ns.append(0)
            cis.append(None)
        else:
            means.append(float(b.mean()))
            vars_.append(float(b.var(ddof=1)))
            ns.append(b.size)
            cis.append(_t_ci(means[-1], vars_[-1], b.size))
    if any(n == 0 for n in ns):
        return Outcome([], cis, np.array(rounds), k > 1)
    verdicts, undecided = _adjacent_welch(np.array(means), np.array(vars_), np.array(ns), alpha)
    return Outcome(verdicts, cis, np.array(rounds), undecided)


def run_naive(data: np.ndarray, alpha: float) -> Outcome:
    """Welch after every round on raw round values; first p < alpha separates a pair."""
    x = data.mean(axis=2)  # (k, R)
    k, big_r = x.shape
    r = np.arange(1, big_r + 1)
    cm = np.cumsum(x, axis=1) / r
    cv = (np.cumsum(x * x, axis=1) - r * cm * cm) / np.maximum(r - 1, 1)
    cv = np.maximum(cv, 0)
    first = np.full((k, k), big_r + 1)
    sign = np.zeros((k, k))
    for i in range(k):
        for j in range(i + 1, k):
            p = _welch_p(cm[i, 1:], cv[i, 1:], r[1:], cm[j, 1:], cv[j, 1:], r[1:])
            hit = np.flatnonzero(p < alpha)
            if hit.size:
                t = int(hit[0]) + 1  # index into r
                first[i, j] = first[j, i] = r[t]
                sign[i, j] = np.sign(cm[j, t] - cm[i, t])  # >0: i better
                sign[j, i] = -sign[i, j]
    stop = big_r
    if k > 1:
        order = np.argsort(cm, axis=0, kind="stable")  # (k, R)
        ok = np.ones(big_r, bool)
        for a in range(k - 1):
            ok &= first[order[a], order[a + 1]] <= r
        ok[:1] = False
        hits = np.flatnonzero(ok)
        if hits.size:
            stop = int(r[hits[0]])
    verdicts = []
    for i in range(k):
        for j in range(i + 1, k):
            if first[i, j] <= stop:
                verdicts.append((i, j, "separated") if sign[i, j] > 0 else (j, i, "separated"))
    s = stop - 1
    cis = [_t_ci(cm[i, s], cv[i, s], stop) for i in range(k)]
    order = np.argsort(cm[:, s], kind="stable")
    undecided = any(first[order[a], order[a + 1]] > stop for a in range(k - 1))
    return Outcome(verdicts, cis, np.full(k, stop), undecided)


def run_benchrun_passes(data: np.ndarray, params: ControllerParams = PARAMS) -> Outcome:
    """One campaign on pass-indexed data ``(k, max_passes)``, driven like runner/campaign/adaptive.py:
    in pass p every active workload gets one round, of value ``data[w, p]`` (a workload
    idle in pass p never sees that pass's drift), then collect + decide with the per-pass
    values (``runner.control.pairing.PassSeries``; ignored with ``comparison="independent"``)."""
    k, max_passes = data.shape
    names = [f"w{i}" for i in range(k)]
    ctrl = Controller(params, [(n, "lower_is_better") for n in names])
    src = PassSeries({}, confidence=params.confidence, min_subsessions=params.min_subsessions)
    paired = params.comparison == "paired"
    series = np.empty((k, max_passes, 1))
    by_pass: list[dict[int, float]] = [{} for _ in names]
    used = {n: 0 for n in names}
    stats: dict = {}
    active = set(names)
    passes = 0
    declared: set[tuple[str, str, str]] = set()  # every verdict ever declared (events)
    for p in range(max_passes):
        passes = p + 1
        for i, n in enumerate(names):
            if n in active:
                series[i, used[n], 0] = data[i, p]
                used[n] += 1
                stats[n] = collect(
                    series[i, : used[n]], confidence=params.confidence, direction="lower_is_better"
                )
                if paired:
                    by_pass[i][p] = float(data[i, p])
                    src.update(n, dict(by_pass[i]))
        d = ctrl.decide(stats, used, 0.0, pairs=src if paired else None)
        declared.update(
            (e.data["a"], e.data["b"], e.data["verdict"])
            for e in d.events
            if e.kind in ("pair-verdict", "pair-revised")
        )
        if d.stop:
            break
        active = set(d.active)
    index = {n: i for i, n in enumerate(names)}
    verdicts = [(index[a], index[b], v) for a, b, v in sorted(declared)]
    return Outcome(
        verdicts,
        [],
        np.array([used[n] for n in names]),
        any(p.verdict == "undecided" for p in d.pairs),
        ratio_cis=[(index[p.a], index[p.b], p.ratio_low, p.ratio_high) for p in d.pairs],
        passes=passes,
        met=d.met,
    )


def _adjacent_ratio_cis(
    means: np.ndarray, vars_: np.ndarray, ns: np.ndarray, confidence: float
) -> list[tuple[int, int, float | None, float | None]]:
    """CI of b/a for the adjacent pairs of the ranking by mean (delta method on the two
    independent means, ``stats.paired.ratio_of_means_ci``); None without a variance."""
    order = np.argsort(means, kind="stable")
    out: list[tuple[int, int, float | None, float | None]] = []
    for a, b in zip(order[:-1], order[1:], strict=True):
        if ns[a] < 2 or ns[b] < 2 or not (np.isfinite(vars_[a]) and np.isfinite(vars_[b])):
            out.append((int(a), int(b), None, None))
            continue
        _, lo, hi = ratio_of_means_ci(
            float(means[a]), float(vars_[a]), int(ns[a]),
            float(means[b]), float(vars_[b]), int(ns[b]), confidence,
        )  # fmt: skip
        out.append((int(a), int(b), lo, hi))
    return out


def run_hyperfine_passes(data: np.ndarray, alpha: float, confidence: float) -> Outcome:
    """hyperfine on pass-indexed data: the workloads run one after the other, one round per
    pass (w0 in passes 0..n-1, w1 in n..2n-1, ...), then Welch per adjacent pair."""
    k = data.shape[0]
    n = max(10, math.ceil(3.0 / ROUND_TIME))
    x = np.stack([data[i, i * n : (i + 1) * n] for i in range(k)])
    m, v = x.mean(axis=1), x.var(axis=1, ddof=1)
    ns = np.full(k, n)
    verdicts, undecided = _adjacent_welch(m, v, ns, alpha)
    return Outcome(
        verdicts,
        [],
        ns,
        undecided,
        ratio_cis=_adjacent_ratio_cis(m, v, ns, confidence),
        passes=k * n,
    )


def run_pilot_passes(data: np.ndarray, preset: str, alpha: float, confidence: float) -> Outcome:
    """Pilot on pass-indexed data: the workloads run one after the other, one round per pass,
    each until Pilot's rule stops it (or max_rounds); the next starts in the following pass."""
    limit, h_min, width = PILOT[preset]
    k = data.shape[0]
    start = 0
    means, vars_, ns, rounds = np.zeros(k), np.full(k, np.nan), np.zeros(k, int), []
    for i in range(k):
        seg = data[i, start : start + PARAMS.max_rounds]
        r, _, b = _pilot_one(seg, 1, limit, h_min, width)
        rounds.append(r)
        start += r
        if b is None:
            means[i] = float(seg[:r].mean())
        else:
            means[i], vars_[i], ns[i] = float(b.mean()), float(b.var(ddof=1)), b.size
    ratio_cis = _adjacent_ratio_cis(means, vars_, ns, confidence)
    if np.any(ns == 0):
        return Outcome([], [], np.array(rounds), k > 1, ratio_cis=ratio_cis, passes=start)
    verdicts, undecided = _adjacent_welch(means, vars_, ns, alpha)
    return Outcome(verdicts, [], np.array(rounds), undecided, ratio_cis=ratio_cis, passes=start)


# ----------------------------------------------------------------------------- oracle, scoring
def oracle_rounds(scn: Scenario, mu: np.ndarray, params: ControllerParams) -> np.ndarray:
    """Fixed-n rounds per workload an oracle knowing the variance and τ needs (normal approx)."""
    a = params.alpha
    z_w = float(ndtri(0.5 + params.confidence / 2))
    v = np.array([scn.v1(m) for m in mu])
    need = np.full(mu.size, float(params.min_rounds))
    if params.ci_rel_width is not None:
        need = np.maximum(need, z_w**2 * v / (params.ci_rel_width * mu) ** 2)
    zp = float(ndtri(0.8))
    for i in range(mu.size - 1):
        d = mu[i + 1] - mu[i]
        delta = params.margin * mu[i]
        s2 = v[i] + v[i + 1]
        opts = []
        if d > 0:
            opts.append((-ndtri(a / 2) + zp) ** 2 * s2 / d**2)
        if d < delta:
            zb = float(ndtri(0.9)) if d == 0 else zp
            opts.append((-ndtri(a) + zb) ** 2 * s2 / (delta - d) ** 2)
        n = min(opts)
        need[i] = max(need[i], n)
        need[i + 1] = max(need[i + 1], n)
    return np.ceil(need)


def wrong(out: Outcome, mu: np.ndarray, margin: float) -> bool:
    for a, b, v in out.verdicts:
        if v == "separated" and not mu[a] < mu[b]:
            return True
        if v == "equivalent" and abs(mu[b] - mu[a]) >= margin * min(mu[a], mu[b]) * (1 - 1e-9):
            return True
    return False


def _campaign(
    scn_name: str, suite: str, method: str, seed: int, params: ControllerParams, c: int
) -> Outcome:
    """Campaign ``c`` of a row of the main table with one method (data seeded by row and c,
    the same for every method)."""
    scn, mu = SCENARIOS[scn_name], SUITES[suite]
    key = [seed, list(SCENARIOS).index(scn_name), list(SUITES).index(suite)]
    data = scn.make(mu, 1, PARAMS.max_rounds, np.random.default_rng(key + [c]))[0]
    if method == "benchrun":
        return run_benchrun(data, params)
    if method == "benchrun-obf":
        return run_benchrun(data, dataclasses.replace(params, spending="obrien-fleming"))
    if method == "hyperfine":
        return run_hyperfine(data, PARAMS.alpha)
    if method.startswith("pilot"):
        return run_pilot(data, method, PARAMS.alpha)
    if method == "naive":
        return run_naive(data, PARAMS.alpha)
    raise ValueError(f"unknown method {method!r}")


def _outcomes(
    fn: Callable[[int], Outcome], campaigns: int, pool: ProcessPoolExecutor | None
) -> list[Outcome]:
    """``fn(c)`` for every campaign c, in order (in ``pool``'s processes when given)."""
    if pool is None:
        return [fn(c) for c in range(campaigns)]
    return list(pool.map(fn, range(campaigns), chunksize=max(1, campaigns // 32)))


def simulate(
    scn_name: str,
    suite: str,
    campaigns: int,
    seed: int,
    methods: tuple[str, ...],
    params: ControllerParams = PARAMS,
    pool: ProcessPoolExecutor | None = None,
) -> dict[str, dict[str, float]]:
    scn, mu = SCENARIOS[scn_name], SUITES[suite]
    per_workload = oracle_rounds(scn, mu, PARAMS)
    oracle = per_workload.sum()
    rows: dict[str, dict[str, float]] = {}
    for method in methods:
        t0 = time.perf_counter()
        one = functools.partial(_campaign, scn_name, suite, method, seed, params)
        outs = _outcomes(one, campaigns, pool)
        cis = [(ci, m) for o in outs for ci, m in zip(o.cis, mu, strict=True)]
        issued = [ci for ci, _ in cis if ci is not None]
        covered = sum(1 for ci, m in cis if ci is not None and ci[0] <= m <= ci[1])
        ratio = np.array([o.rounds.sum() / oracle for o in outs])
        floor = np.array(
            [
                o.rounds.sum() / np.maximum(per_workload, o.certified).sum()
                if o.certified is not None
                else np.nan
                for o in outs
            ]
        )
        rows[method] = {
            "wrong": float(np.mean([wrong(o, mu, PARAMS.margin) for o in outs])),
            "undecided": float(np.mean([o.undecided for o in outs]))
            if mu.size > 1
            else float("nan"),
            "coverage": covered / len(issued) if issued else float("nan"),
            "refused": 1 - len(issued) / len(cis),
            "ratio_median": float(np.median(ratio)),
            "ratio_p90": float(np.quantile(ratio, 0.9)),
            "floor_median": float(np.median(floor)),
            "floor_p90": float(np.quantile(floor, 0.9)),
            "certified_median": float(np.median([o.certified.sum() for o in outs]))
            if outs and outs[0].certified is not None
            else float("nan"),
            "rounds_median": float(np.median([o.rounds.sum() for o in outs])),
            "oracle": float(oracle),
            "seconds": time.perf_counter() - t0,
        }
    return rows


def _drift_campaign(
    drift_name: str, suite: str, method: str, seed: int, params: ControllerParams, c: int
) -> Outcome:
    """Campaign ``c`` of a drift row with one method (:func:`drift_data`)."""
    drift, mu = DRIFTS[drift_name], SUITES[suite]
    key = [seed, list(DRIFTS).index(drift_name), list(SUITES).index(suite)]
    passes = mu.size * params.max_rounds  # >= any campaign: every pass runs a workload
    data = drift_data(drift, mu, passes, key, c)
    if method == "benchrun":
        return run_benchrun_passes(data, params)
    if method == "benchrun-indep":
        return run_benchrun_passes(data, dataclasses.replace(params, comparison="independent"))
    if method == "hyperfine":
        return run_hyperfine_passes(data, params.alpha, params.confidence)
    if method.startswith("pilot"):
        return run_pilot_passes(data, method, params.alpha, params.confidence)
    raise ValueError(f"no drift rows for method {method!r}")


def simulate_drift(
    drift_name: str,
    suite: str,
    campaigns: int,
    seed: int,
    methods: tuple[str, ...],
    params: ControllerParams = PARAMS,
    pool: ProcessPoolExecutor | None = None,
) -> dict[str, dict[str, float]]:
    """A drift row (pass-indexed data, :func:`drift_data`) for every method in ``methods``."""
    mu = SUITES[suite]
    rows: dict[str, dict[str, float]] = {}
    for method in methods:
        t0 = time.perf_counter()
        one = functools.partial(_drift_campaign, drift_name, suite, method, seed, params)
        outs = _outcomes(one, campaigns, pool)
        cis = [(lo, hi, mu[b] / mu[a]) for o in outs for a, b, lo, hi in (o.ratio_cis or [])]
        issued = [(lo, hi, r) for lo, hi, r in cis if lo is not None and hi is not None]
        n_passes = np.array([o.passes for o in outs], dtype=float)
        rows[method] = {
            "wrong": float(np.mean([wrong(o, mu, params.margin) for o in outs])),
            "undecided": float(np.mean([o.undecided for o in outs])),
            "met": float(np.mean([bool(o.met) for o in outs]))
            if outs and outs[0].met is not None
            else float("nan"),
            "coverage": float(np.mean([lo <= r <= hi for lo, hi, r in issued]))
            if issued
            else float("nan"),
            "no_ci": 1 - len(issued) / len(cis) if cis else float("nan"),
            "passes_median": float(np.median(n_passes)),
            "passes_p90": float(np.quantile(n_passes, 0.9)),
            "rounds_median": float(np.median([o.rounds.sum() for o in outs])),
            "seconds": time.perf_counter() - t0,
        }
    return rows


def _fmt(v: float, pct: bool = True) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    return f"{100 * v:.1f}" if pct else f"{v:.2f}"


def _count(v: float) -> str:
    return "-" if math.isnan(v) else f"{v:.0f}"


def _ratio(median: float, p90: float) -> str:
    return "-" if math.isnan(median) else f"{median:.2f} ({p90:.2f})"


DRIFT_FEED = (
    "Drift rows: y_wp = mu_w·f_p·e_wp indexed by pass p; benchrun gives every active workload "
    "the value of the pass it runs in (an idle workload skips that pass's f_p); hyperfine and "
    "Pilot run the workloads one after the other, one round per pass (w0 in passes 0, 1, ..., "
    "then w1 from the pass after w0's last), so each of their workloads sees a different "
    "stretch of the drift; their ratio CI is the delta-method CI of the ratio of their two "
    "means (stats.paired.ratio_of_means_ci; hyperfine: raw rounds, Pilot: its subsession "
    "means), benchrun's is PairStatus.ratio_low/high at the stop. The noise e is shared by the "
    "rows of one suite (the no-drift row has the same e)."
)


def _drift_targets(
    results: dict[tuple[str, str], dict[str, dict[str, float]]], params: ControllerParams,
    campaigns: int,
) -> list[str]:  # fmt: skip
    """The issue's targets for the benchrun rows under drift, one line each."""
    lines = []
    a = params.alpha
    wrong_max = a + 2 * math.sqrt(a * (1 - a) / campaigns)
    for (drift, suite), rows in results.items():
        r = rows.get("benchrun")
        if drift == "no-drift" or r is None:
            continue
        checks = [
            f"wrong {_fmt(r['wrong'])} % <= {100 * wrong_max:.1f} % (alpha + 2 SE): "
            + ("ok" if r["wrong"] <= wrong_max else "MISSED"),
            f"ratio CI coverage {_fmt(r['coverage'])} % >= 94 %: "
            + ("ok" if r["coverage"] >= 0.94 else "MISSED"),
        ]
        flat = results.get(("no-drift", suite), {})
        if suite.endswith(" 2%") and "benchrun" in flat:
            x = r["passes_median"] / flat["benchrun"]["passes_median"]
            text = (
                f"median passes {r['passes_median']:g} = {x:.2f}x no-drift's "
                f"{flat['benchrun']['passes_median']:g} (<= 2x): " + ("ok" if x <= 2 else "MISSED")
            )
            if "benchrun-indep" in flat:
                y = r["passes_median"] / flat["benchrun-indep"]["passes_median"]
                text += f" ({y:.2f}x no-drift's with comparison independent)"
            checks.append(text)
        lines.append(f"- {drift} {suite}: " + "; ".join(checks))
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--campaigns", type=int, default=200, help="campaigns per row (default 200)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--full", action="store_true", help="every scenario x suite (slower)")
    ap.add_argument(
        "--methods",
        default=None,
        help=f"comma-separated (default: {','.join(METHODS)} for the main table, "
        f"{','.join(DRIFT_METHODS)} for the drift rows; each table runs the ones it has)",
    )
    ap.add_argument(
        "--only",
        default=None,
        help="scenario:suite,... to run a subset (a drift kind as scenario: a drift row)",
    )
    ap.add_argument("--drift", action="store_true", help="only the drift rows (pass-indexed)")
    ap.add_argument("--jobs", type=int, default=1, help="processes running the campaigns")
    ap.add_argument(
        "--spending",
        default=PARAMS.spending,
        choices=SPENDING_KINDS,
        help="alpha spending over the looks of the benchrun method (default: the controller's)",
    )
    args = ap.parse_args(argv)
    params = dataclasses.replace(PARAMS, spending=args.spending)
    grid: list[tuple[str, ...]] = (
        [] if args.drift else list(FULL_GRID if args.full else DEFAULT_GRID)
    )
    drift_grid: list[tuple[str, ...]] = list(DRIFT_FULL_GRID if args.full else DRIFT_GRID)
    if args.only:
        rows_asked = [tuple(x.split(":", 1)) for x in args.only.split(",")]
        bad = [r for r in rows_asked if len(r) != 2 or r[1] not in SUITES
               or (r[0] not in SCENARIOS and r[0] not in DRIFTS)]  # fmt: skip
        if bad:
            ap.error(f"--only: unknown rows {bad}")
        grid = [] if args.drift else [r for r in rows_asked if r[0] in SCENARIOS]
        drift_grid = [r for r in rows_asked if r[0] in DRIFTS]
    asked = None if args.methods is None else tuple(args.methods.split(","))
    if asked is not None and (unknown := set(asked) - set(METHODS) - set(DRIFT_METHODS)):
        ap.error(f"--methods: unknown {sorted(unknown)}")
    methods = METHODS if asked is None else tuple(m for m in asked if m in METHODS)
    drift_methods = (
        DRIFT_METHODS if asked is None else tuple(m for m in asked if m in DRIFT_METHODS)
    )
    pool = ProcessPoolExecutor(args.jobs) if args.jobs > 1 else None
    t0 = time.perf_counter()
    print(
        f"{args.campaigns} campaigns per row, seed {args.seed}; alpha {PARAMS.alpha}, margin "
        f"{PARAMS.margin:.0%}, ci_rel_width {PARAMS.ci_rel_width:.0%}, max_rounds {PARAMS.max_rounds}, "
        f"spending {params.spending}"
    )
    if grid and methods:
        print()
        print(
            "| scenario | suite | method | wrong % | undec % | cov % | ref % | rounds/oracle median (p90) "
            "| oracle rounds | rounds/max(oracle, certified) median (p90) | certified rounds |"
        )
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        for scn_name, suite in grid:
            rows = simulate(scn_name, suite, args.campaigns, args.seed, methods, params, pool)
            for method, r in rows.items():
                print(
                    f"| {scn_name} | {suite} | {method} | {_fmt(r['wrong'])} | {_fmt(r['undecided'])} | "
                    f"{_fmt(r['coverage'])} | {_fmt(r['refused'])} | {r['ratio_median']:.2f} "
                    f"({r['ratio_p90']:.2f}) | {r['oracle']:.0f} | {_ratio(r['floor_median'], r['floor_p90'])} "
                    f"| {_count(r['certified_median'])} |",
                    flush=True,
                )
        print(
            f"\n{len(grid)} rows x {args.campaigns} campaigns in {time.perf_counter() - t0:.0f} s"
        )
    if drift_grid and drift_methods:
        t1 = time.perf_counter()
        print()
        print(DRIFT_FEED)
        print(
            f"Drift: {', '.join(f'{d.name} = {d.label}' for d in DRIFTS.values() if any(r[0] == d.name for r in drift_grid))}; "
            f"noise e lognormal, cv {DRIFT_CV:.0%}; benchrun = comparison paired (the default), "
            "benchrun-indep = comparison independent."
        )
        print()
        print(
            "| drift | suite | method | wrong % | undec % | met % | ratio cov % | no ratio CI % "
            "| passes median (p90) | rounds median | s |"
        )
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        results: dict[tuple[str, str], dict[str, dict[str, float]]] = {}
        for drift, suite in drift_grid:
            rows = simulate_drift(
                drift, suite, args.campaigns, args.seed, drift_methods, params, pool
            )
            results[(drift, suite)] = rows
            for method, r in rows.items():
                print(
                    f"| {drift} | {suite} | {method} | {_fmt(r['wrong'])} | {_fmt(r['undecided'])} | "
                    f"{_fmt(r['met'])} | {_fmt(r['coverage'])} | {_fmt(r['no_ci'])} | "
                    f"{r['passes_median']:g} ({r['passes_p90']:g}) | "
                    f"{r['rounds_median']:.0f} | {r['seconds']:.0f} |",
                    flush=True,
                )
        targets = _drift_targets(results, params, args.campaigns)
        if targets:
            print("\nTargets (benchrun, drift rows):")
            print("\n".join(targets))
        print(
            f"\n{len(drift_grid)} drift rows x {args.campaigns} campaigns in "
            f"{time.perf_counter() - t1:.0f} s"
        )
    if pool is not None:
        pool.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
