"""A workload's own CI: rounds to ``ci_rel_width`` against a fixed-n oracle (issue 28, item 8).

The audit of benchmarks/efficiency.py for the rule that stops a workload compared with
nothing: its own CI is certified (the subsession rule trusts it) and its half-width is at
most ``ci_rel_width`` of its mean (``ControllerCore.width_ok``: ``WorkloadStats.rel_half_width
= half-width / |mean|``, docs/controller.md "The stopping rule"). Drives the REAL decision
logic as runner/campaign/adaptive.py drives it for one workload: one round per pass with
one reading, then :func:`runner.control.collector.collect` on the series so far (warm-up
``mser5``, direction ``lower_is_better``) and :meth:`Controller.decide`, after EVERY round
(the width rule can stop the campaign at any round, so nothing is skipped). The data are
synthetic per-round values with true mean μ = 1, no processes.

Rows (the series of values; σ = marginal sd):

- ``normal``: iid normal, ``1 + σ·Z``.
- ``t3``: iid Student t with 3 df scaled to sd σ, ``1 + σ·T/√3``.
- ``lognormal``: iid ``exp(s·Z - s²/2)`` with ``s² = ln(1 + σ²)`` (mean 1, sd σ; skewed).
- ``ar1-0.3``, ``ar1-0.7``: ``1 + σ·u`` with u a stationary AR(1) of unit variance and φ
  0.3 or 0.7 (τ = (1+φ)/(1-φ) = 1.86 or 5.67 rounds).

**Oracle**: the fixed number of rounds an oracle that knows the long-run sd
``σ_lr = σ·√τ`` (τ = 1 for the iid rows) needs for a normal-theory CI of the mean at the
campaign's ``confidence`` to have half-width ``ci_rel_width·μ``:
``n* = (z_{(1+c)/2}·σ_lr/(w·μ))²``. Effects ``n50``, ``n200``, ``n600`` choose σ so that
n* is 50, 200, 600 rounds: ``σ_lr = w·μ·√N / z``, σ = σ_lr/√τ (for w = 0.05 at c = 0.95,
σ_lr = 0.18, 0.36, 0.62: the normal and t3 rows of ``n600`` have a few values below 0,
which the statistics do not mind).

Columns: **cv** = σ/μ; **rounds/oracle** median (p90) over campaigns; **cov** = CIs at
the stop that contain μ, in %, with its binomial SE (campaigns without a CI left out);
**no CI** = campaigns that stopped (at the budget) without a certified CI; **undec** =
campaigns stopped by the budget ``max_rounds`` (the conditions unmet); **rounds** median
(p90) at the stop; **certified at** median (p90) of the round at which the series was first
certified (``WorkloadStats.enough``); **stop = cert** = campaigns that stopped at the
first round certified (the certification floor, not the width, set their length);
**fixed n\\***: the collector's CI on the first ceil(n*) rounds of the same series (no
sequential stopping): its coverage, its share without a CI, and the median of its
half-width / (w·μ) (above 1: the CI itself is wider than the oracle's at n*, from the t
quantile over few subsession means and the q/2q envelope).

Settings: :meth:`ControllerParams.from_settings` on the experiment file's defaults
(``confidence`` 0.95) with ``ci_rel_width`` 0.05 (``--width``), ``max_rounds`` 10 000, no
time budget, then every ``--set key=value`` (benchmarks/efficiency.py's ``parse_sets``).
Campaign c of a row and effect is seeded by (seed, row, effect, c), so ``--jobs`` does not
change the figures.

    python benchmarks/own_ci_efficiency.py [--campaigns 200] [--seed 1] [--jobs 2]
        [--only normal,ar1-0.7] [--effects n50,n200,n600] [--width 0.05]
        [--set max_rounds=20000] [--json]
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import math
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np
from scipy.special import ndtri

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from efficiency import _ar1, _pct, parse_sets  # noqa: E402

from benchrun.runner.config.experiment import Settings  # noqa: E402
from benchrun.runner.control.collector import WorkloadStats, collect  # noqa: E402
from benchrun.runner.control.controller import Controller, ControllerParams  # noqa: E402
from benchrun.runner.errors import UserError  # noqa: E402

MU = 1.0
#: this benchmark's settings on top of the experiment file's defaults (module docstring)
DEFAULTS: dict[str, Any] = {"ci_rel_width": 0.05, "max_rounds": 10_000, "max_time": None}
EFFECTS = ("n50", "n200", "n600")
NAME = "w"
DIRECTION = "lower_is_better"


# ----------------------------------------------------------------------------- truth
def oracle_rounds(sigma_lr: float, mu: float, width: float, confidence: float) -> float:
    """Fixed rounds for a normal CI of the mean, σ_lr known, to have half-width w·μ.

    ``(z_{(1+c)/2}·σ_lr/(w·|μ|))²`` (module docstring).

    >>> round(oracle_rounds(0.3, 1.0, 0.05, 0.95))
    138
    """
    if not (sigma_lr > 0 and mu != 0 and width > 0 and 0 < confidence < 1):
        raise ValueError("need sigma_lr > 0, mu != 0, width > 0 and 0 < confidence < 1")
    z = float(ndtri((1 + confidence) / 2))
    return (z * sigma_lr / (width * abs(mu))) ** 2


def effect_sigma_lr(effect: str, mu: float, width: float, confidence: float) -> float:
    """Long-run sd whose oracle is N rounds for an effect ``n<N>``.

    >>> round(effect_sigma_lr("n600", 1.0, 0.05, 0.95), 4)
    0.6249
    """
    if effect.startswith("n") and effect[1:].isdigit() and int(effect[1:]) > 0:
        z = float(ndtri((1 + confidence) / 2))
        return width * abs(mu) * math.sqrt(int(effect[1:])) / z
    raise ValueError(f"unknown effect {effect!r} (n<rounds>, e.g. n200)")


# ----------------------------------------------------------------------------- rows
@dataclass(frozen=True)
class Row:
    """A series model: ``make(n, rng, sigma)`` -> n values with mean μ and marginal sd σ;
    ``tau`` the ratio of the long-run variance to σ² (1 for iid)."""

    name: str
    label: str
    make: Callable[[int, np.random.Generator, float], np.ndarray]
    tau: float


def _lognormal(n: int, rng: np.random.Generator, sigma: float) -> np.ndarray:
    s = math.sqrt(math.log1p((sigma / MU) ** 2))
    return np.asarray(MU * np.exp(s * rng.standard_normal(n) - s * s / 2))


def _ar_row(phi: float) -> Row:
    def make(n: int, rng: np.random.Generator, sigma: float) -> np.ndarray:
        return np.asarray(MU + sigma * _ar1(phi, n, rng))

    return Row(f"ar1-{phi}", f"AR(1) φ {phi}", make, (1 + phi) / (1 - phi))


ROWS: dict[str, Row] = {
    r.name: r
    for r in (
        Row("normal", "iid normal", lambda n, g, s: MU + s * g.standard_normal(n), 1.0),
        Row("t3", "iid t(3)", lambda n, g, s: MU + s * g.standard_t(3, n) / math.sqrt(3), 1.0),
        Row("lognormal", "iid lognormal (mean 1)", _lognormal, 1.0),
        _ar_row(0.3),
        _ar_row(0.7),
    )
}


# ----------------------------------------------------------------------------- one campaign
@dataclass(frozen=True)
class Outcome:
    """One campaign: rounds at the stop, the first round certified (None: never), the CI
    at the stop (None: not certified), whether the conditions were met (else: budget)."""

    rounds: int
    first_enough: int | None
    ci_low: float | None
    ci_high: float | None
    met: bool


def _collect(x: np.ndarray, params: ControllerParams) -> WorkloadStats:
    """The collector as the campaign loop calls it on one-reading rounds."""
    return collect(
        cast("Sequence[Sequence[float]]", x),  # an (n, 1) array: collect's fast path
        confidence=params.confidence,
        min_subsessions=params.min_subsessions,
        direction=DIRECTION,
    )


def run_campaign(x: np.ndarray, params: ControllerParams) -> Outcome:
    """Drive the controller over the values ``x`` (one per round) until it stops.

    After every round: collect on the rounds so far, then decide (module docstring).
    """
    ctrl = Controller(params, [(NAME, DIRECTION)])
    col = np.asarray(x, dtype=float).reshape(-1, 1)
    first: int | None = None
    for r in range(1, col.shape[0] + 1):
        s = _collect(col[:r], params)
        if first is None and s.enough:
            first = r
        d = ctrl.decide({NAME: s}, {NAME: r}, 0.0)
        if d.stop:
            return Outcome(r, first, s.ci_low, s.ci_high, d.met)
    raise RuntimeError(f"the controller did not stop within {col.shape[0]} rounds")


@dataclass(frozen=True)
class Job:
    """What a worker needs for campaign ``c`` of one row and effect."""

    row: str
    effect: str
    sigma: float
    params: ControllerParams
    seed: int


def campaign_data(job: Job, c: int) -> np.ndarray:
    """The values of campaign ``c`` (seeded by seed, row, effect and c), max_rounds long."""
    key = [job.seed, list(ROWS).index(job.row), _effect_key(job.effect), c]
    return ROWS[job.row].make(job.params.max_rounds, np.random.default_rng(key), job.sigma)


def _effect_key(effect: str) -> int:
    return EFFECTS.index(effect) if effect in EFFECTS else 100 + sum(map(ord, effect))


def one(job: Job, fixed_n: int, c: int) -> tuple[Outcome, tuple[float | None, float | None]]:
    """Campaign ``c``, and the collector's CI on its first ``fixed_n`` rounds."""
    x = campaign_data(job, c)
    s = _collect(x[:fixed_n, None], job.params)
    return run_campaign(x, job.params), (s.ci_low, s.ci_high)


