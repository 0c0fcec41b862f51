"""The shape counts of issue 30: how much of the code hands untyped dicts around.

Prints, for the installed source tree (``runner/`` and ``stats/`` beside this script):

- ``.get("...")`` calls in ``runner/`` (an ast count of calls to a method named ``get``
  whose first argument is a string literal: reads of a dict by key with a fallback),
- ``dict[str, Any]`` / ``Mapping[str, Any]`` annotations in ``runner/`` and ``stats/``
  (a count of the text, as the issue counted it),
- classes over 400 and functions over 100 lines of code (blank lines, comments and
  docstrings not counted).

Run: ``python benchmarks/model_counts.py [--by-file]``. The figures are exact, not timed.
"""

from __future__ import annotations

import argparse
import ast
import re
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ANY_MAP = re.compile(r"\b(?:dict|Mapping|MutableMapping)\[str,\s*Any\]")


def _get_calls(tree: ast.AST) -> int:
    """Calls ``x.get("literal", ...)`` in ``tree``."""
    return sum(
        1
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "get"
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    )


def _code_lines(text: str, tree: ast.AST) -> set[int]:
    """Line numbers of ``text`` that hold code: not blank, not only a comment, not part of
    a docstring (a string literal that is the first statement of a module, class or
    function)."""
    docs: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body:
            first = body[0]
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                docs.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    return {
        i
        for i, line in enumerate(text.splitlines(), start=1)
        if line.strip() and not line.strip().startswith("#") and i not in docs
    }


def _long(
    tree: ast.AST, code: set[int], kind: tuple[type, ...], limit: int, path: Path
) -> list[str]:
    """Nodes of ``kind`` with more than ``limit`` lines of code (see :func:`_code_lines`)."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, kind):
            span = range(node.lineno, (node.end_lineno or node.lineno) + 1)
            lines = sum(1 for i in span if i in code)
            if lines > limit:
                out.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} {lines}")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--by-file", action="store_true", help="counts per file as well")
    args = parser.parse_args()
    gets: Counter[str] = Counter()
    maps: Counter[str] = Counter()
    classes: list[str] = []
    functions: list[str] = []
    for package in ("runner", "stats"):
        for path in sorted((ROOT / package).rglob("*.py")):
            text = path.read_text()
            tree = ast.parse(text)
            name = str(path.relative_to(ROOT))
            if package == "runner":
                gets[name] = _get_calls(tree)
            maps[name] = len(ANY_MAP.findall(text))
            code = _code_lines(text, tree)
            classes += _long(tree, code, (ast.ClassDef,), 400, path)
            functions += _long(tree, code, (ast.FunctionDef, ast.AsyncFunctionDef), 100, path)
    print(f'.get("...") calls in runner/: {sum(gets.values())} (target <= 150)')
    print(f"dict/Mapping[str, Any] in runner/ and stats/: {sum(maps.values())} (target <= 120)")
    print(f"classes over 400 lines: {len(classes)} (target 0)")
    for c in classes:
        print("  " + c)
    print(f"functions over 100 lines: {len(functions)} (target <= 5)")
    for f in functions:
        print("  " + f)
    if args.by_file:
        print("\nper file (.get, dict/Mapping[str, Any]):")
        for name in sorted(set(gets) | set(maps), key=lambda n: -(gets[n] + maps[n])):
            if gets[name] or maps[name]:
                print(f"  {gets[name]:4d} {maps[name]:4d}  {name}")


if __name__ == "__main__":
    main()
