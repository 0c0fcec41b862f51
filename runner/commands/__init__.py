"""Sub-commands of ``benchrun``: one module each, each exposing ``register(subparsers)``."""

from __future__ import annotations

import argparse


def add_set_option(p: argparse.ArgumentParser, what: str) -> None:
    """``--set KEY=VALUE`` (repeatable, into ``args.overrides``): settings that replace the
    experiment file's (runner.config.loader.load_experiment's ``overrides``); ``what`` ends the help."""
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        dest="overrides",
        help="replace a setting of the file, e.g. --set max_time=2m --set ci_rel_width=0.02 "
        f"(repeatable; VALUE is read as YAML; {what})",
    )
