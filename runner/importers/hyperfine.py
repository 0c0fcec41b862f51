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

import numpy as np

from benchrun.runner.errors import UserError
from benchrun.runner.importers.dataset import Dataset, GroupKey, json_type, parse_number


def looks_like_hyperfine(doc: object) -> bool:
    """True when ``doc`` (parsed JSON) has hyperfine's ``results[].command`` shape."""
    if not isinstance(doc, Mapping):
        return False
    results = doc.get("results")
    return (
        isinstance(results, list)
        and len(results) > 0
        and all(isinstance(r, Mapping) and "command" in r for r in results)
    )


def read_hyperfine(doc: Mapping[str, object], source: str) -> Dataset:
    """Turn a parsed hyperfine export into a :class:`Dataset` (unit ``s``)."""
    groups: dict[GroupKey, np.ndarray] = {}
    processes: dict[GroupKey, tuple[int, ...]] = {}
    notes: list[str] = []
    results = doc["results"]
    assert isinstance(results, list)  # looks_like_hyperfine
    for index, result in enumerate(results):
        command = result["command"]
        if not isinstance(command, str) or not command:
            raise UserError(
                f"{source}: results[{index}].command: expected the command (text), "
                f"got {json_type(command)}"
            )
        where = f"{source}: results[{index}] ({command})"
        times = result.get("times")
        if times is None:
            raise UserError(
                f"{where}: no 'times' array (hyperfine older than 1.7 exports only "
                "summaries); re-run with a newer hyperfine"
            )
        if not isinstance(times, list) or not times:
            raise UserError(f"{where}: 'times' is empty or not an array")
        values = np.array(
            [parse_number(t, f"{where} times[{i}]") for i, t in enumerate(times)], dtype=float
        )
        params = result.get("parameters") or {}
        if not isinstance(params, Mapping) or not all(
            isinstance(v, str | int | float) and not isinstance(v, bool) for v in params.values()
        ):
            raise UserError(f"{where}: 'parameters' must map names to values (text or numbers)")
        workload = ",".join(f"{k}={v}" for k, v in params.items()) if params else None
        key: GroupKey = (None, command, workload)
        if key in groups:
            raise UserError(f"{where}: the same command appears twice in the export")
        groups[key] = values
        processes[key] = (1,) * values.size
        codes = result.get("exit_codes") or []
        if not isinstance(codes, list):
            raise UserError(f"{where}: 'exit_codes' must be an array, got {json_type(codes)}")
        failed = sum(1 for c in codes if c not in (0, None))
        if failed:
            notes.append(
                f"{command}: {failed} of {len(codes)} runs exited non-zero (hyperfine -i); "
                "their times are included"
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
