"""Contended rounds (docs/contention.md) with the fake executor: a scripted wait per round.

The truth is the script's: which rounds waited for a CPU (half their wall time) and which
did not. Stored with the round, flagged ``contended`` past ``contended_threshold``, left
out of every estimate and of the paired comparison (``exclude``, the default), analysed
(``keep``) or stopping the campaign (``fail``); counted in ``show``, exported and read
back. The expected estimates are computed here with numpy from the stored uncontended
rounds, not by benchrun's code.
"""

from __future__ import annotations

import io
import json
import math
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from rich.console import Console
from test_fake_campaigns import NullDisplay, experiment, stored

from benchrun.runner.campaign.run import run_campaign
from benchrun.runner.commands.show import read_summary, summary_json
from benchrun.runner.config.loader import parse_experiment
from benchrun.runner.errors import UserError
from benchrun.runner.execute.executor import RoundOutcome
from benchrun.runner.execute.fake import FakeExecutor, FakeRound, Script, constant, contended_every
from benchrun.runner.importers.benchrun_export import read_benchrun
from benchrun.runner.report.exchange import export_document
from benchrun.runner.report.model import load_campaign
from benchrun.runner.results.comparisons import campaign_verdicts
from benchrun.runner.store.database import _HOOK_TABLE, _SCHEMA_V1, APPLICATION_ID, Store
from benchrun.runner.ui.display import RichDisplay

#: every 5th launch of a workload (k = 2, 7, 12, ...) shares its CPU with a hog
CONTENDED_EVERY = 5


def hogged(base_s: float, seed: int) -> Script:
    """Rounds of ``base_s`` (lognormal, CV 2 %) that wait 0.1 % of their wall time, except
    every 5th: it runs beside a hog, waits as long as it runs, and takes twice as long."""
    rng = np.random.default_rng(seed)

    def script(spec: Any, k: int, clock: float) -> FakeRound:
        w = base_s * float(rng.lognormal(0.0, 0.02))
        if k % CONTENDED_EVERY == 2:
            return FakeRound(2 * w, wait_s=w)
        return FakeRound(w, wait_s=0.001 * w)

    return script


BASE = "adaptive: false\nrounds: 30\nwarmup_rounds: 0\npin: none\nseed: 3"
#: exclude is the default, but the suite sets BENCHRUN_CONTENDED=keep (tests/conftest.py)
FIXED = BASE + "\ncontended: exclude"


def run(tmp_path: Path, settings: str) -> Any:
    exp = experiment(tmp_path, settings)
    out = run_campaign(
        exp, FakeExecutor({"a": hogged(0.1, 1), "b": hogged(0.12, 2)}), NullDisplay()
    )
    return exp, out


def test_contended_rounds_are_flagged_stored_and_left_out_of_the_estimates(
    tmp_path: Path,
) -> None:
    exp, out = run(tmp_path, FIXED)
    assert (out.status, out.exit_code) == ("done", 0)
    _, rounds, _ = stored(exp)
    for name in ("a", "b"):
        rs = rounds[name]
        # the script's truth: launch k % 5 == 2 waited half its wall time
        hit = [r.round_index % CONTENDED_EVERY == 2 for r in rs]
        assert ["contended" in r.flags.split(",") for r in rs] == hit
        assert all(r.wait_source == "fake" for r in rs)
        assert all(
            math.isclose(r.wait_ns / r.wall_ns, 0.5 if h else 0.001, rel_tol=1e-4)
            for r, h in zip(rs, hit, strict=True)
        )
        # a fixed campaign replaces left-out rounds: 30 analysed rounds each
        clean = np.array([r.readings[0] for r, h in zip(rs, hit, strict=True) if not h])
        assert clean.size == 30
    summary = read_summary(exp.db_path)
    for r in summary.results:
        c = r.collected or {}
        clean = np.array([x.readings[0] for x in rounds[r.name] if "contended" not in x.flags])
        # the estimate is numpy's mean over the uncontended rounds (after the warm-up cut
        # of MSER-5, which a contended round 2x slower would have moved)
        k = int(c["warmup_readings"])
        assert c["n"] == clean.size - k
        assert c["mean"] == pytest.approx(float(np.mean(clean[k:])), rel=1e-12)
        assert r.steady == 30
        assert r.contended == sum("contended" in x.flags for x in rounds[r.name]) > 0
    assert summary.contended is not None and "left out of the analysis" in summary.contended
    doc = summary_json(summary)
    assert doc["contended"]["policy"] == "exclude"
    assert doc["contended"]["rounds"] == sum(r.contended for r in summary.results)
    assert [w["contended"] for w in doc["workloads"]] == [r.contended for r in summary.results]


