"""The process as the unit of imported data (docs/imported-data.md).

When a file says what a process is (a pyperf run, a hyperfine run, a Google Benchmark
repetition; :attr:`Dataset.processes`), the values of one process share its start-up,
memory layout and the machine's state at that moment, so they are not independent of
each other; separate processes are (Georges et al.'s multi-invocation method, the design
of pyperf and hyperfine, and what benchrun's collector does when its rounds differ more
than their readings: runner/control/collector.py). So the *mean of each process* is one
observation, and the location, its CI and every comparison use those means:

- warm-up: the tool keeps its own warm-ups apart (pyperf ``warmups``, hyperfine
  ``--warmup``, Google Benchmark's iteration estimate); whole processes at the start are
  dropped only when MSER-5 with benchrun's significance check at ``ROUNDS_WARMUP_ALPHA``
  (the rule for one-reading rounds, runner/control/collector.py) finds them still warming up, which
  needs at least 20 processes (docs/methods.md §2);
- mean = the mean of the k process means; s² = their sample variance (ddof = 1); the CI
  is Student's t over them with k - 1 degrees of freedom (docs/methods.md §4); so the summary
  ``(mean, s², n_q = k, q = values per process)`` feeds Welch and TOST unchanged
  (stats/compare.py) and k >= 2 is enough for a CI;
- the process means are checked for drift: a lag-1 autocorrelation above
  ``-1/k + z/√k`` (the subsession rule's check, docs/methods.md §3) adds a note that the CI
  assumes independent processes.

Everything is computed by :mod:`stats`; units are those of the values (s, ns, ...).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps

from benchrun.stats.autocorr import MIN_SUBSESSIONS, autocorrelation
from benchrun.stats.intervals import mean_ci, quantile_ci
from benchrun.stats.normality import normality
from benchrun.stats.summary import Summary, describe
from benchrun.stats.warmup import mser5

#: level of the significance check of the process-level MSER-5 (runner/control/collector.py's
#: ``ROUNDS_WARMUP_ALPHA``, the rule benchrun uses for its own one-reading rounds)
PROCESS_WARMUP_ALPHA = 0.001

#: plural of a unit word for people
PLURAL = {"process": "processes", "repetition": "repetitions"}


def plural(word: str, count: int | None = None) -> str:
    """``process`` -> ``processes`` (``count == 1`` keeps the singular)."""
    if count == 1:
        return word
    return PLURAL.get(word, word + "s")


@dataclass(frozen=True)
class ProcessSummary:
    """Location and spread of one group when each process is one observation.

    ``means`` are the analysed process means (unit of the values) in file order; ``mean``
    is their mean, ``variance`` their sample variance (ddof = 1, unit²; None below two
    processes), ``ci_low``/``ci_high`` Student's t interval at ``confidence`` over them
    (None below two). ``values_per_process`` is q when every process has the same number
    of values, else None. ``warmup_processes``/``warmup_values`` count what the warm-up
    rule dropped; ``lag1`` is the lag-1 autocorrelation of the means (None below 3);
    ``word`` is ``"process"`` or ``"repetition"``.
    """

    means: np.ndarray
    values: np.ndarray
    mean: float
    variance: float | None
    ci_low: float | None
    ci_high: float | None
    confidence: float
    values_per_process: int | None
    warmup_processes: int
    warmup_values: int
    lag1: float | None
    word: str
    notes: tuple[str, ...]

    @property
    def n(self) -> int:
        """Processes analysed (the n of every test)."""
        return int(self.means.size)

    @property
    def enough(self) -> bool:
        """True with at least two processes: a variance, a CI and Welch's test exist."""
        return self.n >= 2 and self.variance is not None

    def why_not(self) -> str:
        """Why there is no CI, for people (empty when there is one)."""
        if self.enough:
            return ""
        return f"{self.n} {plural(self.word, self.n)}, at least 2 are needed"


