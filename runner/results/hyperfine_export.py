"""A finished campaign in hyperfine's export formats (issue 32; docs/oneline.md).

``benchrun run -c ... --export-json FILE`` (and ``--export-markdown``, ``--export-csv``)
writes what hyperfine would have written for the same commands, read back from the
campaign's store, so that hyperfine's own scripts (``scripts/plot_whisker.py``,
``plot_histogram.py``, ``plot_parametrized.py``, ``advanced_statistics.py``) and the tools
that read hyperfine's JSON take it as it is:

- JSON: ``{"results": [{"command", "mean", "stddev", "median", "user", "system", "min",
  "max", "times", "exit_codes"[, "parameters"]}]}``, every time in seconds; ``times`` is
  the wall time of each timed round (a round's wall time: spawn to reap), ``user`` and
  ``system`` the means of the rounds' CPU seconds, ``stddev`` the sample standard
  deviation (null with one round), ``parameters`` the ``-L``/``--parameter-scan`` values;
- Markdown: hyperfine's table ``| Command | Mean [ms] | Min [ms] | Max [ms] | Relative |``
  (the unit of the first command's mean, or ``--time-unit``; Relative to the reference,
  else to the fastest, with the propagated standard deviation);
- CSV: ``command,mean,stddev,median,user,system,min,max`` then ``parameter_NAME``.

The timed rounds are those benchrun's own analysis uses (ok, not warm-up, not left out
as contended: :func:`runner.results.workloads.analysed_rounds`); with ``-i`` a round that
exited non-zero is one of them. A workload without a timed round is left out and named
in :attr:`HyperfineExport.missing`.
"""

from __future__ import annotations

import csv
import io
import json
import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from benchrun.runner.results.settings import campaign_settings
from benchrun.runner.results.workloads import analysed_rounds
from benchrun.runner.store.database import Store

#: hyperfine's unit names -> (header symbol, seconds per unit, decimals shown)
UNITS: Mapping[str, tuple[str, float, int]] = {
    "second": ("s", 1.0, 3),
    "millisecond": ("ms", 1e-3, 1),
    "microsecond": ("µs", 1e-6, 1),
    "nanosecond": ("ns", 1e-9, 1),
}


@dataclass(frozen=True)
class HyperfineResult:
    """One command's timed rounds, as hyperfine's ``BenchmarkResult`` holds them.

    ``command``: hyperfine's display name (the command with its parameters filled in, or
    its ``-n`` name). ``times``, ``user``, ``system``: seconds per timed round, in launch
    order. ``exit_codes``: each round's exit code (None: killed by a signal).
    ``parameters``: the matrix values of the workload, as strings.
    """

    command: str
    workload: str
    times: tuple[float, ...]
    user: tuple[float, ...]
    system: tuple[float, ...]
    exit_codes: tuple[int | None, ...]
    parameters: Mapping[str, str] = field(default_factory=dict)

    @property
    def mean(self) -> float:
        """Mean wall time, seconds."""
        return statistics.fmean(self.times)

    @property
    def stddev(self) -> float | None:
        """Sample standard deviation of the wall times (n - 1), None with one round."""
        return statistics.stdev(self.times) if len(self.times) > 1 else None

    @property
    def figures(self) -> dict[str, float | None]:
        """hyperfine's summary of the wall times, seconds, in its order: ``mean``,
        ``stddev`` (None with one round), ``median``, the mean ``user`` and ``system``
        CPU times, ``min``, ``max``."""
        return {
            "mean": self.mean,
            "stddev": self.stddev,
            "median": statistics.median(self.times),
            "user": statistics.fmean(self.user),
            "system": statistics.fmean(self.system),
            "min": min(self.times),
            "max": max(self.times),
        }

    def to_json(self) -> dict[str, object]:
        """The result as hyperfine's JSON writes it (key order included)."""
        doc: dict[str, object] = {
            "command": self.command,
            **self.figures,
            "times": list(self.times),
            "exit_codes": list(self.exit_codes),
        }
        if self.parameters:
            doc["parameters"] = dict(self.parameters)
        return doc


@dataclass(frozen=True)
class HyperfineExport:
    """The campaign's results in hyperfine's terms: ``results`` in the workloads' order,
    ``reference`` the workload the Relative column divides by (None: the fastest),
    ``missing`` the workloads left out for want of a timed round."""

    results: tuple[HyperfineResult, ...]
    reference: str | None = None
    missing: tuple[str, ...] = ()


