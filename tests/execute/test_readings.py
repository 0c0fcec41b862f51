"""Readings parsing: regex and jsonl formats, errors for garbage and unusable specs.

Expected values are the numbers written into the text by the test itself (or by Python's
float repr, which round-trips exactly), never output of the parser copied back.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchrun.runner.config.experiment import ReadingsSpec
from benchrun.runner.errors import UserError
from benchrun.runner.execute.readings import ReadingsError, check_readings_spec, parse_readings

TIME = ReadingsSpec(format="regex", pattern=r"time=([0-9.]+) ms", unit="ms")


def test_regex_every_match_is_a_reading() -> None:
    out = "warming up\ntime=1.5 ms\nnoise time=x\ntime=2 ms\ntime=0.25 ms\n"
    assert parse_readings(out, TIME) == (1.5, 2.0, 0.25)


def test_regex_is_multiline_and_accepts_float_syntax() -> None:
    spec = ReadingsSpec(pattern=r"^t (\S+)$")
    out = "t 1e-3\nnot t 5\nt -2.5E2\nt  7\n"
    # "t  7": \S+ cannot start with a space, so the line does not match
    assert parse_readings(out, spec) == (0.001, -250.0)


def test_regex_no_match_message_names_pattern() -> None:
    with pytest.raises(ReadingsError) as info:
        parse_readings("nothing here\n", TIME)
    assert str(info.value) == "no reading matched 'time=([0-9.]+) ms' in stdout"


@pytest.mark.parametrize("capture", ["1.2.3", "..", "1..5"])
def test_regex_non_numeric_capture_is_an_error(capture: str) -> None:
    with pytest.raises(ReadingsError, match="is not a number"):
        parse_readings(f"time=1 ms\ntime={capture} ms\n", TIME)


@pytest.mark.parametrize("text", ["nan", "inf", "-inf"])
def test_regex_non_finite_is_an_error(text: str) -> None:
    spec = ReadingsSpec(pattern=r"v=(\S+)")
    with pytest.raises(ReadingsError, match="not a finite number"):
        parse_readings(f"v={text}\n", spec)


def test_regex_optional_group_that_did_not_take_part_is_an_error() -> None:
    spec = ReadingsSpec(pattern=r"v(?:=([0-9]+))?;")
    with pytest.raises(ReadingsError, match="empty capture group"):
        parse_readings("v=3;\nv;\n", spec)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.floats(allow_nan=False, allow_infinity=False, width=64), min_size=1, max_size=30)
)
def test_regex_round_trips_python_float_repr(values: list[float]) -> None:
    # reference: repr(float) round-trips exactly (Python language guarantee)
    out = "".join(f"log line\nvalue: {v!r} s\n" for v in values)
    spec = ReadingsSpec(pattern=r"value: (\S+) s")
    assert parse_readings(out, spec) == tuple(values)


def test_jsonl_reads_field_and_skips_other_lines() -> None:
    lines = [
        "starting benchmark",
        json.dumps({"iter": 1, "ns": 120}),
        "{not json",
        json.dumps([1, 2, 3]),
        json.dumps({"iter": 2}),
        json.dumps({"iter": 3, "ns": 99.5}),
        "  " + json.dumps({"ns": -1e-3}) + "  ",
    ]
    spec = ReadingsSpec(format="jsonl", field="ns", unit="ns")
    assert parse_readings("\n".join(lines) + "\n", spec) == (120.0, 99.5, -0.001)


@pytest.mark.parametrize("value", ['"12"', "true", "null", "[1]", "NaN", "Infinity"])
def test_jsonl_non_number_field_is_an_error(value: str) -> None:
    spec = ReadingsSpec(format="jsonl", field="ns")
    with pytest.raises(ReadingsError, match="line 2"):
        parse_readings('{"ns": 1}\n{"ns": ' + value + "}\n", spec)


def test_jsonl_no_field_message() -> None:
    spec = ReadingsSpec(format="jsonl", field="ns")
    with pytest.raises(ReadingsError) as info:
        parse_readings('{"ms": 1}\nhello\n', spec)
    assert str(info.value) == "no JSON line with field 'ns' in stdout"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (ReadingsSpec(format="regex", pattern=None), "needs a 'pattern'"),
        (ReadingsSpec(pattern=r"time=[0-9]+"), "0 capture groups"),
        (ReadingsSpec(pattern=r"(a)=([0-9]+)"), "2 capture groups"),
        (ReadingsSpec(pattern=r"([0-9]+"), "not a valid regex"),
        (ReadingsSpec(format="jsonl", field=None), "needs a 'field'"),
        (ReadingsSpec(format="xml", pattern="(x)"), "unknown format"),  # type: ignore[arg-type]
    ],
)
def test_unusable_spec_is_a_user_error(spec: ReadingsSpec, message: str) -> None:
    with pytest.raises(UserError, match=message):
        check_readings_spec(spec)
    with pytest.raises(UserError, match=message):
        parse_readings("time=1 ms\n", spec)


# ------------------------------------------------------------ bounded matching and counts


def test_a_catastrophically_backtracking_pattern_fails_within_its_time_limit() -> None:
    import time

    spec = ReadingsSpec(pattern=r"(a|aa)+b", match_timeout=0.2)
    t0 = time.monotonic()
    with pytest.raises(ReadingsError) as info:
        parse_readings("a" * 40 + "\n", spec)
    # Python's re needs about 1.6^40 steps here: hours; the limit makes it 0.2 s
    assert time.monotonic() - t0 < 5
    assert "took more than 0.2 s" in str(info.value) and "match_timeout" in str(info.value)


def test_a_signal_is_served_while_a_pattern_searches() -> None:
    import signal

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, 0.2)
    try:
        with pytest.raises(KeyboardInterrupt):
            parse_readings("a" * 40 + "\n", ReadingsSpec(pattern=r"(a|aa)+b", match_timeout=30))
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


@pytest.mark.parametrize("fmt", ["regex", "jsonl"])
def test_more_readings_than_max_readings_fail_the_round(fmt: str) -> None:
    if fmt == "regex":
        spec = ReadingsSpec(pattern=r"t=(\d+)", max_readings=5)
        line = "t=1\n"
    else:
        spec = ReadingsSpec(format="jsonl", field="t", max_readings=5)
        line = '{"t": 1}\n'
    assert parse_readings(line * 5, spec) == (1.0,) * 5
    with pytest.raises(ReadingsError) as info:
        parse_readings(line * 6, spec)
    assert "more than 5 readings in one round" in str(info.value)
    assert "max_readings" in str(info.value)
