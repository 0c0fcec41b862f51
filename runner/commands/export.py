"""benchrun export (being written)."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    sub.add_parser("export", help="(not yet available)")
