"""Support for ``benchrun analyze``: calling ``stats`` safely and the shared options.

Kept apart from :mod:`runner.commands.analyze` so that the command module holds only the
sub-commands. Nothing here computes a statistic.
"""

from __future__ import annotations

import argparse
import importlib
import math
from collections.abc import Callable
from typing import Any, NoReturn

from benchrun.runner.errors import UserError
from benchrun.runner.importers import FORMATS
from benchrun.stats.results import jsonable


# ------------------------------------------------------------------- calling stats
class OneLineParser(argparse.ArgumentParser):
    """Argument errors as one line (no usage block), exit code 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(
            2,
            f"benchrun: error: {self.prog.removeprefix('benchrun ')}: {message} "
            f"(see {self.prog} --help)\n",
        )


def stats_function(name: str) -> Callable[..., Any]:
    """The public ``stats`` function ``name`` (imported lazily)."""
    from benchrun import stats

    try:
        return getattr(stats, name)
    except (ImportError, AttributeError) as exc:
        raise UserError(f"stats.{name} is not available in this build ({exc})", 1) from None


def stats_module(module: str, name: str) -> Callable[..., Any]:
    """A function of ``stats.<module>`` that is not a public export."""
    try:
        return getattr(importlib.import_module(f"benchrun.stats.{module}"), name)
    except (ImportError, AttributeError) as exc:
        raise UserError(
            f"stats.{module}.{name} is not available in this build ({exc})", 1
        ) from None


def call_stats(what: str, name: str, *args: Any, **kwargs: Any) -> Any:
    """Call ``stats.<name>``; a ValueError (bad input for that method) or an arithmetic
    overflow becomes a UserError."""
    func = stats_function(name)
    try:
        return func(*args, **kwargs)
    except ValueError as exc:
        raise UserError(f"{what}: {exc}") from None
    except (OverflowError, ZeroDivisionError, FloatingPointError) as exc:
        # e.g. readings near 1e300, whose squares or exponentials overflow a float
        raise UserError(
            f"{what}: the values are too large or too small for this analysis ({exc}); "
            "rescale them (another unit) and analyse again"
        ) from None


def as_dict(result: Any) -> Any:
    return jsonable(result.to_dict() if hasattr(result, "to_dict") else result)


def level(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"{text} must be strictly between 0 and 1")
    return value


def positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"{text} must be a number > 0")
    return value


def pair_count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text}: the number of pairs must be >= 1")
    return value


def warmup_arg(text: str) -> str | int:
    if text in ("mser5", "none", "auto"):
        return text
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r}: expected mser5, none or a number of readings"
        ) from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text}: the number of warm-up readings must be >= 0")
    return value


def quantile_list(text: str) -> tuple[float, ...]:
    try:
        values = tuple(float(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected numbers like 0.1,0.5,0.9") from None
    if not values or not all(0.0 < v < 1.0 for v in values):
        raise argparse.ArgumentTypeError(f"{text!r}: quantiles must be strictly between 0 and 1")
    return values


# ------------------------------------------------------------------------- options
def add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "data",
        nargs="+",
        metavar="DATA",
        help="CSV (columns value[, system, benchmark, workload, unit, analysed]), a "
        "hyperfine, pyperf or Google Benchmark JSON export, or a benchrun export (JSON or "
        "CSV: analysed as the campaign analysed it, warm-up rows left out); several files: "
        "each file without a system column becomes a system named after the file",
    )
    parser.add_argument(
        "--format", choices=FORMATS, default="auto", help="input format (default: detect)"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.add_argument(
        "--confidence",
        type=level,
        default=0.95,
        help="confidence level of every interval (default 0.95)",
    )
    parser.add_argument(
        "--gbench-time",
        choices=("real", "cpu"),
        default="real",
        help="Google Benchmark: analyse real_time (default) or cpu_time",
    )
    direction = parser.add_mutually_exclusive_group()
    direction.add_argument(
        "--lower-is-better",
        dest="direction",
        action="store_const",
        const="lower_is_better",
        help="values are costs (times, bytes); the default for times and unknown units",
    )
    direction.add_argument(
        "--higher-is-better",
        dest="direction",
        action="store_const",
        const="higher_is_better",
        help="values are rates (ops/s, MB/s); guessed from units like '/s'",
    )
    parser.set_defaults(direction=None)


def add_two_sides(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--a", required=True, metavar="A", help="system A (or group name without systems)"
    )
    parser.add_argument(
        "--b", required=True, metavar="B", help="system B (or group name without systems)"
    )


def add_warmup_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--warmup",
        type=warmup_arg,
        default="auto",
        metavar="mser5|none|N",
        help="warm-up readings to drop at the start of each group: MSER-5 detection, none, "
        "or a fixed N (default: none for pyperf, whose warm-ups are already apart; else mser5)",
    )
