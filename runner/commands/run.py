"""``benchrun run EXPERIMENT`` (or ``benchrun run -c CMD ...``, the one-line form): measure,
store every round, print the results table."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import io
import json
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape

from benchrun.runner.commands import add_set_option
from benchrun.runner.commands.run_hyperfine import (
    add_hyperfine_options,
    display_commands,
    finish,
    hyperfine_argv,
    hyperfine_given,
    oneline_fields,
    round_options,
)
from benchrun.runner.config.experiment import Experiment
from benchrun.runner.config.loader import load_experiment, parse_experiment
from benchrun.runner.config.oneline import OneLine, oneline_experiment
from benchrun.runner.config.stored import stored_experiment_text
from benchrun.runner.errors import UserError
from benchrun.runner.execute.containment import containment_record
from benchrun.runner.execute.factory import make_executor
from benchrun.runner.execute.local import LocalExecutor
from benchrun.runner.execute.pinning import PinPlan, pinned_runner, plan_pinning
from benchrun.runner.execute.reservation import (
    Reservation,
    active_runs,
    register_unpinned,
    reserve,
)
from benchrun.runner.files import make_campaign_dir
from benchrun.runner.store.database import Store
from benchrun.runner.ui.display import RichDisplay, stderr_console, stdout_console

if TYPE_CHECKING:
    from benchrun.runner.campaign.session import CampaignOutcome
    from benchrun.runner.results.conditions import ConditionsComparison

#: exit status of `benchrun run --fail-on-unmet` when a condition is unmet at the end
EXIT_UNMET = 3

HELP = """\
Run an experiment: every workload in rounds (interleaved in a seeded random order by
default), pinned away from the runner's CPU, each round committed to
<output>/<name>/benchrun.db before the next starts. Ctrl-C stops cleanly (the round in
flight is killed and redone on --resume) and prints the command that continues:
`benchrun run <output>/<name> --resume` (a campaign directory: its stored experiment
and settings are used, so no other option is needed).

Adaptive mode (the default) runs until every workload's CI is within ci_rel_width of its
mean and every pair of neighbouring results is separated (Welch, Holm, alpha) or
equivalent within margin (TOST), with alpha spent over a geometric schedule of looks so
that stopping early does not inflate the error rate (docs/methods.md section 10); or until
max_rounds/max_time, and then it says which condition was not met (exit status 3 with
--fail-on-unmet). Pairs of workloads that ran in the same passes are compared on the
per-pass ratio of their rounds (settings.comparison: paired, the default), which cancels
the machine's drift; the ratio and its CI head the comparisons table. A file with
`rounds: N` (and no `adaptive:`) runs exactly N rounds of every workload instead.

One line, no file (like hyperfine; docs/oneline.md):
  benchrun run -c 'sleep 0.1' -c 'sleep 0.2'
  benchrun run -c 'python3 -c "sum(range({n}))"' -L n 100000,1000000 --set max_time=2m
Each -c command is one workload, run by /bin/sh -c (-N: split like a shell would and run
without one; the shell adds about 0.7 ms to every round, not subtracted). It runs in the
current directory; only {NAME} of -L and {round} are placeholders, other braces are
literal. The experiment is named after the commands plus a hash of
them (--experiment-name NAME instead); results go to results/<name> (-o DIR). The same
options again with --resume continue it; --print-config prints the experiment file they
stand for (`benchrun run FILE` runs it the same way).

hyperfine's flags work with hyperfine's meanings (the "hyperfine-compatible" group below):
  benchrun run -c 'sleep 0.01' -c 'sleep 0.02' --runs 10 --warmup 1 --export-json h.json
--runs N is fixed mode (exactly N timed rounds), --min-runs/--max-runs bound the adaptive
mode; -i keeps and times failing rounds; --export-json/-markdown/-csv write hyperfine's
formats, which hyperfine's scripts read.