# ----------------------------------------------------------------------------- a row's figures
def _covers(lo: float | None, hi: float | None, mu: float) -> bool | None:
    return None if lo is None or hi is None else lo <= mu <= hi


def summarise(
    outs: Sequence[Outcome],
    fixed: Sequence[tuple[float | None, float | None]],
    oracle: float,
    mu: float,
    width: float,
) -> dict[str, Any]:
    """The table's figures for one row and effect (module docstring)."""
    n = len(outs)
    rounds = np.array([o.rounds for o in outs], dtype=float)
    hit = [_covers(o.ci_low, o.ci_high, mu) for o in outs]
    cis = np.array([h for h in hit if h is not None], dtype=float)
    cov = float(cis.mean()) if cis.size else float("nan")
    cert = np.array([o.first_enough for o in outs if o.first_enough is not None], dtype=float)
    fhit = np.array([h for lo, hi in fixed if (h := _covers(lo, hi, mu)) is not None], float)
    fhalf = np.array(
        [(hi - lo) / 2 / (width * abs(mu)) for lo, hi in fixed if lo is not None and hi is not None]
    )
    return {
        "campaigns": n,
        "oracle": oracle,
        "rounds_median": float(np.median(rounds)),
        "rounds_p90": float(np.quantile(rounds, 0.9)),
        "ratio_median": float(np.median(rounds / oracle)),
        "ratio_p90": float(np.quantile(rounds / oracle, 0.9)),
        "coverage": cov,
        "coverage_se": math.sqrt(cov * (1 - cov) / cis.size) if cis.size else float("nan"),
        "no_ci": 1 - cis.size / n,
        "undecided": float(np.mean([not o.met for o in outs])),
        "certified_median": float(np.median(cert)) if cert.size else float("nan"),
        "certified_p90": float(np.quantile(cert, 0.9)) if cert.size else float("nan"),
        "never_certified": 1 - cert.size / n,
        "stop_at_certification": float(np.mean([o.rounds == o.first_enough for o in outs])),
        "fixed_n": math.ceil(oracle),
        "fixed_coverage": float(fhit.mean()) if fhit.size else float("nan"),
        "fixed_no_ci": 1 - fhit.size / n,
        "fixed_half_over_target": float(np.median(fhalf)) if fhalf.size else float("nan"),
    }


