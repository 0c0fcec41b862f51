"""A benchrun export as ``benchrun compare`` reads it: the document parsed once into typed
records (docs/export-format.md).

:func:`runner.importers.benchrun_export.check_export` checks the format, the version and
every field a reader uses (a damaged or hand-edited file is refused with one line naming
the field); what passed becomes an :class:`ExportDocument` here, so that compare reads
attributes, never the JSON. A workload's ``result`` is its :class:`Estimate` under the
estimate's own field names (runner/report/exchange.py writes it); its analysed readings
are those of :func:`runner.importers.benchrun_export.analysed_readings` (per unit of work
when the workload was ``per_work``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from benchrun.runner.results.conditions import is_contended, runs_python
from benchrun.runner.results.estimate import Estimate, estimate_from


@dataclass(frozen=True)
class ExportedRound:
    """What one exported round says of the conditions it ran under: ``ok`` (its status is
    ``ok``), ``warmup`` and ``contended`` (its ``flags`` hold ``contended``: it waited for
    a CPU, docs/contention.md)."""

    ok: bool
    warmup: bool
    contended: bool

    @classmethod
    def from_json(cls, raw: Mapping[str, object]) -> ExportedRound:
        """The round of an export's ``rounds`` list (a missing ``status`` is not ok, a
        missing ``warmup`` is false, ``flags`` that are not text hold no flag)."""
        return cls(
            ok=raw.get("status") == "ok",
            warmup=bool(raw.get("warmup")),
            contended=is_contended(raw.get("flags")),
        )

    @property
    def counted(self) -> bool:
        """Counted among a workload's rounds by its conditions (runner/results/conditions.py):
        not warm-up, and ok or contended."""
        return not self.warmup and (self.ok or self.contended)


@dataclass(frozen=True)
class ExportedWorkload:
    """One workload of an export: its name and unit as written, its direction, its
    estimate (None without a ``result`` or without a mean), the readings its campaign
    analysed (None without rounds), its rounds, its level shift in words and whether its
    command runs Python."""

    name: str
    unit: str
    direction: str
    estimate: Estimate | None
    readings: np.ndarray | None
    rounds: tuple[ExportedRound, ...]
    level_shift: str | None
    level_shift_at: int | None
    python: bool

    @classmethod
    def from_json(cls, raw: Mapping[str, object]) -> ExportedWorkload:
        """The workload ``raw`` of a checked export (:func:`check_export` has checked its
        fields; a value of another type in its ``result`` reads as missing, as
        :func:`runner.results.estimate.estimate_from` reads it)."""
        from benchrun.runner.importers.benchrun_export import analysed_readings

        result = raw.get("result")
        result = result if isinstance(result, Mapping) else None
        rounds = raw.get("rounds")
        rounds = rounds if isinstance(rounds, list) else []
        spec = raw.get("spec")
        command = (spec.get("command") if isinstance(spec, Mapping) else None) or raw.get("command")
        # the export writes the variance as ``variance``, the reader knows it as ``s2_q``
        estimate = (
            None if result is None else estimate_from({**result, "s2_q": result.get("variance")})
        )
        return cls(
            name=str(raw["name"]),
            unit=str(raw.get("unit", "")),
            direction=str(raw.get("direction", "lower_is_better")),
            estimate=estimate,
            readings=analysed_readings(dict(raw)) if rounds else None,
            rounds=tuple(ExportedRound.from_json(r) for r in rounds if isinstance(r, Mapping)),
            level_shift=None if estimate is None else estimate.level_shift,
            level_shift_at=None if estimate is None else estimate.level_shift_at,
            python=runs_python(command),
        )


@dataclass(frozen=True)
class ExportDocument:
    """A checked benchrun export: its campaign's name and id, the machine record it was
    measured on (None when the export has none), and its workloads in file order."""

    campaign_name: str
    campaign_id: int | None
    metadata: Mapping[str, object] | None
    workloads: tuple[ExportedWorkload, ...]

    @classmethod
    def from_json(cls, doc: object, source: str) -> ExportDocument:
        """The export ``doc`` (parsed JSON) read from ``source``, after
        :func:`check_export` (a UserError naming the field when it is not one)."""
        from benchrun.runner.importers.benchrun_export import check_export

        checked = check_export(doc, source)
        campaign = checked.get("campaign") or {}
        metadata = campaign.get("metadata")
        cid = campaign.get("id")
        return cls(
            campaign_name=str(campaign.get("name")),
            campaign_id=cid if isinstance(cid, int) and not isinstance(cid, bool) else None,
            metadata=metadata if isinstance(metadata, Mapping) else None,
            workloads=tuple(
                ExportedWorkload.from_json(w) for i, w in enumerate(checked["workloads"])
            ),
        )
