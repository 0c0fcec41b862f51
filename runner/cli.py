"""``benchrun`` command line: parses arguments and dispatches, nothing else.

Each sub-command lives in its own module under :mod:`runner.commands` and exposes
``register(subparsers)``, which adds its parser and sets ``func`` (called with the parsed
namespace, returning the exit code). Errors a user can fix arrive here as
:class:`runner.errors.UserError` and leave as one line on stderr with a non-zero exit code;
so does any ``sqlite3.DatabaseError`` that no layer below turned into one.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from benchrun.runner import __version__
from benchrun.runner.errors import UserError
from benchrun.runner.format import printable

#: Sub-command modules, in the order ``--help`` lists them.
COMMAND_MODULES: tuple[str, ...] = (
    "benchrun.runner.commands.run",
    "benchrun.runner.commands.show",
    "benchrun.runner.commands.validate",
    "benchrun.runner.commands.system",
    "benchrun.runner.commands.analyze",
    "benchrun.runner.commands.report",
    "benchrun.runner.commands.compare",
    "benchrun.runner.commands.history",
    "benchrun.runner.commands.sweep",
    "benchrun.runner.commands.bisect",
    "benchrun.runner.commands.export",
    "benchrun.runner.commands.submit",
    "benchrun.runner.commands.queue",
    "benchrun.runner.commands.status",
    "benchrun.runner.commands.logs",
    "benchrun.runner.commands.cancel",
    "benchrun.runner.commands.daemon",
)

DESCRIPTION = """\
benchrun makes performance measurements trustworthy: it runs the workloads of an
experiment in rounds, pinned to CPUs, stores every reading in SQLite, discards warm-up,
and reports means with confidence intervals that account for autocorrelation.

  benchrun init > experiment.yaml     write a commented example experiment
  benchrun validate experiment.yaml   check it without running anything
  benchrun run experiment.yaml        measure (Ctrl-C is safe; resume with --resume)
  benchrun run -c 'cmd1' -c 'cmd2'    measure commands without a file (like hyperfine)
  benchrun show results/NAME          what a campaign holds
  benchrun system                     this machine, and the settings that add noise
  benchrun analyze summary data.csv   the same statistics on data benchrun did not measure
  benchrun report results/NAME        a report to publish (HTML, Markdown, JSON, CSV)
  benchrun compare OLD NEW            per workload: faster, slower or equivalent (CI gate)
  benchrun history DIR                each workload over its revisions; where it changed
  benchrun sweep EXP --repo . A..B    one campaign per revision (git worktrees), tagged
  benchrun bisect EXP --repo . G B --threshold 5%   the first revision slower than G
  benchrun export results/NAME        raw readings and results as JSON or CSV
  benchrun submit experiment.yaml     queue it for the daemon (benchrun daemon start)
"""


#: the module (of :data:`COMMAND_MODULES`, last part) that registers each command: a
#: command line naming one imports only that module (``benchrun run`` need not import every
#: other command and what they import, e.g. scipy, before its first round; ``validate``
#: starts at once); tests/commands/test_cli_startup.py checks it against the full parser
COMMAND_MODULE: dict[str, str] = {
    "run": "run",
    "show": "show",
    "validate": "validate",
    "init": "validate",
    "schema": "validate",
    "system": "system",
    "analyze": "analyze",
    "report": "report",
    "compare": "compare",
    "history": "history",
    "sweep": "sweep",
    "bisect": "bisect",
    "export": "export",
    "submit": "submit",
    "queue": "queue",
    "resume": "queue",
    "status": "status",
    "logs": "logs",
    "cancel": "cancel",
    "daemon": "daemon",
}


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """Build the top-level parser with every registered sub-command, or with those of the
    one module ``only`` (a value of :data:`COMMAND_MODULE`)."""
    parser = argparse.ArgumentParser(
        prog="benchrun",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"benchrun {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    names = COMMAND_MODULES if only is None else (f"benchrun.runner.commands.{only}",)
    for name in names:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``benchrun`` console script; returns the exit code."""
    words = list(sys.argv[1:] if argv is None else argv)
    if words == ["--version"]:  # at once: no command module (and nothing they import) loaded
        print(f"benchrun {__version__}")
        return 0
    from benchrun.runner.ui.terminal import safe_output

    parser = build_parser(COMMAND_MODULE.get(words[0]) if words else None)
    with safe_output():  # argparse quotes the words it refuses
        args = parser.parse_args(words)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        with safe_output():
            code = args.func(args)
    except UserError as exc:
        from benchrun.runner.config.yamlsource import ConfigErrors

        if isinstance(exc, ConfigErrors):  # every problem of an experiment file, as validate prints
            print("\n".join(exc.lines(exc.errors[0].file)), file=sys.stderr)
        else:
            print(f"benchrun: error: {one_line(exc.message)}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("benchrun: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # `benchrun ... | head`: the reader went away; not an error worth a traceback.
        return 0
    except Exception as exc:
        if not _is_sqlite_error(exc):
            raise
        # the stores turn a corrupt page into a UserError naming the file; this is the
        # last resort for any other SQLite failure (a queue database, a locked file...)
        detail = one_line(" ".join(str(exc).split())) or type(exc).__name__
        print(
            f"benchrun: error: SQLite: {detail}; if a benchrun database is damaged, copy "
            "what is readable with `sqlite3 FILE .recover | sqlite3 recovered.db` or start "
            "a new results directory",
            file=sys.stderr,
        )
        return 1
    return int(code or 0)


def one_line(message: str) -> str:
    """``message`` with line breaks and other unprintable characters escaped (``\\n``,
    ``\\x1b``), so that an error stays one line whatever text from a file it quotes."""
    return printable(message)


def _is_sqlite_error(exc: BaseException) -> bool:
    """``exc`` is a ``sqlite3.DatabaseError`` (sqlite3 is not imported just to ask)."""
    sqlite3 = sys.modules.get("sqlite3")
    return sqlite3 is not None and isinstance(exc, sqlite3.DatabaseError)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
