"""Per-workload statistics for the controller: steady series, subsession means, CI.

:func:`collect` turns one workload's steady rounds into (mean, q, n_q, s_q²), its t
interval and whether there is enough data (docs/methods.md §2-4). How the steady series
is built, and why rounds can be the subsessions: docs/controller.md "The collector".
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np

from benchrun.runner.config.settings import DEFAULT_CONFIDENCE
from benchrun.runner.control.nodelevel import node_dict, node_level
from benchrun.runner.format import DisplayUnit, interval_line
from benchrun.stats.autocorr import (
    MAX_SUBSESSIONS,
    MIN_SUBSESSIONS,
    SubsessionChoice,
    _batch_means,
    _centre,
    _fmean,
    _fvar,
    autocovariance_sums,
    choose_subsession_size,
)
from benchrun.stats.intervals import as_series
from benchrun.stats.levelshift import LevelShift, steady_start
from benchrun.stats.uncertified import MIN_READINGS, uncertified_from
from benchrun.stats.warmup import mser5, mser5_at_limit

__all__ = ["WorkloadStats", "collect"]


def _t_quantile(df: int, p: float) -> float:
    """The ``p`` quantile of Student's t with ``df`` degrees of freedom (scipy's
    ``stdtrit``; scipy.special is imported on the first call, so reading stored results
    without a new interval does not pay for it)."""
    from scipy.special import stdtrit

    return float(stdtrit(df, p))


def _opt(v: float | None) -> float | None:
    if v is None:
        return None
    f = float(v)
    return f if math.isfinite(f) else None


@dataclass(frozen=True)
class WorkloadStats:
    """What the controller knows about one workload after its latest round (docs/methods.md §3-4).

    Attributes (units: those of the readings, or of readings per unit of work with
    ``per_work``; counts in readings unless named rounds):
        rounds: steady rounds given to :func:`collect` (rounds without readings excluded).
        n: readings in the steady series (after within-round warm-up).
        warmup_readings: readings discarded as warm-up (all rounds together).
        series: ``"rounds"`` (one reading per round) or ``"readings"`` (concatenated).
        mean: mean of the n_used = q·n_q readings inside complete subsessions (equal to the
            mean of the subsession means; the trailing incomplete subsession is left out,
            as in §3), or of all n readings while there is not enough data.
        q: subsession size (None without a choice yet); with several readings per round,
            the readings per round when the rounds are the subsessions (see collect).
        n_q: complete subsessions.
        s2_q: sample variance (ddof=1) of the n_q subsession means (None without enough data).
        ci_low, ci_high: Student t interval ``mean ± t_{(1+c)/2, n_q-1}·sqrt(s2_q/n_q)`` (§4),
            widened to contain the interval at 2q when that one reaches further (see collect).
        rel_half_width: ``half width / |mean|`` (what ``ci_rel_width`` bounds, §4).
        enough: True when the subsession rule trusts the CI (§3).
        readings_needed: total readings the rule estimates it needs (None when enough).
        rounds_needed: more rounds that estimate implies at the current readings per round.
        tau, ess: integrated autocorrelation time (readings) and n/τ.
        confidence: level of the CI.
        notes: what was decided and why.
        mean_2q, s2_2q, n_2q: the same series cut into subsessions of 2q (n // 2q >= 4 of
            them, else None): the controller's robustness check "pass at q and 2q" (§3).
        certified: True when ``interval_low``/``interval_high`` are the certified CI above
            (``enough``); False when they are the uncertified interval (docs/methods.md §4.1).
        interval_low, interval_high: the interval outputs print: the CI when certified,
            otherwise (from 3 readings on) ``mean ± t_{(1+c)/2, n/T-1}·s·sqrt(T/n)`` over the
            n readings, T = ``tau_bound`` (stats.uncertified_mean_ci), widened to the t
            interval over the round means when that is wider; None with fewer readings.
        tau_bound: T, the bound on τ (readings) the uncertified interval assumes; None when
            certified.
        width_factor: the interval's half-width over the i.i.d. t interval's over the n
            readings (None when that is 0).
        interval_note: the mark printed after an uncertified interval ("independence not
            certified: assumes tau <= 2.4, 1.6x the i.i.d. width"); None when certified.
        nodes: with certified data from rounds on 2+ nodes, the node analysis
            (runner/control/nodelevel.py, docs/methods.md §14): ``stats.NodeVariation``'s
            dict plus ``grouping`` and ``text``. When its ``ci_from`` is ``"nodes"`` (the
            nodes differ), ``mean``, ``ci_low``/``ci_high``, ``interval_*`` and
            ``rel_half_width`` are the node-level ones (mean of the k node means, t over
            them with k - 1 df), while ``q``, ``n_q`` and ``s2_q`` stay those of the
            pooled subsessions (the data condition). None otherwise.
        level_shift_at: index (0-based, among the rounds given to :func:`collect`) of the
            first round at a new level when the rounds' level shifted (stats.levelshift,
            docs/methods.md §2.1): then ``enough`` and ``certified`` are False, there is no
            interval (no CI across a shift) and ``mean`` is over both levels; None without
            a shift.
        level_shift_change: the shift's relative size (0.2 = +20 %, of the earlier level;
            for a log-ratio series ``exp(Δ) - 1``); None without a shift.

    The controller reads only ``enough`` and ``ci_low``/``ci_high`` (None until
    certified), so it never stops on an uncertified interval; outputs print
    :meth:`interval_text`.
    """

    rounds: int
    n: int
    warmup_readings: int
    series: str
    mean: float | None
    q: int | None
    n_q: int | None
    s2_q: float | None
    ci_low: float | None
    ci_high: float | None
    rel_half_width: float | None
    enough: bool
    readings_needed: int | None
    rounds_needed: int | None
    tau: float | None
    ess: float | None
    confidence: float
    notes: tuple[str, ...] = ()
    mean_2q: float | None = None
    s2_2q: float | None = None
    n_2q: int | None = None
    certified: bool = False
    interval_low: float | None = None
    interval_high: float | None = None
    tau_bound: float | None = None
    width_factor: float | None = None
    interval_note: str | None = None
    nodes: dict[str, Any] | None = None
    level_shift_at: int | None = None
    level_shift_change: float | None = None

    @property
    def n_used(self) -> int:
        """Readings inside complete subsessions (q·n_q), 0 without a choice."""
        return (self.q or 0) * (self.n_q or 0)

    @property
    def variance_of_mean(self) -> float | None:
        """s_q²/n_q: the estimated variance of ``mean`` (unit²), None without enough data."""
        if self.s2_q is None or not self.n_q:
            return None
        return self.s2_q / self.n_q

    @property
    def half_width(self) -> float | None:
        if self.ci_low is None or self.ci_high is None:
            return None
        return (self.ci_high - self.ci_low) / 2.0

    def interval_text(self, unit: str | DisplayUnit) -> str:
        """The estimate as outputs print it (:func:`runner.format.estimate_text`)."""
        nodes = self.nodes
        node_text = (
            str(nodes["text"])
            if nodes and nodes.get("ci_from") == "nodes" and nodes.get("text")
            else None
        )
        return interval_line(self, unit, node_text)

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable dict (floats or None, no NaN)."""
        return {
            "rounds": int(self.rounds),
            "n": int(self.n),
            "n_used": int(self.n_used),
            "warmup_readings": int(self.warmup_readings),
            "series": self.series,
            "mean": _opt(self.mean),
            "q": None if self.q is None else int(self.q),
            "n_q": None if self.n_q is None else int(self.n_q),
            "s2_q": _opt(self.s2_q),
            "ci_low": _opt(self.ci_low),
            "ci_high": _opt(self.ci_high),
            "rel_half_width": _opt(self.rel_half_width),
            "enough": bool(self.enough),
            "readings_needed": None if self.readings_needed is None else int(self.readings_needed),
            "rounds_needed": None if self.rounds_needed is None else int(self.rounds_needed),
            "tau": _opt(self.tau),
            "ess": _opt(self.ess),
            "confidence": float(self.confidence),
            "notes": list(self.notes),
            "mean_2q": _opt(self.mean_2q),
            "s2_2q": _opt(self.s2_2q),
            "n_2q": None if self.n_2q is None else int(self.n_2q),
            "certified": bool(self.certified),
            "interval_low": _opt(self.interval_low),
            "interval_high": _opt(self.interval_high),
            "tau_bound": _opt(self.tau_bound),
            "width_factor": _opt(self.width_factor),
            "interval_note": self.interval_note,
            "nodes": self.nodes,
            "level_shift_at": None if self.level_shift_at is None else int(self.level_shift_at),
            "level_shift_change": _opt(self.level_shift_change),
        }


