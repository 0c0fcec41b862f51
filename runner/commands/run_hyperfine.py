"""hyperfine's flags of ``benchrun run`` (issue 32; docs/oneline.md, "hyperfine's flags").

:func:`add_hyperfine_options` adds the "hyperfine-compatible" group to the parser of
``benchrun run``; :func:`oneline_fields` turns them into the one-line experiment's
fields, :func:`round_options` into how its rounds run
(runner/execute/hyperfine_local.py), and :func:`finish` writes the exports and reports
the rounds ``-i`` let pass once the campaign has ended.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from benchrun.runner.config.experiment import Experiment
from benchrun.runner.config.hyperfine import (
    SETTING_FLAGS,
    TIME_UNITS,
    RoundOptions,
    hyperfine_settings,
    scan_values,
    shell_words,
)
from benchrun.runner.config.oneline import OneLine, command_sources, fill_params
from benchrun.runner.errors import UserError

if TYPE_CHECKING:
    from benchrun.runner.results.hyperfine_export import HyperfineResult

#: the hyperfine options (dest, as shown in messages): one-line form only
HYPERFINE_ONLY = (
    ("runs", "--runs"),
    ("warmup", "--warmup"),
    ("min_runs", "--min-runs"),
    ("max_runs", "--max-runs"),
    ("ignore_failure", "--ignore-failure"),
    ("show_output", "--show-output"),
    ("parameter_scan", "--parameter-scan"),
    ("parameter_step", "--parameter-step-size"),
    ("shell", "--shell"),
    ("time_unit", "--time-unit"),
    ("input", "--input"),
    ("export_json", "--export-json"),
    ("export_markdown", "--export-markdown"),
    ("export_csv", "--export-csv"),
    ("conclude", "--conclude"),
    ("reference", "--reference"),
    ("reference_name", "--reference-name"),
)


def _count(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None


def add_hyperfine_options(p: argparse.ArgumentParser) -> None:
    """The "hyperfine-compatible" option group of ``benchrun run``."""
    g = p.add_argument_group(
        "hyperfine-compatible (one-line form; docs/oneline.md has the table)",
        "hyperfine's flags with hyperfine's meanings; -s/-p/-n/-L/-N are the one-line "
        "options above, hyperfine's -c (--cleanup) is --cleanup here (-c is a command).",
    )
    _add_count_options(g)
    _add_command_options(g)
    _add_export_options(g)


def _add_count_options(g: argparse._ArgumentGroup) -> None:
    """hyperfine's round counts, failure and output options."""
    g.add_argument(
        "-r",
        "--runs",
        type=_count,
        metavar="N",
        help="exactly N timed rounds per command (fixed mode; = --set rounds=N)",
    )
    g.add_argument(
        "-w",
        "--warmup",
        type=_count,
        metavar="N",
        help="N untimed rounds per command before the timed ones (= --set warmup_rounds=N; "
        "benchrun's default is 1)",
    )
    g.add_argument(
        "-m",
        "--min-runs",
        type=_count,
        metavar="N",
        help="at least N timed rounds per command (adaptive mode; = --set min_rounds=N)",
    )
    g.add_argument(
        "-M",
        "--max-runs",
        type=_count,
        metavar="N",
        help="at most N timed rounds per command (adaptive mode; = --set max_rounds=N)",
    )
    g.add_argument(
        "-i",
        "--ignore-failure",
        action="store_true",
        help="a command exiting non-zero is timed and kept like any round (its exit codes "
        "are stored, counted at the end and exported); a signal or timeout still fails it",
    )
    g.add_argument(
        "--show-output",
        action="store_true",
        help="print each round's stdout and stderr as it ends (no live progress table)",
    )


def _add_command_options(g: argparse._ArgumentGroup) -> None:
    """hyperfine's parameter scans, shell, time unit and input options."""
    g.add_argument(
        "-P",
        "--parameter-scan",
        nargs=3,
        metavar=("NAME", "MIN", "MAX"),
        help="{NAME} in the commands takes MIN, MIN+STEP, ..., MAX (a matrix like -L)",
    )
    g.add_argument(
        "-D",
        "--parameter-step-size",
        dest="parameter_step",
        metavar="STEP",
        help="the step of --parameter-scan (default 1; decimals allowed)",
    )
    g.add_argument(
        "-S",
        "--shell",
        metavar="SHELL",
        help="the shell that runs the commands and hooks as SHELL -c CMD (e.g. bash, "
        "'bash --norc'); none = -N; default /bin/sh",
    )
    g.add_argument(
        "-u",
        "--time-unit",
        choices=tuple(TIME_UNITS),
        metavar="UNIT",
        help="the unit of --export-markdown: " + ", ".join(TIME_UNITS) + " (benchrun's "
        "tables choose one per command)",
    )
    g.add_argument(
        "--input",
        metavar="FILE",
        help="every timed round of every command reads FILE as its stdin (else /dev/null)",
    )