def summarize_processes(
    processes: Sequence[np.ndarray],
    confidence: float = 0.95,
    warmup: str | int = "auto",
    word: str = "process",
) -> ProcessSummary:
    """Summarise one group whose values come in processes (module docstring).

    Parameters
    ----------
    processes
        The values of each process in file order (each a non-empty 1-D array, the unit of
        the data).
    confidence
        Level of the t interval over the process means.
    warmup
        ``"auto"`` or ``"mser5"``: drop leading processes MSER-5 finds still warming up
        (significance-checked at :data:`PROCESS_WARMUP_ALPHA`; nothing below 20
        processes); ``"none"``: keep all; an int N: drop the first N processes.
    word
        ``"process"`` or ``"repetition"``, for the notes.

    Returns
    -------
    ProcessSummary
        Mean, s² and t interval over the process means, with the warm-up and drift notes.
    """
    if not processes:
        raise ValueError("no process holds a value")
    means_all = np.array([float(np.mean(p)) for p in processes], dtype=float)
    notes: list[str] = []
    if warmup in ("auto", "mser5"):
        w = mser5(means_all, alpha=PROCESS_WARMUP_ALPHA) if means_all.size >= 20 else 0
        if w:
            notes.append(f"MSER-5: the first {w} {plural(word, w)} were still warming up, left out")
    elif warmup == "none":
        w = 0
    elif isinstance(warmup, int) and not isinstance(warmup, bool) and warmup >= 0:
        w = int(warmup)
        if w >= means_all.size:
            raise ValueError(f"warm-up of {w} {plural(word, w)} leaves nothing of {means_all.size}")
    else:
        raise ValueError(f"warmup must be 'auto', 'mser5', 'none' or an int, got {warmup!r}")
    kept = list(processes[w:])
    means = means_all[w:]
    values = np.concatenate([np.asarray(p, dtype=float) for p in kept])
    sizes = {int(np.size(p)) for p in kept}
    k = int(means.size)
    ci = mean_ci(means, confidence)
    variance = float(np.var(means, ddof=1)) if k >= 2 else None
    lag1 = autocorrelation(means, 1) if k >= 3 else None
    if lag1 is not None and k >= MIN_SUBSESSIONS:
        z = float(sps.norm.ppf(0.5 + confidence / 2.0))
        limit = -1.0 / k + z / math.sqrt(k)
        if lag1 > limit:
            notes.append(
                f"the {k} {plural(word)} drift: lag-1 autocorrelation of their means "
                f"{lag1:.2f} > {limit:.2f}; the CI treats them as independent and may be "
                "too narrow (interleave old and new runs to cancel the drift)"
            )
    return ProcessSummary(
        means=means,
        values=values,
        mean=float(np.mean(means)),
        variance=variance,
        ci_low=ci.low,
        ci_high=ci.high,
        confidence=float(confidence),
        values_per_process=sizes.pop() if len(sizes) == 1 else None,
        warmup_processes=w,
        warmup_values=int(sum(int(np.size(p)) for p in processes[:w])),
        lag1=lag1,
        word=word,
        notes=tuple(notes),
    )


def as_summary(ps: ProcessSummary) -> Summary:
    """The :class:`stats.summary.Summary` of a process-structured group, for the places
    that show one (``benchrun analyze summary``/``compare``).

    The subsessions are the processes: ``n_subsessions`` = k, ``subsession_size`` = values
    per process (their mean count when unequal), ``subsession_variance`` = s² of the process
    means, the mean and its CI are those of :class:`ProcessSummary`, Shapiro-Wilk runs on
    the process means (k >= 3) and ``ess`` = k. The spread and quantiles (std, quartiles,
    p90, p99, Tukey outliers) describe the individual values (stats.describe); the median
    CI is the order-statistic interval with k as the effective sample size when a process
    holds several values.
    """
    c = ps.confidence
    d = describe(ps.values)
    k = ps.n
    notes = list(d.notes) + list(ps.notes)
    q = ps.values_per_process or max(1, round(ps.values.size / k))
    med_low = med_high = norm_p = None
    if ps.enough:
        ess = float(k) if q > 1 else None
        med = quantile_ci(ps.values, 0.5, c, ess=ess)
        med_low, med_high = med.low, med.high
        notes.extend(med.notes)
        if k >= 3:
            nr = normality(ps.means)
            norm_p = nr.p_value
            notes.extend(f"normality of the {plural(ps.word)}: {t}" for t in nr.notes)
        notes.append(
            f"the {ps.word} is the unit: CI over the means of {k} {plural(ps.word, k)}"
            + (f" ({q} values each)" if ps.values_per_process and q > 1 else "")
        )
    else:
        notes.append(f"no CI: {ps.why_not()}")
    return Summary(
        n=int(ps.values.size),
        warmup_readings=ps.warmup_values,
        subsession_size=int(q),
        n_subsessions=k,
        mean=ps.mean,
        ci_low=ps.ci_low,
        ci_high=ps.ci_high,
        median=d.median,
        median_ci_low=med_low,
        median_ci_high=med_high,
        std=d.std,
        cov=d.cov,
        min=d.min,
        q1=d.q1,
        q3=d.q3,
        max=d.max,
        p90=d.p90,
        p99=d.p99,
        autocorrelation_lag1=ps.lag1,
        normality_p=norm_p,
        outliers=d.outliers,
        deterministic=d.deterministic,
        notes=tuple(notes),
        subsession_variance=ps.variance,
        confidence=c,
        ess=float(k),
        enough_data=ps.enough,
        readings_needed=None if ps.enough else 2 * int(q),
    )
