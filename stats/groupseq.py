"""Group-sequential boundaries for the actual looks, by error spending (docs/methods.md §10.1).

The statistic at look k is ``Z_k = S(I_k)/√I_k`` where ``S`` is a standard Brownian motion
under H0 (``E[S(I)] = θ·I`` under a drift θ) and ``I_k`` the information at look k (for
per-pass log ratios: the number of passes; only ratios of the ``I_k`` matter). Looks of one
cumulative statistic are strongly correlated (``corr(Z_j, Z_k) = √(I_j/I_k)``), so giving
each look α/K (Bonferroni) wastes power. Error spending (Lan & DeMets 1983) instead solves,
at each look, for the boundary ``c_k`` such that

    P_H0(no crossing at looks 1..k-1, crossing at look k) = F_k - F_{k-1},

where ``F_k`` is the cumulative α the caller may have spent by look k. The schedule is
open-ended: neither the number of looks nor the final information needs to be known, only
the information so far and ``F_k`` (:meth:`Boundaries.add`).

Numerics (the recursion of Armitage, McPherson & Rowe 1969, as in Jennison & Turnbull 2000,
ch. 19, on the score scale ``S_k = Z_k·√I_k``): the sub-density ``f_k`` of ``S_k`` on the
continuation region (no crossing so far) is kept at the nodes of a grid and interpolated
between them by a quadratic on each cell (through both nodes, its curvature the mean of
the second divided differences at the two nodes). ``f_k = (f_{k-1}·1_{continue}) *
N(θΔ, Δ)`` with ``Δ = I_k - I_{k-1}`` is integrated *exactly* for that interpolant (closed
forms in Φ and φ: ∫t^jφ, ∫t^jΦ, j <= 2), and so are the crossing probabilities. Unlike
Simpson's rule with the normal kernel evaluated at the nodes, this stays accurate when
consecutive looks are very close (``Δ`` much smaller than the grid spacing). The grid is a
lattice ``m·h`` on the score scale with ``h = 2^⌊log2(√I_k/16)⌋`` (between √I_k/32 and
√I_k/16; close looks share their nodes), every 8th node only beyond 4.5 sd, covering
±8.5 sd around ``θ·I_k`` and cut at the boundaries, plus 25 nodes within ±6 widths of each
of the last three boundaries whose edge (width √(I_k - I_j)) is sharper than the lattice.
Accuracy, measured against scipy's multivariate normal CDF (tests/stats/test_groupseq.py):
crossing probabilities to about 1e-7 (2e-8 for three looks at ratios 2.5 and 2.8, 1e-7
for six looks at ratio 1.0001), z boundaries to about 1e-5; each :meth:`Boundaries.add`
takes about 2 ms (benchmarks/groupseq_speed.py).

References
----------
P. Armitage, C. K. McPherson, B. C. Rowe, "Repeated significance tests on accumulating
data", J. R. Statist. Soc. A 132 (1969) 235-244. K. K. G. Lan, D. L. DeMets, "Discrete
sequential boundaries for clinical trials", Biometrika 70 (1983) 659-663. C. Jennison,
B. W. Turnbull, *Group Sequential Methods with Applications to Clinical Trials*, Chapman &
Hall/CRC, 2000 (ch. 2, 7 and 19).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import brentq
from scipy.special import ndtr, ndtri

__all__ = ["Boundaries", "empty_boundaries", "crossing_probabilities"]

_SQRT2PI = math.sqrt(2.0 * math.pi)
_GRID = 16.0  # lattice spacing between sqrt(I)/(2*_GRID) and sqrt(I)/_GRID
_CORE = 4.5  # full lattice within this many sd of the mean, every 8th node beyond
_SPAN = 8.5  # the grid covers this many sd either side of the mean
_ZMAX = 40.0  # the solver's most negative one-sided boundary is -_ZMAX
_RECENT = 3  # nodes are clustered at the boundaries of the last _RECENT looks only


def _phi(t: np.ndarray) -> np.ndarray:
    return np.exp(-0.5 * t * t) / _SQRT2PI


@dataclass(frozen=True)
class _Density:
    """The continuation sub-density f_k at grid nodes ``u`` (score scale), values ``f``."""

    info: float
    u: np.ndarray
    f: np.ndarray


def _start() -> _Density:
    """S(0) = 0: a point mass, represented by an empty grid (handled by the callers)."""
    return _Density(0.0, np.zeros(0), np.zeros(0))


def _cells(u: np.ndarray, f: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per cell: left node a, width h, f(a), slope, κ/2 of f ≈ f(a) + slope·x + κ/2·x(x - h).

    ``x = u - a``; κ is the cell's curvature, the mean of the second divided differences
    at its two nodes (at the two end nodes, their neighbour's). The quadratic passes
    through both nodes: it adds the bubble κ/2·x(x - h) to the linear interpolant, which
    makes the integrals O(h⁴) where f is smooth instead of O(h²). Arrays (..., n) → (..., n-1).
    """
    h = np.diff(u, axis=-1)
    slope = np.diff(f, axis=-1) / h
    if u.shape[-1] >= 3:
        second = 2.0 * np.diff(slope, axis=-1) / (h[..., :-1] + h[..., 1:])
        node = np.concatenate((second[..., :1], second, second[..., -1:]), axis=-1)
        half_kappa = 0.25 * (node[..., :-1] + node[..., 1:])
    else:
        half_kappa = np.zeros_like(h)
    return u[..., :-1], h, f[..., :-1], slope, half_kappa