def simulate(
    row: str,
    effect: str,
    params: ControllerParams,
    campaigns: int,
    seed: int = 1,
    pool: ProcessPoolExecutor | None = None,
) -> dict[str, Any]:
    """``campaigns`` campaigns of one row and effect: :func:`summarise`'s figures plus
    ``row``, ``effect``, ``sigma`` (marginal sd), ``sigma_lr``, ``cv`` and ``seconds``."""
    t0 = time.perf_counter()
    width = params.ci_rel_width
    if width is None:
        raise ValueError("this benchmark needs ci_rel_width (a number, not null)")
    sigma_lr = effect_sigma_lr(effect, MU, width, params.confidence)
    sigma = sigma_lr / math.sqrt(ROWS[row].tau)
    oracle = oracle_rounds(sigma_lr, MU, width, params.confidence)
    job = Job(row, effect, sigma, params, seed)
    fixed_n = min(math.ceil(oracle), params.max_rounds)
    fn = functools.partial(one, job, fixed_n)
    if pool is None:
        got = [fn(c) for c in range(campaigns)]
    else:
        got = list(pool.map(fn, range(campaigns), chunksize=max(1, campaigns // 16)))
    out: dict[str, Any] = {
        "row": row,
        "effect": effect,
        "sigma": sigma,
        "sigma_lr": sigma_lr,
        "cv": sigma / MU,
    }
    out.update(summarise([g[0] for g in got], [g[1] for g in got], oracle, MU, width))
    out["seconds"] = time.perf_counter() - t0
    return out


# ----------------------------------------------------------------------------- settings, CLI
def make_params(sets: Mapping[str, Any], width: float | None = None) -> ControllerParams:
    """The benchmark's ControllerParams: the file defaults, DEFAULTS, ``--width``, ``--set``."""
    over = dict(DEFAULTS)
    if width is not None:
        over["ci_rel_width"] = width
    over.update(sets)
    try:
        params = ControllerParams.from_settings(Settings(), **over)
    except UserError as exc:
        raise ValueError(str(exc)) from None
    if params.ci_rel_width is None:
        raise ValueError("ci_rel_width: this benchmark measures the width rule; give a number")
    return params


HEADER = (
    "| row | effect | cv | oracle n* | rounds/oracle median (p90) | cov % (SE) | no CI % "
    "| undec % | rounds median (p90) | certified at median (p90) | stop = cert % "
    "| fixed n*: cov % (no CI %) | fixed n*: half-width/target |"
)


def markdown(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The results as a markdown table, one line per row and effect."""
    lines = [HEADER, "|" + "---|" * (HEADER.count(" | ") + 1)]
    for r in rows:
        lines.append(
            f"| {r['row']} | {r['effect']} | {r['cv']:.3f} | {r['oracle']:.0f} "
            f"| {r['ratio_median']:.2f} ({r['ratio_p90']:.2f}) "
            f"| {_pct(r['coverage'])} ({_pct(r['coverage_se'])}) | {_pct(r['no_ci'])} "
            f"| {_pct(r['undecided'])} | {r['rounds_median']:.0f} ({r['rounds_p90']:.0f}) "
            f"| {r['certified_median']:.0f} ({r['certified_p90']:.0f}) "
            f"| {_pct(r['stop_at_certification'])} "
            f"| {_pct(r['fixed_coverage'])} ({_pct(r['fixed_no_ci'])}) "
            f"| {r['fixed_half_over_target']:.2f} |"
        )
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--campaigns", type=int, default=200, help="campaigns per row and effect")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=2, help="processes (1: in this one)")
    ap.add_argument("--only", default=None, help=f"rows, comma-separated ({', '.join(ROWS)})")
    ap.add_argument(
        "--effects", default=None, help=f"effects, comma-separated (default {','.join(EFFECTS)})"
    )
    ap.add_argument(
        "--width", type=float, default=None, help=f"ci_rel_width ({DEFAULTS['ci_rel_width']})"
    )
    ap.add_argument(
        "--set",
        dest="sets",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a controller setting (ControllerParams field; repeatable), e.g. max_rounds=20000",
    )
    ap.add_argument("--json", action="store_true", help="JSON instead of the markdown table")
    args = ap.parse_args(argv)
    try:
        sets = parse_sets(args.sets)
        params = make_params(sets, args.width)
    except ValueError as exc:
        ap.error(str(exc))
    if args.campaigns < 1 or args.jobs < 1:
        ap.error("--campaigns and --jobs must be >= 1")
    rows = list(ROWS) if args.only is None else [x.strip() for x in args.only.split(",")]
    if bad := [r for r in rows if r not in ROWS]:
        ap.error(f"--only: unknown rows {bad} (known: {', '.join(ROWS)})")
    effects = (
        list(EFFECTS) if args.effects is None else [e.strip() for e in args.effects.split(",")]
    )
    for name in effects:
        try:
            effect_sigma_lr(name, MU, 0.05, 0.95)
        except ValueError as err:
            ap.error(f"--effects: {err}")
    pool = ProcessPoolExecutor(args.jobs) if args.jobs > 1 else None
    t0 = time.perf_counter()
    results = []
    try:
        if not args.json:
            print(
                f"{args.campaigns} campaigns per line, seed {args.seed}, mu {MU}; confidence "
                f"{params.confidence}, ci_rel_width {params.ci_rel_width}, max_rounds "
                f"{params.max_rounds}, min_rounds {params.min_rounds}, min_subsessions "
                f"{params.min_subsessions}" + "".join(f", {k} {v}" for k, v in sets.items()) + "\n"
            )
            print("\n".join(markdown([])))
        for r in rows:
            for effect in effects:
                res = simulate(r, effect, params, args.campaigns, args.seed, pool)
                results.append(res)
                if not args.json:
                    print(markdown([res])[2], flush=True)
    finally:
        if pool is not None:
            pool.shutdown()
    total = time.perf_counter() - t0
    if args.json:
        print(json.dumps({"params": dataclasses.asdict(params), "rows": results,
                          "seconds": total}, indent=1))  # fmt: skip
    else:
        print(f"\n{len(results)} lines x {args.campaigns} campaigns in {total:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
