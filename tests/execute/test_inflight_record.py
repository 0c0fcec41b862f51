"""The in-flight record's format (runner/execute/inflight_record.py): the file is the one
benchrun always wrote (written out here by hand), and what a reader accepts of one that
anybody may have written."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from benchrun.runner.execute.containment import end_leftovers
from benchrun.runner.execute.inflight_record import InflightGroup, InflightRecord
from benchrun.runner.jsonread import FieldError


def test_the_file_is_the_one_it_always_was() -> None:
    record = InflightRecord(1234, 5678, "b", None, 3, 1200, (InflightGroup(1240, 5690),))
    text = (
        '{"pid": 1234, "pgid": 1234, "start_ticks": 5678, "boot_id": "b", "cgroup": null, '
        '"campaign_id": 3, "runner_pid": 1200, "others": [{"pgid": 1240, "start_ticks": 5690}]}\n'
    )
    assert record.to_text() == text
    assert InflightRecord.from_json(json.loads(text)) == record
    before_spawn = InflightRecord(None, None, "b", "/cg/rounds", None, 1200)
    assert before_spawn.to_text() == (
        '{"pid": null, "pgid": null, "start_ticks": null, "boot_id": "b", '
        '"cgroup": "/cg/rounds", "campaign_id": null, "runner_pid": 1200}\n'
    )


@pytest.mark.parametrize(
    ("doc", "error"),
    [
        ([1], "not a JSON object"),
        ({"pid": 1}, "pid 1 is not a process group id"),
        ({"pid": -1}, "pid -1 is not a process group id"),
        ({"pid": True}, "field 'pid' is True, not an integer"),
        ({"pid": "77"}, "field 'pid' is '77', not an integer"),
        ({"pid": os.getpgrp()}, "is this runner's own"),
        ({"pid": 4194304, "start_ticks": "5"}, "field 'start_ticks' is '5'"),
    ],
)
def test_a_record_naming_nothing_to_signal_is_refused(doc: object, error: str) -> None:
    with pytest.raises(FieldError, match=error):
        InflightRecord.from_json(doc)


def test_fields_only_shown_read_as_unknown_and_bad_others_are_left_out() -> None:
    record = InflightRecord.from_json(
        {
            "pid": None,
            "boot_id": 7,
            "cgroup": ["x"],
            "campaign_id": "c",
            "others": [
                {"pgid": 4194304, "start_ticks": 9},
                {"pgid": 1, "start_ticks": 9},
                {"pgid": 4194305},
                "x",
            ],
        }
    )
    assert record == InflightRecord(
        None, None, None, None, None, None, (InflightGroup(4194304, 9),)
    )
    assert InflightRecord.from_json({"others": 3}).others == ()


def test_a_record_with_a_bool_for_a_pid_is_dropped_unread(tmp_path: Path) -> None:
    path = tmp_path / "inflight.json"
    path.write_text('{"pid": true, "start_ticks": 1}')
    assert end_leftovers(path) == f"ignored an unreadable in-flight record {path}"
    assert not path.exists()