def _crossing(d: _Density, shift: float, w: float, sides: int) -> Callable[[float], np.ndarray]:
    """b ↦ [P(continue so far, S_k >= b), P(continue so far, S_k <= -b)] (the second 0
    when one-sided) with S_k = S_{k-1} + N(shift, w²): the integrals of f(u)·Φ(±(u + shift
    ∓ b)/w) over each cell in closed form (∫Φ, ∫tΦ, ∫t²Φ), the cells prepared once."""
    if d.u.size == 0:  # S_{k-1} = 0: a point mass

        def point(b: float) -> np.ndarray:
            return np.array([ndtr((shift - b) / w), ndtr((-shift - b) / w) if sides == 2 else 0.0])

        return point
    rows = 2 if sides == 2 else 1
    u = np.stack((d.u, -d.u[::-1]))[:rows]  # the lower tail is the upper one of -S
    f = np.stack((d.f, d.f[::-1]))[:rows]
    sh = np.array([[shift], [-shift]])[:rows]
    a, h, fa, slope, hk = _cells(u, f)
    up = u + sh

    def cross(b: float) -> np.ndarray:
        t = (up - b) / w
        cdf = ndtr(t)
        pdf = _phi(t)
        g0 = np.diff(t * cdf + pdf, axis=-1)  # ∫Φ dt
        g1 = np.diff(0.5 * ((t * t - 1.0) * cdf + t * pdf), axis=-1)  # ∫ tΦ dt
        g2 = np.diff((t**3 * cdf + (t * t + 2.0) * pdf) / 3.0, axis=-1)  # ∫ t²Φ dt
        e = b - sh - a  # u - a = e + w·t
        c0 = fa + slope * e + hk * e * (e - h)
        c1 = w * (slope + hk * (2.0 * e - h))
        c2 = hk * (w * w)
        p = np.maximum(w * np.sum(c0 * g0 + c1 * g1 + c2 * g2, axis=-1), 0.0)
        return p if rows == 2 else np.array([p[0], 0.0])

    return cross


