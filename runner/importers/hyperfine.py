"""hyperfine ``--export-json`` files.

Layout (hyperfine 1.x): ``{"results": [{"command": str, "times": [seconds...],
"exit_codes": [int...], "parameters": {name: value}, "mean": ..., ...}, ...]}``. Each
result becomes one group: ``benchmark`` = the command (or its ``--command-name``),
``workload`` = the parameter values (``name=value`` joined by ``,``) when
``--parameter-scan``/``--parameter-list`` was used. Readings are the per-run wall times in
seconds, in the order hyperfine ran them; hyperfine's own summary fields are ignored
(benchrun recomputes everything from the raw times). Warm-up runs are not exported by
hyperfine, so none are present.

The process is the unit (docs/imported-data.md): every hyperfine run launches the command
once, so each time is one process and one observation (n = the number of runs).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from benchrun.runner.errors import UserError
from benchrun.runner.importers.dataset import Dataset, GroupKey, json_type, parse_number
from benchrun.runner.jsonread import MISSING, JsonFields


def _results(doc: object) -> list[object]:
    """The ``results`` array of a parsed document ([] without one)."""
    results = doc.get("results") if isinstance(doc, Mapping) else None
    return results if isinstance(results, list) else []


def looks_like_hyperfine(doc: object) -> bool:
    """True when ``doc`` (parsed JSON) has hyperfine's ``results[].command`` shape."""
    results = _results(doc)
    return len(results) > 0 and all(isinstance(r, Mapping) and "command" in r for r in results)


def _times(v: object, where: str) -> tuple[float, ...]:
    if v is MISSING or v is None:
        raise UserError(
            f"{where}: no 'times' array (hyperfine older than 1.7 exports only "
            "summaries); re-run with a newer hyperfine"
        )
    if not isinstance(v, list) or not v:
        raise UserError(f"{where}: 'times' is empty or not an array")
    return tuple(parse_number(t, f"{where} times[{i}]") for i, t in enumerate(v))


def _parameters(v: object, where: str) -> dict[str, str | int | float]:
    params = {} if v is MISSING or not v else v
    if not isinstance(params, Mapping) or not all(
        isinstance(x, str | int | float) and not isinstance(x, bool) for x in params.values()
    ):
        raise UserError(f"{where}: 'parameters' must map names to values (text or numbers)")
    return {str(k): x for k, x in params.items()}


def _exit_codes(v: object, where: str) -> tuple[object, ...]:
    codes = [] if v is MISSING or not v else v
    if not isinstance(codes, list):
        raise UserError(f"{where}: 'exit_codes' must be an array, got {json_type(codes)}")
    return tuple(codes)


@dataclass(frozen=True)
class HyperfineEntry:
    """One result of ``results[]``, checked: the ``command`` (or its ``--command-name``),
    the wall ``times`` of its runs in seconds, its ``parameters`` (name -> value; empty
    without a parameter scan) and its runs' ``exit_codes`` (empty when not exported)."""

    command: str
    times: tuple[float, ...]
    parameters: dict[str, str | int | float]
    exit_codes: tuple[object, ...]

    @classmethod
    def from_json(cls, result: Mapping[str, object], source: str, index: int) -> HyperfineEntry:
        """The result at ``results[index]``; a UserError naming it (and its command) when a
        field is missing or not what it should be."""
        command = result["command"]
        if not isinstance(command, str) or not command:
            raise UserError(
                f"{source}: results[{index}].command: expected the command (text), "
                f"got {json_type(command)}"
            )
        where = f"{source}: results[{index}] ({command})"
        f = JsonFields(result, where)
        return cls(
            command,
            times=f.check("times", _times, place=False),
            parameters=f.check("parameters", _parameters, place=False),
            exit_codes=f.check("exit_codes", _exit_codes, place=False),
        )

    @property
    def workload(self) -> str | None:
        """The parameter values as ``name=value`` joined by ``,``; None without any."""
        return ",".join(f"{k}={v}" for k, v in self.parameters.items()) or None

    @property
    def failed(self) -> int:
        """Runs that exited non-zero (hyperfine ``-i``)."""
        return sum(1 for c in self.exit_codes if c not in (0, None))


def read_hyperfine(doc: Mapping[str, object], source: str) -> Dataset:
    """Turn a parsed hyperfine export into a :class:`Dataset` (unit ``s``)."""
    groups: dict[GroupKey, np.ndarray] = {}
    processes: dict[GroupKey, tuple[int, ...]] = {}
    notes: list[str] = []
    for index, result in enumerate(_results(doc)):
        if not isinstance(result, Mapping):  # looks_like_hyperfine refused it
            raise UserError(f"{source}: results[{index}] is not an object")
        r = HyperfineEntry.from_json(result, source, index)
        key: GroupKey = (None, r.command, r.workload)
        if key in groups:
            raise UserError(
                f"{source}: results[{index}] ({r.command}): the same command appears twice "
                "in the export"
            )
        values = np.array(r.times, dtype=float)
        groups[key] = values
        processes[key] = (1,) * values.size
        if r.failed:
            notes.append(
                f"{r.command}: {r.failed} of {len(r.exit_codes)} runs exited non-zero "
                "(hyperfine -i); their times are included"
            )
    return Dataset(
        groups=groups,
        unit="s",
        source_format="hyperfine",
        direction="lower_is_better",
        source=source,
        notes=tuple(notes),
        processes=processes,
    )
