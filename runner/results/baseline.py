"""Stored results to compare a new campaign with (``settings.baseline``; docs/methods.md §3, §6.1).

PILOT "Comparing Results": a result is summarised by its mean, the variance s_q² of its
subsession means, their count n_q and the subsession size q; these are enough to test a
new result against it without the raw data. A baseline is one of:

- a campaign directory or its ``benchrun.db``: the newest campaign in it, each workload
  summarised exactly as ``benchrun show`` does (runner/results/workloads.py);
- a JSON file, either ``{"workloads": {NAME: {...}}}``, ``{"results": [{"name": NAME, ...}]}``
  or a plain ``{NAME: {...}}``, each entry with ``mean``, ``variance`` (or ``s2_q``), ``n_q``
  and optionally ``q`` (benchrun's own ``show --json``/export documents qualify).

Only workloads with a usable summary (n_q >= 2, finite mean and variance) are returned.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path

from benchrun.runner.errors import UserError
from benchrun.runner.results.conditions import (
    ConditionsComparison,
    campaign_conditions,
    compare_conditions,
    unknown_conditions,
)


@dataclass(frozen=True)
class BaselineResult:
    """One stored result: mean (unit of the workload), s_q² (unit²), n_q, q."""

    mean: float
    variance: float
    n_q: int
    q: int

    def as_tuple(self) -> tuple[float, float, int, int]:
        return (self.mean, self.variance, self.n_q, self.q)


def _entry(name: str, doc: object, source: str) -> BaselineResult | None:
    """The result of one entry of a JSON summary: ``mean``, ``variance`` (or ``s2_q``,
    the collector's name), ``n_q`` and ``q`` (default 1), read from its ``collected``
    object when it has one (``show --json``, an export); None when one of the first three
    is missing or ``n_q`` < 2."""
    if not isinstance(doc, Mapping):
        raise UserError(f"{source}: entry {name!r} is not a mapping with mean, variance, n_q")
    inner = doc.get("collected")
    written = inner if isinstance(inner, Mapping) else doc
    stored = {
        f.name: written.get(f.name, written.get(_ALIASES.get(f.name, f.name)))
        for f in fields(BaselineResult)
    }
    return _checked(name, source=source, **stored)


#: the other key a field of :class:`BaselineResult` may be written under (the collector's
#: name of the variance); the rest are written under the field's name
_ALIASES = {"variance": "s2_q"}


def _checked(
    name: str, *, mean: object, variance: object, n_q: object, q: object, source: str
) -> BaselineResult | None:
    """The :class:`BaselineResult` of the stored values (``q`` None or 0: 1), refused with
    one line when they are no numbers, not finite, or the variance is negative; None
    when mean, variance or n_q is missing or ``n_q`` < 2."""
    if mean is None or variance is None or n_q is None:
        return None
    try:
        res = BaselineResult(
            float(_number(mean)), float(_number(variance)), int(_number(n_q)), int(_number(q or 1))
        )
    except (TypeError, ValueError, OverflowError):
        raise UserError(
            f"{source}: entry {name!r}: mean, variance and n_q must be numbers"
        ) from None
    if not (math.isfinite(res.mean) and math.isfinite(res.variance)) or res.variance < 0:
        raise UserError(
            f"{source}: entry {name!r}: mean and variance must be finite, variance >= 0"
        )
    return res if res.n_q >= 2 else None


def _number(v: object) -> str | int | float:
    """``v`` when ``float``/``int`` may take it (a number or its text), else TypeError."""
    if isinstance(v, str | int | float):
        return v
    raise TypeError(v)


def _from_json(path: Path) -> dict[str, BaselineResult]:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: cannot read the baseline: {exc}") from None
    except json.JSONDecodeError as exc:
        raise UserError(f"{path}: not valid JSON (line {exc.lineno}): {exc.msg}") from None
    except (RecursionError, ValueError) as exc:  # nested too deep; an integer too long
        raise UserError(f"{path}: not a baseline benchrun can read ({exc})") from None
    if not isinstance(doc, Mapping):
        raise UserError(f"{path}: expected a JSON object of workload summaries")
    workloads, results = doc.get("workloads"), doc.get("results")
    listed = workloads if isinstance(workloads, list) else results
    entries: Mapping[str, object]
    if isinstance(workloads, Mapping):
        entries = workloads
    elif isinstance(listed, list):
        entries = {str(e.get("name")): e for e in listed if isinstance(e, Mapping)}
    else:
        entries = doc
    out = {}
    for name, entry in entries.items():
        res = _entry(name, entry, str(path))
        if res is not None:
            out[name] = res
    return out


def _from_store(db: Path) -> dict[str, BaselineResult]:
    from benchrun.runner.results.settings import campaign_settings
    from benchrun.runner.results.workloads import workload_results
    from benchrun.runner.store.database import Store

    with Store.open(db) as store:
        campaign = store.campaign()
        confidence = float(campaign_settings(campaign.settings).confidence)
        results = workload_results(store, campaign, confidence)
    out = {}
    for r in results:
        e = r.estimate
        res = (
            None
            if e is None
            else _checked(
                r.name, mean=e.mean, variance=e.variance, n_q=e.n_q, q=e.q, source=str(db)
            )
        )
        if res is not None:
            out[r.name] = res
    return out


def _store_path(path: str | Path) -> Path | None:
    """The SQLite store a baseline path names, None for a JSON summary or a missing file."""
    p = Path(path).expanduser()
    if p.is_dir():
        p = p / "benchrun.db"
    if not p.is_file() or p.suffix == ".json":
        return None
    with p.open("rb") as fh:
        return p if fh.read(16).startswith(b"SQLite format 3") else None


def baseline_conditions(
    path: str | Path, db: Path, campaign_id: int, names: list[str]
) -> ConditionsComparison:
    """The conditions of the baseline (its store's newest campaign; unknown for a JSON
    summary) against those of campaign ``campaign_id`` of ``db``, over the workloads
    ``names`` (runner/results/conditions.py; docs/conditions.md)."""
    from benchrun.runner.store.database import Store

    base = _store_path(path)
    if base is None:
        old = unknown_conditions(f"{path} (JSON summary)")
    else:
        with Store.open(base) as store:
            campaign = store.campaign()
            old = campaign_conditions(
                store, campaign, f"baseline {campaign.name} (campaign {campaign.id})"
            )
    with Store.open(db) as store:
        new = campaign_conditions(store, store.campaign(campaign_id))
    return compare_conditions(old, new, names)


def load_baseline(path: str | Path) -> dict[str, BaselineResult]:
    """Stored results by workload name from ``path`` (see the module docstring).

    Raises :class:`runner.errors.UserError` for a missing, unreadable or foreign file.
    """
    p = Path(path).expanduser()
    if p.is_dir():
        p = p / "benchrun.db"
    if not p.exists():
        raise UserError(
            f"{path}: baseline not found; give a campaign directory, its benchrun.db, "
            "or a JSON summary"
        )
    if p.suffix == ".json":
        return _from_json(p)
    with p.open("rb") as fh:
        head = fh.read(16)
    if head.startswith(b"SQLite format 3"):
        return _from_store(p)
    return _from_json(p)
