"""Readers for data benchrun did not measure: CSV, hyperfine, pyperf, Google Benchmark.

``load(path)`` / ``load_many(paths)`` detect the format and return a
:class:`~runner.importers.dataset.Dataset`; one module per format.
"""

from benchrun.runner.importers.dataset import Dataset, GroupKey, Pairing, display_name
from benchrun.runner.importers.detect import FORMATS, load, load_many

__all__ = ["FORMATS", "Dataset", "GroupKey", "Pairing", "display_name", "load", "load_many"]