Warmup = Literal["mser5", "none"] | int

#: which way a warm-up lies for a metric direction (stats.levelshift ``worse``)
WORSE = {"lower_is_better": "higher", "higher_is_better": "lower"}


def _as_rounds(
    rounds: Sequence[Sequence[float]], per_work: Sequence[float] | None, notes: list[str]
) -> np.ndarray | list[np.ndarray]:
    """The rounds as a 2-D array (all of one length) or a list of 1-D arrays, validated."""
    if per_work is not None and len(per_work) != len(rounds):
        raise ValueError(f"per_work has {len(per_work)} entries for {len(rounds)} rounds")
    out: list[np.ndarray] = []
    empty = 0
    if isinstance(rounds, np.ndarray) or (len(rounds) and len(set(map(len, rounds))) == 1):
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


#: level of the check that a within-round transient is real (Bonferroni over positions)
WARMUP_ALPHA = 0.01
#: one-sided level of the upper bound on tau used to size subsessions (stats.autocorr:
#: subsession_size ``tau_upper``); the controller re-applies the rule after every pass,
#: and without the bound it accepts a series the first time tau happens to look small
TAU_UPPER = 0.8
#: MSER-5 needs 4 batches of 5 readings
MSER_MIN_READINGS = 20
#: level of MSER-5's significance check on a series of rounds. The collector re-applies
#: it after every pass, and a (false) cut can make a correlated series pass the subsession
#: rule sooner, so the stop selects cuts: at 0.01, 7.4 % of the AR(1) φ 0.7 workloads
#: stopped in the "ar1 2w 10%" simulation row carried a cut and their CIs covered 67 %;
#: at 0.001, 1.7 % (docs/controller.md). A transient over rounds that matters is large.
ROUNDS_WARMUP_ALPHA = 0.001


