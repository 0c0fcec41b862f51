"""Every public name of ``stats`` imports (``from stats import *`` must not fail)."""

from __future__ import annotations

import importlib

from benchrun import stats


def test_every_export_resolves() -> None:
    for name in stats.__all__:
        assert getattr(stats, name) is not None, name


def test_star_import() -> None:
    namespace: dict[str, object] = {}
    exec("from stats import *", namespace)
    assert "summarize" in namespace and "hpt" in namespace


def test_stats_never_imports_runner() -> None:
    """docs/design.md: the arrow is one-way (runner -> stats)."""
    import pathlib

    root = pathlib.Path(stats.__file__).parent
    for path in root.glob("*.py"):
        text = path.read_text()
        assert "import runner" not in text and "from runner" not in text, path.name
        if path.stem != "__init__":
            importlib.import_module(f"stats.{path.stem}")