def _nodes(
    info: float, lo: float, hi: float, mean: float, edges: Sequence[tuple[float, float]]
) -> np.ndarray:
    """Grid nodes on [lo, hi] (score scale) for look information ``info``."""
    sd = math.sqrt(info)
    h = 2.0 ** math.floor(math.log2(sd / _GRID))
    m = np.arange(math.ceil(lo / h), math.floor(hi / h) + 1)
    x = m * h
    keep = (np.abs(x - mean) <= _CORE * sd) | (m % 8 == 0)
    parts = [x[keep], np.array([lo, hi])]
    offsets = np.linspace(-6.0, 6.0, 25)
    for e, w in edges:
        if w < 4.0 * h:
            pts = e + w * offsets
            parts.append(pts[(pts > lo) & (pts < hi)])
    nodes = np.unique(np.concatenate(parts))
    # drop nodes closer than 1e-9 sd (they add nothing and make slopes ill-conditioned)
    close = np.diff(nodes) <= 1e-9 * sd
    if np.any(close):
        nodes = np.concatenate((nodes[:-1][~close], nodes[-1:]))
    return nodes


def _advance(
    d: _Density,
    info: float,
    b: float,
    sides: int,
    drift: float,
    edges: Sequence[tuple[float, float]],
) -> _Density:
    """f_k on the continuation region of look k (boundary ``b`` on the score scale)."""
    delta = info - d.info
    w = math.sqrt(delta)
    shift = drift * delta
    mean, sd = drift * info, math.sqrt(info)
    hi = min(b, mean + _SPAN * sd)
    lo = max(-b if sides == 2 else -math.inf, mean - _SPAN * sd)
    if not hi > lo:  # nothing can continue
        return _Density(info, np.array([0.0, 1.0]), np.zeros(2))
    s = _nodes(info, lo, hi, mean, edges)
    if d.u.size == 0:
        return _Density(info, s, _phi((s - shift) / w) / w)
    a, h, fa, slope, hk = _cells(d.u, d.f)
    t = (d.u[None, :] + shift - s[:, None]) / w  # (targets, nodes)
    cdf = ndtr(t)
    pdf = _phi(t)
    m0 = np.diff(cdf, axis=1)  # ∫φ dt over each cell
    m1 = -np.diff(pdf, axis=1)  # ∫ tφ dt
    m2 = m0 - np.diff(t * pdf, axis=1)  # ∫ t²φ dt
    # u - a = e + w·t with e = s - shift - a; f(u) = fa + slope·x + κ/2·x(x - h)
    o = float(np.mean(s)) - shift  # origin that keeps the products small
    v = s - shift - o  # e = v - (a - o)
    ao = a - o
    # c0 = fa + slope·e + hk·e(e - h) = (fa - slope·ao + hk·ao(ao + h))
    #      + v·(slope - hk(2ao + h)) + v²·hk
    p0 = fa - slope * ao + hk * ao * (ao + h)
    p1 = slope - hk * (2.0 * ao + h)
    # c1/w = slope + hk(2e - h) = (slope - hk(2ao + h)) + 2v·hk ;  c2/w² = hk
    out = m0 @ p0 + v * (m0 @ p1) + v * v * (m0 @ hk) + w * (m1 @ p1) + 2.0 * w * v * (m1 @ hk)
    out += w * w * (m2 @ hk)
    return _Density(info, s, np.maximum(out, 0.0))


def _edges(info: Sequence[float], bounds: Sequence[float], sides: int, now: float) -> list:
    """(position, width) of the sharp edges the last boundaries leave in f at ``now``."""
    out = []
    for i, c in zip(info[-_RECENT:], bounds[-_RECENT:], strict=True):
        if math.isfinite(c):
            w = math.sqrt(now - i)
            b = c * math.sqrt(i)
            out.append((b, w))
            if sides == 2:
                out.append((-b, w))
    return out


def _check_sides(sides: int) -> int:
    if sides not in (1, 2):
        raise ValueError(f"sides must be 1 (upper boundary) or 2 (|Z| boundary), got {sides!r}")
    return int(sides)


def _check_info(info: Sequence[float], name: str = "info") -> tuple[float, ...]:
    out = tuple(float(v) for v in info)
    for v in out:
        if not (math.isfinite(v) and v > 0):
            raise ValueError(f"{name} must be finite and > 0, got {v!r}")
    for a, b in zip(out, out[1:], strict=False):
        if not b > a:
            raise ValueError(f"{name} must be strictly increasing, got {a!r} then {b!r}")
    return out