def _profile_warmup(block: np.ndarray, notes: list[str]) -> int:
    """Readings to drop at the start of every round, from the R x L ``block`` of the first L
    readings of each round (docs/methods.md §2, applied to the position profile).

    MSER-5 (without its own guard) on the profile ``p_i = mean over rounds of reading i``
    proposes d; it is accepted only if some position i < L/2 really differs from the
    steady part: the paired differences ``x_{r,i} - mean(x_{r, L/2..L-1})`` over the R
    rounds give a t statistic per position, tested at ``WARMUP_ALPHA`` Bonferroni-corrected
    over the L/2 positions (R - 1 degrees of freedom). Needs R >= 3 and L >= 20.
    """
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
    crit = _t_quantile(n_rounds - 1, 1.0 - WARMUP_ALPHA / (2.0 * half))
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
    """(d, steady series): d readings dropped at the start of every round, the rest joined."""
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
    """Half-width ``t_{(1+c)/2, h-1}·sqrt(s2/h)`` of the t CI over h subsession means of
    variance s2 (docs/methods.md §4; units of the readings); 0 when s2 is 0."""
    return _t_quantile(h - 1, 0.5 + confidence / 2.0) * math.sqrt(s2 / h) if s2 > 0.0 else 0.0


#: (mean, s2, count) of a series' coarse batch means, or Nones (see :func:`_coarse`)
Coarse = tuple[float | None, float | None, int | None]


def _coarse(values: np.ndarray, size: int) -> Coarse:
    """(mean, sample variance, count) of the means of consecutive batches of ``size``
    values (trailing partial batch dropped; units of the values), or (None, None, None)
    when fewer than 4 batches fit: the "2q" side of the q/2q check (docs/methods.md §3)."""
    h2 = values.size // size
    if h2 < 4:
        return (None, None, None)
    b2 = _batch_means(values, h2, size)
    return (_fmean(b2), _fvar(b2), h2)


def _uncertified(
    x: np.ndarray,
    round_means: np.ndarray | None,
    confidence: float,
    notes: list[str],
    d: np.ndarray,
    sums: np.ndarray | None,
) -> dict[str, Any]:
    """The uncertified interval's fields of :class:`WorkloadStats` (docs/methods.md §4.1) for
    the steady series ``x`` that the subsession rule could not certify; {} below 3 readings.

    :func:`stats.uncertified_mean_ci` on ``x`` (computed from ``d``, the centred ``x``, and
    ``sums``, its lag sums, which the subsession rule computed first); with several readings per round and >= 2
    rounds, widened to the t interval over the round means when that is wider (as the
    certified CI is), with ``tau_bound`` raised to ``n·(s_r²/r)/s²``, the τ at which the
    i.i.d. variance of the mean s²τ/n equals the round means' s_r²/r.
    """
    if x.size < MIN_READINGS:
        return {}
    u = uncertified_from(x, d, sums, confidence)
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


