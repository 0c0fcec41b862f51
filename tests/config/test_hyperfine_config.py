"""hyperfine's flags without processes (issue 32 item 1): their translation into the
one-line experiment (runner/config/hyperfine.py, runner/config/oneline.py), the round
options (runner/execute/hyperfine_local.py) and hyperfine's export formats
(runner/results/hyperfine_export.py) on results made by hand."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
import yaml

from benchrun.runner.config.hyperfine import hyperfine_settings, scan_values, shell_words
from benchrun.runner.config.oneline import (
    OneLine,
    command_sources,
    derived_name,
    fill_params,
    oneline_experiment,
    oneline_text,
)
from benchrun.runner.errors import UserError
from benchrun.runner.execute.executor import RoundOutcome
from benchrun.runner.execute.hyperfine_local import IGNORED_EXIT, ignore_exit_code
from benchrun.runner.results.hyperfine_export import (
    HyperfineExport,
    HyperfineResult,
    export_csv,
    export_json,
    export_markdown,
)


@pytest.mark.parametrize(
    ("low", "high", "step", "values"),
    [
        ("1", "4", None, ["1", "2", "3", "4"]),
        ("0", "0.02", "0.01", ["0", "0.01", "0.02"]),
        ("0.1", "0.35", "0.1", ["0.1", "0.2", "0.3"]),  # decimal, not 0.30000000000000004
        ("5", "5", None, ["5"]),
        ("-2", "2", "2", ["-2", "0", "2"]),
    ],
)
def test_scan_values_are_hyperfine_s(
    low: str, high: str, step: str | None, values: list[str]
) -> None:
    assert scan_values("t", low, high, step) == values


@pytest.mark.parametrize(
    ("low", "high", "step", "message"),
    [
        ("1", "x", None, "the maximum 'x' is not a number"),
        ("1", "2.5", None, "without -D STEP the bounds are integers"),
        ("3", "1", None, "the minimum is above the maximum"),
        ("1", "2", "-1", "the step must be above zero"),
        ("0", "1e9", None, "at most 10000; give a larger -D STEP"),
        ("0", "inf", "1", "is not a finite number"),
    ],
)
def test_bad_scans_are_refused(low: str, high: str, step: str | None, message: str) -> None:
    with pytest.raises(UserError, match=message):
        scan_values("t", low, high, step)


def test_run_counts_become_settings() -> None:
    def items(**given: int | None) -> list[str]:
        args: dict[str, int | None] = dict.fromkeys(("runs", "warmup", "min_runs", "max_runs"))
        args.update(given)
        return hyperfine_settings(overrides=(), **args)  # type: ignore[arg-type]

    assert items(runs=10, warmup=0) == ["rounds=10", "warmup_rounds=0"]
    assert items(min_runs=3, max_runs=40) == ["min_rounds=3", "max_rounds=40"]
    # a maximum below the default minimum (5) lowers it, as in hyperfine
    assert items(max_runs=2) == ["max_rounds=2", "min_rounds=2"]
    with pytest.raises(UserError, match="--runs and --max-runs contradict"):
        items(runs=3, max_runs=4)
    with pytest.raises(UserError, match="--warmup -1: must be at least 0"):
        items(warmup=-1)
    with pytest.raises(UserError, match="--runs and --set adaptive both set rounds"):
        hyperfine_settings(
            runs=3, warmup=None, min_runs=None, max_runs=None, overrides=["adaptive=true"]
        )
    with pytest.raises(UserError, match="--set rounds asks for fixed mode"):
        hyperfine_settings(
            runs=None, warmup=None, min_runs=2, max_runs=None, overrides=["rounds=5"]
        )


def test_shell_choice() -> None:
    assert shell_words(None, False) == (True, ())
    assert shell_words(None, True) == (False, ())
    assert shell_words("none", False) == (False, ())
    assert shell_words("/bin/sh", False) == (True, ())
    assert shell_words("bash --norc", False) == (False, ("bash", "--norc"))
    with pytest.raises(UserError, match="-N and --shell zsh contradict"):
        shell_words("zsh", True)
    with pytest.raises(UserError, match="--shell: empty"):
        shell_words("  ", False)


def doc_of(spec: OneLine, cwd: Path) -> dict:
    return yaml.safe_load(oneline_text(spec, cwd))


def test_runs_is_fixed_mode_and_min_runs_adaptive(tmp_path: Path) -> None:
    fixed = OneLine(commands=("true",), overrides=("rounds=7", "warmup_rounds=0"))
    settings = oneline_experiment(fixed, tmp_path, check_commands=False).settings
    assert (settings.adaptive, settings.rounds, settings.warmup_rounds) == (False, 7, 0)
    adaptive = OneLine(commands=("true",), overrides=("min_rounds=3", "max_rounds=9"))
    settings = oneline_experiment(adaptive, tmp_path, check_commands=False).settings
    assert (settings.adaptive, settings.min_rounds, settings.max_rounds) == (True, 3, 9)


def test_an_error_about_a_run_count_names_the_hyperfine_flag(tmp_path: Path) -> None:
    spec = OneLine(
        commands=("true",),
        overrides=("warmup_rounds=100000000000",),
        setting_flags=(("warmup_rounds", "--warmup"),),
    )
    with pytest.raises(UserError, match=r"^--warmup: "):
        oneline_experiment(spec, tmp_path, check_commands=False)


def test_shell_wraps_commands_and_hooks(tmp_path: Path) -> None:
    spec = OneLine(
        commands=("echo {n} | wc -c",),
        params=(("n", "1,2"),),
        prepare=("echo {n} >/dev/null",),
        shell=False,
        shell_words=("bash", "--norc"),
    )
    (workload,) = doc_of(spec, tmp_path)["workloads"]
    assert workload["command"] == ["bash", "--norc", "-c", "echo {n} | wc -c"]
    assert workload["prepare"] == ["bash", "--norc", "-c", "echo {n} >/dev/null"]
    assert "shell" not in workload
    exp = oneline_experiment(spec, tmp_path, check_commands=False)
    assert [w.command for w in exp.workloads] == [
        ("bash", "--norc", "-c", "echo 1 | wc -c"),
        ("bash", "--norc", "-c", "echo 2 | wc -c"),
    ]


def test_reference_comes_first_unless_it_is_a_command(tmp_path: Path) -> None:
    spec = OneLine(commands=("sleep 0.2", "sleep 0.3"), names=("two",), reference="sleep 0.1")
    doc = doc_of(spec, tmp_path)
    assert [w["name"] for w in doc["workloads"]] == ["sleep 0.1", "two", "sleep 0.3"]
    assert doc["settings"]["reference"] == "sleep 0.1"
    named = OneLine(commands=("sleep 0.2",), reference="sleep 0.1", reference_name="base")
    assert doc_of(named, tmp_path)["settings"]["reference"] == "base"
    among = OneLine(commands=("sleep 0.2", "sleep 0.1"), reference="sleep 0.1")
    doc = doc_of(among, tmp_path)
    assert [w["name"] for w in doc["workloads"]] == ["sleep 0.2", "sleep 0.1"]
    assert doc["settings"]["reference"] == "sleep 0.1"
    with pytest.raises(UserError, match="--reference and --set reference"):
        doc_of(OneLine(commands=("a",), reference="b", overrides=("reference=a",)), tmp_path)
    # a per-command --conclude counts the reference as the first command
    sources = command_sources(
        OneLine(commands=("a", "b"), reference="r", conclude=("cr", "ca", "cb"))
    )
    assert [(s.name, s.conclude) for s in sources] == [("r", "cr"), ("a", "ca"), ("b", "cb")]


def test_names_of_campaigns_without_hyperfine_flags_stay_as_they_were(tmp_path: Path) -> None:
    plain = OneLine(commands=("sleep 0.1",))
    assert derived_name(plain) == derived_name(
        OneLine(commands=("sleep 0.1",), overrides=("rounds=3",))
    )
    for changed in (
        OneLine(commands=("sleep 0.1",), input="/tmp/in"),
        OneLine(commands=("sleep 0.1",), conclude=("true",)),
        OneLine(commands=("sleep 0.1",), ignore_failure=True),
        OneLine(commands=("sleep 0.1",), shell=False, shell_words=("bash",)),
    ):
        assert derived_name(changed) != derived_name(plain)


def test_fill_params_leaves_other_braces() -> None:
    assert fill_params("sleep {t}; awk '{print $1}' ${HOME}", {"t": "0.1"}) == (
        "sleep 0.1; awk '{print $1}' ${HOME}"
    )


def outcome(status: str, code: int | None, reason: str | None) -> RoundOutcome:
    return RoundOutcome(
        status=status,  # type: ignore[arg-type]
        wall_ns=1000,
        user_s=0.0,
        sys_s=0.0,
        max_rss_kib=1,
        exit_code=code,
        started_at=0.0,
        reason=reason,
    )


def test_ignore_failure_passes_exit_codes_only() -> None:
    kept = ignore_exit_code(outcome("failed", 2, "exit code 2"))
    assert (kept.status, kept.exit_code, kept.reason) == ("ok", 2, None)
    assert kept.extra[IGNORED_EXIT] == 2
    for other in (
        outcome("failed", -9, "killed by signal SIGKILL"),
        outcome("timeout", None, "timed out after 1.0 s"),
        outcome("failed", 1, "exit code 1; the memory limit ..."),
        outcome("ok", 0, None),
    ):
        assert ignore_exit_code(other) == other


def result(command: str, times: tuple[float, ...], **kw: object) -> HyperfineResult:
    n = len(times)
    return HyperfineResult(
        command=command,
        workload=str(kw.get("workload", command)),
        times=times,
        user=(0.001,) * n,
        system=(0.002,) * n,
        exit_codes=(0,) * n,
        parameters=kw.get("parameters", {}),  # type: ignore[arg-type]
    )


def test_json_has_hyperfine_s_keys_in_seconds() -> None:
    export = HyperfineExport(
        (result("a", (0.1, 0.2, 0.3), parameters={"t": "1"}), result("b", (0.5,)))
    )
    doc = json.loads(export_json(export))
    a, b = doc["results"]
    assert list(a) == [
        "command", "mean", "stddev", "median", "user", "system", "min", "max", "times",
        "exit_codes", "parameters",
    ]  # fmt: skip
    assert a["mean"] == pytest.approx(0.2) and a["stddev"] == pytest.approx(0.1)
    assert (a["median"], a["min"], a["max"], a["times"]) == (0.2, 0.1, 0.3, [0.1, 0.2, 0.3])
    assert (a["user"], a["system"], a["parameters"]) == (0.001, 0.002, {"t": "1"})
    assert b["stddev"] is None and "parameters" not in b  # one run: no stddev, as hyperfine


def test_markdown_is_hyperfine_s_table() -> None:
    export = HyperfineExport(
        (result("slow | pipe", (0.020, 0.022)), result("fast", (0.010, 0.010, 0.010)))
    )
    assert export_markdown(export).splitlines() == [
        "| Command | Mean [ms] | Min [ms] | Max [ms] | Relative |",
        "|:---|---:|---:|---:|---:|",
        "| `slow \\| pipe` | 21.0 ± 1.4 | 20.0 | 22.0 | 2.10 ± 0.14 |",
        "| `fast` | 10.0 ± 0.0 | 10.0 | 10.0 | 1.00 |",
    ]
    # the unit: seconds from the first command's mean of 1 s up, or --time-unit
    slow = HyperfineExport((result("a", (1.5, 2.5)),))
    assert "| `a` | 2.000 ± 0.707 | 1.500 | 2.500 | 1.00 |" in export_markdown(slow)
    micro = export_markdown(slow, "microsecond").splitlines()
    assert micro[0] == "| Command | Mean [µs] | Min [µs] | Max [µs] | Relative |"
    # an explicit reference is the one at 1.00, even when it is not the fastest
    ref = HyperfineExport((result("a", (2.0, 2.0)), result("b", (1.0, 1.0))), reference="a")
    assert [line.split("|")[-2].strip() for line in export_markdown(ref).splitlines()[2:]] == [
        "1.00",
        "0.50 ± 0.00",
    ]


def test_csv_has_hyperfine_s_columns() -> None:
    export = HyperfineExport(
        (result("a, quoted", (0.1, 0.3), parameters={"t": "1"}),),
    )
    rows = list(csv.reader(io.StringIO(export_csv(export))))
    assert rows[0] == [
        "command", "mean", "stddev", "median", "user", "system", "min", "max", "parameter_t",
    ]  # fmt: skip
    assert rows[1][0] == "a, quoted" and rows[1][-1] == "1"
    assert [float(v) for v in rows[1][1:8]] == pytest.approx(
        [0.2, 0.14142135623730953, 0.2, 0.001, 0.002, 0.1, 0.3]
    )


def test_an_unused_scan_is_named_as_given(tmp_path: Path) -> None:
    spec = OneLine(commands=("true",), params=(("t", "1,2"),), scan="t")
    with pytest.raises(UserError, match=r"^--parameter-scan t: no workload uses \{t\}"):
        oneline_experiment(spec, tmp_path, check_commands=False)
