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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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


def _entry(name: str, doc: Any, source: str) -> BaselineResult | None:
    if not isinstance(doc, dict):
        raise UserError(f"{source}: entry {name!r} is not a mapping with mean, variance, n_q")
    if "collected" in doc and isinstance(doc["collected"], dict):
        doc = doc["collected"]
    var = doc.get("variance", doc.get("s2_q"))
    mean, n_q, q = doc.get("mean"), doc.get("n_q"), doc.get("q", 1)
    if mean is None or var is None or n_q is None:
        return None
    try:
        res = BaselineResult(float(mean), float(var), int(n_q), int(q or 1))
    except (TypeError, ValueError):
        raise UserError(
            f"{source}: entry {name!r}: mean, variance and n_q must be numbers"
        ) from None
    if not (math.isfinite(res.mean) and math.isfinite(res.variance)) or res.variance < 0:
        raise UserError(
            f"{source}: entry {name!r}: mean and variance must be finite, variance >= 0"
        )
    return res if res.n_q >= 2 else None


def _from_json(path: Path) -> dict[str, BaselineResult]:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: cannot read the baseline: {exc}") from None
    except json.JSONDecodeError as exc:
        raise UserError(f"{path}: not valid JSON (line {exc.lineno}): {exc.msg}") from None
    except (RecursionError, ValueError) as exc:  # nested too deep; an integer too long
        raise UserError(f"{path}: not a baseline benchrun can read ({exc})") from None
    entries: dict[str, Any]
    if isinstance(doc, dict) and isinstance(doc.get("workloads"), dict):
        entries = doc["workloads"]
    elif isinstance(doc, dict) and isinstance(doc.get("workloads"), list):
        entries = {str(e.get("name")): e for e in doc["workloads"] if isinstance(e, dict)}
    elif isinstance(doc, dict) and isinstance(doc.get("results"), list):
        entries = {str(e.get("name")): e for e in doc["results"] if isinstance(e, dict)}
    elif isinstance(doc, dict):
        entries = doc
    else:
        raise UserError(f"{path}: expected a JSON object of workload summaries")
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
        res = _entry(r.name, r.collected or {}, str(db))
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
