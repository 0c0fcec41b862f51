"""``status.json``: the live status of an adaptive campaign, as one record.

An adaptive campaign rewrites ``<campaign_dir>/status.json`` after its decisions
(:mod:`runner.campaign.adaptive`); ``benchrun status`` reads it back while the campaign
runs (:mod:`runner.daemon.live`). Both go through :class:`LiveStatus`: :meth:`LiveStatus.to_json`
is the one writer, :meth:`LiveStatus.from_json` the one reader. The file lies in a campaign
directory, so the reader takes it as hostile: a field of the wrong type or a missing one is
left unknown (None, empty), never an error. Times are seconds; widths are fractions of the
mean.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from typing import TYPE_CHECKING, TypeVar

from benchrun.runner.jsonread import JsonFields

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

    from benchrun.runner.control.decision import BaselineStatus, PairStatus

__all__ = ["LiveStatus", "LiveWorkload", "STATUS_VERSION"]

#: the ``version`` written in every status.json
STATUS_VERSION = 1


def _texts(fields: JsonFields, key: str) -> tuple[str, ...]:
    """The field ``key``, a JSON list, as strings (anything else: empty)."""
    value = fields.value(key)
    return tuple(str(v) for v in value) if isinstance(value, list) else ()


#: how a field is read, by its declared type: a value of another type is None
#: (:meth:`JsonFields.loose`)
_READERS: dict[str, Callable[[JsonFields, str], object]] = {
    "int | None": lambda j, key: j.loose(key, int),
    "float | None": lambda j, key: j.loose(key, float),
    "bool | None": lambda j, key: j.loose(key, bool),
    "str | None": lambda j, key: j.loose(key, str),
    "tuple[str, ...]": _texts,
}

_R = TypeVar("_R", bound="DataclassInstance")


def _lenient(cls: type[_R], data: Mapping[str, object], *, nested: tuple[str, ...] = ()) -> _R:
    """A record of ``cls`` from a parsed JSON object: each field read by its declared type
    (:data:`_READERS`), a value of another type or a missing one giving None (or empty).
    The fields named in ``nested`` keep their defaults (the caller reads them); any other
    field whose type has no reader is a ``KeyError`` (a new field needs its reader)."""
    read = JsonFields(data, "status.json")
    return cls(
        **{f.name: _READERS[str(f.type)](read, f.name) for f in fields(cls) if f.name not in nested}
    )


@dataclass(frozen=True)
class LiveWorkload:
    """One workload in status.json: rounds stored (``rounds``), analysed (``steady``),
    failed and flagged contended; the estimate (``mean`` with its CI, ``q`` subsessions
    of ``n_q`` rounds) and its relative CI half-width against ``target``; whether it is
    ``done`` or ``active``, the controller's estimate of the rounds it still needs, the
    conditions not met yet, what it waits for, and why it was stopped (None: it was
    not). Every field is None (or empty) when a file read back does not hold it."""

    rounds: int | None = None
    steady: int | None = None
    failed: int | None = None
    contended: int | None = None
    mean: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    q: int | None = None
    n_q: int | None = None
    rel_half_width: float | None = None
    target: float | None = None
    done: bool | None = None
    active: bool | None = None
    rounds_needed: int | None = None
    unmet: tuple[str, ...] = ()
    waiting_for: tuple[str, ...] = ()
    stopped: str | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> LiveWorkload:
        """The workload's record of a parsed status.json (wrong types left unknown)."""
        return _lenient(cls, data)


@dataclass(frozen=True)
class LiveStatus:
    """The live status of one campaign (module docstring).

    ``campaign_id`` and ``name`` say whose it is, ``updated_at`` when it was written (Unix
    seconds); ``elapsed_s`` and ``eta_s`` (None: unknown) the campaign's time so far and
    the estimate of the time left; ``stop`` and ``reason`` the controller's last answer;
    ``undecided`` the pairs ``a~b`` without a verdict. ``pairs`` and ``baselines`` (the
    controller's comparisons) are written for other tools; :meth:`from_json` does not read
    them back (the store holds the verdicts).
    """

    campaign_id: int | None
    name: str | None = None
    updated_at: float | None = None
    elapsed_s: float | None = None
    eta_s: float | None = None
    stop: bool | None = None
    reason: str | None = None
    workloads: Mapping[str, LiveWorkload] = field(default_factory=dict)
    undecided: tuple[str, ...] = ()
    pairs: tuple[PairStatus, ...] = ()
    baselines: tuple[BaselineStatus, ...] = ()

    def to_json(self) -> str:
        """The text of status.json: the keys in their historical order, NaN and
        infinities as null, tuples as lists (:func:`benchrun.stats.results.jsonable`).

        Raises
        ------
        ValueError
            A value JSON cannot hold.
        """
        from benchrun.stats.results import jsonable  # numpy: for the writer only

        doc = {
            "version": STATUS_VERSION,
            "campaign_id": self.campaign_id,
            "name": self.name,
            "updated_at": self.updated_at,
            "elapsed_s": self.elapsed_s,
            "eta_s": self.eta_s,
            "stop": self.stop,
            "reason": self.reason,
            "workloads": {n: jsonable(asdict(w)) for n, w in self.workloads.items()},
            "undecided": list(self.undecided),
            "pairs": [jsonable(asdict(p)) for p in self.pairs],
            "baselines": [jsonable(asdict(b)) for b in self.baselines],
        }
        return json.dumps(doc, indent=1, allow_nan=False, default=str)

    @classmethod
    def from_json(cls, text: str) -> LiveStatus | None:
        """The status read back from the text of status.json.

        Returns
        -------
        LiveStatus or None
            None when the text is not a JSON object; fields of a wrong type are None
            (or empty), workloads that are not objects are left out.
        """
        try:
            data = json.loads(text)
        except ValueError:
            return None
        if not isinstance(data, dict):
            return None
        if not isinstance(data.get("campaign_id"), int | None):
            return None  # a campaign id that is not a number: no campaign's file
        workloads = data.get("workloads")
        return replace(
            _lenient(cls, data, nested=("workloads", "pairs", "baselines")),
            workloads={
                str(n): LiveWorkload.from_json(w)
                for n, w in (workloads.items() if isinstance(workloads, dict) else ())
                if isinstance(w, dict)
            },
        )
