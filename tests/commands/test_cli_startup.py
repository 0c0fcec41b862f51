"""The command line imports only what a command needs: the map of commands to the modules
that register them is the full parser's, and ``--version`` loads no command module."""

from __future__ import annotations

import argparse
import importlib
import subprocess
import sys

from benchrun.runner import __version__
from benchrun.runner.cli import COMMAND_MODULE, COMMAND_MODULES, build_parser


def _commands(parser: argparse.ArgumentParser) -> set[str]:
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return set(sub.choices)


def test_every_command_maps_to_the_module_that_registers_it() -> None:
    assert set(COMMAND_MODULE) == _commands(build_parser())
    for name in COMMAND_MODULES:
        module = name.rsplit(".", 1)[1]
        parser = argparse.ArgumentParser()
        importlib.import_module(name).register(parser.add_subparsers())
        assert _commands(parser) == {c for c, m in COMMAND_MODULE.items() if m == module}


def test_version_imports_no_command_module() -> None:
    code = (
        "import sys; from benchrun.runner.cli import main; rc = main(['--version']); "
        "print(sorted(m for m in sys.modules if m.startswith('benchrun.runner.commands') "
        "or m.split('.')[0] in ('scipy', 'numpy', 'yaml', 'rich')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == [f"benchrun {__version__}", "[]"]


def test_validate_does_not_import_the_statistics() -> None:
    code = (
        "import sys; from benchrun.runner.cli import build_parser, COMMAND_MODULE; "
        "build_parser(COMMAND_MODULE['validate']); print('scipy' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