Every run reserves the CPUs it pins (workload and runner) until it ends; a second run
takes other free cores, or refuses (exit status 4) naming the run that holds them, or
waits for them with --wait-for-cpus (docs/reservation.md). At the start it prints one
line when the machine is loaded (1-minute load average, other benchrun runs).

Output: on a terminal a live table on stderr (rounds per workload, 12/~49 where the total
is the controller's estimate; CI half-width vs target; undecided pairs; time left), else
a plain progress line every 5 s on stderr. At the end the results on stdout as `benchrun
show` prints them: each workload's values in one unit, its {work} (calibrated or the
file's), the comparisons, how it stopped; the tables fit the terminal (in a pipe:
COLUMNS, else 160 columns) and say which columns they left out. --json prints them as
one JSON document instead (`benchrun run x.yaml --json | jq`).

Contended rounds: a round that waited for a CPU (another process on its CPU) longer than
settings.contended_threshold (0.25) of its wall time is flagged contended, left out of the
analysis and counted in the live display, the progress lines and the results
(settings.contended: exclude | keep | fail; docs/contention.md)."""

#: the options of the one-line form only (dest, as shown in messages)
ONE_LINE_ONLY = (
    ("names", "-n"),
    ("params", "-L"),
    ("setup", "--setup"),
    ("prepare", "--prepare"),
    ("cleanup", "--cleanup"),
    ("no_shell", "-N"),
    ("experiment_name", "--experiment-name"),
    ("executor", "--executor"),
    ("print_config", "--print-config"),
)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "run",
        help="run an experiment (a file, or commands given with -c) and store every reading",
        description=HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "experiment",
        nargs="?",
        metavar="EXPERIMENT",
        help="experiment file (YAML; `benchrun init` writes an example), or a campaign "
        "directory <output>/<name> to run its stored experiment again (--resume continues "
        "it); omit it with -c",
    )
    # the daemon: the experiment's text as submitted (the file may have changed since)
    p.add_argument("--config-text", metavar="FILE", help=argparse.SUPPRESS)
    p.add_argument(
        "--resume",
        action="store_true",
        help="continue the interrupted campaign of this experiment instead of starting anew",
    )
    p.add_argument(
        "--new",
        action="store_true",
        help="start a new campaign even though the last one was interrupted (it stays stored)",
    )
    p.add_argument(
        "-o",
        "--output",
        metavar="DIR",
        help="put the campaign in DIR/<name> instead of the file's `output:` (default of "
        "the one-line form: results)",
    )
    p.add_argument(
        "--baseline",
        metavar="PATH",
        help="compare every workload with earlier results of the same name: a campaign "
        "directory, its benchrun.db, or a JSON summary (overrides settings.baseline)",
    )
    p.add_argument(
        "--allow-different-conditions",
        action="store_true",
        help="with --baseline: keep the baseline verdicts when the two campaigns' conditions "
        "differ materially (another CPU, microcode, kernel, governor, SMT, benchrun or Python "
        "version, contended rounds, a level shift, a large drift); without it they are 'not "
        "comparable' and --fail-on-unmet exits 3 (docs/conditions.md)",
    )
    p.add_argument(
        "--fail-on-unmet",
        action="store_true",
        help="exit with status 3 when the campaign ends on a budget (max_time, max_rounds) "
        "with a condition of the stopping rule unmet, e.g. an undecided pair (for CI)",
    )
    p.add_argument(
        "--wait-for-cpus",
        nargs="?",
        const="forever",
        metavar="DURATION",
        help="when another benchrun run holds the CPUs this one needs (pin: auto takes free "
        "CPUs when there are any), wait for them, at most DURATION (e.g. 30s, 10m; no value: "
        "as long as it takes) instead of refusing with exit status 4; overrides "
        "settings.wait_for_cpus (docs/reservation.md)",
    )
    p.add_argument(
        "--revision",
        metavar="REV",
        help="tag the new campaign with the revision it measures (a tag, branch or hash; "
        "resolved to a commit and its date in settings.repository or the current checkout "
        "when git knows it); default: `git describe --always --dirty` of settings.repository, "
        "else of the current directory when it is a git checkout (docs/history.md)",
    )
    add_set_option(p, "stored with the campaign")
    p.add_argument(
        "-q", "--quiet", action="store_true", help="no progress display, only the results"
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print the results as JSON on stdout instead of the tables (the document of "
        "`benchrun show --json`: per workload the mean, CI, q and n_q in the base unit, the "
        "work amount, the comparisons and how the campaign stopped); progress stays on stderr",
    )
    _add_oneline_options(p)
    add_hyperfine_options(p)
    p.set_defaults(func=main)


def _add_oneline_options(p: argparse.ArgumentParser) -> None:
    """The one-line form's options (commands, names, parameters, hooks): docs/oneline.md."""
    g = p.add_argument_group(
        "one-line form (no experiment file; docs/oneline.md)",
        "Commands given on the command line, like hyperfine's; --set, -o, --baseline, "
        "--resume and the rest apply as with a file.",
    )
    g.add_argument(
        "-c",
        "--command",
        dest="commands",
        action="append",
        default=[],
        metavar="CMD",
        help="a command to measure, one workload each (repeatable); run by /bin/sh -c",
    )
    g.add_argument(
        "-n",
        "--name",
        "--command-name",  # hyperfine's spelling
        dest="names",
        action="append",
        default=[],
        metavar="NAME",
        help="name of the commands, in order (repeatable; default: the command itself, "
        "shortened to 48 characters)",
    )
    g.add_argument(
        "-L",
        "--parameter-list",
        dest="params",
        nargs=2,
        action="append",
        default=[],
        metavar=("NAME", "VALUES"),
        help="a parameter: {NAME} in the commands takes each of the comma-separated VALUES "
        "(e.g. -L n 1000,10000); several -L make every combination (the matrix); other "
        "braces in the commands are literal",
    )
    g.add_argument(
        "-s",
        "--setup",
        action="append",
        default=[],
        metavar="CMD",
        help="run once before a command's first round, untimed (once for all commands, or "
        "once per -c in order); a failure stops that workload",
    )
    g.add_argument(
        "-p",
        "--prepare",
        action="append",
        default=[],
        metavar="CMD",
        help="run before every round, untimed (once for all, or once per -c); a failure "
        "fails that round",
    )
    g.add_argument(
        "--cleanup",
        action="append",
        default=[],
        metavar="CMD",
        help="run after a command's last round, untimed (once for all, or once per -c); a "
        "failure is reported and loses nothing",
    )
    _add_oneline_run_options(g)


