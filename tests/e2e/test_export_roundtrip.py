"""Issue 17: ``benchrun export`` round-trips through ``benchrun analyze`` and ``benchrun compare``.

A fixed campaign (fake executor: real store, no processes) has two matrix workloads that
report 12 readings per round in ms, 2 warm-up rounds each, and a wall-time workload in s.
Every export format (JSON, CSV of the readings) read back by ``analyze summary`` and
``compare`` must give each workload the mean, CI, q and n_q of the campaign's report:
warm-up rows are flagged and left out, matrix workloads keep their own names, the
workload in another unit is left out with a note (not an error). The CSV has one column
per matrix parameter and the rounds' CPU times and max RSS, checked against the store read
with plain sqlite3. ``--campaign`` selects the campaign in show, report and export alike.
"""

from __future__ import annotations

import csv
import io
import json
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from benchrun.runner.campaign.run import run_campaign
from benchrun.runner.cli import build_parser, main
from benchrun.runner.config.loader import parse_experiment
from benchrun.runner.execute.fake import FakeExecutor, FakeRound, lognormal

A, B, WALL = "sort[n=1000]", "sort[n=2000]", "startup"

EXPERIMENT = """\
name: trip
output: {out}
settings: {{adaptive: false, rounds: 40, warmup_rounds: 2, pin: none, seed: 11}}
workloads:
  - name: sort
    command: [work, "{{n}}"]
    readings: {{pattern: 'time=([0-9.]+)', unit: ms}}
  - name: startup
    command: [work]
matrix: {{n: [1000, 2000]}}
"""


class NullDisplay:
    def start(self, campaign: Any, targets: dict[str, int], done: dict[str, int]) -> None:
        pass

    def round_done(self, workload: str, outcome: Any, value: float | None, warmup: bool) -> None:
        pass

    def message(self, text: str) -> None:
        pass

    def show_decision(self, decision: Any, eta_s: float | None) -> None:
        pass

    def stop(self) -> None:
        pass


