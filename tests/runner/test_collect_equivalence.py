"""collect, subsession_size and uncertified_mean_ci give the same results as before their
speed-up (the collector's cost per call, docs/testing.md).

Reference: a frozen copy of the implementation as of commit d037409 (below, docstrings
removed), run on the same seeded series: i.i.d. normal, AR(1) with φ 0.5 and 0.9, a drift,
a constant series, n from 3 to 5 000, one or several readings per round, ragged rounds,
work amounts, and every option of ``collect``. The new code must match it bit for bit
(``==`` on every field, notes included). benchmarks/collect_speed.py times both.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import astuple, replace
from typing import Any, Literal

import numpy as np
import pytest
from scipy import fft, signal, stats
from scipy.special import stdtrit

from benchrun.runner.control.collector import WorkloadStats, collect
from benchrun.stats.autocorr import SubsessionChoice, subsession_size
from benchrun.stats.intervals import as_series, check_confidence, normal_quantile
from benchrun.stats.uncertified import UncertifiedInterval, uncertified_mean_ci
from benchrun.stats.warmup import mser5, mser5_at_limit

# ---------------------------------------------------------------------------------------
# Frozen copy of the old implementation (stats/autocorr.py, stats/uncertified.py,
# runner/control/collector.py at d037409): the independent reference for equivalence.
# ---------------------------------------------------------------------------------------

TAU_FACTOR = 5.0
SOKAL_WINDOW = 5.0
MIN_SUBSESSIONS = 8
MAX_SUBSESSIONS = 20
MIN_READINGS = 3
WARMUP_ALPHA = 0.01
TAU_UPPER = 0.8
MSER_MIN_READINGS = 20
ROUNDS_WARMUP_ALPHA = 0.001
Warmup = Literal["mser5", "none"] | int
Coarse = tuple[float | None, float | None, int | None]


def _centre(x: np.ndarray) -> np.ndarray:
    m = float(np.mean(x))
    d = x - m
    return d - float(np.mean(d))


def _acf_centred(d: np.ndarray, max_lag: int) -> np.ndarray:
    n = d.size
    size = fft.next_fast_len(2 * n - 1, real=True)
    f = fft.rfft(d, size)
    c = fft.irfft(f.real * f.real + f.imag * f.imag, size)[: max_lag + 1]
    return c / c[0]


def _sokal(r: np.ndarray, window: float) -> tuple[float, int, bool]:
    lags = r.size - 1
    if lags < 1:
        return 1.0, 0, False
    taus = 1.0 + 2.0 * np.cumsum(r[1:])
    m = np.arange(1, lags + 1)
    ok = np.flatnonzero(m >= window * taus)
    if ok.size:
        i = int(ok[0])
        return float(taus[i]), i + 1, True
    return float(taus[-1]), lags, False


def _lag1_of_means(b: np.ndarray, centre: float) -> float | None:
    d = b - centre
    den = float(np.dot(d, d))
    if b.size < 3 or den == 0.0:
        return None
    return float(np.dot(d[:-1], d[1:]) / den)


def old_subsession_size(
    values: Iterable[float] | np.ndarray,
    confidence: float = 0.95,
    *,
    tau_factor: float = TAU_FACTOR,
    min_subsessions: int = MIN_SUBSESSIONS,
    max_subsessions: int = MAX_SUBSESSIONS,
    window: float = SOKAL_WINDOW,
    tau_upper: float | None = None,
) -> SubsessionChoice:
    c = check_confidence(confidence)
    x = as_series(values)
    n = x.size
    if min_subsessions < 2 or max_subsessions < min_subsessions:
        raise ValueError("need 2 <= min_subsessions <= max_subsessions")
    if tau_factor <= 0 or window <= 0:
        raise ValueError("tau_factor and window must be > 0")
    d = _centre(x)
    if not np.any(d):
        note = "all readings equal: no variation, subsessions of 1 reading"
        return SubsessionChoice(1, n, n, None, None, None, True, None, "deterministic", (note,))
    if n < max(min_subsessions, 3):
        note = (
            f"{n} readings: at least {min_subsessions} are needed to form subsessions and "
            "estimate their correlation"
        )
        need = max(min_subsessions, 3)
        return SubsessionChoice(1, n, n, None, None, None, False, need, "benchrun", (note,))
    notes: list[str] = []
    tau, window_m, converged = _sokal(_acf_centred(d, n // 2), window)
    ess = n / max(tau, 1.0 / n)
    tau_q = tau
    if tau_upper is not None:
        z_u = float(stats.norm.ppf(tau_upper))
        tau_q = max(tau, 1.0) * (1.0 + z_u * math.sqrt(2.0 * (2 * window_m + 1) / n))
    q_min = 1 if tau_q <= 1.0 else 1 + int(math.ceil(tau_factor * (tau_q - 1.0) - 1e-9))

    def refuse(q: int, lag1: float | None, need: int, why: str) -> SubsessionChoice:
        need = max(need, n + 1)
        notes.append(f"not enough data: {why}; about {need} readings needed, have {n}")
        return SubsessionChoice(
            q, n // q, n, lag1, tau, ess, False, need, "benchrun", tuple(notes), q_min
        )

    if not converged:
        return refuse(
            q_min,
            None,
            max(min_subsessions * q_min, 2 * n),
            f"correlation time not measurable in {n} readings (tau >= {tau:.1f})",
        )
    h_max = max(max_subsessions, int(math.floor(n ** (1.0 / 3.0) + 1e-9)))
    q = max(q_min, -(-n // h_max))
    if n // q < min_subsessions:
        h0 = n // q_min
        b = x[: h0 * q_min].reshape(h0, q_min).mean(axis=1)
        lag1 = _lag1_of_means(b, float(b.mean())) if h0 >= 3 else None
        why = f"tau = {tau:.2f} readings needs {min_subsessions} subsessions of {q_min}"
        return refuse(q_min, lag1, min_subsessions * q_min, why)
    z = float(normal_quantile(0.5 + c / 2.0))
    while True:
        h = n // q
        b = x[: h * q].reshape(h, q).mean(axis=1)
        lag1 = _lag1_of_means(b, float(b.mean()))
        limit = -1.0 / h + z / math.sqrt(h)
        if lag1 is None or lag1 <= limit:
            break
        if n // (2 * q) < min_subsessions:
            why = f"subsession means of {q} readings still correlated (lag-1 r = {lag1:.2f})"
            return refuse(q, lag1, min_subsessions * 2 * q, why)
        notes.append(f"lag-1 r = {lag1:.2f} of size-{q} subsession means > {limit:.2f}: doubled q")
        q *= 2
    if q_min > 1 and tau > 1.0:
        notes.append(
            f"readings are autocorrelated (tau = {tau:.2f}): CI over {h} subsession means "
            f"of {q} readings"
        )
    elif q_min > 1:
        # only the upper bound of tau (tau_upper) exceeds 1: the estimate itself does not
        # say the readings are correlated, but it cannot rule it out
        notes.append(
            f"independence not shown (tau = {tau:.2f}, upper bound {tau_q:.2f} > 1): CI over "
            f"{h} subsession means of {q} readings"
        )
    elif q > 1:
        notes.append(
            f"no measurable autocorrelation (tau = {tau:.2f}); CI over {h} subsession means "
            f"of {q} readings, which stays valid if a slow correlation is hidden"
        )
    return SubsessionChoice(q, h, n, lag1, tau, ess, True, None, "benchrun", tuple(notes), q_min)


def _centred(x: np.ndarray) -> np.ndarray:
    d = x - x.mean(axis=-1, keepdims=True)
    return d - d.mean(axis=-1, keepdims=True)


def _ips_tau(d: np.ndarray) -> np.ndarray:
    n = d.shape[-1]
    size = fft.next_fast_len(2 * n - 1, real=True)
    f = fft.rfft(d, size, axis=-1)
    c = fft.irfft(f.real * f.real + f.imag * f.imag, size, axis=-1)[..., :n]
    r = c / c[..., :1]
    pairs = n // 2  # complete pairs (r_{2m}, r_{2m+1}), 2m + 1 <= n - 1
    big = r[..., 0 : 2 * pairs : 2] + r[..., 1 : 2 * pairs : 2]
    initial = np.cumprod(big > 0.0, axis=-1).astype(bool)
    out: np.ndarray = -1.0 + 2.0 * np.sum(np.where(initial, big, 0.0), axis=-1)
    return out


def _intervals(
    x: np.ndarray, confidence: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    n = x.shape[-1]
    d = _centred(x)
    mean = x.mean(axis=-1) + d.mean(axis=-1)
    s = np.sqrt(np.sum(d * d, axis=-1) / (n - 1))
    tau = _ips_tau(d)
    bound = np.maximum(tau, 1.0)
    df = np.maximum(n / bound - 1.0, 1.0)
    p = 0.5 + confidence / 2.0
    half = stdtrit(df, p) * s * np.sqrt(bound / n)
    naive = stdtrit(n - 1, p) * s / math.sqrt(n)
    return mean, half, tau, bound, df, naive


def old_uncertified_mean_ci(
    values: Iterable[float] | np.ndarray, confidence: float = 0.95
) -> UncertifiedInterval:
    c = check_confidence(confidence)
    x = as_series(values)
    n = x.size
    if n < MIN_READINGS:
        raise ValueError(f"an uncertified interval needs at least {MIN_READINGS} readings, got {n}")
    d = _centred(x)
    if not np.any(d):
        m = float(x[0])
        return UncertifiedInterval(m, m, m, c, n, 0.0, None, 1.0, n - 1.0, 0.0, 0.0, None)
    mean, half, tau, bound, df, naive = (float(v[0]) for v in _intervals(x[None, :], c))
    return UncertifiedInterval(
        mean,
        mean - half,
        mean + half,
        c,
        n,
        float(np.sqrt(np.dot(d, d) / (n - 1))),
        tau,
        bound,
        df,
        half,
        naive,
        half / naive,
    )


def _as_rounds(
    rounds: Sequence[Sequence[float]], per_work: Sequence[float] | None, notes: list[str]
) -> np.ndarray | list[np.ndarray]:
    if per_work is not None and len(per_work) != len(rounds):
        raise ValueError(f"per_work has {len(per_work)} entries for {len(rounds)} rounds")
    out: list[np.ndarray] = []
    empty = 0
    if isinstance(rounds, np.ndarray) or (len(rounds) and len({len(r) for r in rounds}) == 1):
        # fast path: rectangular input (every round has the same number of readings)
        try:
            arr = np.asarray(rounds, dtype=np.float64)
        except (TypeError, ValueError):
            arr = None
        if arr is not None and arr.ndim == 2 and arr.shape[1] > 0:
            if not np.all(np.isfinite(arr)):
                i = int(np.argmin(np.all(np.isfinite(arr), axis=1)))
                raise ValueError(f"round {i}: readings contain NaN or infinite values")
            if per_work is not None:
                w = np.asarray(per_work, dtype=np.float64)
                if not np.all(np.isfinite(w) & (w > 0)):
                    i = int(np.argmin(np.isfinite(w) & (w > 0)))
                    raise ValueError(f"round {i}: work amount must be > 0, got {per_work[i]!r}")
                arr = arr / w[:, None]
                notes.append("readings divided by each round's work amount (per unit of work)")
            return arr
    for i, r in enumerate(rounds):
        try:
            x = np.asarray(r, dtype=np.float64).reshape(-1)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"round {i}: readings must be numbers: {exc}") from None
        if not np.all(np.isfinite(x)):
            raise ValueError(f"round {i}: readings contain NaN or infinite values")
        if per_work is not None:
            work = float(per_work[i])
            if not (math.isfinite(work) and work > 0):
                raise ValueError(f"round {i}: work amount must be > 0, got {per_work[i]!r}")
            x = x / work
        if x.size == 0:
            empty += 1
            continue
        out.append(x)
    if empty:
        notes.append(f"{empty} round(s) without readings ignored")
    if per_work is not None:
        notes.append("readings divided by each round's work amount (per unit of work)")
    return out


def _profile_warmup(block: np.ndarray, notes: list[str]) -> int:
    n_rounds, length = block.shape
    if length < MSER_MIN_READINGS:
        notes.append(f"rounds of {length} readings: too short for MSER-5 (needs 20)")
        return 0
    if n_rounds < 3:
        notes.append("within-round warm-up is detected from 3 rounds on")
        return 0
    profile = block.mean(axis=0)
    d = mser5(profile, alpha=None)
    if d == 0:
        return 0
    half = length // 2
    diff = block[:, :half] - block[:, half:].mean(axis=1, keepdims=True)
    mean, sd = diff.mean(axis=0), diff.std(axis=0, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(
            sd > 0, np.abs(mean) / (sd / math.sqrt(n_rounds)), np.where(mean != 0, np.inf, 0.0)
        )
    crit = float(stdtrit(n_rounds - 1, 1.0 - WARMUP_ALPHA / (2.0 * half)))
    if not np.any(t > crit):
        return 0
    notes.append(
        f"warm-up within rounds: the first {d} readings of every round (MSER-5 on the "
        f"mean of the {n_rounds} rounds' readings by position)"
    )
    if mser5_at_limit(profile):
        notes.append(
            "warm-up lasts half of every round: rounds may be too short to reach a steady state"
        )
    return d


def _within_round_warmup(
    rs: np.ndarray | list[np.ndarray], warmup: Warmup, notes: list[str]
) -> tuple[int, np.ndarray]:
    shortest = rs.shape[1] if isinstance(rs, np.ndarray) else min(r.size for r in rs)
    if isinstance(warmup, bool):
        raise ValueError("warmup must be 'mser5', 'none' or a number of readings per round")
    if isinstance(warmup, int | np.integer):
        d = int(warmup)
        if not 0 <= d < shortest:
            raise ValueError(
                f"warmup = {d} readings per round must be in 0..{shortest - 1} "
                f"(the shortest round has {shortest} readings)"
            )
        if d:
            notes.append(f"{d} warm-up readings dropped from every round (fixed)")
    elif warmup == "none":
        d = 0
    elif warmup == "mser5":
        block = rs if isinstance(rs, np.ndarray) else np.stack([r[:shortest] for r in rs])
        d = _profile_warmup(block, notes)
    else:
        raise ValueError(f"warmup must be 'mser5', 'none' or an int, got {warmup!r}")
    if isinstance(rs, np.ndarray):
        return d, rs[:, d:].reshape(-1)
    return d, np.concatenate([r[d:] for r in rs])


def _t_half_width(s2: float, h: int, confidence: float) -> float:
    return float(stdtrit(h - 1, 0.5 + confidence / 2.0)) * math.sqrt(s2 / h) if s2 > 0.0 else 0.0


def _coarse(values: np.ndarray, size: int) -> Coarse:
    h2 = values.size // size
    if h2 < 4:
        return (None, None, None)
    b2 = values[: size * h2].reshape(h2, size).mean(axis=1)
    return (float(np.mean(b2)), float(np.var(b2, ddof=1)), h2)


def _uncertified(
    x: np.ndarray, round_means: np.ndarray | None, confidence: float, notes: list[str]
) -> dict[str, Any]:
    if x.size < MIN_READINGS:
        return {}
    u = old_uncertified_mean_ci(x, confidence)
    if round_means is not None and round_means.size >= 2 and u.std > 0.0:
        r = int(round_means.size)
        s2_r = float(np.var(round_means, ddof=1))
        half_r = _t_half_width(s2_r, r, confidence)
        if half_r > u.half_width:
            tau_r = x.size * (s2_r / r) / (u.std * u.std)
            u = replace(
                u,
                ci_low=u.mean - half_r,
                ci_high=u.mean + half_r,
                half_width=half_r,
                tau_bound=max(u.tau_bound, tau_r),
                width_factor=half_r / u.naive_half_width,
                method="round means",
            )
    how = "t over the round means" if u.method == "round means" else "Geyer's initial sequence"
    notes.append(
        f"no certified CI yet; the interval shown assumes tau <= {u.tau_bound:.2f} readings "
        f"({how}, docs/methods.md §4.1)"
    )
    return {
        "interval_low": u.ci_low,
        "interval_high": u.ci_high,
        "tau_bound": u.tau_bound,
        "width_factor": u.width_factor,
        "interval_note": u.note,
    }


def old_collect(
    rounds: Sequence[Sequence[float]],
    *,
    confidence: float = 0.95,
    warmup: Warmup = "mser5",
    per_work: Sequence[float] | None = None,
    min_subsessions: int | None = None,
    tau_upper: float | None = TAU_UPPER,
    ci_2q: bool = True,
) -> WorkloadStats:
    c = float(confidence)
    if not 0.0 < c < 1.0:
        raise ValueError(f"confidence must be strictly between 0 and 1, got {confidence!r}")
    h_min = MIN_SUBSESSIONS if min_subsessions is None else int(min_subsessions)
    if h_min < 2:
        raise ValueError(f"min_subsessions must be >= 2, got {min_subsessions!r}")
    notes: list[str] = []
    rs = _as_rounds(rounds, per_work, notes)
    if len(rs) == 0:
        return WorkloadStats(
            0,
            0,
            0,
            "rounds",
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            False,
            h_min,
            h_min,
            None,
            None,
            c,
            tuple(notes + ["no readings yet"]),
        )
    if isinstance(rs, np.ndarray):
        single = rs.shape[1] == 1
    else:
        single = all(r.size == 1 for r in rs)
    if single:
        x = rs.reshape(-1) if isinstance(rs, np.ndarray) else np.concatenate(rs)
        if isinstance(warmup, int | np.integer) and not isinstance(warmup, bool) and warmup:
            raise ValueError(
                f"warmup = {warmup} readings per round would discard every reading of rounds "
                "with one reading; drop whole rounds with warmup_rounds instead"
            )
        w = 0
        if warmup == "mser5":
            w = mser5(x, alpha=ROUNDS_WARMUP_ALPHA)
            if w:
                notes.append(f"MSER-5: the first {w} steady rounds are still warm-up")
        elif warmup not in ("none", 0) or isinstance(warmup, bool):
            raise ValueError(f"warmup must be 'mser5', 'none' or an int, got {warmup!r}")
        x = x[w:]
        series = "rounds"
        per_round = 1.0
        round_means = None
    else:
        d, x = _within_round_warmup(rs, warmup, notes)
        w = d * len(rs)
        series = "readings"
        per_round = x.size / len(rs)
        round_means = (
            rs[:, d:].mean(axis=1)
            if isinstance(rs, np.ndarray)
            else np.array([r[d:].mean() for r in rs])
        )
    n = int(x.size)
    choice = old_subsession_size(
        x,
        c,
        min_subsessions=h_min,
        max_subsessions=max(MAX_SUBSESSIONS, h_min),
        tau_upper=tau_upper,
    )
    notes.extend(choice.notes)
    q, h = int(choice.q), int(choice.n_subsessions)
    if choice.enough and h < h_min:  # only the deterministic shortcut can get here
        choice = type(choice)(
            q,
            h,
            n,
            None,
            None,
            None,
            False,
            h_min * q,
            choice.method,
            choice.notes + (f"{h} subsessions: at least {h_min} are needed",),
        )
    if not choice.enough:
        need = int(choice.readings_needed) if choice.readings_needed is not None else n + 1
        more = max(1, math.ceil((need - n) / per_round))
        shown = _uncertified(x, round_means, c, notes)
        return WorkloadStats(
            len(rs),
            n,
            w,
            series,
            float(np.mean(x)),
            q,
            h,
            None,
            None,
            None,
            None,
            False,
            need,
            more,
            choice.tau,
            choice.ess,
            c,
            tuple(notes),
            **shown,
        )
    b = x[: q * h].reshape(h, q).mean(axis=1)
    mean = float(np.mean(b))
    s2 = float(np.var(b, ddof=1)) if h >= 2 else 0.0
    half = _t_half_width(s2, h, c)
    coarse = _coarse(x, 2 * q)
    mean2, s2_2, h2 = coarse
    if ci_2q and s2 > 0.0 and mean2 is not None and s2_2 is not None and h2 is not None:
        half2 = abs(mean2 - mean) + _t_half_width(s2_2, h2, c)
        if half2 > half:
            notes.append(
                f"CI widened by {half2 / half - 1:.0%} to contain the interval from "
                f"{h2} subsessions of {2 * q} (correlation beyond {q} readings?)"
            )
            half = half2
    if round_means is not None and round_means.size >= 2:
        # the rounds as subsessions when their t interval is wider (module docstring):
        # each round is one process, so its mean is one observation of the workload
        r = int(round_means.size)
        s2_r = float(np.var(round_means, ddof=1))
        half_r = _t_half_width(s2_r, r, c)
        if half_r > half:
            notes.append(
                f"CI from the {r} round means ({half_r / half:.2g}x the readings' half-width): "
                "the rounds differ more than their readings suggest (process-to-process "
                "variation), so each round is one subsession"
            )
            mean, q, h, s2, half = float(np.mean(round_means)), max(1, n // r), r, s2_r, half_r
            coarse = _coarse(round_means, 2)
    lo, hi = mean - half, mean + half
    rel = half / abs(mean) if mean != 0 else None
    if mean == 0:
        notes.append("mean is 0: no relative CI width")
    s_x = float(np.std(x, ddof=1)) if n >= 2 else 0.0
    naive = _t_half_width(s_x * s_x, n, c) if n >= 2 else 0.0
    return WorkloadStats(
        len(rs),
        n,
        w,
        series,
        mean,
        q,
        h,
        s2,
        lo,
        hi,
        rel,
        True,
        None,
        None,
        choice.tau,
        choice.ess,
        c,
        tuple(notes),
        *coarse,
        certified=True,
        interval_low=lo,
        interval_high=hi,
        width_factor=half / naive if naive > 0.0 else None,
    )


# ---------------------------------------------------------------------------------------
# The series and the checks
# ---------------------------------------------------------------------------------------

SIZES = (3, 4, 7, 8, 12, 20, 33, 50, 64, 101, 137, 200, 333, 500, 1000, 2047, 5000)


def _series(kind: str, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    e = rng.standard_normal(n)
    if kind == "iid":
        return 10.0 + e
    if kind == "ar05":
        return 10.0 + signal.lfilter([1.0], [1.0, -0.5], e)
    if kind == "ar09":
        return 10.0 + signal.lfilter([1.0], [1.0, -0.9], e)
    if kind == "drift":
        return 10.0 + 0.3 * e + np.linspace(0.0, 3.0, n)
    if kind == "warm":  # a transient over the first tenth
        return 10.0 + e + np.where(np.arange(n) < n // 10, 5.0, 0.0)
    if kind == "const":
        return np.full(n, 7.25)
    if kind == "lognormal":  # small, positive, like timings
        return 0.1 * np.exp(0.05 * signal.lfilter([1.0], [1.0, -0.3], e))
    raise AssertionError(kind)


KINDS = ("iid", "ar05", "ar09", "drift", "warm", "const", "lognormal")


def _same(new: Any, old: Any) -> None:
    """Equal field by field, floats bit for bit (``==`` and the same sign of zero)."""
    a, b = astuple(new), astuple(old)
    assert len(a) == len(b)
    for u, v in zip(a, b, strict=True):
        assert type(u) is type(v) or (isinstance(u, float) and isinstance(v, float)), (u, v)
        assert u == v, (new, old)
        if isinstance(u, float):
            assert math.copysign(1.0, u) == math.copysign(1.0, v), (u, v)


def _check(rounds: Any, **kw: Any) -> None:
    """collect and the frozen copy agree: the same result, or the same exception."""
    try:
        old = old_collect(rounds, **kw)
    except ZeroDivisionError:
        # the old code divided by a zero half-width when the readings within each round
        # are all equal but the rounds differ; now: the CI from the round means
        got = collect(rounds, **kw)
        assert any("readings within each round are all equal" in n for n in got.notes)
        assert got.ci_low is not None and got.ci_high is not None
        assert got.ci_low < got.mean < got.ci_high
        return
    except ValueError as exc:
        with pytest.raises(ValueError) as new:
            collect(rounds, **kw)
        assert str(new.value) == str(exc)
        return
    got = collect(rounds, **kw)
    if got.level_shift_at is not None:
        # issue 27: a level shift is never certified; the two levels, recomputed from the
        # round values, differ by at least 5 % (stats.levelshift.MIN_CHANGE)
        y = np.array([float(np.mean(r)) for r in rounds if len(r)])
        k = got.level_shift_at
        assert got.enough is False and got.ci_low is None and got.interval_low is None
        start = got.warmup_readings if got.series == "rounds" else 0
        assert abs(y[k:].mean() / y[start:k].mean() - 1) >= 0.05
        return
    _same(got, old)


def test_equal_readings_within_rounds_that_differ_get_the_round_means_ci() -> None:
    """Readings all equal within each round, rounds of different work: the CI is the
    Student t interval over the round means (scipy), no ZeroDivisionError."""
    from scipy import stats as sps

    work = [2.0, 3.0] * 10
    rounds = [[6.0] * 5 for _ in work]  # per work: 3.0 and 2.0 alternately
    got = collect(rounds, per_work=work, warmup="none")
    means = np.array([6.0 / w for w in work])
    lo, hi = sps.t.interval(0.95, means.size - 1, loc=means.mean(), scale=sps.sem(means))
    assert got.mean == pytest.approx(means.mean(), rel=1e-12)
    assert (got.ci_low, got.ci_high) == (pytest.approx(lo, rel=1e-9), pytest.approx(hi, rel=1e-9))


@pytest.mark.parametrize("kind", KINDS)
def test_subsession_size_and_uncertified_as_before(kind: str) -> None:
    for i, n in enumerate(SIZES):
        x = _series(kind, n, 100 + i)
        for kw in ({}, {"tau_upper": 0.8}, {"tau_upper": 0.95, "min_subsessions": 10}):
            for conf in (0.95, 0.9):
                _same(subsession_size(x, conf, **kw), old_subsession_size(x, conf, **kw))
        for conf in (0.95, 0.99):
            _same(uncertified_mean_ci(x, conf), old_uncertified_mean_ci(x, conf))


@pytest.mark.parametrize("kind", KINDS)
def test_collect_one_reading_per_round_as_before(kind: str) -> None:
    for i, n in enumerate(SIZES):
        x = _series(kind, n, 200 + i)
        rounds = [[float(v)] for v in x]
        _check(rounds)
        _check(x[:, None])
        for kw in (
            {"warmup": "none"},
            {"tau_upper": None},
            {"ci_2q": False, "confidence": 0.9},
            {"min_subsessions": 12, "warmup": 0},
            {"per_work": list(1.0 + np.arange(n) % 3)},
        ):
            _check(rounds, **kw)


@pytest.mark.parametrize("kind", KINDS)
def test_collect_several_readings_per_round_as_before(kind: str) -> None:
    for i, n in enumerate(SIZES):
        x = _series(kind, n * 5, 300 + i)
        for per in (2, 5, 25):
            r = x.size // per
            if r == 0:
                continue
            block = x[: r * per].reshape(r, per)
            rounds = block.tolist()
            for kw in (
                {},
                {"warmup": "none"},
                {"warmup": 1},
                {"tau_upper": None, "ci_2q": False},
                {"per_work": list(2.0 + np.arange(r) % 2)},
            ):
                _check(rounds, **kw)
            _check(block)
        # ragged rounds (the list path), rounds without readings included
        cuts = np.cumsum(np.random.default_rng(i).integers(1, 9, size=x.size))
        ragged = [list(p) for p in np.split(x, cuts[cuts < x.size])] + [[]]
        for kw in ({}, {"warmup": "none"}, {"warmup": 0, "confidence": 0.99}):
            _check(ragged, **kw)


@pytest.mark.parametrize("kind", ("iid", "ar05", "ar09", "drift", "lognormal"))
def test_collect_on_a_growing_series_as_before(kind: str) -> None:
    """The adaptive loop's pattern: collect after every round of one series."""
    x = _series(kind, 400, 7)
    for k in range(0, 400, 3):
        rounds = [[float(v)] for v in x[:k]]
        _check(rounds)
    y = _series(kind, 4000, 8).reshape(400, 10)
    for k in range(1, 400, 17):
        _check(y[:k])


