"""Hostile experiment files: size, alias expansion, matrix size and absurd values are refused
with one line that says the limit and how to raise it, in bounded time and memory."""

from __future__ import annotations

import math
import resource
import sys
from pathlib import Path

import pytest

from benchrun.runner.config.cpulist import parse_cpu_list
from benchrun.runner.config.loader import MAX_BYTES_ENV, load_experiment, parse_experiment
from benchrun.runner.config.schema import MAX_CONFIDENCE
from benchrun.runner.config.yamlsource import MAX_VALUES_ENV
from benchrun.runner.errors import UserError

OK = 'workloads: [{name: a, command: ["true"]}]\n'


def _parse(text: str) -> None:
    parse_experiment(text, check_commands=False)


def _error(text: str) -> str:
    with pytest.raises(UserError) as info:
        _parse(text)
    message = str(info.value)
    assert "\n" not in message
    return message


def _alias_bomb(levels: int, width: int) -> str:
    lines = ["a0: &a0 [" + ",".join(['"x"'] * width) + "]"]
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * width) + "]")
    return "name: x\n" + "\n".join(lines) + "\n" + OK


def test_an_alias_bomb_is_refused_in_bounded_memory() -> None:
    text = _alias_bomb(9, 10)  # 1.5 KB expanding to 10^9 strings
    assert len(text) < 2000
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    message = _error(text)
    grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert "expands to more than 100000 values through YAML aliases" in message
    assert MAX_VALUES_ENV in message
    assert grown_mib < 100


def test_the_alias_limit_can_be_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    text = _alias_bomb(3, 60)  # 216 000 values: over the default, under 300 000
    assert "values through YAML aliases" in _error(text)
    monkeypatch.setenv(MAX_VALUES_ENV, "300000")
    with pytest.raises(UserError) as info:  # now it gets to the real check: a0.. are unknown
        _parse(text)
    assert "unknown key" in str(info.value)


def test_shared_aliases_that_stay_small_are_fine() -> None:
    text = "name: x\nsettings: &s {rounds: 3, adaptive: false}\n" + OK
    assert parse_experiment(text, check_commands=False).settings.rounds == 3


def test_a_self_referencing_alias_is_refused() -> None:
    assert "refers to the value that contains it" in _error("name: x\nfoo: &a [*a]\n" + OK)


def test_deep_nesting_is_refused_without_recursion_error() -> None:
    assert "nested too deeply" in _error("name: x\nfoo: " + "[" * 50_000 + "]" * 50_000 + "\n")