def _add_oneline_run_options(g: argparse._ArgumentGroup) -> None:
    """The one-line form's options of how its commands run and are named: --no-shell,
    --experiment-name, --executor, --print-config."""
    g.add_argument(
        "-N",
        "--no-shell",
        action="store_true",
        help="run the commands without a shell: split like a shell would split them "
        "(hooks still run by /bin/sh -c)",
    )
    g.add_argument(
        "--experiment-name",
        "--campaign-name",
        dest="experiment_name",
        metavar="NAME",
        help="name of the experiment and of its directory <output>/NAME (default: made "
        "from the commands and a hash of them)",
    )
    g.add_argument(
        "--executor",
        metavar="SPEC",
        help="where the rounds run, as `executor:` in a file: local (default), slurm, or "
        "a YAML mapping such as '{kind: slurm, partition: compute, time: \"1:00:00\"}' "
        "(docs/slurm.md)",
    )
    g.add_argument(
        "--metric",
        metavar="METRIC[,METRIC...]",
        help="what every command is compared on: wall_time (default), cpu_time, max_rss, "
        "or a counter of the round's process tree (instructions, cycles, branch_misses, "
        "cache_misses, task_clock, context_switches, page_faults); a comma-separated list "
        "decides on the first and shows the others beside it (docs/metrics.md)",
    )
    g.add_argument(
        "--print-config",
        action="store_true",
        help="print the experiment file the one-line options stand for (YAML) and exit "
        "without running anything",
    )


