"""`benchrun history` (issue 31): 30 campaigns of one experiment tagged r01..r30, with a
campaign-to-campaign variation of 0.5 % and a known step, measured on the fake executor
and read back through the real command (its --json and its CI gate)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from benchrun.runner.campaign.run import run_campaign
from benchrun.runner.cli import main
from benchrun.runner.config.loader import parse_experiment
from benchrun.runner.execute.executor import RoundSpec
from benchrun.runner.execute.fake import FakeExecutor, FakeRound, Script
from benchrun.runner.machine.revision import Revision

ROUNDS = 24


class _Quiet:
    def start(self, *a: object) -> None: ...
    def round_done(self, *a: object) -> None: ...
    def message(self, text: str) -> None: ...
    def show_decision(self, *a: object) -> None: ...
    def stop(self) -> None: ...


def _rounds(level: float, rng: np.random.Generator) -> Script:
    values = level * (1 + 0.01 * rng.standard_normal(ROUNDS + 1))

    def script(spec: RoundSpec, k: int, clock: float) -> FakeRound:
        return FakeRound(float(values[k]))

    return script


def history(root: Path, step_at: int | None, step: float, seed: int) -> Path:
    """30 campaigns r01..r30 in one store: level 0.1 s, each campaign's own level off by
    N(0, 0.5 %), rounds with 1 % noise; from revision ``step_at`` (1-based) on, x step."""
    rng = np.random.default_rng(seed)
    text = (
        f"name: hist\noutput: {root / 'out'}\n"
        f"settings: {{pin: none, seed: 3, adaptive: false, rounds: {ROUNDS}, warmup_rounds: 0}}\n"
        "workloads:\n  - {name: a, command: [work]}\n"
    )
    exp = parse_experiment(text, base_dir=root, check_commands=False)
    for r in range(1, 31):
        level = 0.1 * (1 + 0.005 * rng.standard_normal())
        if step_at is not None and r >= step_at:
            level *= step
        tag = Revision(f"r{r:02d}", source="flag").to_dict()
        run_campaign(
            exp,
            FakeExecutor({"a": _rounds(level, rng)}),
            _Quiet(),
            metadata_fn=lambda tag=tag: {"revision": tag},
        )
    return root / "out" / "hist"


def _json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict]:
    capsys.readouterr()
    code = main(["history", *args, "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_one_step_is_one_change_at_its_revision(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    d = history(tmp_path, step_at=18, step=1.05, seed=1)
    code, doc = _json(capsys, str(d))
    assert code == 0
    (series,) = doc["series"]
    assert [p["revision"] for p in series["points"]] == [f"r{r:02d}" for r in range(1, 31)]
    assert [c["revision"] for c in series["changes"]] == ["r18"]
    (change,) = series["changes"]
    assert change["ratio_low"] < 1.05 < change["ratio_high"]


def test_no_step_no_change(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = history(tmp_path, step_at=None, step=1.0, seed=2)
    code, doc = _json(capsys, str(d))
    assert code == 0 and doc["series"][0]["changes"] == []


def test_the_gate_fails_a_latest_revision_slower_beyond_the_threshold(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A 10 % step at the last revision cannot be a change point yet (one campaign is not
    a level), but the gate compares it with the level before it: exit 1 at 5 %; the same
    history without the step passes (exit 0)."""
    slow = history(tmp_path / "slow", step_at=30, step=1.10, seed=3)
    code, doc = _json(capsys, str(slow), "--fail-on-change", "5%")
    assert code == 1 and doc["series"][0]["latest"]["verdict"] == "regression"
    assert doc["series"][0]["latest"]["change"] == pytest.approx(0.10, abs=0.02)
    flat = history(tmp_path / "flat", step_at=None, step=1.0, seed=4)
    code, doc = _json(capsys, str(flat), "--fail-on-change", "5%")
    assert code == 0 and doc["series"][0]["latest"]["verdict"] == "ok"


def test_bad_input_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(["history", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no benchrun campaign here" in err[0]


def test_exports_are_read_back_as_the_store_they_came_from(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each campaign exported (`benchrun export --campaign N`) carries its revision; the
    exports alone give the store's history, and a store with its own exports counts each
    campaign once (issue 31 item 1: revisions exported and imported back)."""
    d = history(tmp_path, step_at=18, step=1.05, seed=1)
    files = []
    for cid in range(1, 31):
        out = tmp_path / f"e{cid:02d}.json"
        assert main(["export", str(d), "--campaign", str(cid), "-o", str(out)]) == 0
        files.append(str(out))
    _, from_store = _json(capsys, str(d))
    _, from_exports = _json(capsys, *files)
    _, both = _json(capsys, str(d), *files)
    (a,) = from_store["series"]
    (b,) = from_exports["series"]
    (c,) = both["series"]
    assert [p["revision"] for p in b["points"]] == [p["revision"] for p in a["points"]]
    assert [p["mean"] for p in b["points"]] == pytest.approx([p["mean"] for p in a["points"]])
    assert [x["revision"] for x in b["changes"]] == ["r18"]
    assert len(c["points"]) == 30
    capsys.readouterr()
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert main(["history", str(bad)]) == 2
    assert "not a benchrun store or JSON export" in capsys.readouterr().err