def test_a_file_larger_than_the_cap_is_refused_without_reading_it_all(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(UserError) as info:
        load_experiment("/dev/zero")
    assert "larger than 1048576 bytes" in str(info.value) and MAX_BYTES_ENV in str(info.value)
    big = tmp_path / "big.yaml"
    big.write_text("name: big\n" + OK + "#" * 2_000_000 + "\n")
    with pytest.raises(UserError):
        load_experiment(big, check_commands=False)
    monkeypatch.setenv(MAX_BYTES_ENV, "3000000")
    assert load_experiment(big, check_commands=False).name == "big"


def test_a_matrix_larger_than_max_workloads_is_refused_before_expanding() -> None:
    values = ",".join(str(i) for i in range(1000))
    text = f"name: m\nmatrix: {{x: [{values}], y: [{values}]}}\nworkloads: [{{name: a, command: 'e {{x}} {{y}}'}}]\n"
    message = _error(text)
    assert "1000000 workloads" in message and "max_workloads" in message
    small = "name: m\nsettings: {max_workloads: 3}\nmatrix: {x: [1, 2]}\nworkloads: [{name: a, command: 'e {x}'}, {name: b, command: 'f {x}'}]\n"
    assert "at most 3" in _error(small)  # two workloads of 2: the second does not fit


@pytest.mark.parametrize(
    ("settings", "words"),
    [
        ("memory_limit: 99999999999999999999999GiB", "<= 1152921504606846976 bytes"),
        ("rounds: 1000000000000000000000000", "<= 1e+08"),
        ("max_consecutive_failures: 100000", "<= 10000"),
        ("max_time: 1000d", "<= 366 days"),
        ("min_round_time: 1e15", "<= 1h"),
        ("timeout: 1e300", "<= 7 days"),
        ("seed: 100000000000000000000", "<= 9.22337e+18"),
        ("output_limit: 10GiB", "<= 1073741824 bytes"),
    ],
)
def test_absurd_settings_are_refused_naming_the_cap(settings: str, words: str) -> None:
    message = _error(f"name: x\nsettings: {{{settings}}}\n" + OK)
    key = settings.split(":")[0]
    assert f"settings.{key}" in message and "out of range" in message and words in message


def test_absurd_work_and_names_are_refused() -> None:
    work = "name: x\nworkloads: [{name: a, command: 'e {work}', work: 99999999999999999999999999999}]\n"
    assert "work" in _error(work) and "<= 1e+15" in _error(work)
    assert "control characters" in _error('name: "a\\0b"\n' + OK)
    assert "at most 200" in _error("name: " + "n" * 201 + "\n" + OK)
    assert "one-line" in _error('name: x\nworkloads: [{name: "a\\0", command: [true]}]\n')


# ------------------------------------------------------------------ issue 29 (budgets part)


def test_integers_past_pythons_digit_limit_are_one_line_with_the_line() -> None:
    """Python itself refuses to turn more than sys.get_int_max_str_digits() digits into an
    int (ValueError from the YAML constructor): the message names the line and the limit;
    a hexadecimal one (which Python converts) could not be printed and is refused too; a
    value under the limit is read as before."""
    limit = sys.get_int_max_str_digits()
    assert limit == 4300  # Python's default; CI does not raise it
    huge = "9" * (limit + 1)
    message = _error(f"name: x\nsettings:\n  seed: {huge}\n" + OK)
    assert message.startswith("<string>:3: ") or ":3: " in message, message
    assert f"at most {limit} digits" in message and huge not in message
    message = _error(f"name: x\nsettings:\n  seed: 0x{'f' * 3600}\n" + OK)
    assert f"at most {limit} digits" in message
    # anywhere in the file: a parameter deep in a matrix
    message = _error(
        "name: x\nworkloads:\n  - name: a\n    command: [echo, '{n}']\n"
        f"    matrix: {{n: [1, {huge}]}}\n"
    )
    assert ":5: " in message and f"at most {limit} digits" in message
    with pytest.raises(UserError, match="out of range"):  # read, then refused by its range
        _parse(f"name: x\nsettings:\n  seed: {'9' * limit}\n" + OK)


def test_a_cpu_range_is_capped_before_it_is_expanded() -> None:
    """``pin: 0-99999999999`` would be expanded into a set of 10^11 numbers (memory and
    time without bound); CPU numbers stop at MAX_CPU, said in the message."""
    for pin in ('"0-99999999999"', '"0-70000"', "[1, 70000]", '"' + "9" * 5000 + '"'):
        message = _error(f"name: x\nsettings:\n  pin: {pin}\n" + OK)
        assert ("up to 65535" in message or "bad CPU" in message) and len(message) < 400, message
    assert parse_cpu_list("0-3,65535") == (0, 1, 2, 3, 65535)


def test_confidence_is_capped_where_the_quantiles_stay_finite() -> None:
    """Past MAX_CONFIDENCE the two-sided normal quantile of the confidence, divided over a
    campaign's comparisons, is infinite in floating point (scipy computes it here, not
    benchrun): the cap sits where it is still finite for 10^8 comparisons."""
    from scipy.stats import norm

    assert MAX_CONFIDENCE == 0.999999
    assert math.isfinite(norm.ppf(1 - (1 - MAX_CONFIDENCE) / 2 / 1e8))
    assert math.isinf(norm.ppf(1 - (1 - 0.9999999999999999) / 2))
    message = _error("name: x\nsettings:\n  confidence: 0.9999999999999999\n" + OK)
    assert "<= 0.999999" in message
    _parse("name: x\nsettings:\n  confidence: 0.999999\n" + OK)


def test_warmup_rounds_may_not_pass_max_rounds_in_adaptive_mode() -> None:
    message = _error("name: x\nsettings:\n  warmup_rounds: 13772\n  max_rounds: 20\n" + OK)
    assert "warmup_rounds (13772) is above max_rounds (20)" in message
    _parse("name: x\nsettings:\n  warmup_rounds: 20\n  max_rounds: 20\n" + OK)
    # fixed mode has no max_rounds: rounds and warmup_rounds are both the user's counts
    _parse("name: x\nsettings:\n  rounds: 5\n  warmup_rounds: 600\n" + OK)


def test_a_scalar_the_yaml_constructor_cannot_read_is_one_line() -> None:
    """PyYAML raises ValueError or KeyError (not a YAML error) for a typed scalar it cannot
    construct; each was a traceback. A plain 2020-13-45 is one: YAML reads it as a date."""
    for value, kind in (
        ("!!int abc", "int"),
        ("!!float abc", "float"),
        ("!!bool maybe", "bool"),
        ("2020-13-45", "timestamp"),
        ("0x_", "int"),
    ):
        message = _error(f"name: x\nsettings:\n  seed: {value}\n" + OK)
        assert ":3: " in message and f"is not a valid YAML {kind}" in message, message
    # merge keys and aliases are constructed as before
    _parse("name: x\nsettings: {<<: {timeout: 5}, seed: &s 7, max_consecutive_failures: *s}\n" + OK)
