"""runner/control/collector.py ``collect``: what it computes, against references built here.

Each expected value is computed in this file from the definitions in docs/methods.md §3-4.1
with other tools than the collector's: the autocorrelations as direct sums
(``numpy.correlate``, not the collector's FFT), the quantiles with ``scipy.stats.t`` and
``scipy.stats.norm``, the subsession means with ``reshape(...).mean(axis=1)``. On top of
that, simulations whose truth is known (the mean of the generating process, τ of AR(1)
= (1 + φ)/(1 - φ)) check that the intervals cover at their level. All series come from
fixed seeds; noise is 1-3 % of the level, so that no step reaches the level-shift test's
10 % (docs/methods.md §2.1) and the series stay stationary.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pytest
from scipy import signal
from scipy import stats as sps

from benchrun.runner.control.collector import WorkloadStats, collect

# docs/methods.md §3: c = 5 in q_min, Sokal's window 5, 8 to 20 subsessions; the
# collector's one-sided level of the upper bound on τ (runner/control/collector.py TAU_UPPER)
TAU_FACTOR, WINDOW, H_MIN, H_MAX, TAU_UPPER = 5.0, 5.0, 8, 20, 0.8


def _acf(x: np.ndarray) -> np.ndarray:
    """r_0..r_{n-1}: direct sums ``Σ (x_i - m)(x_{i+k} - m) / Σ (x_i - m)²``."""
    d = x - x.mean()
    c = np.correlate(d, d, "full")[x.size - 1 :]
    return c / c[0]


@dataclass(frozen=True)
class Rule:
    """The subsession rule's outcome (docs/methods.md §3, steps 1-5)."""

    q: int
    h: int
    enough: bool
    need: int | None
    tau: float | None


