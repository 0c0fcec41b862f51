"""``benchrun export [CAMPAIGN]``: raw readings with every flag, and results, as JSON or CSV.

JSON is the documented, versioned exchange format (runner/report/exchange.py,
docs/export-format.md) that ``benchrun analyze`` and ``benchrun compare`` read back; for an
adaptive campaign that reached its end it also holds ``comparisons``: the stopping
controller's stored verdicts, each with its ratio headline, ratio and CI, test (paired or
Welch) and p-values (runner/report/verdicts.py; the same "verdicts" event is among
``events``). CSV:
``--what readings`` is one reading per row (long form, with its round's facts and flags);
``--what results`` one row per workload. Output goes to stdout unless ``--out`` is given.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import sys
from pathlib import Path
from typing import Any

from benchrun.runner.errors import UserError

WHAT = ("all", "readings", "results")
FORMATS = ("json", "csv")

READING_COLUMNS = (
    "workload", "unit", "direction", "seq", "pass", "round_index", "round_status",
    "round_warmup", "round_flags", "cpus", "work", "started_at", "wall_ns", "reading_index",
    "value", "flag", "analysed",
)  # fmt: skip
RESULT_COLUMNS = (
    "workload", "unit", "direction", "mean", "ci_low", "ci_high", "confidence", "variance",
    "n_q", "q", "n", "warmup_readings", "enough", "rel_half_width",
)  # fmt: skip


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "export",
        help="export raw readings (all flags) and results as JSON or CSV",
        description="Export a stored campaign. JSON (default) is benchrun's versioned "
        "exchange format, read back by `benchrun analyze` and `benchrun compare`; CSV is "
        "one reading (or one workload) per row.",
    )
    p.add_argument("campaign", nargs="?", default="results", help="campaign directory or database")
    p.add_argument(
        "--campaign-id", type=int, help="campaign id inside the database (default: newest)"
    )
    p.add_argument("--format", default="json", help="json (default) or csv")
    p.add_argument(
        "--what",
        default="all",
        help="all (results and readings; default), readings, or results",
    )
    p.add_argument("--steady", action="store_true", help="CSV readings: only analysed readings")
    p.add_argument("--out", "-o", help="output file (default: stdout)")
    p.set_defaults(func=main)


def _csv(rows: list[tuple], header: tuple[str, ...]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    w.writerows(["" if v is None else v for v in row] for row in rows)
    return buf.getvalue()


def readings_csv(doc: dict, steady_only: bool) -> str:
    """One row per reading of an export document (units in the ``unit`` column)."""
    from benchrun.runner.importers.benchrun_export import ANALYSED

    rows = []
    for w in doc["workloads"]:
        for r in w.get("rounds") or []:
            for i, (v, f) in enumerate(zip(r["readings"], r["reading_flags"], strict=True)):
                analysed = f.split(",")[0] in ANALYSED
                if steady_only and not analysed:
                    continue
                rows.append((w["name"], w["unit"], w["direction"], r["seq"], r["pass"],
                             r["round_index"], r["status"], int(r["warmup"]), r["flags"],
                             r["cpus"], r["work"], r["started_at"], r["wall_ns"], i, v, f,
                             int(analysed)))  # fmt: skip
    return _csv(rows, READING_COLUMNS)


def results_csv(doc: dict) -> str:
    """One row per workload: the result (mean, CI, s_q², n_q, q) of an export document."""
    rows = []
    for w in doc["workloads"]:
        r = w.get("result") or {}
        rows.append((w["name"], w["unit"], w["direction"], *(r.get(k) for k in RESULT_COLUMNS[3:])))
    return _csv(rows, RESULT_COLUMNS)


def with_comparisons(doc: dict, model: Any) -> dict:
    """``doc`` with ``comparisons`` after ``workloads``: the stopping controller's stored
    verdicts of ``model`` (:meth:`runner.report.verdicts.StoredVerdicts.to_dict`: per
    comparison its headline, verdict, test, ratio b/a with its CI, passes, p-values), or
    None when the campaign has none (fixed mode, or an adaptive campaign that did not
    reach its end). An added key: readers of version 1 that do not know it ignore it."""
    verdicts = model.verdicts if model.adaptive else None
    out: dict = {}
    for key, value in doc.items():
        out[key] = value
        if key == "workloads":
            out["comparisons"] = None if verdicts is None else verdicts.to_dict()
    out.setdefault("comparisons", None if verdicts is None else verdicts.to_dict())
    return out


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

    model = load_campaign(args.campaign, args.campaign_id, diagnostics=False)
    doc = export_document(model, with_rounds=what != "results")
    if fmt == "json":
        if what == "readings":
            doc["workloads"] = [
                {k: v for k, v in w.items() if k not in ("collected", "summary", "result")}
                for w in doc["workloads"]
            ]
        else:
            doc = with_comparisons(doc, model)
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
