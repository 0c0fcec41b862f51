"""Readers for data benchrun did not measure: CSV, hyperfine, pyperf, Google Benchmark.

``load(path)`` / ``load_many(paths)`` detect the format and return a
:class:`~runner.importers.dataset.Dataset`; one module per format. The readers
(runner/importers/detect.py and the format modules) are imported when ``load``,
``load_many`` or ``FORMATS`` is first used, so that a command that only needs the
dataset's types (``benchrun show``, through ``MAX_MAGNITUDE``) does not import them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from benchrun.runner.importers.dataset import Dataset, GroupKey, Pairing, display_name

if TYPE_CHECKING:
    from benchrun.runner.importers.detect import FORMATS, load, load_many

__all__ = ["FORMATS", "Dataset", "GroupKey", "Pairing", "display_name", "load", "load_many"]

#: the names of runner/importers/detect.py this package gives (imported on first use)
_FROM_DETECT = ("FORMATS", "load", "load_many")


def __getattr__(name: str) -> Any:
    """``FORMATS``, ``load`` and ``load_many`` of runner/importers/detect.py (PEP 562)."""
    if name in _FROM_DETECT:
        from benchrun.runner.importers import detect

        return getattr(detect, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