def read_export(
    db: Path, campaign_id: int | None = None, commands: Mapping[str, str] | None = None
) -> HyperfineExport:
    """The results of campaign ``campaign_id`` (default: the newest) of the store ``db``.

    ``commands``: hyperfine's display name of each workload (its command with the
    parameters filled in, or its ``-n`` name); a workload not in it is shown by its name.
    """
    with Store.open(db) as store:
        campaign = store.campaign(campaign_id)
        settings = campaign_settings(campaign.settings)
        results: list[HyperfineResult] = []
        missing: list[str] = []
        for w in store.workloads(campaign.id):
            rounds = analysed_rounds(store.rounds(campaign.id, w.id), settings)
            if not rounds:
                missing.append(w.name)
                continue
            params = w.spec.get("params") or {}
            results.append(
                HyperfineResult(
                    command=(commands or {}).get(w.name, w.name),
                    workload=w.name,
                    times=tuple(r.wall_ns / 1e9 for r in rounds),
                    user=tuple(r.user_s for r in rounds),
                    system=tuple(r.sys_s for r in rounds),
                    exit_codes=tuple(r.exit_code for r in rounds),
                    parameters={str(k): str(v) for k, v in params.items()},
                )
            )
    reference = settings.reference
    return HyperfineExport(
        tuple(results),
        reference if isinstance(reference, str) else None,
        tuple(missing),
    )


def exit_failures(db: Path, campaign_id: int | None = None) -> int:
    """How many rounds of the campaign failed by a non-zero exit code alone (the rounds
    ``-i`` would have timed and kept)."""
    with Store.open(db) as store:
        campaign = store.campaign(campaign_id)
        return sum(
            1
            for r in store.rounds(campaign.id)
            if r.status == "failed" and r.exit_code and r.reason == f"exit code {r.exit_code}"
        )


def export_json(export: HyperfineExport) -> str:
    """hyperfine's ``--export-json`` document (times in seconds)."""
    return json.dumps({"results": [r.to_json() for r in export.results]}, indent=2) + "\n"


def export_csv(export: HyperfineExport) -> str:
    """hyperfine's ``--export-csv`` table: ``command,mean,stddev,median,user,system,min,
    max`` and one ``parameter_NAME`` column per parameter (of the first result), seconds."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    names = list(export.results[0].parameters) if export.results else []
    writer.writerow(
        ["command", "mean", "stddev", "median", "user", "system", "min", "max"]
        + [f"parameter_{n}" for n in names]
    )
    for r in export.results:
        writer.writerow(
            [r.command]
            + ["" if v is None else repr(float(v)) for v in r.figures.values()]
            + [r.parameters.get(n, "") for n in names]
        )
    return out.getvalue()


def relative_speeds(
    results: Sequence[HyperfineResult], reference: str | None
) -> list[tuple[float, float | None]]:
    """Each result's mean divided by the reference's (the workload ``reference``, else
    the fastest), with hyperfine's propagated standard deviation (None for the reference
    itself or without a standard deviation); NaN where the reference's mean is zero."""
    ref = next((r for r in results if r.workload == reference), None)
    if ref is None:
        ref = min(results, key=lambda r: r.mean)
    out: list[tuple[float, float | None]] = []
    for r in results:
        if ref.mean <= 0:
            out.append((math.nan, None))
            continue
        ratio = r.mean / ref.mean
        s, s_ref = r.stddev, ref.stddev
        if r is ref or s is None or s_ref is None or r.mean <= 0:
            out.append((ratio, None))
        else:
            out.append((ratio, ratio * math.hypot(s / r.mean, s_ref / ref.mean)))
    return out


def export_markdown(export: HyperfineExport, time_unit: str | None = None) -> str:
    """hyperfine's ``--export-markdown`` table, in ``time_unit`` (hyperfine's names;
    None: seconds when the first command's mean is at least 1 s, else milliseconds)."""
    results = export.results
    if time_unit is None:
        time_unit = "second" if results and results[0].mean >= 1 else "millisecond"
    symbol, scale, decimals = UNITS[time_unit]

    def shown(seconds: float) -> str:
        return f"{seconds / scale:.{decimals}f}"

    lines = [
        f"| Command | Mean [{symbol}] | Min [{symbol}] | Max [{symbol}] | Relative |",
        "|:---|---:|---:|---:|---:|",
    ]
    for r, (ratio, spread) in zip(results, relative_speeds(results, export.reference), strict=True):
        mean = shown(r.mean) + (f" ± {shown(r.stddev)}" if r.stddev is not None else "")
        relative = "N/A" if math.isnan(ratio) else f"{ratio:.2f}"
        if spread is not None:
            relative += f" ± {spread:.2f}"
        command = "`" + r.command.replace("|", "\\|") + "`"
        lines.append(
            f"| {command} | {mean} | {shown(min(r.times))} | {shown(max(r.times))} | {relative} |"
        )
    return "\n".join(lines) + "\n"


def write_exports(
    export: HyperfineExport,
    *,
    json_path: str | None = None,
    markdown_path: str | None = None,
    csv_path: str | None = None,
    time_unit: str | None = None,
) -> list[str]:
    """Write the exports asked for; returns the paths written. An OSError propagates."""
    written: list[str] = []
    for path, text in (
        (json_path, lambda: export_json(export)),
        (markdown_path, lambda: export_markdown(export, time_unit)),
        (csv_path, lambda: export_csv(export)),
    ):
        if path is None:
            continue
        Path(path).write_text(text(), encoding="utf-8")
        written.append(path)
    return written