def _nodes(
    x: np.ndarray,
    round_means: np.ndarray | None,
    labels: list[str],
    w: int,
    lengths: list[int] | None,
    q: int,
    by_rounds: bool,
    confidence: float,
    notes: list[str],
) -> dict[str, Any] | None:
    """The node analysis (runner/control/nodelevel.py) of the steady series ``x`` whose
    rounds ran on the nodes ``labels`` (one per round with readings); ``w``: warm-up rounds
    cut (one reading per round); ``lengths``: steady readings of each round (several
    readings per round); ``by_rounds``: the round means are the subsessions."""
    if round_means is None:  # one value per round: the first w rounds were cut
        values, per, size = x, labels[w:], q
    elif by_rounds:
        values, per, size = round_means, labels, 1
    else:
        assert lengths is not None
        values, size = x, q
        per = [lab for lab, m in zip(labels, lengths, strict=True) for _ in range(m)]
    res, how = node_level(values, per, size, confidence, "round means" if by_rounds else "")
    notes.append(f"node analysis: {how}")
    if res is None:
        return None
    info = node_dict(res, how)
    notes.append(str(info["text"]))
    return info


def _shifted(
    shift: LevelShift,
    x: np.ndarray,
    rounds: int,
    w: int,
    series: str,
    q: int,
    h: int,
    tau: float | None,
    ess: float | None,
    c: float,
    notes: list[str],
) -> WorkloadStats:
    """The :class:`WorkloadStats` of a series whose level shifted (docs/methods.md §2.1): the
    mean over both levels, no interval, not enough (the controller never stops on it)."""
    before, after = shift.before, shift.after
    notes.append(
        f"{shift.text()}: the rounds before it average {before:.6g}, from it on {after:.6g}; "
        "no CI across a level shift (docs/methods.md §2.1)"
    )
    return _without_ci(
        x, rounds, w, series, q, h, (None, None), tau, ess, c, notes,
        level_shift_at=shift.at, level_shift_change=shift.change,
    )  # fmt: skip


def _without_ci(
    x: np.ndarray,
    rounds: int,
    w: int,
    series: str,
    q: int,
    h: int,
    needed: tuple[int | None, int | None],
    tau: float | None,
    ess: float | None,
    c: float,
    notes: list[str],
    **extra: Any,
) -> WorkloadStats:
    """A :class:`WorkloadStats` with the mean of ``x`` and no certified interval (not
    enough): ``needed`` = (readings, rounds) still wanted, ``extra`` the fields that say
    why (a level shift, an uncertified interval)."""
    return WorkloadStats(
        rounds=rounds,
        n=int(x.size),
        warmup_readings=w,
        series=series,
        mean=_fmean(x),
        q=q,
        n_q=h,
        s2_q=None,
        ci_low=None,
        ci_high=None,
        rel_half_width=None,
        enough=False,
        readings_needed=needed[0],
        rounds_needed=needed[1],
        tau=tau,
        ess=ess,
        confidence=c,
        notes=tuple(notes),
        **extra,
    )


@dataclass(frozen=True)
class _Steady:
    """The steady series of one workload (module docstring): ``x`` the values analysed,
    ``warmup`` the readings cut, ``lengths`` the readings kept per round (None with one
    reading per round), ``series`` "rounds" or "readings", ``per_round`` readings per
    round, ``round_means`` (None with one reading per round) and a level ``shift`` found
    (None: none)."""

    x: np.ndarray
    warmup: int
    lengths: list[int] | None
    series: str
    per_round: float
    round_means: np.ndarray | None
    shift: LevelShift | None


def _empty(h_min: int, c: float, notes: list[str]) -> WorkloadStats:
    """The result of a workload with no readings yet (``enough=False``)."""
    return WorkloadStats(
        rounds=0,
        n=0,
        warmup_readings=0,
        series="rounds",
        mean=None,
        q=None,
        n_q=None,
        s2_q=None,
        ci_low=None,
        ci_high=None,
        rel_half_width=None,
        enough=False,
        readings_needed=h_min,
        rounds_needed=h_min,
        tau=None,
        ess=None,
        confidence=c,
        notes=tuple(notes + ["no readings yet"]),
    )