def _add_export_options(g: argparse._ArgumentGroup) -> None:
    """hyperfine's exports, --conclude and the reference command."""
    g.add_argument(
        "--export-json",
        metavar="FILE",
        help="write the results in hyperfine's JSON (results[].command, mean, stddev, "
        "median, user, system, min, max, times, exit_codes, parameters; seconds)",
    )
    g.add_argument(
        "--export-markdown",
        metavar="FILE",
        help="write hyperfine's table: Command | Mean | Min | Max | Relative",
    )
    g.add_argument(
        "--export-csv",
        metavar="FILE",
        help="write hyperfine's CSV: command,mean,stddev,median,user,system,min,max,parameter_NAME",
    )
    g.add_argument(
        "-C",
        "--conclude",
        action="append",
        default=[],
        metavar="CMD",
        help="run after every round (warm-up included), untimed (once for all, or once "
        "per command); a failure fails that round",
    )
    g.add_argument(
        "--reference",
        metavar="CMD",
        help="compare every command with CMD (= settings.reference); CMD is measured "
        "first unless it is one of the -c commands",
    )
    g.add_argument(
        "--reference-name",
        metavar="NAME",
        help="the name of the --reference command",
    )


def hyperfine_given(args: argparse.Namespace) -> list[str]:
    """The hyperfine options given, as shown in messages."""
    return [shown for dest, shown in HYPERFINE_ONLY if getattr(args, dest, None)]


class HyperfineFields(TypedDict):
    """The :class:`OneLine` fields the hyperfine options stand for (their meaning is
    :class:`runner.config.oneline.OneLine`'s)."""

    overrides: tuple[str, ...]
    params: tuple[tuple[str, str], ...]
    shell: bool
    shell_words: tuple[str, ...]
    reference: str | None
    reference_name: str | None
    conclude: tuple[str, ...]
    input: str | None
    scan: str | None
    ignore_failure: bool
    setting_flags: tuple[tuple[str, str], ...]


def oneline_fields(args: argparse.Namespace) -> HyperfineFields:
    """The :class:`OneLine` fields the hyperfine options stand for (with the ``-L``
    parameters, ``--set`` items and shell choice they change); raises a
    :class:`UserError` naming the option for a bad or contradictory one."""
    overrides = list(args.overrides)
    overrides += hyperfine_settings(
        runs=args.runs,
        warmup=args.warmup,
        min_runs=args.min_runs,
        max_runs=args.max_runs,
        overrides=args.overrides,
    )
    params = [(name, values) for name, values in args.params]
    if args.parameter_step is not None and args.parameter_scan is None:
        raise UserError("-D/--parameter-step-size needs --parameter-scan NAME MIN MAX")
    if args.parameter_scan is not None:
        name, low, high = args.parameter_scan
        if name in {n for n, _ in params}:
            raise UserError(f"--parameter-scan {name} and -L {name} give the same parameter")
        params.append((name, ",".join(scan_values(name, low, high, args.parameter_step))))
    shell, words = shell_words(args.shell, args.no_shell)
    input_path = None
    if args.input is not None:
        where = Path(args.input).expanduser().absolute()
        if not where.is_file() or not os.access(where, os.R_OK):
            raise UserError(f"--input {args.input}: not a readable file; give the stdin file")
        input_path = str(where)
    for flag in ("export_json", "export_markdown", "export_csv"):
        given = getattr(args, flag)
        if given is not None and not Path(given).expanduser().absolute().parent.is_dir():
            raise UserError(f"--{flag.replace('_', '-')} {given}: its directory does not exist")
    return {
        "overrides": tuple(overrides),
        "params": tuple(params),
        "shell": shell,
        "shell_words": words,
        "reference": args.reference,
        "reference_name": args.reference_name,
        "conclude": tuple(args.conclude),
        "input": input_path,
        "scan": None if args.parameter_scan is None else args.parameter_scan[0],
        "ignore_failure": bool(args.ignore_failure),
        "setting_flags": tuple(
            (key, flag)
            for flag, key in SETTING_FLAGS
            if getattr(args, flag[2:].replace("-", "_")) is not None
        ),
    }


