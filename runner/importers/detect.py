"""Read a data file of any supported format into a :class:`Dataset`.

Detection (``fmt="auto"``): a file whose first non-blank character is ``{`` or ``[`` is
JSON and is recognised by its keys (pyperf: ``benchmarks[].runs``; Google Benchmark:
``benchmarks[].name`` with ``real_time``; hyperfine: ``results[].command``); anything else
is long-form CSV. ``.gz`` files (pyperf writes them) are decompressed first. Every file is
read within the size cap of runner/importers/readfile.py.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from benchrun.runner.errors import UserError
from benchrun.runner.importers.benchrun_export import looks_like_benchrun, read_benchrun
from benchrun.runner.importers.csv_long import read_csv
from benchrun.runner.importers.dataset import Dataset, merge
from benchrun.runner.importers.gbench import TimeField, looks_like_gbench, read_gbench
from benchrun.runner.importers.hyperfine import looks_like_hyperfine, read_hyperfine
from benchrun.runner.importers.jsontext import parse_json
from benchrun.runner.importers.pyperf import looks_like_pyperf, read_pyperf
from benchrun.runner.importers.readfile import read_import_text

FORMATS: tuple[str, ...] = ("auto", "csv", "hyperfine", "pyperf", "gbench", "benchrun")

_JSON_READERS: dict[str, tuple[Callable[[object], bool], str]] = {
    "pyperf": (looks_like_pyperf, "pyperf"),
    "gbench": (looks_like_gbench, "Google Benchmark"),
    "hyperfine": (looks_like_hyperfine, "hyperfine"),
    "benchrun": (looks_like_benchrun, "benchrun export"),
}


def _describe_keys(doc: object) -> str:
    if isinstance(doc, Mapping):
        keys = ", ".join(str(k) for k in list(doc)[:12]) or "none"
        return f"top-level keys: {keys}"
    return f"top-level JSON {type(doc).__name__}, not an object"


def load(path: str | Path, fmt: str = "auto", gbench_time: TimeField = "real_time") -> Dataset:
    """Read one file; ``fmt`` is one of :data:`FORMATS` (``auto`` detects it)."""
    path = Path(path)
    if fmt not in FORMATS:
        raise UserError(f"unknown format {fmt!r}; choose from {', '.join(FORMATS)}")
    return from_text(read_import_text(path), str(path), fmt, gbench_time)


def from_text(
    text: str, source: str, fmt: str = "auto", gbench_time: TimeField = "real_time"
) -> Dataset:
    """The :class:`Dataset` of a file's ``text`` (read from ``source``), as :func:`load`."""
    is_json = text.lstrip()[:1] in ("{", "[")
    if fmt == "csv" or (fmt == "auto" and not is_json):
        return read_csv(text, source)
    doc = parse_json(text, source)
    del text  # the parsed document is what the rest needs (memory, docs/imported-data.md)
    return from_document(doc, source, fmt, gbench_time)


def from_document(
    doc: object, source: str, fmt: str = "auto", gbench_time: TimeField = "real_time"
) -> Dataset:
    """The :class:`Dataset` of a parsed JSON document, by its shape (module docstring)."""
    wanted = [fmt] if fmt != "auto" else list(_JSON_READERS)
    for name in wanted:
        looks_like, _ = _JSON_READERS[name]
        # every shape a reader knows is a JSON object
        if isinstance(doc, Mapping) and looks_like(doc):
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