def _steady_single(
    rs: np.ndarray | list[np.ndarray],
    warmup: Warmup,
    direction: str | None,
    log_series: bool,
    labels: list[str] | None,
    notes: list[str],
) -> _Steady:
    """The steady series of rounds with one reading each: MSER-5's cut when it is
    warm-up (worse than the rest in ``direction``), a level shift found in the kept rounds
    (not tested for rounds from several nodes, ``labels``), docs/methods.md §2.1."""
    x = rs.reshape(-1) if isinstance(rs, np.ndarray) else np.concatenate(rs)
    if isinstance(warmup, int | np.integer) and not isinstance(warmup, bool) and warmup:
        raise ValueError(
            f"warmup = {warmup} readings per round would discard every reading of rounds "
            "with one reading; drop whole rounds with warmup_rounds instead"
        )
    w = 0
    lengths = None
    if warmup not in ("mser5", "none", 0) or isinstance(warmup, bool):
        raise ValueError(f"warmup must be 'mser5', 'none' or an int, got {warmup!r}")
    start = steady_start(
        x,
        worse=WORSE.get(direction or ""),  # type: ignore[arg-type]
        warmup=warmup == "mser5",
        warmup_alpha=ROUNDS_WARMUP_ALPHA,
        log=log_series,
        step_warmup=warmup == "mser5",  # without detection nothing is cut
    )
    w = start.warmup
    if w:
        notes.append(f"MSER-5: the first {w} steady rounds are still warm-up")
    if start.rejected_cut:
        notes.append(
            f"MSER-5 proposed cutting the first {start.rejected_cut} rounds as warm-up, but "
            "they were better than the rest: not warm-up (docs/methods.md §2.1)"
        )
    shift = start.shift if labels is None else None
    x = x[w:]
    series = "rounds"
    per_round = 1.0
    round_means = None
    return _Steady(x, w, lengths, series, per_round, round_means, shift)


def _steady_multi(
    rs: np.ndarray | list[np.ndarray],
    warmup: Warmup,
    direction: str | None,
    log_series: bool,
    labels: list[str] | None,
    notes: list[str],
) -> _Steady:
    """The steady series of rounds with several readings each: the within-round warm-up
    cut from every round, the round means, a level shift among them (not tested for
    rounds from several nodes, ``labels``); whole rounds are never cut here."""
    d, x = _within_round_warmup(rs, warmup, notes)
    w = d * len(rs)
    lengths = [int(r.size) - d for r in rs]
    series = "readings"
    per_round = x.size / len(rs)
    round_means = (
        rs[:, d:].mean(axis=1)
        if isinstance(rs, np.ndarray)
        else np.array([r[d:].mean() for r in rs])
    )
    shift = None
    if labels is None:
        start = steady_start(
            round_means,
            worse=WORSE.get(direction or ""),  # type: ignore[arg-type]
            warmup=False,
            log=log_series,
        )
        shift = start.shift
        if start.warmup:
            # whole rounds are not cut here (warmup_readings counts readings per round)
            notes.append(
                f"the first {start.warmup} rounds were worse than the rest (warm-up "
                "across rounds?); they are kept: set warmup_rounds to drop them"
            )
    return _Steady(x, w, lengths, series, per_round, round_means, shift)


