"""``metric:`` as one metric or a list (issue 33): the first decides, the others are
measured in the same rounds; every mistake is one line naming the key and its line."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from benchrun.runner.campaign.metrics import counter_sources
from benchrun.runner.config.experiment import Experiment
from benchrun.runner.config.loader import parse_experiment
from benchrun.runner.config.schema import json_schema
from benchrun.runner.errors import UserError
from benchrun.runner.execute.fake import FakeExecutor, constant


def parse(metric: str, extra: str = "", top: str = "") -> Experiment:
    text = f"name: m\n{top}workloads:\n  - name: a\n    command: [/bin/true]\n"
    text += f"    metric: {metric}\n{extra}"
    return parse_experiment(text, check_commands=False)


def error(metric: str, extra: str = "") -> str:
    with pytest.raises(UserError) as info:
        parse(metric, extra)
    return str(info.value)


def test_a_list_decides_by_its_first_and_keeps_the_rest() -> None:
    (w,) = parse("[instructions, wall_time, page_faults]").workloads
    assert w.metric == "instructions"
    assert w.extra_metrics == ("wall_time", "page_faults")
    assert w.metrics == ("instructions", "wall_time", "page_faults")
    assert w.counters == ("instructions", "page_faults")
    assert (w.unit, w.direction) == ("instructions", "lower_is_better")


def test_one_metric_stays_one() -> None:
    (w,) = parse("task_clock").workloads
    assert (w.metric, w.extra_metrics, w.unit, w.counters) == (
        "task_clock",
        (),
        "s",
        ("task_clock",),
    )


def test_an_unknown_metric_is_one_line_naming_the_valid_ones() -> None:
    text = error("[wall_time, instrs]")
    assert "workloads[0].metric" in text and "'instrs'" in text and "instructions" in text
    assert text.count("benchrun") <= 1


def test_a_metric_named_twice_is_refused() -> None:
    text = error("[instructions, wall_time, instructions]")
    assert "instructions named twice" in text


def test_an_empty_list_is_refused() -> None:
    assert "[]" in error("[]")


def test_readings_only_first() -> None:
    readings = "    readings: {pattern: 't=([0-9.]+)'}\n"
    (w,) = parse("[readings, wall_time]", readings).workloads
    assert (w.metric, w.extra_metrics) == ("readings", ("wall_time",))
    assert "readings imply" in error("[wall_time, readings]", readings)


def test_a_metric_list_changes_the_fingerprint_one_metric_does_not() -> None:
    plain = parse("wall_time").measurement_fingerprint()
    assert parse("wall_time").measurement_fingerprint() == plain
    assert parse("[wall_time, task_clock]").measurement_fingerprint() != plain


def test_the_json_schema_takes_a_list_and_refuses_duplicates() -> None:
    schema = json_schema()
    ok = {
        "name": "m",
        "workloads": [{"name": "a", "command": "x", "metric": ["cycles", "wall_time"]}],
    }
    jsonschema.validate(ok, schema)
    jsonschema.validate({**ok, "workloads": [{**ok["workloads"][0], "metric": "cycles"}]}, schema)
    twice = {**ok, "workloads": [{**ok["workloads"][0], "metric": ["cycles", "cycles"]}]}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(twice, schema)
    json.dumps(schema)  # still plain JSON


def test_counters_are_refused_on_an_executor_that_cannot_count_them(tmp_path: Path) -> None:
    exp = parse("[wall_time, task_clock]")
    with pytest.raises(UserError, match="local executor only"):
        counter_sources(exp, FakeExecutor({"a": constant(0.1)}))
    assert counter_sources(parse("wall_time"), FakeExecutor({"a": constant(0.1)})) == {}


def test_counters_are_refused_in_duet_mode() -> None:
    from benchrun.runner.execute.local import LocalExecutor

    text = (
        "name: m\nsettings:\n  duet: {}\nworkloads:\n"
        "  - {name: a, command: [/bin/true], metric: instructions}\n"
        "  - {name: b, command: [/bin/true], metric: instructions}\n"
    )
    exp = parse_experiment(text, check_commands=False)
    ex = LocalExecutor()
    try:
        with pytest.raises(UserError, match="duet"):
            counter_sources(exp, ex)
    finally:
        ex.close()


def test_validate_names_each_counters_source_here() -> None:
    from benchrun.runner.commands.validate import metrics_lines
    from benchrun.runner.execute.counters import probe_perf

    exp = parse("[instructions, wall_time]")
    (line,) = metrics_lines(exp)
    source = "perf_event" if probe_perf("instructions").available else "cachegrind"
    assert f"instructions ({source}), wall_time" in line
    assert metrics_lines(parse("wall_time")) == []


def test_validate_refuses_instructions_without_pmu_or_valgrind(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from benchrun.runner.commands.validate import metrics_lines
    from benchrun.runner.execute.counters import probe_perf

    if probe_perf("instructions").available:
        pytest.skip("a PMU counts instructions here; valgrind is not needed")
    monkeypatch.setenv("PATH", str(tmp_path))  # no valgrind on it
    with pytest.raises(UserError, match="valgrind") as info:
        metrics_lines(parse("instructions"))
    assert "\n" not in str(info.value)


def test_a_counter_alone_is_stored_with_its_source_plain_wall_time_is_not() -> None:
    from benchrun.runner.campaign.metrics import round_metrics
    from benchrun.runner.execute.executor import CounterReading, RoundOutcome

    counted = (CounterReading("instructions", 1234.0, "cachegrind", "process tree, user space"),)
    ok = RoundOutcome("ok", 2 * 10**9, 1.5, 0.25, 100, 0, 0.0, counters=counted)
    (alone,) = parse("instructions").workloads
    assert [(m.name, m.value, m.source) for m in round_metrics(alone, ok)] == [
        ("instructions", 1234.0, "cachegrind")
    ]
    (both,) = parse("[instructions, cpu_time]").workloads
    assert [(m.name, m.value, m.source) for m in round_metrics(both, ok)] == [
        ("instructions", 1234.0, "cachegrind"),
        ("cpu_time", 1.75, "wait4, under cachegrind"),
    ]
    (plain,) = parse("wall_time").workloads
    assert round_metrics(plain, ok) == ()
    failed = RoundOutcome("failed", 10**9, 0.0, 0.0, 0, 1, 0.0)
    assert round_metrics(both, failed) == ()
