"""Every public name of ``benchrun.stats`` imports (``from benchrun.stats import *`` must
not fail), and the package never imports the runner."""

from __future__ import annotations

import importlib

from benchrun import stats


def test_every_export_resolves() -> None:
    for name in stats.__all__:
        assert getattr(stats, name) is not None, name


def test_star_import() -> None:
    namespace: dict[str, object] = {}
    exec("from benchrun.stats import *", namespace)
    assert set(stats.__all__) <= set(namespace)
    assert callable(namespace["summarize"]) and callable(namespace["hpt"])


def test_stats_never_imports_runner() -> None:
    """docs/design.md: the arrow is one-way (runner -> stats)."""
    import pathlib

    root = pathlib.Path(stats.__file__).parent
    for path in root.glob("*.py"):
        text = path.read_text()
        for bad in (
            "import runner",
            "from runner",
            "benchrun.runner",
            "from benchrun import runner",
        ):
            assert bad not in text, (path.name, bad)
        if path.stem != "__init__":
            importlib.import_module(f"benchrun.stats.{path.stem}")
