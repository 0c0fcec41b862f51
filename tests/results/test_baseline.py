"""Baselines (runner/results/baseline.py): JSON summaries and stored campaigns, and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from benchrun.runner.errors import UserError
from benchrun.runner.results.baseline import load_baseline
from benchrun.runner.store.database import Store


def test_json_forms_are_read_alike(tmp_path: Path) -> None:
    entry = {"mean": 2.0, "variance": 0.5, "n_q": 10, "q": 3}
    docs = {
        "nested": {"workloads": {"a": entry}},
        "listed": {"results": [{"name": "a", **entry}]},
        "plain": {"a": {"mean": 2.0, "s2_q": 0.5, "n_q": 10, "q": 3}},
    }
    for name, doc in docs.items():
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(doc))
        got = load_baseline(path)
        assert got["a"].as_tuple() == (2.0, 0.5, 10, 3)


def test_entries_without_enough_subsessions_are_left_out(tmp_path: Path) -> None:
    path = tmp_path / "b.json"
    path.write_text(json.dumps({"a": {"mean": 1, "variance": 1, "n_q": 1}, "b": {"mean": 1}}))
    assert load_baseline(path) == {}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "expected a JSON object"),
        ('{"a": {"mean": "x", "variance": 1, "n_q": 3}}', "must be numbers"),
        ('{"a": {"mean": 1, "variance": -1, "n_q": 3}}', "variance >= 0"),
    ],
)
def test_bad_json_is_a_clear_error(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "b.json"
    path.write_text(text)
    with pytest.raises(UserError, match=message):
        load_baseline(path)


def test_missing_path_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="baseline not found"):
        load_baseline(tmp_path / "nope")


def test_a_stored_campaign_gives_its_subsession_summary(tmp_path: Path) -> None:
    """Store 64 rounds of iid readings; the baseline must be the subsession summary that
    numpy computes from the same readings with the q the baseline reports."""
    rng = np.random.default_rng(3)
    values = 10.0 + rng.normal(0.0, 0.1, size=64)
    db = tmp_path / "c" / "benchrun.db"
    db.parent.mkdir()
    with Store.create_or_open(db) as store:
        cid = store.create_campaign(
            name="c",
            config_path=None,
            config_text="",
            fingerprint="f",
            settings={"confidence": 0.95},
            workloads=[
                {
                    "name": "w",
                    "metric": "wall_time",
                    "unit": "s",
                    "direction": "lower_is_better",
                    "spec": {},
                }
            ],
            benchrun_version="test",
            command_line=None,
        )
        wid = store.workloads(cid)[0].id
        for i, v in enumerate(values):
            store.add_round(
                campaign_id=cid, workload_id=wid, seq=i, pass_=i, round_index=i, status="ok",
                reason=None, exit_code=0, started_at=0.0, wall_ns=int(v * 1e9), user_s=0.0,
                sys_s=0.0, max_rss_kib=0, cpus=None, argv=["x"], work=None, warmup=False,
                readings=[float(v)],
            )  # fmt: skip
    got = load_baseline(tmp_path / "c")["w"]
    h = 64 // got.q
    b = values[: h * got.q].reshape(h, got.q).mean(axis=1)
    # MSER-5's guard keeps iid data whole, so the subsessions start at the first round
    assert got.n_q == h
    assert got.mean == pytest.approx(b.mean(), rel=1e-12)
    assert got.variance == pytest.approx(b.var(ddof=1), rel=1e-9)


def test_a_baseline_nested_too_deep_is_one_clear_error(tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(UserError) as info:
        load_baseline(str(deep))
    assert "not a baseline benchrun can read" in str(info.value)
