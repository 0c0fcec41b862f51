"""Read a data file of any supported format into a :class:`Dataset`.

Detection (``fmt="auto"``): a file whose first non-blank character is ``{`` or ``[`` is
JSON and is recognised by its keys (pyperf: ``benchmarks[].runs``; Google Benchmark:
``benchmarks[].name`` with ``real_time``; hyperfine: ``results[].command``); anything else
is long-form CSV. ``.gz`` files (pyperf writes them) are decompressed first.
"""

from __future__ import annotations

import gzip
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from benchrun.runner.errors import UserError
from benchrun.runner.importers.benchrun_export import looks_like_benchrun, read_benchrun
from benchrun.runner.importers.csv_long import read_csv
from benchrun.runner.importers.dataset import Dataset, merge
from benchrun.runner.importers.gbench import TimeField, looks_like_gbench, read_gbench
from benchrun.runner.importers.hyperfine import looks_like_hyperfine, read_hyperfine
from benchrun.runner.importers.jsontext import parse_json
from benchrun.runner.importers.pyperf import looks_like_pyperf, read_pyperf

FORMATS: tuple[str, ...] = ("auto", "csv", "hyperfine", "pyperf", "gbench", "benchrun")

_JSON_READERS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "pyperf": (looks_like_pyperf, "pyperf"),
    "gbench": (looks_like_gbench, "Google Benchmark"),
    "hyperfine": (looks_like_hyperfine, "hyperfine"),
    "benchrun": (looks_like_benchrun, "benchrun export"),
}


def _read_text(path: Path) -> str:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise UserError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise UserError(f"{path}: is a directory, expected a data file") from None
    except OSError as exc:
        raise UserError(f"{path}: cannot read ({exc.strerror})") from None
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as exc:
            raise UserError(f"{path}: damaged gzip file ({exc})") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise UserError(f"{path}: not a text file (not UTF-8)") from None


def _describe_keys(doc: Any) -> str:
    if isinstance(doc, Mapping):
        keys = ", ".join(str(k) for k in list(doc)[:12]) or "none"
        return f"top-level keys: {keys}"
    return f"top-level JSON {type(doc).__name__}, not an object"


def load(path: str | Path, fmt: str = "auto", gbench_time: TimeField = "real_time") -> Dataset:
    """Read one file; ``fmt`` is one of :data:`FORMATS` (``auto`` detects it)."""
    path = Path(path)
    source = str(path)
    if fmt not in FORMATS:
        raise UserError(f"unknown format {fmt!r}; choose from {', '.join(FORMATS)}")
    text = _read_text(path)
    is_json = text.lstrip()[:1] in ("{", "[")
    if fmt == "csv" or (fmt == "auto" and not is_json):
        return read_csv(text, source)
    doc = parse_json(text, source)
    wanted = [fmt] if fmt != "auto" else list(_JSON_READERS)
    for name in wanted:
        looks_like, _ = _JSON_READERS[name]
        if looks_like(doc):
            if name == "pyperf":
                return read_pyperf(doc, source)
            if name == "gbench":
                return read_gbench(doc, source, gbench_time)
            if name == "benchrun":
                return read_benchrun(doc, source)
            return read_hyperfine(doc, source)
    if fmt != "auto":
        raise UserError(f"{source}: not a {_JSON_READERS[fmt][1]} export ({_describe_keys(doc)})")
    raise UserError(
        f"{source}: not a CSV, hyperfine, pyperf or Google Benchmark export ({_describe_keys(doc)})"
    )


def load_many(
    paths: Sequence[str | Path], fmt: str = "auto", gbench_time: TimeField = "real_time"
) -> Dataset:
    """Read several files and merge them (:func:`~runner.importers.dataset.merge`)."""
    if not paths:
        raise UserError("no data file given")
    return merge([load(p, fmt, gbench_time) for p in paths])