def executor_option(text: str | None) -> str | dict[str, object] | None:
    """``--executor SPEC`` as the one-line experiment's ``executor:``: None for ``local``
    (or no option), ``"slurm"``, or the YAML mapping given (checked with the file's rules
    when the experiment is built)."""
    if text is None or text.strip() == "local":
        return None
    if text.strip() == "slurm":
        return "slurm"
    import yaml

    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError:
        value = None
    if not isinstance(value, dict):
        raise UserError(
            f"--executor {text}: expected local, slurm or a mapping such as "
            "'{kind: slurm, partition: compute}'"
        )
    return value


def oneline_argv(args: argparse.Namespace) -> list[str]:
    """The options of ``args`` that define a one-line experiment, as command-line words."""
    argv: list[str] = []
    for command in args.commands:
        argv += ["-c", command]
    for name in args.names:
        argv += ["-n", name]
    for name, values in args.params:
        argv += ["-L", name, values]
    for kind in ("setup", "prepare", "cleanup"):
        for hook in getattr(args, kind):
            argv += [f"--{kind}", hook]
    if args.no_shell:
        argv.append("-N")
    if args.experiment_name:
        argv += ["--experiment-name", args.experiment_name]
    if args.executor:
        argv += ["--executor", args.executor]
    if args.metric:
        argv += ["--metric", args.metric]
    argv += hyperfine_argv(args)
    if args.output:
        argv += ["-o", args.output]
    if args.baseline:
        argv += ["--baseline", args.baseline]
    for item in args.overrides:
        argv += ["--set", item]
    return argv


def resume_command(campaign_dir: Path, args: argparse.Namespace | None = None) -> str:
    """``benchrun run DIR --resume``: continues the campaign in ``campaign_dir`` from its
    stored experiment and settings, whatever options and file started it (DIR shown
    relative to the current directory when it lies inside it); with ``args``, followed by
    ``(or: ...)`` and the command that started it with ``--resume`` (every option that
    defines the experiment: the file or the -c options, -o, --baseline, --set)."""
    where = campaign_dir.absolute()
    try:
        shown = str(where.relative_to(Path.cwd()))
    except ValueError:
        shown = str(where)
    hint = shlex.join(["benchrun", "run", shown, "--resume"])
    if args is None or campaign_db(Path(args.experiment or "-")) is not None:
        return hint
    given = [args.experiment] if args.experiment else []
    again = shlex.join(["benchrun", "run", *given, *oneline_argv(args), "--resume"])
    return f"{hint} (or: {again})"


def campaign_db(path: Path) -> Path | None:
    """The store of the campaign directory ``path`` names (``DIR`` or ``DIR/benchrun.db``);
    None when ``path`` is not a directory or a ``benchrun.db`` (an experiment file)."""
    if path.is_dir():
        db = path / "benchrun.db"
        if not db.is_file():
            raise UserError(
                f"{path}: a directory without benchrun.db; give the experiment YAML file, or "
                "a campaign directory (<output>/<name>)"
            )
        return db
    if path.name == "benchrun.db" and path.is_file():
        return path
    return None


def stored_campaign_experiment(db: Path, overrides: list[str]) -> Experiment:
    """The experiment of the newest campaign in ``db``: its stored text with the settings
    it ran with, ``--set`` items applied over them, located at the campaign's directory."""
    with Store.open(db) as store:
        campaign = store.campaign()
    text = stored_experiment_text(campaign.config_text, campaign.settings)
    source = Path(campaign.config_path) if campaign.config_path else None
    directory = db.parent
    experiment = parse_experiment(
        text,
        display=f"{directory} (its stored experiment)",
        base_dir=source.parent if source is not None else Path.cwd(),
        source_path=source,
        overrides=overrides,
    )
    return dataclasses.replace(
        experiment,
        source_text=campaign.config_text,
        output=directory.absolute().parent,
        name=directory.absolute().name,
    )