def test_a_pass_whose_round_is_contended_drops_out_of_the_paired_comparison(
    tmp_path: Path,
) -> None:
    exp, _ = run(tmp_path, FIXED)
    _, rounds, _ = stored(exp)

    def clean_by_pass(name: str) -> dict[int, float]:
        return {r.pass_: r.readings[0] for r in rounds[name] if "contended" not in r.flags}

    a, b = clean_by_pass("a"), clean_by_pass("b")
    common = sorted(set(a) & set(b))
    contended_passes = {r.pass_ for rs in rounds.values() for r in rs if "contended" in r.flags}
    assert contended_passes and not contended_passes & set(common)
    with Store.open(exp.db_path) as store:
        verdicts = campaign_verdicts(store, store.campaign())
    assert verdicts is not None
    (pair,) = verdicts["pairs"]
    assert pair["passes"] == len(common)
    d = np.log([b[p] / a[p] for p in common])

    # the paired ratio: the median per-pass ratio (Hodges-Lehmann: the median of the Walsh
    # averages) over the passes both ran uncontended (MSER-5 may cut a prefix of the
    # series: compare against every possible cut)
    def walsh_median(x: np.ndarray) -> float:
        i, j = np.triu_indices(x.size)
        return float(np.median((x[i] + x[j]) / 2))

    candidates = [math.exp(walsh_median(d[k:])) for k in range(d.size // 2)]
    assert min(abs(pair["ratio"] / c - 1) for c in candidates) < 1e-12


def test_keep_analyses_contended_rounds_and_still_counts_them(tmp_path: Path) -> None:
    exp, out = run(tmp_path, BASE + "\ncontended: keep")
    assert out.exit_code == 0
    _, rounds, _ = stored(exp)
    summary = read_summary(exp.db_path)
    for r in summary.results:
        every = np.array([x.readings[0] for x in rounds[r.name]])
        assert every.size == 30  # nothing replaced
        c = r.collected or {}
        k = int(c["warmup_readings"])
        assert c["mean"] == pytest.approx(float(np.mean(every[k:])), rel=1e-12)
        assert r.contended == 6  # launches 2, 7, ..., 27
    assert summary.contended is not None and "contended: keep" in summary.contended


def test_fail_stops_the_campaign_at_the_first_contended_round_keeping_every_round(
    tmp_path: Path,
) -> None:
    exp, out = run(tmp_path, BASE + "\ncontended: fail")
    assert out.status == "failed" and out.exit_code != 0
    assert "\n" not in out.message
    assert "round 2 was contended" in out.message and "contended: fail" in out.message
    _, rounds, _ = stored(exp)
    stored_rounds = [r for rs in rounds.values() for r in rs]
    # the round that stopped it is stored, and nothing after it ran
    assert sum("contended" in r.flags for r in stored_rounds) == 1
    assert max(r.round_index for r in stored_rounds) == 2


def test_rounds_without_a_measured_wait_are_never_contended(tmp_path: Path) -> None:
    exp = experiment(tmp_path, FIXED)
    fake = FakeExecutor({"a": lambda s, k, c: FakeRound(0.1), "b": lambda s, k, c: FakeRound(0.1)})
    assert run_campaign(exp, fake, NullDisplay()).exit_code == 0
    _, rounds, _ = stored(exp)
    assert all(r.wait_ns is None and r.flags == "" for rs in rounds.values() for r in rs)


@pytest.mark.parametrize(
    ("setting", "words"),
    [
        (
            "contended: maybe",
            "settings.contended: got string 'maybe'; valid: exclude | keep | fail",
        ),
        ("contended_threshold: 0", "settings.contended_threshold: 0 is out of range"),
        ("contended_threshold: 1.5", "settings.contended_threshold: 1.5 is out of range"),
        ("contended_threshold: lots", "settings.contended_threshold:"),
    ],
)
def test_bad_contended_settings_are_one_line(tmp_path: Path, setting: str, words: str) -> None:
    text = f"name: x\nsettings:\n  {setting}\nworkloads:\n  - name: a\n    command: [work]\n"
    with pytest.raises(UserError) as err:
        parse_experiment(text, base_dir=tmp_path, check_commands=False)
    message = str(err.value)
    assert words in message
    assert len(message.strip().splitlines()) == 1


def test_the_live_display_and_the_progress_line_count_contended_rounds() -> None:
    out = io.StringIO()
    now = [0.0]
    display = RichDisplay({"a": "s"}, Console(file=out, width=200), clock=lambda: now[0])

    class Campaign:
        id, name, settings = 1, "x", {"adaptive": False}

    display.start(Campaign(), {"a": 4}, {})  # type: ignore[arg-type]
    for k in range(4):
        extra = {"contended": True} if k % 2 else {}
        outcome = RoundOutcome("ok", 10**8, 0.05, 0.0, 1, 0, 0.0, extra=extra, wait_ns=5 * 10**7)
        display.round_done("a", outcome, 0.1, False)
    now[0] = 10.0
    line = display.plain_line()
    assert "4 of 4 rounds stored (2 contended, 50 % of rounds)" in line


def schema_2_store(path: Path) -> None:
    """A store as benchrun wrote it before schema 3: the schema 2 DDL (the version-1 tables
    and the hook table, unchanged since), one campaign, one workload, two rounds."""
    conn = sqlite3.connect(path)
    conn.executescript(_SCHEMA_V1 + _HOOK_TABLE)
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    conn.execute("INSERT INTO meta VALUES ('schema_version', '2')")
    conn.execute(
        "INSERT INTO campaign (id, name, status, created_at, updated_at, config_text, "
        "fingerprint, settings_json, benchrun_version) VALUES "
        "(1, 'old', 'done', 1.0, 2.0, 'name: old', 'f', '{\"adaptive\": false}', '0.1')"
    )
    conn.execute(
        "INSERT INTO workload (id, campaign_id, name, position, metric, unit, direction, "
        "spec_json) VALUES (1, 1, 'a', 0, 'wall_time', 's', 'lower_is_better', '{}')"
    )
    for i, v in enumerate((0.1, 0.2)):
        conn.execute(
            "INSERT INTO round (id, campaign_id, workload_id, seq, pass, round_index, status, "
            "started_at, wall_ns, user_s, sys_s, max_rss_kib, argv_json) VALUES "
            "(?, 1, 1, ?, ?, ?, 'ok', 1.0, ?, 0.1, 0.0, 1, '[\"x\"]')",
            (i + 1, i, i, i, int(v * 1e9)),
        )
        conn.execute("INSERT INTO reading VALUES (?, 0, ?, '')", (i + 1, v))
    conn.commit()
    conn.close()


def test_a_schema_2_store_gains_the_wait_columns_and_keeps_its_rounds(tmp_path: Path) -> None:
    db = tmp_path / "benchrun.db"
    schema_2_store(db)
    with Store.open(db) as store:
        # through schema 3 (these columns), 4 (run_span), 5 (round_metric) and 6
        # (experiment_json)
        assert store.schema_version() == 6
        rounds = store.rounds(1)
        assert [(r.readings, r.wait_ns, r.wait_source, r.flags) for r in rounds] == [
            ((0.1,), None, None, ""),
            ((0.2,), None, None, ""),
        ]
    columns = {row[1] for row in sqlite3.connect(db).execute("PRAGMA table_info(round)")}
    assert {"wait_ns", "wait_source"} <= columns
    # show reads it: no contended rounds, the estimate over both
    summary = read_summary(db)
    assert summary.contended is None
    assert [r.contended for r in summary.results] == [0]


def test_export_carries_the_waits_and_the_importer_leaves_out_what_the_campaign_did(
    tmp_path: Path,
) -> None:
    exp, _ = run(tmp_path, FIXED)
    _, rounds, _ = stored(exp)
    doc = json.loads(json.dumps(export_document(load_campaign(exp.db_path))))
    for w in doc["workloads"]:
        mine = rounds[w["name"]]
        assert [r["wait_ns"] for r in w["rounds"]] == [r.wait_ns for r in mine]
        assert {r["wait_source"] for r in w["rounds"]} == {"fake"}
        assert w["contended_rounds"] == sum("contended" in r.flags for r in mine)
        for r in w["rounds"]:
            if "contended" in r["flags"]:
                assert r["reading_flags"] == ["contended"]
    ds = read_benchrun(doc, "export.json")
    for name in ("a", "b"):
        clean = [r.readings[0] for r in rounds[name] if "contended" not in r.flags]
        imported = ds.groups[(None, None, name)]
        # the analysed readings: the uncontended ones (a Tukey outlier stays analysed)
        assert np.asarray(imported).size <= len(clean)
        assert set(np.round(np.asarray(imported), 12)) <= set(np.round(clean, 12))
        assert not set(np.round(np.asarray(imported), 12)) & {
            round(r.readings[0], 12) for r in rounds[name] if "contended" in r.flags
        }
    assert any("contended" in n and "left out" in n for n in ds.notes)


def test_the_importer_refuses_a_bad_wait_with_one_line(tmp_path: Path) -> None:
    exp, _ = run(tmp_path, FIXED)
    doc = json.loads(json.dumps(export_document(load_campaign(exp.db_path))))
    doc["workloads"][0]["rounds"][1]["wait_ns"] = -5
    with pytest.raises(UserError) as err:
        read_benchrun(doc, "export.json")
    assert str(err.value) == (
        "export.json: workloads[0].rounds[1].wait_ns: expected a whole number of ns >= 0, got -5"
    )


def test_the_default_is_exclude_and_the_environment_sets_it_where_the_file_does_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def policy(setting: str = "") -> str:
        text = (
            f"name: x\nsettings:\n  seed: 1\n{setting}workloads:\n  - name: a\n    command: [w]\n"
        )
        return parse_experiment(text, base_dir=tmp_path, check_commands=False).settings.contended

    monkeypatch.delenv("BENCHRUN_CONTENDED", raising=False)
    assert policy() == "exclude"
    monkeypatch.setenv("BENCHRUN_CONTENDED", "fail")
    assert policy() == "fail"
    assert policy("  contended: keep\n") == "keep"  # the file wins
    monkeypatch.setenv("BENCHRUN_CONTENDED", "sometimes")  # not a choice: ignored
    assert policy() == "exclude"


def test_contended_every_scripts_a_hog_on_every_nth_launch(tmp_path: Path) -> None:
    exp = experiment(tmp_path, FIXED)
    fake = FakeExecutor({"a": contended_every(4, constant(0.1), first=1), "b": constant(0.1)})
    assert run_campaign(exp, fake, NullDisplay()).exit_code == 0
    _, rounds, _ = stored(exp)
    a = rounds["a"]
    # launches 1, 5, 9, ... took 0.2 s, waited 0.1 s and are contended; the others waited 0
    assert [r.round_index for r in a if "contended" in r.flags] == [
        k for k in range(len(a)) if k % 4 == 1
    ]
    assert all(
        (r.wall_ns, r.wait_ns)
        == ((200_000_000, 100_000_000) if r.round_index % 4 == 1 else (100_000_000, 0))
        for r in a
    )
    assert all(r.wait_ns is None for r in rounds["b"])
    assert sum(r.status == "ok" and "contended" not in r.flags for r in a) == 30