def hyperfine_argv(args: argparse.Namespace) -> list[str]:
    """The hyperfine options of ``args`` that define the experiment or its rounds, as
    command-line words (for the campaign's description and the resume hint)."""
    argv: list[str] = []
    for dest, flag in (
        ("runs", "--runs"),
        ("warmup", "--warmup"),
        ("min_runs", "--min-runs"),
        ("max_runs", "--max-runs"),
    ):
        if getattr(args, dest) is not None:
            argv += [flag, str(getattr(args, dest))]
    if args.ignore_failure:
        argv.append("-i")
    if args.parameter_scan:
        argv += ["--parameter-scan", *args.parameter_scan]
    if args.parameter_step is not None:
        argv += ["-D", args.parameter_step]
    for flag, value in (
        ("--shell", args.shell),
        # absolute: a resume from another directory reads the same file
        ("--input", None if args.input is None else str(Path(args.input).expanduser().absolute())),
        ("--reference", args.reference),
        ("--reference-name", args.reference_name),
    ):
        if value is not None:
            argv += [flag, value]
    for command in args.conclude:
        argv += ["--conclude", command]
    return argv


def round_options(spec: OneLine, experiment: Experiment, args: argparse.Namespace) -> RoundOptions:
    """How the rounds of the one-line experiment run: ``--input``, ``--conclude`` (per
    workload, its parameters filled in), ``-i`` and ``--show-output``."""
    sources = {s.name: s for s in command_sources(spec)}
    conclude: dict[str, tuple[str, ...]] = {}
    for w in experiment.workloads:
        source = sources.get(w.base_name or w.name)
        if source is None or source.conclude is None:
            continue
        text = fill_params(source.conclude, w.params)
        conclude[w.name] = (*spec.shell_words, "-c", text) if spec.shell_words else (text,)
    return RoundOptions(
        input=spec.input,
        conclude=conclude,
        conclude_shell=not spec.shell_words,
        ignore_failure=spec.ignore_failure,
        show_output=bool(args.show_output),
    )


def display_commands(spec: OneLine, experiment: Experiment) -> dict[str, str]:
    """hyperfine's name of each workload: its ``-n`` name, else its command, with the
    parameters filled in (``sleep 0.3`` for ``-c 'sleep {t}' -P t ...``)."""
    sources = {s.name: s for s in command_sources(spec)}
    out: dict[str, str] = {}
    for w in experiment.workloads:
        source = sources.get(w.base_name or w.name)
        if source is not None:
            out[w.name] = fill_params(source.given_name or source.command, w.params)
    return out


def show_output(workload: str, stdout: str, stderr: str) -> None:
    """``--show-output``: a round's output, stdout to stdout and stderr to stderr."""
    del workload
    for text, stream in ((stdout, sys.stdout), (stderr, sys.stderr)):
        if text:
            stream.write(text if text.endswith("\n") else text + "\n")
            stream.flush()


def finish(
    args: argparse.Namespace,
    spec: OneLine,
    db: Path,
    campaign_id: int,
    commands: dict[str, str],
) -> list[str]:
    """After the campaign of ``spec``: write the exports asked for and return the lines
    to print on stderr (the rounds ``-i`` let pass, per command; the workloads left out
    of the exports for want of a timed round). An export that cannot be written is a
    :class:`UserError` naming its option."""
    from benchrun.runner.results.hyperfine_export import (
        exit_failures,
        read_export,
        write_exports,
    )

    lines: list[str] = []
    if not spec.ignore_failure and (failed := exit_failures(db, campaign_id)):
        lines.append(
            f"{failed} round{'s' if failed > 1 else ''} exited non-zero; -i "
            "(--ignore-failure) times and keeps such rounds, as hyperfine's -i does"
        )
    exports = {  # none when resumed from the campaign directory alone
        "--export-json": getattr(args, "export_json", None),
        "--export-markdown": getattr(args, "export_markdown", None),
        "--export-csv": getattr(args, "export_csv", None),
    }
    export = read_export(db, campaign_id, commands)
    if spec.ignore_failure:
        lines += _ignored_lines(export.results)
    if not any(exports.values()):
        return lines
    for name in export.missing:
        lines.append(f"warning: {name}: no timed round; left out of the exports")
    for option, path in exports.items():
        if path is None:
            continue
        try:
            write_exports(
                export,
                json_path=path if option == "--export-json" else None,
                markdown_path=path if option == "--export-markdown" else None,
                csv_path=path if option == "--export-csv" else None,
                time_unit=args.time_unit,
            )
        except OSError as exc:
            raise UserError(f"{option} {path}: cannot write: {exc.strerror or exc}") from None
    return lines


def _ignored_lines(results: Sequence[HyperfineResult]) -> list[str]:
    """One line per command whose timed rounds include non-zero exits (``-i``)."""
    lines = []
    for r in results:
        codes = [c for c in r.exit_codes if c]
        if codes:
            shown = ", ".join(str(c) for c in sorted(set(codes)))
            lines.append(
                f"warning: {r.workload}: {len(codes)} of {len(r.exit_codes)} timed rounds "
                f"exited non-zero (exit code {shown}); -i timed and kept them"
            )
    return lines