def load_run_experiment(args: argparse.Namespace) -> Experiment | None:
    """The experiment ``args`` ask for: an experiment file, a campaign directory's stored
    experiment, or the one-line options; None when ``--print-config`` printed it."""
    given = [shown for dest, shown in ONE_LINE_ONLY if getattr(args, dest)]
    given += hyperfine_given(args)
    if args.commands and args.experiment:
        raise UserError(
            f"give an experiment file ({args.experiment}) or commands with -c, not both"
        )
    if not args.commands:
        if given:
            raise UserError(
                f"{given[0]} is an option of the one-line form; give the commands with -c CMD "
                "(in an experiment file, write it in the file: docs/oneline.md)"
            )
        if not args.experiment:
            raise UserError(
                "give an experiment file (benchrun init writes one), or the commands to "
                "measure with -c, e.g. benchrun run -c 'sleep 0.1' -c 'sleep 0.2'"
            )
    if args.commands:
        if args.config_text:
            raise UserError("--config-text is for an experiment file, not -c commands")
        spec = OneLine(
            commands=tuple(args.commands),
            names=tuple(args.names),
            setup=tuple(args.setup),
            prepare=tuple(args.prepare),
            cleanup=tuple(args.cleanup),
            experiment_name=args.experiment_name,
            output=args.output,
            baseline=args.baseline,
            executor=executor_option(args.executor),
            metric=metric_option(args.metric),
            description="one-line form: " + shlex.join(["benchrun", "run", *oneline_argv(args)]),
            # -L, --set, -N with hyperfine's flags folded in (commands/run_hyperfine.py)
            **oneline_fields(args),
        )
        experiment = oneline_experiment(spec, Path.cwd())
        args.oneline_spec = spec  # the round options and exports (_run) need it
        if spec.executor is not None and round_options(spec, experiment, args).active:
            raise UserError(
                "--input, --conclude, -i and --show-output run with the local executor "
                "only; drop --executor"
            )
        if args.print_config:
            sys.stdout.write(experiment.source_text)
            return None
        return experiment
    db = None if args.config_text else campaign_db(Path(args.experiment))
    if db is not None:
        if args.output:
            raise UserError(
                f"-o {args.output}: {args.experiment} is a campaign directory and stays where "
                "it is; drop -o"
            )
        experiment = stored_campaign_experiment(db, args.overrides)
        stored = stored_oneline(experiment)
        if stored is not None:  # its rounds run as they ran: --input, --conclude, -i
            args.oneline_spec = stored
        return experiment
    text = None
    if args.config_text:  # the daemon: run the text submitted, not the file as it is now
        try:
            text = Path(args.config_text).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise UserError(f"{args.config_text}: cannot read the submitted text: {exc}") from None
    return load_experiment(args.experiment, overrides=args.overrides, text=text, collect=True)


def metric_option(text: str | None) -> tuple[str, ...]:
    """``--metric a,b``: the metric names in order (checked with the experiment, where an
    unknown or repeated name is one line); () when not given."""
    if text is None:
        return ()
    return tuple(part.strip() for part in text.split(","))


def stored_oneline(experiment: Experiment) -> OneLine | None:
    """The one-line options a stored campaign was started with (its description, written
    by :func:`oneline_argv`) when they change how its rounds run (hyperfine's
    ``--input``, ``--conclude``, ``-i``), so that ``benchrun run DIR --resume`` runs the
    rest of its rounds as the first ones ran; None for any other campaign."""
    prefix = "one-line form: "
    if not experiment.description.startswith(prefix):
        return None
    try:
        words = shlex.split(experiment.description[len(prefix) :])
    except ValueError:
        return None
    if words[:2] != ["benchrun", "run"]:
        return None
    parser = argparse.ArgumentParser(prog="benchrun", add_help=False)
    register(parser.add_subparsers())
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            parsed = parser.parse_args(words[1:])
    except SystemExit:  # written by another version of benchrun: nothing to recover
        return None
    if not (parsed.input or parsed.conclude or parsed.ignore_failure):
        return None
    return OneLine(
        commands=tuple(parsed.commands),
        names=tuple(parsed.names),
        setup=tuple(parsed.setup),
        prepare=tuple(parsed.prepare),
        cleanup=tuple(parsed.cleanup),
        **oneline_fields(parsed),
    )