@pytest.fixture(scope="module")
def campaign(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("trip")
    exp = parse_experiment(EXPERIMENT.format(out=root / "out"), base_dir=root, check_commands=False)
    fake = FakeExecutor(
        {
            A: _readings(1.0, seed=1),
            B: _readings(2.0, seed=2),
            WALL: lognormal(0.005, 0.01, seed=3),
        }
    )
    run_campaign(exp, fake, NullDisplay())
    return exp.campaign_dir


def _readings(mean_ms: float, seed: int) -> Any:
    """A round of 12 independent readings of ``mean_ms`` ms with 3 % noise (seeded)."""
    rng = np.random.default_rng(seed)

    def script(spec: Any, k: int, clock: float) -> FakeRound:
        values = mean_ms * (1.0 + 0.03 * rng.standard_normal(12))
        return FakeRound(float(values.sum()) / 1000.0, readings=tuple(float(v) for v in values))

    return script


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    capsys.readouterr()
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


@pytest.fixture(scope="module")
def exports(campaign: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("exports")
    files = {"json": out / "trip.json", "csv": out / "trip.csv"}
    assert main(["export", str(campaign), "-o", str(files["json"])]) == 0
    assert main(["export", str(campaign), "--format", "csv", "-o", str(files["csv"])]) == 0
    return files


def _report(campaign: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, dict]:
    doc = _json(capsys, "report", str(campaign), "--format", "json", "--no-plots")
    return {w["name"]: w["estimate"] for w in doc["workloads"]}


def test_csv_has_parameters_cpu_rss_and_flags_as_stored(campaign: Path, exports) -> None:
    rows = list(csv.DictReader(io.StringIO(exports["csv"].read_text())))
    header = list(rows[0])
    assert header[:2] == ["workload", "param_n"]
    for column in ("user_s", "sys_s", "max_rss_kib", "per_work", "flag", "analysed"):
        assert column in header
    conn = sqlite3.connect(campaign / "benchrun.db")
    stored = conn.execute(
        "SELECT w.name, r.seq, r.warmup, r.user_s, r.sys_s, r.max_rss_kib, COUNT(x.idx) "
        "FROM round r JOIN workload w ON w.id = r.workload_id "
        "JOIN reading x ON x.round_id = r.id GROUP BY r.id"
    ).fetchall()
    conn.close()
    by_round: dict[tuple[str, int], list[dict]] = {}
    for row in rows:
        by_round.setdefault((row["workload"], int(row["seq"])), []).append(row)
    assert len(by_round) == len(stored)
    for name, seq, warmup, user, sys_, rss, count in stored:
        got = by_round[(name, seq)]
        assert len(got) == count
        for row in got:
            assert row["param_n"] == {A: "1000", B: "2000", WALL: ""}[name]
            assert float(row["user_s"]) == user and float(row["sys_s"]) == sys_
            assert row["max_rss_kib"] == ("" if rss is None else str(rss))
            if warmup:  # flagged and not analysed
                assert (row["flag"], row["analysed"]) == ("warmup-round", "0")
    assert {r["unit"] for r in rows if r["workload"] in (A, B)} == {"ms"}
    assert {r["unit"] for r in rows if r["workload"] == WALL} == {"s"}


@pytest.mark.parametrize("fmt", ["json", "csv"])
def test_analyze_summary_of_an_export_is_the_report(
    fmt: str, campaign: Path, exports, capsys: pytest.CaptureFixture[str]
) -> None:
    report = _report(campaign, capsys)
    doc = _json(capsys, "analyze", "summary", str(exports[fmt]), "--json")
    groups = {g["name"]: g for g in doc["groups"]}
    # the matrix workloads keep their names; the one in another unit is left out, said so
    assert set(groups) == {A, B}
    assert any(WALL in n and "left out" in n for n in doc["notes"])
    for name in (A, B):
        s, e = groups[name]["summary"], report[name]
        assert (s["n"], s["subsession_size"], s["n_subsessions"]) == (e["n"], e["q"], e["n_q"])
        # warm-up rounds (2 x 12 readings) and within-round warm-up are not counted
        assert s["n"] == groups[name]["readings"] <= 40 * 12
        for key, ref in (("mean", "mean"), ("ci_low", "ci_low"), ("ci_high", "ci_high")):
            assert s[key] == pytest.approx(e[ref], rel=1e-12), key
        assert groups[name]["display_unit"]["label"] == "ms"
    # the terminal view: names as they are, q × n_q as in the report
    capsys.readouterr()
    assert main(["analyze", "summary", str(exports[fmt])]) == 0
    text = capsys.readouterr().out
    assert A in text and B in text and "q × n_q" in text
    for name in (A, B):
        assert f"{report[name]['q']} × {report[name]['n_q']}" in text


@pytest.mark.parametrize("fmt", ["json", "csv"])
def test_compare_an_export_with_its_campaign(
    fmt: str, campaign: Path, exports, capsys: pytest.CaptureFixture[str]
) -> None:
    report = _report(campaign, capsys)
    doc = _json(capsys, "compare", str(campaign), str(exports[fmt]), "--json")
    rows = {r["name"]: r for r in doc["workloads"]}
    assert set(rows) >= {A, B}
    for name in (A, B):
        r, e = rows[name], report[name]
        assert r["old_mean"] == r["new_mean"] == pytest.approx(e["mean"], rel=1e-12)
        assert r["new_ci"] == pytest.approx([e["ci_low"], e["ci_high"]], rel=1e-12)
        assert r["verdict"] == "equivalent" and r["ratio"] == pytest.approx(1.0, abs=1e-12)
    # and analyze compare ranks the two exported workloads on the same estimates
    ranked = _json(capsys, "analyze", "compare", str(exports[fmt]), "--json")["ranking"]
    assert ranked["names"] == [A, B]
    assert ranked["estimates"] == pytest.approx([report[A]["mean"], report[B]["mean"]])


def test_one_campaign_option_everywhere(
    campaign: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # --campaign selects the campaign in show, report and export; --campaign-id still works
    # (hidden); an unknown id is one line and exit 2
    assert _json(capsys, "show", str(campaign), "--campaign", "1", "--json")["campaign"] == 1
    report = _json(capsys, "report", str(campaign), "--campaign", "1", "--format", "json")
    assert report["campaign"]["id"] == 1
    out = tmp_path / "e.json"
    assert main(["export", str(campaign), "--campaign", "1", "-o", str(out)]) == 0
    assert main(["export", str(campaign), "--campaign-id", "1", "-o", str(out)]) == 0
    assert json.loads(out.read_text())["campaign"]["id"] == 1
    capsys.readouterr()
    assert main(["report", str(campaign), "--campaign", "7", "--format", "json"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("benchrun: error:") and "\n" not in err
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    for verb in ("show", "report", "export"):
        text = sub.choices[verb].format_help()  # type: ignore[union-attr]
        assert "--campaign ID" in text or "--campaign CAMPAIGN" in text
        assert "--campaign-id" not in text