@dataclass(frozen=True)
class Boundaries:
    """The looks of one sequential test so far (error spending, docs/methods.md §10.1).

    Attributes
    ----------
    info : tuple of float
        Information at each look (e.g. passes), strictly increasing, > 0.
    bounds : tuple of float
        z boundary ``c_k`` of each look (``math.inf`` where no α was spent).
    spent : tuple of float
        Cumulative α spent up to and including each look (non-decreasing, < 1).
    sides : int
        2: reject H0 at look k when ``|Z_k| >= c_k``; 1: when ``Z_k >= c_k``.

    Notes
    -----
    Build with :func:`empty_boundaries` and :meth:`add`, one look at a time. The density
    needed for the next look is kept (not compared, not serialised) so :meth:`add` costs
    the same at look 40 as at look 2; :meth:`from_dict` recomputes it.

    References
    ----------
    .. [1] K. K. G. Lan, D. L. DeMets, "Discrete sequential boundaries for clinical
       trials", Biometrika 70 (1983) 659-663.
    .. [2] C. Jennison, B. W. Turnbull, *Group Sequential Methods with Applications to
       Clinical Trials*, Chapman & Hall/CRC, 2000, ch. 7 and 19.

    Examples
    --------
    Pocock's two-look boundary at two-sided α 0.05 (Jennison & Turnbull Table 2.1: 2.178):
    spend the α that the constant boundary spends at the first look, then the rest.

    >>> from scipy.stats import norm
    >>> b = empty_boundaries().add(1.0, 2 * norm.sf(2.178)).add(2.0, 0.05)
    >>> round(b.bounds[1], 2)
    2.18
    >>> round(b.nominal(), 4)
    0.0294
    """

    info: tuple[float, ...] = ()
    bounds: tuple[float, ...] = ()
    spent: tuple[float, ...] = ()
    sides: int = 2
    _density: _Density = field(default_factory=_start, compare=False, repr=False)

    def __post_init__(self) -> None:
        _check_sides(self.sides)
        for name in ("info", "bounds", "spent"):  # lists from a caller become tuples
            object.__setattr__(self, name, tuple(float(v) for v in getattr(self, name)))
        if not len(self.info) == len(self.bounds) == len(self.spent):
            raise ValueError("info, bounds and spent must have one value per look")
        _check_info(self.info)
        for c in self.bounds:
            if math.isnan(c) or c == -math.inf or (self.sides == 2 and c < 0):
                raise ValueError(f"bounds must be numbers (>= 0 when two-sided) or inf, got {c!r}")
        prev = 0.0
        for a in self.spent:
            if not (0.0 <= a < 1.0) or a < prev:
                raise ValueError(f"spent must be non-decreasing in [0, 1), got {self.spent!r}")
            prev = a

    def add(self, info: float, cumulative_alpha: float) -> Boundaries:
        """Append the next look: the boundary that spends ``cumulative_alpha - spent[-1]``.

        Parameters
        ----------
        info : float
            Information at this look (> the previous look's).
        cumulative_alpha : float
            α that may have been spent by the end of this look, in [spent[-1], 1).

        Returns
        -------
        Boundaries
            A new object with the look appended: ``c`` solved (Brent's method, to 1e-10
            in z) so that P_H0(no crossing before, crossing now) equals the increment;
            ``math.inf`` when the increment is 0.

        Raises
        ------
        ValueError
            For information that is not finite, > 0 and larger than the last look's, or
            a cumulative α that is not finite, in [0, 1) and >= the α already spent.
        """
        info = float(info)
        cum = float(cumulative_alpha)
        if not (math.isfinite(info) and info > 0):
            raise ValueError(f"info must be finite and > 0, got {info!r}")
        if self.info and not info > self.info[-1]:
            raise ValueError(
                f"info must increase from look to look: {info!r} after {self.info[-1]!r}"
            )
        last = self.spent[-1] if self.spent else 0.0
        if not (math.isfinite(cum) and 0.0 <= cum < 1.0):
            raise ValueError(f"cumulative_alpha must be in [0, 1), got {cumulative_alpha!r}")
        if cum < last:
            raise ValueError(
                f"cumulative_alpha must not decrease: {cum!r} after {last!r} already spent"
            )
        d = self._density
        if d.info != (self.info[-1] if self.info else 0.0):  # e.g. a hand-made object
            d = _replay(self.info, self.bounds, self.sides, 0.0)[1]
        w = math.sqrt(info - d.info)
        root = math.sqrt(info)
        target = cum - last
        c = math.inf
        if target > 0:
            cross = _crossing(d, 0.0, w, self.sides)
            # the crossing is at most the fixed-sample tail: the root lies below c_fixed
            hi_c = float(-ndtri(target / self.sides))
            lo_c = 0.0 if self.sides == 2 else min(-_ZMAX, hi_c)

            def excess(z: float) -> float:
                return float(np.sum(cross(z * root))) - target

            if excess(hi_c) >= 0:
                c = hi_c
            elif excess(lo_c) <= 0:
                c = lo_c
            else:
                c = float(brentq(excess, lo_c, hi_c, xtol=1e-10, rtol=1e-12))
        edges = _edges(self.info, self.bounds, self.sides, info)
        nd = _advance(d, info, c * root, self.sides, 0.0, edges)
        return Boundaries(
            self.info + (info,), self.bounds + (c,), self.spent + (cum,), self.sides, nd
        )

    def nominal(self, k: int = -1) -> float:
        """Nominal p level of look ``k``: 2Φ(-c_k) (two-sided) or Φ(-c_k) (one-sided).

        A look rejects when its ordinary fixed-sample p-value is <= this level; 0 where
        no α was spent.
        """
        if not self.bounds:
            raise ValueError("no looks yet")
        c = self.bounds[k]
        return float(self.sides * ndtr(-c))

    @property
    def n_looks(self) -> int:
        return len(self.info)

    def to_dict(self) -> dict[str, object]:
        """JSON-safe form (infinite bounds as None) that :meth:`from_dict` reads back."""
        return {
            "info": list(self.info),
            "bounds": [c if math.isfinite(c) else None for c in self.bounds],
            "spent": list(self.spent),
            "sides": self.sides,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> Boundaries:
        """The object :meth:`to_dict` wrote, with its density recomputed (ValueError if bad)."""

        def numbers(key: str, none: float | None = None) -> tuple[float, ...]:
            values = data.get(key)
            if not isinstance(values, list | tuple):
                raise ValueError(f"not a stored Boundaries: {key!r} is not a list")
            out = []
            for v in values:
                if v is None and none is not None:
                    out.append(none)
                elif isinstance(v, int | float) and not isinstance(v, bool):
                    out.append(float(v))
                else:
                    raise ValueError(f"not a stored Boundaries: {key!r} holds {v!r}")
            return tuple(out)

        info, bounds, spent = numbers("info"), numbers("bounds", math.inf), numbers("spent")
        sides = data.get("sides")
        if isinstance(sides, bool) or not isinstance(sides, int):
            raise ValueError("not a stored Boundaries: 'sides' is not an integer")
        cls(info, bounds, spent, sides)  # validates before the replay
        return cls(info, bounds, spent, sides, _replay(info, bounds, sides, 0.0)[1])


def empty_boundaries(sides: int = 2) -> Boundaries:
    """A sequential test with no looks yet, to be grown by :meth:`Boundaries.add`.

    Parameters
    ----------
    sides : int
        2: reject when ``|Z_k| >= c_k`` (a two-sided test, α split over both tails);
        1: reject when ``Z_k >= c_k`` (one of the two one-sided tests of a TOST).

    Returns
    -------
    Boundaries
        No looks; ValueError for ``sides`` other than 1 or 2.

    References
    ----------
    .. [1] K. K. G. Lan, D. L. DeMets, "Discrete sequential boundaries for clinical
       trials", Biometrika 70 (1983) 659-663.

    Examples
    --------
    A look that spends nothing has no boundary; the first look that spends α/K tests at
    the fixed-sample level α/K.

    >>> b = empty_boundaries().add(10, 0.0).add(15, 0.01)
    >>> b.bounds[0], round(b.bounds[1], 3), round(b.nominal(), 4)
    (inf, 2.576, 0.01)
    """
    return Boundaries(sides=_check_sides(sides))


def _replay(
    info: Sequence[float], bounds: Sequence[float], sides: int, drift: float
) -> tuple[np.ndarray, _Density, np.ndarray]:
    """Crossing probabilities (upper, lower) per look and the last continuation density."""
    d = _start()
    up = np.zeros(len(info))
    low = np.zeros(len(info))
    for k, (i, c) in enumerate(zip(info, bounds, strict=True)):
        w = math.sqrt(i - d.info)
        shift = drift * (i - d.info)
        b = c * math.sqrt(i)
        if math.isfinite(b):
            up[k], low[k] = _crossing(d, shift, w, sides)(b)
        edges = _edges(info[:k], bounds[:k], sides, i)
        d = _advance(d, i, b, sides, drift, edges)
    return up + low, d, np.column_stack((up, low))


def crossing_probabilities(
    info: Sequence[float],
    bounds: Sequence[float],
    drift: float = 0.0,
    sides: int = 2,
    by_side: bool = False,
) -> np.ndarray:
    """P(first crossing at look k) for boundaries ``bounds`` when ``E[S(I)] = drift·I``.

    Parameters
    ----------
    info : sequence of float
        Information at each look, strictly increasing, > 0.
    bounds : sequence of float
        z boundary at each look (``math.inf``: no test at that look); for ``sides=2``
        >= 0, for ``sides=1`` any real or inf.
    drift : float
        θ, the drift of the score per unit information (0 under H0); the z statistic at
        information I then has mean θ·√I.
    sides : int
        2: a crossing is ``|Z_k| >= c_k``; 1: ``Z_k >= c_k``.
    by_side : bool
        False: shape (K,), the total. True: shape (K, 2), the upper (``Z_k >= c_k``) and
        lower (``Z_k <= -c_k``) crossings (the lower column is 0 for ``sides=1``).

    Returns
    -------
    ndarray
        The probabilities; their sum is P(any crossing), the power (or α under H0).

    References
    ----------
    .. [1] P. Armitage, C. K. McPherson, B. C. Rowe, "Repeated significance tests on
       accumulating data", J. R. Statist. Soc. A 132 (1969) 235-244.
    .. [2] C. Jennison, B. W. Turnbull, *Group Sequential Methods with Applications to
       Clinical Trials*, Chapman & Hall/CRC, 2000, ch. 19.

    Examples
    --------
    O'Brien-Fleming's constant C_B(5) = 2.040 (Jennison & Turnbull 2000, Table 2.3):
    boundaries C_B·√(5/k) at five equal looks spend two-sided α 0.05 in all.

    >>> c = [2.040 * (5 / k) ** 0.5 for k in range(1, 6)]
    >>> round(float(crossing_probabilities([1, 2, 3, 4, 5], c).sum()), 4)
    0.05
    """
    sides = _check_sides(sides)
    inf_ = _check_info(info)
    bs = tuple(float(c) for c in bounds)
    if len(bs) != len(inf_):
        raise ValueError(f"bounds must hold one value per look ({len(inf_)}), got {len(bs)}")
    for c in bs:
        if math.isnan(c) or (sides == 2 and c < 0) or c == -math.inf:
            raise ValueError(f"bounds must be numbers (>= 0 when two-sided) or inf, got {c!r}")
    drift = float(drift)
    if not math.isfinite(drift):
        raise ValueError(f"drift must be finite, got {drift!r}")
    total, _, both = _replay(inf_, bs, sides, drift)
    return both if by_side else total