def main(args: argparse.Namespace) -> int:
    # heavy imports (scipy via the statistics) only in _run, when the campaign runs, so
    # that `benchrun --help` and the other commands start fast
    if args.wait_for_cpus is not None and not args.experiment and not args.commands:
        from benchrun.runner.config.durations import parse_duration

        try:
            parse_duration(args.wait_for_cpus)
        except ValueError:  # `benchrun run --wait-for-cpus x.yaml`: it took the experiment
            args.experiment, args.wait_for_cpus = args.wait_for_cpus, "forever"
    if args.resume and args.new:
        raise UserError(
            "--resume and --new contradict each other: --resume continues the interrupted "
            "campaign, --new starts another beside it; give one of them"
        )
    if args.resume and getattr(args, "revision", None) is not None:
        raise UserError(
            "--revision tags a new campaign; a resumed campaign keeps the revision it was "
            "started with (benchrun show says which)"
        )
    experiment = load_run_experiment(args)
    if experiment is None:  # --print-config
        return 0
    if args.output:
        experiment = dataclasses.replace(experiment, output=Path(args.output))
    if args.baseline:
        if not Path(args.baseline).exists():
            raise UserError(
                f"--baseline {args.baseline}: not found; give a campaign directory, its "
                "benchrun.db, or a JSON summary"
            )
        if not experiment.settings.adaptive:
            raise UserError(
                "--baseline needs adaptive mode; remove rounds: (or set adaptive: true)"
            )
        settings = dataclasses.replace(
            experiment.settings, baseline=str(Path(args.baseline).resolve())
        )
        experiment = dataclasses.replace(experiment, settings=settings)
    if args.fail_on_unmet and not experiment.settings.adaptive:
        raise UserError("--fail-on-unmet needs adaptive mode (fixed mode has no conditions)")
    make_campaign_dir(
        experiment.campaign_dir,
        f"-o {args.output}" if args.output else f"output: {experiment.output}",
    )
    env_names = sorted(
        set(experiment.settings.env)
        | set(experiment.settings.record_env)
        | {k for w in experiment.workloads for k in w.env}
    )
    plan = plan_pinning(experiment.settings.pin)
    display = RichDisplay(
        {w.name: w.unit for w in experiment.workloads},
        # --show-output prints the rounds' output: no live table drawn over it
        quiet=args.quiet or bool(getattr(args, "show_output", False)),
    )
    err = stderr_console()
    with contextlib.ExitStack() as held:
        notes: list[str] = []
        if experiment.executor is None:  # rounds on this machine: reserve their CPUs
            from benchrun.runner.campaign.session import campaign_lock

            with campaign_lock(experiment.campaign_dir):
                pass  # measured right now by another runner: say so, not "CPUs reserved"
            reservation, notes = reserve_cpus(
                experiment, wait_for_cpus(args, experiment), args.quiet
            )
            if reservation is not None:
                held.callback(reservation.close)
                if reservation.cpus:
                    plan = reservation.plan
        if not args.quiet and plan.reason:
            err.print(f"pinning: {plan.reason}")
        return _run(args, experiment, plan, display, err, env_names, notes)


def wait_for_cpus(args: argparse.Namespace, experiment: Experiment) -> float | None:
    """Seconds to wait for CPUs held by another run: ``--wait-for-cpus [DURATION]`` (no
    value: without limit), else ``settings.wait_for_cpus``; None: refuse at once."""
    from benchrun.runner.config.durations import parse_duration

    given = args.wait_for_cpus
    if given is None:
        return experiment.settings.wait_for_cpus
    if given == "forever":
        return float("inf")
    try:
        return parse_duration(given)
    except ValueError as exc:
        raise UserError(f"--wait-for-cpus {given}: {exc}") from None