def _certified(
    x: np.ndarray,
    rounds: int,
    steady: _Steady,
    choice: SubsessionChoice,
    c: float,
    ci_2q: bool,
    labels: list[str] | None,
    notes: list[str],
) -> WorkloadStats:
    """The certified result: the t interval on the subsession means, widened to contain
    the 2q interval (``ci_2q``) and replaced by the round means' interval when that is
    wider (several readings per round), or by the node-level one when the nodes differ."""
    n, w, series = int(x.size), steady.warmup, steady.series
    round_means, lengths = steady.round_means, steady.lengths
    q, h = int(choice.q), int(choice.n_subsessions)
    b = _batch_means(x, h, q)
    mean = _fmean(b)
    s2 = _fvar(b) if h >= 2 else 0.0
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
    by_rounds = False
    if round_means is not None and round_means.size >= 2:
        # the rounds as subsessions when their t interval is wider (module docstring):
        # each round is one process, so its mean is one observation of the workload
        r = int(round_means.size)
        s2_r = float(np.var(round_means, ddof=1))
        half_r = _t_half_width(s2_r, r, c)
        if half_r > half:
            notes.append(
                f"CI from the {r} round means ("
                + (
                    f"{half_r / half:.2g}x the readings' half-width"
                    if half > 0
                    else "the readings within each round are all equal"
                )
                + "): "
                "the rounds differ more than their readings suggest (process-to-process "
                "variation), so each round is one subsession"
            )
            mean, q, h, s2, half = float(np.mean(round_means)), max(1, n // r), r, s2_r, half_r
            by_rounds = True
            coarse = _coarse(round_means, 2)
    node_info = None
    if labels is not None:
        node_info = _nodes(x, round_means, labels, w, lengths, q, by_rounds, c, notes)
        if node_info is not None and node_info["ci_from"] == "nodes":
            mean, half = float(node_info["mean"]), float(node_info["half_width"])
    lo, hi = mean - half, mean + half
    rel = half / abs(mean) if mean != 0 else None
    if mean == 0:
        notes.append("mean is 0: no relative CI width")
    s_x = math.sqrt(_fvar(x)) if n >= 2 else 0.0  # np.std(x, ddof=1)
    naive = _t_half_width(s_x * s_x, n, c) if n >= 2 else 0.0
    return WorkloadStats(
        rounds,
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
        nodes=node_info,
    )


def _node_labels(
    nodes: Sequence[str | None] | None, rounds: Sequence[Sequence[float]]
) -> list[str] | None:
    """The node of every round with readings ("local" for None), when the rounds come
    from 2 or more nodes; else None. ``nodes`` of another length than ``rounds``: ValueError."""
    if nodes is not None and len(nodes) != len(rounds):
        raise ValueError(f"nodes has {len(nodes)} entries for {len(rounds)} rounds")
    labels = (
        [n or "local" for n, r in zip(nodes, rounds, strict=True) if len(r) > 0]
        if nodes is not None and len({n or "local" for n in nodes}) >= 2
        else None
    )
    return labels


def _subsession_choice(
    x: np.ndarray, c: float, h_min: int, tau_upper: float | None
) -> tuple[np.ndarray, np.ndarray, Any, SubsessionChoice]:
    """(series, deviations, lag sums, :func:`stats.autocorr.choose_subsession_size`'s
    choice) of the steady series ``x``."""
    n = int(x.size)
    # what stats.subsession_size and stats.uncertified_mean_ci each computed from x: the
    # validated series, its deviations from the mean and their lag sums, computed once
    x = as_series(x)
    dev = _centre(x)
    sums = autocovariance_sums(dev) if n >= MIN_READINGS and np.any(dev) else None
    choice = choose_subsession_size(
        x,
        dev,
        sums,
        c,
        min_subsessions=h_min,
        max_subsessions=max(MAX_SUBSESSIONS, h_min),
        tau_upper=tau_upper,
    )
    return x, dev, sums, choice


def _too_few(choice: SubsessionChoice, n: int, h_min: int) -> SubsessionChoice:
    """``choice`` (the deterministic shortcut's) marked not enough: fewer than ``h_min``
    subsessions."""
    q, h = int(choice.q), int(choice.n_subsessions)
    return type(choice)(
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


def collect(
    rounds: Sequence[Sequence[float]],
    *,
    confidence: float = DEFAULT_CONFIDENCE,
    warmup: Warmup = "mser5",
    per_work: Sequence[float] | None = None,
    min_subsessions: int | None = None,
    tau_upper: float | None = TAU_UPPER,
    ci_2q: bool = True,
    nodes: Sequence[str | None] | None = None,
    direction: str | None = None,
    log_series: bool = False,
) -> WorkloadStats:
    """Statistics of one workload from the readings of its steady rounds (docs/methods.md §2-4).

    ``rounds[i]`` holds the readings of the i-th steady round in time order (one value for
    time/CPU/RSS metrics). ``per_work[i]`` (optional) divides round i's readings by its work
    amount. ``warmup``: ``"mser5"`` (default), ``"none"``, or an int = readings dropped at the
    start of every round (config ``warmup_readings``; must be 0 with one reading per round).
    ``min_subsessions`` (config; None = §3's 8) is the fewest subsession means accepted.

    Steps: build the steady series (module docstring), then
    :func:`stats.autocorr.subsession_size` chooses q (re-chosen at every call); with enough
    data, the n_q = n // q subsession means B_i give ``s2_q = var(B, ddof=1)`` and the
    t interval ``mean ± t_{(1+c)/2, n_q-1}·sqrt(s2_q/n_q)``. With ``ci_2q`` (default) and
    at least 4 subsessions of 2q, the half-width is the larger of that and
    ``|mean_2q - mean| + t_{(1+c)/2, n_2q-1}·sqrt(s2_2q/n_2q)``: the smallest interval
    around ``mean`` that contains the 2q interval too ("pass at q and 2q", §3, applied to
    the CI; it lifts the coverage of the first CI a re-tested rule accepts on correlated
    series, benchmarks/coverage_at_first_enough.py). With several readings per round and
    r >= 2 rounds, the rounds become the subsessions when the t interval over the r round
    means is wider still (module docstring). All readings equal: q = 1,
    s2_q = 0 and a zero-width CI (deterministic). Without enough data the CI is None and
    ``readings_needed``/``rounds_needed`` estimate what is missing; from 3 readings on, the
    ``interval_*`` fields then hold the uncertified interval (``certified=False``,
    docs/methods.md §4.1), which the controller ignores. No rounds: an empty
    result (``enough=False``). Bad input (NaN, work <= 0): ValueError.

    ``nodes[i]`` (optional): the node round i ran on (None: the local machine). With a
    certified CI and rounds from 2 or more nodes, the node analysis of
    runner/control/nodelevel.py runs on subsessions within each node, and when the nodes
    differ its CI replaces the pooled one (``WorkloadStats.nodes``, docs/methods.md §14).

    Level shifts (docs/methods.md §2.1, :func:`stats.levelshift.steady_start`): with one
    reading per round, MSER-5's cut is warm-up only when the cut rounds are worse than the
    rest in the metric's ``direction`` (``"lower_is_better"``/``"higher_is_better"``; None,
    as for a log-ratio series, accepts either); a cut the other way, or a step the change-point
    test finds in the kept rounds (the round means with several readings per round), is a
    level shift: ``level_shift_at``/``level_shift_change`` are set, ``enough`` is False and
    there is no interval. ``log_series``: the values are logs (per-pass log ratios), so a
    step's size is ``exp(Δ) - 1``. Rounds from 2 or more nodes are not tested (their levels
    differ by design; the node analysis handles them).
    """
    c = float(confidence)
    if not 0.0 < c < 1.0:
        raise ValueError(f"confidence must be strictly between 0 and 1, got {confidence!r}")
    h_min = MIN_SUBSESSIONS if min_subsessions is None else int(min_subsessions)
    if h_min < 2:
        raise ValueError(f"min_subsessions must be >= 2, got {min_subsessions!r}")
    notes: list[str] = []
    labels = _node_labels(nodes, rounds)
    rs = _as_rounds(rounds, per_work, notes)
    if len(rs) == 0:
        return _empty(h_min, c, notes)
    if isinstance(rs, np.ndarray):
        single = rs.shape[1] == 1
    else:
        single = all(r.size == 1 for r in rs)
    steady = (
        _steady_single(rs, warmup, direction, log_series, labels, notes)
        if single
        else _steady_multi(rs, warmup, direction, log_series, labels, notes)
    )
    x, w, series, shift = steady.x, steady.warmup, steady.series, steady.shift
    per_round, round_means = steady.per_round, steady.round_means
    n = int(x.size)
    x, dev, sums, choice = _subsession_choice(x, c, h_min, tau_upper)
    notes.extend(choice.notes)
    q, h = int(choice.q), int(choice.n_subsessions)
    if shift is not None:
        return _shifted(shift, x, len(rs), w, series, q, h, choice.tau, choice.ess, c, notes)
    if choice.enough and h < h_min:  # only the deterministic shortcut can get here
        choice = _too_few(choice, n, h_min)
    if not choice.enough:
        need = int(choice.readings_needed) if choice.readings_needed is not None else n + 1
        more = max(1, math.ceil((need - n) / per_round))
        shown = _uncertified(x, round_means, c, notes, dev, sums)
        return _without_ci(
            x, len(rs), w, series, q, h, (need, more), choice.tau, choice.ess, c, notes, **shown
        )
    return _certified(x, len(rs), steady, choice, c, ci_2q, labels, notes)
