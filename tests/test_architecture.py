"""The import rules of docs/architecture.md, checked on the source tree.

Packages of ``benchrun.runner`` are layered along the data flow; a module may import its
own package, ``benchrun.stats`` and lower layers only, never a higher one. ``stats``
imports nothing of ``runner``. Imports inside functions count like the others (a lazy
import for start-up time is fine, a cycle hidden in a function is not), and the module
graph has no cycle.

Tests mirror the packages (docs/testing.md "Layout"): each package of ``benchrun.runner``
and ``stats`` has a folder of tests named after it, there is no catch-all
``tests/runner/``, and test file names are unique (pytest imports them by base name).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import tomllib

REPO = Path(__file__).resolve().parents[1]

#: lowest first; a package may import packages of earlier layers and its own
LAYERS: tuple[frozenset[str], ...] = tuple(
    frozenset(layer.split())
    for layer in (
        "base",  # runner/__init__.py, errors.py, files.py
        "config",
        "machine execute",
        "store",
        "control",
        "results importers",
        "campaign",
        "ui",
        "report",
        "analyze",
        "daemon",
        "commands",
        "cli",
    )
)
LEVEL = {pkg: i for i, layer in enumerate(LAYERS) for pkg in layer}


def _modules() -> dict[str, Path]:
    out: dict[str, Path] = {}
    for top in ("runner", "stats"):
        for path in sorted((REPO / top).rglob("*.py")):
            parts = list(path.relative_to(REPO).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out["benchrun." + ".".join(parts)] = path
    return out


MODULES = _modules()


def _imports(name: str, path: Path) -> list[tuple[int, str]]:
    """(line, imported module) for every import of a benchrun module, at any depth."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            # "from pkg import module" imports the module, "from module import name" the module
            targets = [
                f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names
            ]
        for t in targets:
            if t.split(".")[0] in ("runner", "stats"):
                found.append((node.lineno, t))  # un-namespaced: always wrong
            elif t.startswith("benchrun."):
                while t not in MODULES and "." in t:
                    t = t.rsplit(".", 1)[0]
                if t in MODULES:
                    found.append((node.lineno, t))
    return found


def _unit(module: str) -> str:
    """The layer unit of a module: stats, a runner package, cli or base."""
    parts = module.split(".")
    if parts[1] == "stats":
        return "stats"
    if len(parts) == 2:
        return "base"
    sub = parts[2]
    if sub == "cli":
        return "cli"
    if (REPO / "runner" / sub).is_dir():
        return sub
    return "base"


GRAPH = {m: _imports(m, p) for m, p in MODULES.items()}


def test_every_runner_package_has_a_layer() -> None:
    packages = {p.name for p in (REPO / "runner").iterdir() if (p / "__init__.py").exists()}
    assert packages <= set(LEVEL), (
        f"add to LAYERS (and docs/architecture.md): {packages - set(LEVEL)}"
    )


def test_imports_use_the_benchrun_namespace() -> None:
    bad = [
        f"{MODULES[m].relative_to(REPO)}:{line}: import {t}"
        for m, edges in GRAPH.items()
        for line, t in edges
        if not t.startswith("benchrun.")
    ]
    assert not bad, "\n".join(bad)


def test_stats_never_imports_runner() -> None:
    bad = [
        f"{MODULES[m].relative_to(REPO)}:{line}: {t}"
        for m, edges in GRAPH.items()
        if _unit(m) == "stats"
        for line, t in edges
        if t.startswith("benchrun.runner")
    ]
    assert not bad, "\n".join(bad)


def test_runner_imports_go_down_the_layers() -> None:
    bad = []
    for m, edges in GRAPH.items():
        src = _unit(m)
        if src == "stats":
            continue
        for line, t in edges:
            dst = _unit(t)
            if dst in ("stats", src):
                continue
            if LEVEL[dst] >= LEVEL[src]:
                bad.append(f"{MODULES[m].relative_to(REPO)}:{line}: {src} imports {dst} ({t})")
    assert not bad, "\n".join(bad)


def test_no_import_cycles() -> None:
    """Depth-first search for a back edge in the module graph (package __init__ edges to
    their own submodules excluded: importing a package's module runs its __init__ first)."""
    edges = {m: {t for _, t in e if t != m and not t.startswith(m + ".")} for m, e in GRAPH.items()}
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        stack.append(m)
        for t in sorted(edges[m]):
            if state.get(t) == 1:
                return stack[stack.index(t) :] + [t]
            if t not in state and (cycle := visit(t)):
                return cycle
        stack.pop()
        state[m] = 2
        return None

    for m in sorted(edges):
        if m not in state and (cycle := visit(m)):
            pytest.fail("import cycle: " + " -> ".join(cycle))


def test_wheel_lists_every_package() -> None:
    """pyproject's explicit package list (needed for the benchrun.* mapping) names every
    folder with an __init__.py, so a wheel holds the same modules as the tree."""
    conf = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    listed = set(conf["tool"]["setuptools"]["packages"])
    present = {
        "benchrun." + ".".join(p.parent.relative_to(REPO).parts)
        for top in ("runner", "stats")
        for p in (REPO / top).rglob("__init__.py")
    }
    assert listed == present


#: folders of tests/ that are not named after a package, and what they hold
TEST_FOLDERS_BY_KIND = {"benchmarks", "data", "e2e", "fuzz", "slurm"}


def test_every_package_has_a_folder_of_tests() -> None:
    """runner/<pkg>/ is tested in tests/<pkg>/ (and stats/ in tests/stats/): at least one
    test_*.py there."""
    packages = {p.name for p in (REPO / "runner").iterdir() if (p / "__init__.py").exists()}
    missing = sorted(
        pkg for pkg in packages | {"stats"} if not any((REPO / "tests" / pkg).glob("test_*.py"))
    )
    assert not missing, f"no tests/<pkg>/test_*.py for: {missing}"


def test_no_catch_all_folder_of_tests() -> None:
    """Every folder of tests/ is a package's name or one of TEST_FOLDERS_BY_KIND."""
    packages = {p.name for p in (REPO / "runner").iterdir() if (p / "__init__.py").exists()}
    folders = {
        p.name
        for p in (REPO / "tests").iterdir()
        if p.is_dir() and not p.name.startswith((".", "_")) and any(p.rglob("*.py"))
    }
    stray = sorted(folders - packages - {"stats"} - TEST_FOLDERS_BY_KIND)
    assert not stray, f"folders of tests not named after a package: {stray}"
    assert not (REPO / "tests" / "runner").exists()


def test_test_file_names_are_unique() -> None:
    """The test folders have no __init__.py, so pytest imports each test module by its base
    name: two files of one name in two folders would not both load."""
    seen: dict[str, list[str]] = {}
    for path in sorted((REPO / "tests").rglob("test_*.py")):
        seen.setdefault(path.name, []).append(str(path.relative_to(REPO)))
    twice = {name: paths for name, paths in seen.items() if len(paths) > 1}
    assert not twice, twice