def reserve_cpus(
    experiment: Experiment, wait_s: float | None, quiet: bool
) -> tuple[Reservation | None, list[str]]:
    """Reserve the CPUs of ``experiment``'s pin (docs/reservation.md); with ``pin: none``
    only announce the run. Returns the reservation and the lines to print once the
    campaign is open: the warning of ``pin: none`` when another benchrun run is active,
    and the one "machine is loaded" line when it applies. Raises :class:`UserError`
    (exit 4) when the CPUs stay held by another run; progress lines of a wait go to
    stderr at once (the first even with ``quiet``)."""
    from benchrun.runner.machine.quiet import load_note

    settings = experiment.settings
    campaign = str(experiment.campaign_dir.absolute())

    def tell(line: str) -> None:
        print(f"benchrun: {line}", file=sys.stderr, flush=True)

    notes: list[str] = []
    if settings.pin == "none":
        reservation = register_unpinned(campaign)
        others = active_runs()
        if others:
            notes.append(
                "warning: pin: none, and another benchrun run is active ("
                + "; ".join(h.describe() for h in others)
                + "): rounds of both may share a CPU; pin: auto reserves CPUs"
            )
    else:
        said: list[str] = []

        def waiting(line: str) -> None:  # the first line always, later ones unless -q
            if not said or not quiet:
                tell(line)
            said.append(line)

        reservation = reserve(
            settings.pin,
            campaign,
            wait_s=wait_s,
            on_wait=waiting,
            duet=settings.duet is not None,
        )
        others = active_runs()
    note = load_note([h.describe() for h in others])
    if note is not None:
        notes.append(note)
    return reservation, notes


def _say_notes(notes: list[str], quiet: bool, store: Store, campaign_id: int) -> None:
    """Store each start note as a ``machine-load`` event and print it on stderr: warnings
    always, the "machine is loaded" line unless ``quiet`` (``-q``: only the results)."""
    for note in notes:
        store.add_event(campaign_id, "machine-load", note, {})
        if not quiet or note.startswith("warning:"):
            print(f"benchrun: {note}", file=sys.stderr, flush=True)


def _run(
    args: argparse.Namespace,
    experiment: Experiment,
    plan: PinPlan,
    display: RichDisplay,
    err: Console,
    env_names: list[str],
    notes: list[str],
) -> int:
    """The campaign itself, its CPUs reserved: run it, print its results, the exit code.
    ``notes``: printed on stderr and stored as ``machine-load`` events once the campaign is
    open (a start refused by the campaign stays one line)."""
    from benchrun.runner.campaign.run import run_campaign
    from benchrun.runner.machine.metadata import collect_metadata, round_facts
    from benchrun.runner.machine.revision import detect_revision

    spec: OneLine | None = getattr(args, "oneline_spec", None)
    options = round_options(spec, experiment, args) if spec is not None else None
    executor: Any
    if options is not None and options.active and experiment.executor is None:
        # hyperfine's --input, --conclude, -i, --show-output: make_executor's local
        # executor with them applied (runner/execute/hyperfine_local.py)
        from benchrun.runner.commands.run_hyperfine import show_output
        from benchrun.runner.execute.hyperfine_local import HyperfineLocalExecutor

        executor = HyperfineLocalExecutor(options, on_output=show_output, stay_in_cgroup=True)
    else:
        executor = make_executor(experiment, on_message=display.message)
    local = isinstance(executor, LocalExecutor)

    def metadata() -> dict[str, object]:
        meta = collect_metadata(
            env_names=env_names,
            # the one-line form: the directory its commands run in
            experiment_path=experiment.source_path or Path.cwd(),
            workload_cpus=plan.workload_cpus,
        )
        repo = experiment.settings.repository
        revision = detect_revision(
            getattr(args, "revision", None), Path(repo) if repo else None, Path.cwd()
        )
        if revision is not None:
            meta["revision"] = revision.to_dict()
        if isinstance(executor, LocalExecutor):
            meta["containment"] = containment_record(executor.containment)
        else:  # the rounds run on compute nodes: this host's facts describe the submit host
            spec = experiment.executor
            meta["executor"] = {"kind": "slurm", **(dataclasses.asdict(spec) if spec else {})}
        return meta

    with pinned_runner(plan), contextlib.closing(executor):
        outcome = run_campaign(
            experiment,
            executor,
            display,
            resume=args.resume,
            new=args.new,
            metadata_fn=metadata,
            # per-round facts of this machine (load, frequency) mean nothing for a node's round
            round_facts_fn=round_facts if local else None,
            workload_cpus=plan.workload_cpus,
            resume_command=resume_command(experiment.campaign_dir, args),
            on_start=functools.partial(_say_notes, notes, args.quiet),
        )
    return _report_outcome(args, experiment, outcome, spec, err)


