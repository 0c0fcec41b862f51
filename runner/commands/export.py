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
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchrun.runner.commands.show import add_secrets_option
from benchrun.runner.errors import UserError

if TYPE_CHECKING:
    from benchrun.runner.report.model import CampaignModel

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


def _csv(rows: list[tuple], header: tuple[str, ...]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    w.writerows(["" if v is None else v for v in row] for row in rows)
    return buf.getvalue()


def param_names(doc: dict) -> list[str]:
    """The matrix parameters of an export document's workloads, in order of appearance."""
    names: dict[str, None] = {}
    for w in doc["workloads"]:
        for k in w.get("params") or {}:
            names.setdefault(str(k), None)
    return list(names)


def _with_params(columns: tuple[str, ...], params: list[str]) -> tuple[str, ...]:
    return (columns[0], *(PARAM_PREFIX + p for p in params), *columns[1:])


def readings_csv(doc: dict, steady_only: bool) -> str:
    """One row per reading of an export document (values in the ``unit`` column, the base
    unit; ``display_unit`` the workload's unit in benchrun's tables, ``display_factor`` one
    of it in the base unit; ``analysed`` 1 for the readings the estimate used)."""
    from benchrun.runner.importers.benchrun_export import ANALYSED

    params = param_names(doc)
    rows = []
    for w in doc["workloads"]:
        pv = [(w.get("params") or {}).get(p) for p in params]
        du = w.get("display_unit") or {}
        for r in w.get("rounds") or []:
            for i, (v, f) in enumerate(zip(r["readings"], r["reading_flags"], strict=True)):
                analysed = f.split(",")[0] in ANALYSED
                if steady_only and not analysed:
                    continue
                rows.append(
                    (
                        w["name"],
                        *pv,
                        w["unit"],
                        du.get("label"),
                        du.get("factor"),
                        w["direction"],
                        int(bool(w["per_work"])),
                        r["seq"],
                        r["pass"],
                        r["round_index"],
                        r["status"],
                        int(r["warmup"]),
                        r["flags"],
                        r["cpus"],
                        r["work"],
                        r["started_at"],
                        r["wall_ns"],
                        r["user_s"],
                        r["sys_s"],
                        r["max_rss_kib"],
                        i,
                        v,
                        f,
                        int(analysed),
                        (r.get("facts") or {}).get("node"),
                        r.get("wait_ns"),
                        r.get("wait_source"),
                    )
                )
    return _csv(rows, _with_params(READING_COLUMNS, params))


def _baseline_of(doc: dict) -> dict[str, dict]:
    """Workload name -> its baseline comparison in the document's ``comparisons``."""
    comparisons = (doc.get("comparisons") or {}).get("comparisons") or []
    return {c["b"]: c for c in comparisons if c.get("kind") == "baseline"}


def results_csv(doc: dict) -> str:
    """One row per workload: the result (mean, CI, s_q², n_q, q; base unit) of an export
    document and its comparison with its baseline (verdict, ratio and CI, test, Holm p)."""
    params = param_names(doc)
    base = _baseline_of(doc)
    rows = []
    for w in doc["workloads"]:
        r = w.get("result") or {}
        du = w.get("display_unit") or {}
        b = base.get(w["name"]) or {}
        rows.append(
            (
                w["name"],
                *((w.get("params") or {}).get(p) for p in params),
                w["unit"],
                du.get("label"),
                du.get("factor"),
                w["direction"],
                *(r.get(k) for k in RESULT_COLUMNS[5:16]),
                b.get("a"),
                b.get("verdict"),
                b.get("ratio"),
                b.get("ratio_low"),
                b.get("ratio_high"),
                b.get("test"),
                b.get("p_holm"),
                b.get("headline"),
            )
        )
    return _csv(rows, _with_params(RESULT_COLUMNS, params))


def hooks_of(model: CampaignModel) -> list[dict[str, Any]]:
    """The JSON export's ``hooks``: every stored run of the campaign's setup, prepare and
    cleanup hooks, in the order they ran (runner/commands/show.py :func:`hook_dict`), as
    read in the model's snapshot (runner/report/model.py)."""
    from benchrun.runner.commands.show import hook_dict

    return [hook_dict(h, model.names) for h in model.hooks]


def main(args: argparse.Namespace) -> int:
    fmt, what = str(args.format).lower(), str(args.what).lower()
    if fmt not in FORMATS:
        raise UserError(f"unknown export format {args.format!r}; choose from {', '.join(FORMATS)}")
    if what not in WHAT:
        raise UserError(f"unknown --what {args.what!r}; choose from {', '.join(WHAT)}")
    if fmt == "csv" and what == "all":
        what = "readings"
    from benchrun.runner.report.exchange import export_document
    from benchrun.runner.report.model import load_campaign

    model = load_campaign(
        args.campaign, args.campaign_id, diagnostics=False, include_secrets=args.include_secrets
    )
    doc = export_document(model, with_rounds=what != "results")
    if fmt == "json":
        if what != "results":
            doc["hooks"] = hooks_of(model)
        if what == "readings":
            doc["workloads"] = [
                {k: v for k, v in w.items() if k not in ("collected", "summary", "result")}
                for w in doc["workloads"]
            ]
        text = json.dumps(doc, indent=1, allow_nan=False, default=str) + "\n"
    elif what == "readings":
        text = readings_csv(doc, args.steady)
    else:
        text = results_csv(doc)
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