def test_bad_input_raises_as_before() -> None:
    for rounds, kw in (
        ([[1.0], [float("nan")]], {}),
        ([[1.0, 2.0], [1.0]], {"warmup": 5}),
        ([[1.0], [2.0]], {"per_work": [1.0, 0.0]}),
        ([[1.0], [2.0]], {"confidence": 1.0}),
        ([[1.0], [2.0]], {"min_subsessions": 1}),
        ([[1.0], [2.0]], {"warmup": 3}),
    ):
        with pytest.raises(ValueError) as new:
            collect(rounds, **kw)
        with pytest.raises(ValueError) as old:
            old_collect(rounds, **kw)
        assert str(new.value) == str(old.value)
    _check([])


def test_fast_mean_and_variance_are_numpys_bit_for_bit() -> None:
    """The helpers that replace np.mean, np.var(ddof=1) and mean(axis=1) of batches."""
    from benchrun.stats.autocorr import _batch_means, _fmean, _fvar

    rng = np.random.default_rng(11)
    for n in (2, 3, 7, 8, 9, 16, 127, 128, 129, 1000, 8191, 8192, 8193, 50_001):
        x = rng.lognormal(3.0, 2.0, n) * rng.choice([-1.0, 1.0], n)
        assert _fmean(x) == float(np.mean(x))
        assert _fvar(x) == float(np.var(x, ddof=1))
        assert math.sqrt(_fvar(x)) == float(np.std(x, ddof=1))
        for q in (1, 2, 5, n // 3 or 1):
            h = n // q
            assert np.array_equal(_batch_means(x, h, q), x[: h * q].reshape(h, q).mean(axis=1))