def _report_outcome(
    args: argparse.Namespace,
    experiment: Experiment,
    outcome: CampaignOutcome,
    spec: OneLine | None,
    err: Console,
) -> int:
    """Print a finished campaign's results (tables or ``--json``), the baseline's
    conditions, its warnings and hyperfine's exports; the exit code (``--fail-on-unmet``
    turns an unmet end or incomparable baseline conditions into :data:`EXIT_UNMET`)."""
    # the results as `benchrun show` prints them, read back from the store (commands/show.py;
    # imported here, after the campaign: it needs the statistics, the loop may not)
    from benchrun.runner.commands.show import print_results, read_summary, summary_json

    summary = read_summary(outcome.db_path, outcome.campaign_id)
    campaign, verdicts = summary.campaign, summary.stored
    conditions = _baseline_conditions(experiment, outcome)
    allow = bool(getattr(args, "allow_different_conditions", False))
    if args.json:  # only the JSON on stdout: the progress and messages are on stderr
        doc = {**summary_json(summary), "exit_code": outcome.exit_code, "message": outcome.message}
        if conditions is not None:
            doc["baseline_conditions"] = {
                **conditions.to_dict(),
                "allow_different_conditions": allow,
            }
        print(json.dumps(doc, indent=2))
    else:
        print_results(stdout_console(), summary, after_run=True)
        for line in conditions.lines() if conditions is not None else ():
            stdout_console().print(f"baseline conditions {escape(line)}", soft_wrap=True)
    not_comparable = conditions is not None and conditions.material and not allow
    if not_comparable:
        assert conditions is not None
        reasons = sorted({r for n in experiment.names for r in conditions.reasons(n)})
        print(
            "benchrun: baseline verdicts not comparable: " + "; ".join(reasons) + " "
            "(--allow-different-conditions keeps them; docs/conditions.md)",
            file=sys.stderr,
        )
    for warning in outcome.warnings:
        print(f"benchrun: warning: {warning}", file=sys.stderr)
    if spec is not None:  # hyperfine's exports and the rounds -i let pass
        commands = display_commands(spec, experiment)
        for line in finish(args, spec, outcome.db_path, outcome.campaign_id, commands):
            print(f"benchrun: {line}", file=sys.stderr)
    if outcome.exit_code:
        print(f"benchrun: {outcome.message}", file=sys.stderr)
        return outcome.exit_code
    if not args.quiet:
        err.print(f"stored in {outcome.db_path}")
    if args.fail_on_unmet and not (verdicts is not None and verdicts.conditions_met):
        print(
            f"benchrun: unmet at the end (--fail-on-unmet): {campaign.stop_reason}",
            file=sys.stderr,
        )
        return EXIT_UNMET
    if args.fail_on_unmet and not_comparable:
        return EXIT_UNMET
    return 0


def _baseline_conditions(
    experiment: Experiment, outcome: CampaignOutcome
) -> ConditionsComparison | None:
    """Both sides' conditions when the campaign had a baseline (runner/results/baseline.py
    ``baseline_conditions``), None without one or when the baseline is gone."""
    path = experiment.settings.baseline
    if path is None or not Path(path).exists():
        return None
    from benchrun.runner.results.baseline import baseline_conditions

    return baseline_conditions(path, outcome.db_path, outcome.campaign_id, list(experiment.names))
