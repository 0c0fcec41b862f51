"""Which panels of a workload's figure have something to show, and the one unit it is shown in.

A panel that has nothing to show is left out of the figure, and the caption says why
(runner/report/plots.py); the rules checklist cites the same decisions
(runner/report/methods.py, rule 12). Pure numpy: nothing here draws.

Thresholds:

- the distribution (histogram, density, box plot) needs :data:`MIN_DISTRIBUTION` steady
  readings;
- the Q-Q plot needs the Shapiro-Wilk test of the subsession means, which needs three
  means that are not all equal (runner/report/model.py ``_diagnostics``);
- the autocorrelation needs :data:`MIN_ACF_READINGS` steady readings: with fewer, the
  ±1.96/√n band of independent data is wider than ±0.6 and nothing can be read off it;
- the CI-width curve needs :data:`MIN_CURVE_POINTS` numbers of rounds with a CI (one or
  two points are not a curve).
"""

from __future__ import annotations

from dataclasses import dataclass

from benchrun.runner.format import DisplayUnit
from benchrun.runner.report.model import WorkloadView

MIN_DISTRIBUTION = 2
MIN_ACF_READINGS = 10
MIN_CURVE_POINTS = 3


@dataclass(frozen=True)
class Panel:
    """One panel of a workload's figure: ``key``, its ``title`` and, when it is left out,
    ``why`` (a clause: "only 1 subsession mean ..."); ``why`` is empty for a shown panel."""

    key: str
    title: str
    why: str = ""

    @property
    def shown(self) -> bool:
        """Has the panel something to show (it is drawn)?"""
        return not self.why


def display_of(w: WorkloadView) -> DisplayUnit:
    """The one unit every figure and table shows ``w``'s values in.

    :attr:`WorkloadView.display` (chosen by :func:`runner.format.display_unit` from the
    mean of the workload's estimate; the stored unit without one), so a figure's axes and
    the tables beside it agree.

    Parameters
    ----------
    w : WorkloadView
        The workload.

    Returns
    -------
    DisplayUnit
        ``ms`` for a 37 ms workload measured in seconds; the stored unit when it is not a
        time or a size.
    """
    return w.display


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def workload_panels(w: WorkloadView) -> list[Panel]:
    """The panels of ``w``'s figure in order, each shown or with why it is left out.

    Parameters
    ----------
    w : WorkloadView
        The workload, with its diagnostics (runner/report/model.py ``build_view``).

    Returns
    -------
    list of Panel
        ``readings`` (always shown), ``distribution``, ``qq``, ``acf``, ``convergence``.
    """
    n = int(w.steady.size)
    out = [Panel("readings", "readings over time")]
    out.append(
        Panel(
            "distribution",
            "histogram, density and box plot",
            ""
            if n >= MIN_DISTRIBUTION
            else f"only {_plural(n, 'steady reading')} ({MIN_DISTRIBUTION} needed)",
        )
    )
    why = ""
    if not (w.normality and len(w.normality.get("qq_sample") or ()) >= 3):
        q = w.estimate.q if w.estimate and w.estimate.q else None
        if q and n // q < 3:
            why = (
                f"only {_plural(n // q, 'subsession mean')} (q = {q}; 3 needed for the "
                "Shapiro-Wilk test)"
            )
        elif n >= 3:
            why = "the subsession means are all equal"
        else:
            why = f"only {_plural(n, 'steady reading')}"
    out.append(Panel("qq", "Q-Q plot of subsession means", why))
    why = ""
    if n < MIN_ACF_READINGS:
        why = f"only {_plural(n, 'steady reading')} ({MIN_ACF_READINGS} needed)"
    elif not w.acf_raw:
        why = "the steady readings are all equal"
    out.append(Panel("acf", "autocorrelation", why))
    pts = sum(1 for _, v in w.convergence if v is not None)
    why = ""
    if pts < MIN_CURVE_POINTS:
        why = (
            f"a CI exists at only {pts} of the {len(w.convergence)} numbers of rounds checked "
            f"({MIN_CURVE_POINTS} needed)"
            if w.convergence
            else "fewer than 2 steady rounds"
        )
    out.append(Panel("convergence", "relative CI half-width over rounds", why))
    return out