def _rule(x: np.ndarray, c: float, h_min: int = H_MIN, tau_upper: float | None = TAU_UPPER) -> Rule:
    """Steps 1-5 of docs/methods.md §3, written out."""
    n = x.size
    if np.ptp(x) == 0.0:  # deterministic: subsessions of 1 reading, if h_min of them
        return Rule(1, n, True, None, None) if n >= h_min else Rule(1, n, False, h_min, None)
    if n < max(h_min, 3):
        return Rule(1, n, False, max(h_min, 3), None)
    # 1. τ with Sokal's window over lags up to n/2
    taus = 1.0 + 2.0 * np.cumsum(_acf(x)[1 : n // 2 + 1])
    lags = np.arange(1, taus.size + 1)
    closed = np.flatnonzero(lags >= WINDOW * taus)
    m = int(closed[0]) + 1 if closed.size else taus.size
    tau = float(taus[m - 1])
    # 2. q_min from τ, or from its upper bound max(τ, 1)(1 + z sqrt(2(2M + 1)/n))
    tau_q = tau
    if tau_upper is not None:
        tau_q = max(tau, 1.0) * (1.0 + sps.norm.ppf(tau_upper) * math.sqrt(2 * (2 * m + 1) / n))
    q_min = 1 if tau_q <= 1.0 else 1 + math.ceil(TAU_FACTOR * (tau_q - 1.0) - 1e-9)
    if not closed.size:
        return Rule(q_min, n // q_min, False, max(h_min * q_min, 2 * n, n + 1), tau)
    # 3. at most max(20, n^(1/3)) subsessions
    q = max(q_min, math.ceil(n / max(H_MAX, math.floor(n ** (1 / 3) + 1e-9))))
    if n // q < h_min:
        return Rule(q_min, n // q_min, False, max(h_min * q_min, n + 1), tau)
    # 4. double q while the lag-1 r of the means exceeds -1/h + z_{(1+c)/2}/sqrt(h)
    z = sps.norm.ppf(0.5 + c / 2.0)
    while True:
        h = n // q
        b = x[: h * q].reshape(h, q).mean(axis=1) - x[: h * q].reshape(h, q).mean()
        r1 = float(np.dot(b[:-1], b[1:]) / np.dot(b, b)) if np.dot(b, b) > 0 else None
        if r1 is None or r1 <= -1.0 / h + z / math.sqrt(h):
            return Rule(q, h, True, None, tau)
        if n // (2 * q) < h_min:
            return Rule(q, n // q, False, max(h_min * 2 * q, n + 1), tau)
        q *= 2


def _t_half(values: np.ndarray, c: float) -> float:
    """Half-width of scipy's Student t interval of the mean of ``values``."""
    if np.ptp(values) == 0.0:
        return 0.0
    lo, hi = sps.t.interval(c, values.size - 1, loc=0.0, scale=sps.sem(values))
    return float(hi - lo) / 2.0


def _means(x: np.ndarray, q: int) -> np.ndarray:
    h = x.size // q
    return x[: h * q].reshape(h, q).mean(axis=1)


@dataclass(frozen=True)
class Expected:
    """What ``collect`` must return (the fields it computes)."""

    rule: Rule
    mean: float
    q: int
    n_q: int
    s2_q: float | None
    half: float | None  # certified CI's half-width
    interval_half: float | None  # the printed interval's (certified or not)
    tau_bound: float | None
    rounds_needed: int | None
    coarse: tuple[float, float, int] | None  # (mean_2q, s2_2q, n_2q)


def _geyer_tau(x: np.ndarray) -> float:
    """Geyer's initial positive sequence: -1 + 2 Σ_m (r_2m + r_2m+1) while the pair sums
    stay > 0 (docs/methods.md §4.1)."""
    r = _acf(x)
    total = 0.0
    for m in range(x.size // 2):
        pair = r[2 * m] + r[2 * m + 1]
        if pair <= 0.0:
            break
        total += pair
    return -1.0 + 2.0 * total


def _expected(rounds: list[np.ndarray], c: float = 0.95, ci_2q: bool = True) -> Expected:
    """``collect(rounds, warmup="none", confidence=c, ci_2q=ci_2q)`` from the definitions."""
    x = np.concatenate(rounds)
    n = x.size
    several = any(r.size > 1 for r in rounds)
    round_means = np.array([r.mean() for r in rounds]) if several else None
    rule = _rule(x, c)
    if not rule.enough:
        assert rule.need is not None
        more = max(1, math.ceil((rule.need - n) / (n / len(rounds))))
        if n < 3:
            return Expected(rule, x.mean(), rule.q, rule.h, None, None, None, None, more, None)
        s = x.std(ddof=1)
        big_t = max(_geyer_tau(x), 1.0) if s > 0 else 1.0
        df = max(n / big_t - 1.0, 1.0)
        half_u = sps.t.ppf(0.5 + c / 2.0, df) * s * math.sqrt(big_t / n)
        if round_means is not None and round_means.size >= 2:
            half_r = _t_half(round_means, c)
            if half_r > half_u:  # widened to the round means' t interval, tau_bound raised
                r = round_means.size
                big_t = max(big_t, n * (round_means.var(ddof=1) / r) / s**2)
                half_u = half_r
        return Expected(rule, x.mean(), rule.q, rule.h, None, None, half_u, big_t, more, None)
    b = _means(x, rule.q)
    mean, s2 = float(b.mean()), float(b.var(ddof=1)) if b.size >= 2 else 0.0
    half = _t_half(b, c)
    coarse = None
    if n // (2 * rule.q) >= 4:
        b2 = _means(x, 2 * rule.q)
        coarse = (float(b2.mean()), float(b2.var(ddof=1)), b2.size)
        if ci_2q and s2 > 0.0:
            # the smallest interval around the mean that holds the interval at 2q too
            half = max(half, abs(b2.mean() - mean) + _t_half(b2, c))
    q, h = rule.q, rule.h
    if round_means is not None and round_means.size >= 2 and _t_half(round_means, c) > half:
        r = round_means.size
        mean, q, h, s2 = float(round_means.mean()), max(1, n // r), r, round_means.var(ddof=1)
        half = _t_half(round_means, c)
        coarse = None
        if r // 2 >= 4:
            m2 = _means(round_means, 2)
            coarse = (float(m2.mean()), float(m2.var(ddof=1)), m2.size)
    return Expected(rule, mean, q, h, s2, half, half, None, None, coarse)


def _check(got: WorkloadStats, want: Expected, rel: float = 1e-9) -> None:
    """Every computed field of ``got`` against ``want``."""
    assert (got.q, got.n_q, got.enough, got.certified) == (
        want.q,
        want.n_q,
        want.rule.enough,
        want.rule.enough,
    )
    assert got.readings_needed == want.rule.need
    assert got.rounds_needed == want.rounds_needed
    assert got.mean == pytest.approx(want.mean, rel=1e-12)
    if want.rule.tau is None:
        assert got.tau is None
    else:
        assert got.tau == pytest.approx(want.rule.tau, rel=1e-9, abs=1e-12)
        assert got.ess == pytest.approx(got.n / max(want.rule.tau, 1.0 / got.n), rel=1e-9)
    if want.half is None:
        assert (got.ci_low, got.ci_high, got.s2_q) == (None, None, None)
    else:
        assert got.s2_q == pytest.approx(want.s2_q, rel=rel, abs=1e-300)
        assert got.ci_low == pytest.approx(want.mean - want.half, rel=rel)
        assert got.ci_high == pytest.approx(want.mean + want.half, rel=rel)
        if want.mean != 0.0:
            assert got.rel_half_width == pytest.approx(want.half / abs(want.mean), rel=rel)
    if want.interval_half is None:
        assert (got.interval_low, got.interval_high) == (None, None)
    else:
        assert got.interval_low is not None and got.interval_high is not None
        assert (got.interval_high - got.interval_low) / 2 == pytest.approx(
            want.interval_half, rel=rel, abs=1e-12 * abs(want.mean)
        )
    if want.tau_bound is not None:
        assert got.tau_bound == pytest.approx(want.tau_bound, rel=rel)
    if want.rule.enough:
        if want.coarse is None:
            assert (got.mean_2q, got.s2_2q, got.n_2q) == (None, None, None)
        else:
            assert got.n_2q == want.coarse[2]
            assert got.mean_2q == pytest.approx(want.coarse[0], rel=1e-12)
            assert got.s2_2q == pytest.approx(want.coarse[1], rel=rel, abs=1e-300)


def _series(kind: str, n: int, seed: int) -> np.ndarray:
    """A seeded series around 10 (noise 1-3 % of the level)."""
    rng = np.random.default_rng(seed)
    e = rng.standard_normal(n)
    if kind == "iid":
        return 10.0 + 0.1 * e
    if kind == "lognormal":
        return 10.0 * np.exp(0.02 * e)
    if kind == "constant":
        return np.full(n, 10.0)
    if kind == "drift":  # one slow cycle of 0.2 %: the subsession means stay correlated
        return 10.0 + 0.1 * e + 0.02 * np.sin(2 * np.pi * np.arange(n) / n)
    phi = {"ar05": 0.5, "ar09": 0.9}[kind]
    return 10.0 + 0.05 * signal.lfilter([1.0], [1.0, -phi], e)


KINDS = ("iid", "lognormal", "ar05", "ar09", "drift", "constant")
SIZES = (2, 3, 7, 12, 40, 90, 250, 1200, 4000)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("confidence", (0.95, 0.9))
def test_one_reading_per_round_is_the_documented_interval(kind: str, confidence: float) -> None:
    """One value per round (time metrics): the subsession rule, the t interval over the
    subsession means widened to hold the 2q interval, or the uncertified interval."""
    for i, n in enumerate(SIZES):
        x = _series(kind, n, 10 * i + (confidence == 0.9))
        got = collect(x[:, None], warmup="none", confidence=confidence)
        assert got.level_shift_at is None and got.series == "rounds" and got.n == n
        _check(got, _expected([np.array([v]) for v in x], confidence))
        # the same as lists of one reading, and without the 2q envelope
        _check(collect([[float(v)] for v in x], warmup="none", confidence=confidence),
               _expected([np.array([v]) for v in x], confidence))  # fmt: skip
        plain = collect(x[:, None], warmup="none", confidence=confidence, ci_2q=False)
        _check(plain, _expected([np.array([v]) for v in x], confidence, ci_2q=False))


@pytest.mark.parametrize("kind", ("iid", "ar05", "lognormal"))
@pytest.mark.parametrize("per", (2, 5, 25))
def test_several_readings_per_round(kind: str, per: int) -> None:
    """Rounds of several readings: the readings joined, and the rounds as subsessions
    when their t interval is wider (process-to-process variation, added here to half of
    the cases)."""
    for i, r in enumerate((1, 3, 9, 30, 120)):
        x = _series(kind, r * per, 100 + i)
        block = x.reshape(r, per)
        if i % 2:
            block = block + 0.2 * np.random.default_rng(i).standard_normal((r, 1))
        want = _expected(list(block))
        _check(collect(block, warmup="none"), want)
        _check(collect(block.tolist(), warmup="none"), want)


def test_ragged_rounds_and_rounds_without_readings() -> None:
    """Rounds of different lengths (the list path), empty rounds left out."""
    rng = np.random.default_rng(5)
    for k, size in enumerate((20, 150, 900)):
        x = _series("ar05", size, 200 + k)
        cuts = np.cumsum(rng.integers(1, 9, size=size))
        parts = [p for p in np.split(x, cuts[cuts < size]) if p.size]
        rounds = [list(p) for p in parts] + [[]]
        got = collect(rounds, warmup="none")
        assert got.rounds == len(parts) and got.n == size
        assert "1 round(s) without readings ignored" in got.notes
        _check(got, _expected(parts))


def test_work_amounts_divide_each_round() -> None:
    """``per_work``: each round's readings over its work amount, then as above."""
    x = _series("iid", 600, 7).reshape(60, 10)
    work = 1.0 + np.arange(60) % 3
    got = collect(x * work[:, None], per_work=list(work), warmup="none")
    _check(got, _expected(list(x)))
    y = _series("lognormal", 300, 8)
    w = 2.0 + np.arange(300) % 2
    _check(collect((y * w)[:, None], per_work=list(w), warmup="none"),
           _expected([np.array([v]) for v in y]))  # fmt: skip


def test_equal_readings_within_rounds_that_differ_get_the_round_means_ci() -> None:
    """Readings all equal within each round, rounds of different work: the CI is the
    Student t interval over the round means (scipy), no ZeroDivisionError."""
    work = [2.0, 3.0] * 10
    rounds = [[6.0] * 5 for _ in work]  # per work: 3.0 and 2.0 alternately
    got = collect(rounds, per_work=work, warmup="none")
    means = np.array([6.0 / w for w in work])
    lo, hi = sps.t.interval(0.95, means.size - 1, loc=means.mean(), scale=sps.sem(means))
    assert got.mean == pytest.approx(means.mean(), rel=1e-12)
    assert (got.ci_low, got.ci_high) == (pytest.approx(lo, rel=1e-9), pytest.approx(hi, rel=1e-9))
    assert (got.q, got.n_q) == (5, 20)


def test_a_growing_series_as_the_adaptive_loop_collects_it() -> None:
    """collect after every round of one series (the adaptive loop's pattern): each call is
    the documented result for the rounds so far."""
    x = _series("ar05", 240, 9)
    for k in range(0, 241, 4):
        if k == 0:
            empty = collect([])
            assert (empty.rounds, empty.mean, empty.enough) == (0, None, False)
            assert (empty.readings_needed, empty.rounds_needed) == (8, 8)
            continue
        _check(collect(x[:k, None], warmup="none"), _expected([np.array([v]) for v in x[:k]]))


def test_fewer_subsessions_allowed_and_no_upper_bound_on_tau() -> None:
    """``min_subsessions`` and ``tau_upper=None`` change the rule as documented."""
    for n in (40, 100, 400):
        x = _series("iid", n, 300 + n)
        got = collect(x[:, None], warmup="none", min_subsessions=12)
        want = _rule(x, 0.95, h_min=12)
        assert (got.q, got.n_q, got.enough, got.readings_needed) == (
            want.q, want.h, want.enough, want.need,
        )  # fmt: skip
        loose = collect(x[:, None], warmup="none", tau_upper=None)
        want = _rule(x, 0.95, tau_upper=None)
        assert (loose.q, loose.n_q, loose.enough) == (want.q, want.h, want.enough)
    # independent readings: without the bound 8 subsessions of 1 reading suffice, with it
    # (τ̂ <= 1 but its bound > 1) about 50 readings are needed (docs/methods.md §3)
    x = _series("iid", 24, 11)
    assert collect(x[:, None], warmup="none", tau_upper=None).enough
    assert not collect(x[:, None], warmup="none").enough


def test_a_constant_series_has_a_zero_width_ci() -> None:
    got = collect([[3.5]] * 12, warmup="none")
    assert (got.mean, got.q, got.n_q, got.s2_q) == (3.5, 1, 12, 0.0)
    assert (got.ci_low, got.ci_high, got.enough, got.certified) == (3.5, 3.5, True, True)


def test_tau_of_ar1_is_the_closed_form() -> None:
    """AR(1) with φ: τ = (1 + φ)/(1 - φ) (3 for φ 0.5, 19 for 0.9); 20 000 rounds give it
    within 10 %."""
    for phi, seed in ((0.5, 1), (0.9, 2)):
        e = np.random.default_rng(seed).standard_normal(20_000)
        x = 10.0 + 0.05 * signal.lfilter([1.0], [1.0, -phi], e)
        got = collect(x[:, None], warmup="none")
        assert got.tau == pytest.approx((1 + phi) / (1 - phi), rel=0.10)
        assert got.ess == pytest.approx(20_000 / got.tau, rel=1e-12)
        assert got.enough and got.q >= 1 + math.ceil(5 * (got.tau - 1) - 1e-9)


def _coverage(phi: float, n: int, reps: int, seed: int) -> tuple[float, int]:
    """(share of the certified CIs that hold the true mean 10, certified runs) over ``reps``
    AR(1) series of ``n`` rounds, generated in one call (rows of ``lfilter``)."""
    burn = 200  # φ^200: the start is forgotten, so each row's mean is 10 throughout
    e = np.random.default_rng(seed).standard_normal((reps, n + burn))
    x = (10.0 + 0.05 * signal.lfilter([1.0], [1.0, -phi], e, axis=1))[:, burn:]
    held = certified = 0
    for row in x:
        s = collect(row[:, None], warmup="none")
        if s.enough:
            certified += 1
            held += s.ci_low <= 10.0 <= s.ci_high
    return held / certified, certified


@pytest.mark.parametrize(("phi", "n"), [(0.0, 200), (0.5, 600)])
def test_certified_intervals_cover_the_known_mean(phi: float, n: int) -> None:
    """Known truth: the generating process's mean, 10. 1 500 runs of i.i.d. rounds and of
    AR(1) φ 0.5 rounds (τ = 3): the 95 % CIs hold it in at least 0.933 of them (3
    binomial SEs, 0.017, below 0.95), and in at most 0.99 (the 2q envelope widens, it
    must not make the interval useless)."""
    cover, certified = _coverage(phi, n, 1500, seed=41 + int(10 * phi))
    assert certified >= 1400
    assert 0.933 <= cover <= 0.99


def test_the_lag1_check_doubles_q_on_a_slow_drift() -> None:
    """A slow cycle under the noise: at 250 rounds the means of 13 rounds are still
    correlated and q doubles to 26; at 1 200 rounds doubling 120 would leave fewer than 8
    subsessions: not enough, 8 subsessions of 240 wanted."""
    x = _series("drift", 250, 10)
    got = collect(x[:, None], warmup="none")
    assert any("doubled q" in note for note in got.notes)
    want = _rule(x, 0.95)
    assert (got.q, got.n_q, got.enough) == (want.q, want.h, want.enough) == (26, 9, True)
    _check(got, _expected([np.array([v]) for v in x]))
    y = _series("drift", 1200, 2)
    long = collect(y[:, None], warmup="none")
    assert any("still correlated" in note for note in long.notes)
    assert (long.enough, long.q, long.readings_needed) == (False, 120, 8 * 240)
    _check(long, _expected([np.array([v]) for v in y]))


@pytest.mark.parametrize("kind", ("iid", "ar05", "ar09", "lognormal"))
def test_the_default_warmup_detection_then_the_same_interval(kind: str) -> None:
    """With ``warmup="mser5"`` (the default) the result is the documented one over the
    readings kept: the first ``warmup_readings`` rounds (one reading each) or readings of
    every round (several) left out. A transient of known length planted in half of the
    series must be cut at least that far (the planted rounds are 30 % slower)."""
    for i, n in enumerate((40, 200, 1000)):
        x = _series(kind, n, 400 + i)
        if i % 2:
            x[:20] *= 1.3
        got = collect(x[:, None])
        w = got.warmup_readings
        assert w >= (20 if i % 2 else 0) and got.level_shift_at is None
        _check(got, _expected([np.array([v]) for v in x[w:]]))
    for i, r in enumerate((12, 60, 300)):
        block = _series(kind, 20 * r, 500 + i).reshape(r, 20)
        if i % 2:
            block[:, :5] *= 1.3
        got = collect(block)
        d = got.warmup_readings // r
        assert d * r == got.warmup_readings and d >= (5 if i % 2 else 0)
        _check(got, _expected(list(block[:, d:])))
