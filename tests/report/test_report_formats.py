"""``benchrun report`` in Markdown, JSON and CSV, checked against independent computations."""

from __future__ import annotations

import csv
import io
import json
import sqlite3
from pathlib import Path

import numpy as np
from e2e_util import cli
from markdown_it import MarkdownIt
from scipy import stats as sps

from benchrun.runner.cli import main

#: the sections of a campaign with comparisons (a fixed campaign's are computed when read):
#: the comparisons first (issue 17: verdicts lead every output)
SECTIONS = ("Comparisons", "Headline", "Per workload", "The machine", "Methods",
            "Hoefler & Belli's twelve rules")  # fmt: skip


def _readings(db: Path, name: str) -> list[list[float]]:
    """Readings of each steady ok round, in launch order, read with plain sqlite3."""
    conn = sqlite3.connect(db)
    rows = conn.execute(
        "SELECT round.seq, reading.value FROM reading JOIN round ON round.id = reading.round_id"
        " JOIN workload w ON w.id = round.workload_id WHERE w.name = ? AND round.warmup = 0"
        " AND round.status = 'ok' ORDER BY round.seq, reading.idx",
        (name,),
    ).fetchall()
    conn.close()
    by: dict[int, list[float]] = {}
    for seq, v in rows:
        by.setdefault(seq, []).append(v)
    return list(by.values())


def test_markdown_is_commonmark_with_every_section_and_figures(
    campaigns: dict[str, Path], tmp_path: Path
) -> None:
    out = tmp_path / "r.md"
    assert main(["report", str(campaigns["old"]), "--format", "md", "--out", str(out)]) == 0
    text = out.read_text()
    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    headings = [
        tokens[i + 1].content
        for i, t in enumerate(tokens)
        if t.type == "heading_open" and t.tag == "h2"
    ]
    assert headings == list(SECTIONS)
    assert sum(t.type == "table_open" for t in tokens) >= 6
    # every linked figure exists beside the document
    images = [
        c for t in tokens if t.type == "inline" for c in t.children or [] if c.type == "image"
    ]
    assert len(images) >= 4  # one per workload + the ranking
    for img in images:
        assert (tmp_path / img.attrs["src"]).is_file()


def test_json_estimates_match_scipy_on_the_stored_readings(campaigns: dict[str, Path]) -> None:
    db = campaigns["old"] / "benchrun.db"
    proc = cli("report", str(campaigns["old"]), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["format"] == "benchrun-report" and doc["version"] == 1
    (group,) = doc["headline"]
    # ranking best first (lower is better): c (50) < a (100) < b (200), all separated
    assert [r["name"] for r in group["rows"]] == ["c", "a", "b"]
    assert [p["verdict"] for p in group["pairs"]] == ["separated", "separated"]
    for w in doc["workloads"]:
        e = w["estimate"]
        rounds = _readings(db, w["name"])
        d = e["warmup_readings"] // len(rounds)
        x = np.concatenate([r[d:] for r in rounds])
        means = x[: e["q"] * e["n_q"]].reshape(e["n_q"], e["q"]).mean(axis=1)
        lo, hi = sps.t.interval(0.95, means.size - 1, loc=means.mean(), scale=sps.sem(means))
        by_round = e["n_q"] == len(rounds) and e["q"] * e["n_q"] == x.size
        h2 = x.size // (2 * e["q"])
        if h2 >= 4 and not by_round:  # by_round: the rounds are the subsessions (collector)
            # widened to contain the t interval over 2q-means (docs/controller.md)
            m2 = x[: 2 * e["q"] * h2].reshape(h2, 2 * e["q"]).mean(axis=1)
            lo2, hi2 = sps.t.interval(0.95, h2 - 1, loc=m2.mean(), scale=sps.sem(m2))
            half = max(hi - means.mean(), means.mean() - lo2, hi2 - means.mean())
            lo, hi = means.mean() - half, means.mean() + half
        assert np.isclose(e["mean"], means.mean(), rtol=1e-12)
        assert np.isclose(e["ci_low"], lo, rtol=1e-9) and np.isclose(e["ci_high"], hi, rtol=1e-9)
        assert np.isclose(e["variance"], means.var(ddof=1), rtol=1e-9)
    b = next(r for r in group["rows"] if r["name"] == "b")
    assert b["ratio_low"] < 200 / 50 < b["ratio_high"]  # the truth: b / c = 4
    assert len(doc["rules"]) == 12
    assert {r["status"] for r in doc["rules"]} <= {"met", "not applicable", "missing"}
    assert "8 steady rounds" in doc["methods"] and "MSER-5" in doc["methods"]


def test_csv_has_one_row_per_workload(campaigns: dict[str, Path], capsys) -> None:
    assert main(["report", str(campaigns["old"]), "--format", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert sorted(r["workload"] for r in rows) == ["a", "b", "c"]
    assert {r["unit"] for r in rows} == {"ms"}
    by = {r["workload"]: r for r in rows}
    assert by["c"]["rank"] == "1" and by["b"]["rank"] == "3"
    assert abs(float(by["a"]["mean"]) - 100) < 1


def test_export_json_and_csv_keep_every_reading_with_its_flag(
    campaigns: dict[str, Path], tmp_path: Path, capsys
) -> None:
    db = campaigns["old"] / "benchrun.db"
    out = tmp_path / "e.json"
    assert cli("export", str(campaigns["old"]), "-o", str(out)).returncode == 0
    doc = json.loads(out.read_text())
    assert doc["format"] == "benchrun-export" and doc["version"] == 1
    conn = sqlite3.connect(db)
    total, warm = conn.execute(
        "SELECT count(*), sum(round.warmup) FROM reading JOIN round ON round.id = reading.round_id"
    ).fetchone()
    conn.close()
    flags = [f for w in doc["workloads"] for r in w["rounds"] for f in r["reading_flags"]]
    assert len(flags) == total
    assert flags.count("warmup-round") == warm
    # analyze reads the export back: the same analysed readings as the stored steady rounds
    proc = cli("analyze", "summary", str(out), "--warmup", "none", "--json")
    assert proc.returncode == 0, proc.stderr
    groups = {g["name"]: g for g in json.loads(proc.stdout)["groups"]}
    for name in ("a", "b", "c"):
        a = next(w for w in doc["workloads"] if w["name"] == name)
        d = a["result"]["warmup_readings"] // len(_readings(db, name))
        x = np.concatenate([r[d:] for r in _readings(db, name)])
        assert groups[name]["readings"] == x.size
        assert np.isclose(groups[name]["summary"]["mean"], x.mean(), rtol=1e-12)
    capsys.readouterr()
    assert main(["export", str(campaigns["old"]), "--format", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert len(rows) == total
    assert sum(r["flag"] == "warmup-round" for r in rows) == warm
