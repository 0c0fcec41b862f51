"""``benchrun export [DIR]``: raw readings with every flag, and results, as JSON or CSV.

JSON is the documented, versioned exchange format (runner/report/exchange.py,
docs/export-format.md) that ``benchrun analyze`` and ``benchrun compare`` read back; it
holds ``hooks`` (every run of a setup/prepare/cleanup hook, as ``show --json`` lists
them; not with ``--what results``) and ``comparisons``: the campaign's comparisons as ``show`` and the report print them
(the stopping controller's stored verdicts, or a fixed campaign's computed when read:
runner/results/comparisons.py), each with its ratio headline, ratio and CI, test (paired
or Welch) and p-values. CSV: ``--what readings`` is one reading per row (long form, with
one column per matrix parameter, its round's facts, CPU times and max RSS, its flag and
whether it was analysed); ``--what results`` one row per workload (the estimate and the
comparison with its baseline). Every value is in the workload's base unit (``unit``);
``display_unit`` is the unit benchrun's tables show it in, ``display_factor`` one
``display_unit`` in the base unit (shown value = value / display_factor), in both. Output goes to stdout unless
``--out`` is given.

Everything is read in one snapshot of the store (runner/report/model.py ``load_campaign``),
so an export of a campaign being written is one state of it; secret ``env:`` values are
``<secret>`` unless ``--include-secrets`` (runner/config/secrets.py).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from benchrun.runner.commands.show import add_secrets_option
from benchrun.runner.errors import UserError

if TYPE_CHECKING:
    from benchrun.runner.report.model import CampaignModel, WorkloadView
    from benchrun.runner.results.verdicts import StoredComparison
    from benchrun.runner.store.records import RoundRow

WHAT = ("all", "readings", "results")
FORMATS = ("json", "csv")

#: prefix of the column of a matrix parameter (``param_n`` for ``matrix: {n: ...}``)
PARAM_PREFIX = "param_"
#: columns of ``--what readings``; the parameter columns follow ``workload``
READING_COLUMNS = (
    "workload",
    "unit",
    "display_unit",
    "display_factor",
    "direction",
    "per_work",
    "seq",
    "pass",
    "round_index",
    "round_status",
    "round_warmup",
    "round_flags",
    "cpus",
    "work",
    "started_at",
    "wall_ns",
    "user_s",
    "sys_s",
    "max_rss_kib",
    "reading_index",
    "value",
    "flag",
    "analysed",
    "node",
    "wait_ns",
    "wait_source",
)
#: columns of ``--what results``; the parameter columns follow ``workload``
RESULT_COLUMNS = (
    "workload",
    "unit",
    "display_unit",
    "display_factor",
    "direction",
    "mean",
    "ci_low",
    "ci_high",
    "confidence",
    "variance",
    "n_q",
    "q",
    "n",
    "warmup_readings",
    "enough",
    "rel_half_width",
    "baseline",
    "baseline_verdict",
    "baseline_ratio",
    "baseline_ratio_low",
    "baseline_ratio_high",
    "baseline_test",
    "baseline_p_holm",
    "baseline_headline",
)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "export",
        help="export raw readings (all flags) and results as JSON or CSV",
        description="Export a stored campaign. JSON (default) is benchrun's versioned "
        "exchange format, read back by `benchrun analyze` and `benchrun compare`, with the "
        "campaign's comparisons; CSV is one reading per row (one column per matrix "
        "parameter, the display unit, CPU times, max RSS, the reading's flag and whether it was analysed: "
        "`benchrun analyze` leaves out the rows that were not) or, with --what results, "
        "one workload per row. Values are in each workload's base unit (the unit column; "
        "display_unit is the unit benchrun's tables show).",
    )
    p.add_argument(
        "campaign",
        nargs="?",
        default="results",
        metavar="DIR",
        help="campaign directory or database (default: results)",
    )
    add_campaign_option(p)
    p.add_argument("--format", default="json", help="json (default) or csv")
    p.add_argument(
        "--what",
        default="all",
        help="all (results and readings; default), readings, or results",
    )
    p.add_argument("--steady", action="store_true", help="CSV readings: only analysed readings")
    p.add_argument("--out", "-o", help="output file (default: stdout)")
    add_secrets_option(p)
    p.set_defaults(func=main)


def add_campaign_option(p: argparse.ArgumentParser) -> None:
    """``--campaign ID`` (the name ``show`` uses too), with ``--campaign-id`` kept as a
    hidden alias."""
    p.add_argument(
        "--campaign",
        dest="campaign_id",
        type=int,
        metavar="ID",
        help="campaign id inside the database (default: newest)",
    )
    p.add_argument("--campaign-id", dest="campaign_id", type=int, help=argparse.SUPPRESS)


def _csv(rows: list[tuple[object, ...]], header: tuple[str, ...]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    w.writerows(["" if v is None else v for v in row] for row in rows)
    return buf.getvalue()


@dataclass(frozen=True)
class ExportRound:
    """One stored round as the export writes it: the stored row and one flag per reading,
    the flag the report model computed (runner/report/model.py ``WorkloadView.all_flags``:
    warm-up, outlier, failed, contended or ``""``) followed by the flag stored with the
    reading, after a comma (docs/export-format.md "Reading flags")."""

    row: RoundRow
    reading_flags: tuple[str, ...]

    def node(self) -> str | None:
        """The compute node that measured the round (its ``node`` fact, executor: slurm),
        None for a round run on this machine."""
        node = (self.row.facts or {}).get("node")
        return None if node is None else str(node)


@dataclass(frozen=True)
class ExportWorkload:
    """One workload of a campaign as both CSV forms write it: the report model's view
    (name, matrix parameters, units, direction, the typed estimate), its rounds with their
    reading flags, and its comparison with its baseline (None without one)."""

    view: WorkloadView
    rounds: tuple[ExportRound, ...]
    baseline: StoredComparison | None

    def head(self, params: list[str]) -> tuple[object, ...]:
        """The cells every row of the workload starts with: its name, one cell per matrix
        parameter of ``params`` (empty when it has none), its base unit, display unit and
        factor, direction."""
        v = self.view
        du = v.display
        return (
            v.name,
            *(v.params.get(p) for p in params),
            v.unit,
            du.label,
            du.factor,
            v.direction,
        )

    def reading_rows(self, params: list[str], steady_only: bool) -> list[tuple[object, ...]]:
        """One row of ``--what readings`` per reading (:data:`READING_COLUMNS`); with
        ``steady_only`` only the analysed ones."""
        from benchrun.runner.importers.benchrun_export import ANALYSED

        head = self.head(params)
        rows = []
        for er in self.rounds:
            r = er.row
            for i, (value, flag) in enumerate(zip(r.readings, er.reading_flags, strict=True)):
                analysed = flag.split(",")[0] in ANALYSED
                if steady_only and not analysed:
                    continue
                rows.append(
                    (
                        *head,
                        int(bool(self.view.per_work)),
                        r.seq,
                        r.pass_,
                        r.round_index,
                        r.status,
                        int(r.warmup),
                        r.flags,
                        r.cpus,
                        r.work,
                        r.started_at,
                        r.wall_ns,
                        r.user_s,
                        r.sys_s,
                        r.max_rss_kib,
                        i,
                        value,
                        flag,
                        int(analysed),
                        er.node(),
                        r.wait_ns,
                        r.wait_source,
                    )
                )
        return rows

    def result_row(self, params: list[str], confidence: float) -> tuple[object, ...]:
        """The row of ``--what results`` (:data:`RESULT_COLUMNS`): the estimate (base unit,
        the campaign's ``confidence``; empty without one) and the baseline comparison."""
        e = self.view.estimate
        result: tuple[object, ...] = (
            (None,) * 11
            if e is None
            else (
                e.mean,
                e.ci_low,
                e.ci_high,
                confidence,
                e.variance,
                e.n_q,
                e.q,
                e.n,
                e.warmup_readings,
                e.enough,
                e.rel_half_width,
            )
        )
        b = self.baseline
        compared: tuple[object, ...] = (
            (None,) * 8
            if b is None
            else (b.a, b.verdict, b.ratio, b.ratio_low, b.ratio_high, b.test, b.p_holm, b.headline)
        )
        return (*self.head(params), *result, *compared)


def _export_rounds(
    view: WorkloadView, rounds: list[RoundRow], stored: dict[tuple[int, int], str]
) -> tuple[ExportRound, ...]:
    """``rounds`` (one workload's, launch order) with their readings' flags: ``view.all_flags``
    follows the readings of these rounds in order; a flag stored on a reading in the
    database (``stored``, by round id and reading index) is appended after a comma."""
    out = []
    pos = 0
    for r in rounds:
        computed = view.all_flags[pos : pos + len(r.readings)]
        pos += len(r.readings)
        flags = tuple(
            ",".join(x for x in (f, stored.get((r.id, i), "")) if x) for i, f in enumerate(computed)
        )
        out.append(ExportRound(r, flags))
    return tuple(out)


def export_workloads(model: CampaignModel) -> list[ExportWorkload]:
    """Every workload of ``model`` (in its order) as an :class:`ExportWorkload`: the rounds
    and reading flags of the model's own snapshot, the baseline comparison of the
    campaign's comparisons (``model.verdicts``; the last one naming the workload as ``b``)."""
    rounds_by: dict[str, list[RoundRow]] = {}
    for r in model.rounds:
        rounds_by.setdefault(model.names[r.workload_id], []).append(r)
    baselines = {} if model.verdicts is None else {c.b: c for c in model.verdicts.baselines}
    return [
        ExportWorkload(
            w,
            _export_rounds(w, rounds_by.get(w.name, []), model.reading_flags),
            baselines.get(w.name),
        )
        for w in model.workloads
    ]


def param_names(workloads: list[ExportWorkload]) -> list[str]:
    """The matrix parameters of the workloads, in order of appearance."""
    names: dict[str, None] = {}
    for w in workloads:
        for k in w.view.params:
            names.setdefault(str(k), None)
    return list(names)


def _with_params(columns: tuple[str, ...], params: list[str]) -> tuple[str, ...]:
    return (columns[0], *(PARAM_PREFIX + p for p in params), *columns[1:])


def readings_csv(workloads: list[ExportWorkload], steady_only: bool) -> str:
    """One row per reading (values in the ``unit`` column, the base unit; ``display_unit``
    the workload's unit in benchrun's tables, ``display_factor`` one of it in the base unit;
    ``analysed`` 1 for the readings the estimate used)."""
    params = param_names(workloads)
    rows = [row for w in workloads for row in w.reading_rows(params, steady_only)]
    return _csv(rows, _with_params(READING_COLUMNS, params))


def results_csv(workloads: list[ExportWorkload], confidence: float) -> str:
    """One row per workload: the result (mean, CI, s_q², n_q, q; base unit) and its
    comparison with its baseline (verdict, ratio and CI, test, Holm p)."""
    params = param_names(workloads)
    rows = [w.result_row(params, confidence) for w in workloads]
    return _csv(rows, _with_params(RESULT_COLUMNS, params))


def json_text(model: CampaignModel, what: str) -> str:
    """The JSON export of ``model`` (runner/report/exchange.py ``export_document``, the one
    writer of the format) for ``--what``: ``results`` without rounds or hooks; ``readings``
    without each workload's ``collected``, ``summary`` and ``result``; both with the
    campaign's ``hooks`` (runner/commands/show.py ``hook_dict``) after ``events``."""
    from benchrun.runner.commands.show import hook_dict
    from benchrun.runner.report.exchange import export_document

    doc = export_document(model, with_rounds=what != "results")
    if what != "results":
        doc["hooks"] = [hook_dict(h, model.names) for h in model.hooks]
    if what == "readings":
        doc["workloads"] = [
            {k: v for k, v in w.items() if k not in ("collected", "summary", "result")}
            for w in doc["workloads"]
        ]
    return json.dumps(doc, indent=1, allow_nan=False, default=str) + "\n"


def main(args: argparse.Namespace) -> int:
    fmt, what = str(args.format).lower(), str(args.what).lower()
    if fmt not in FORMATS:
        raise UserError(f"unknown export format {args.format!r}; choose from {', '.join(FORMATS)}")
    if what not in WHAT:
        raise UserError(f"unknown --what {args.what!r}; choose from {', '.join(WHAT)}")
    if fmt == "csv" and what == "all":
        what = "readings"
    from benchrun.runner.report.model import load_campaign

    model = load_campaign(
        args.campaign, args.campaign_id, diagnostics=False, include_secrets=args.include_secrets
    )
    if fmt == "json":
        text = json_text(model, what)
    elif what == "readings":
        text = readings_csv(export_workloads(model), args.steady)
    else:
        text = results_csv(export_workloads(model), model.confidence)
    if args.out in (None, "-"):
        sys.stdout.write(text)
        return 0
    out = Path(args.out)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UserError(f"{out}: cannot write ({exc.strerror or exc})") from None
    print(f"benchrun: wrote {out} ({len(text.encode()) / 1024:.0f} KiB)", file=sys.stderr)
    return 0
