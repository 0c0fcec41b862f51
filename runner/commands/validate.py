"""``benchrun validate FILE``, ``benchrun schema`` and ``benchrun init [FILE]``.

``validate`` loads the experiment exactly as ``run`` would (every rule in
:mod:`runner.config.loader`) and prints a short summary; ``schema`` prints the JSON Schema
built from the validator's own key tables; ``init`` writes the commented example
``runner/templates/init.yaml`` (its settings written from their declarations).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from importlib import resources
from pathlib import Path
from typing import Any

from benchrun.runner.config.cpulist import available_cpus, format_cpu_list
from benchrun.runner.config.experiment import HOOK_KINDS, Experiment, SlurmSpec
from benchrun.runner.config.loader import load_experiment
from benchrun.runner.config.schema import json_schema
from benchrun.runner.config.settingsdoc import render_init
from benchrun.runner.config.yamlsource import ConfigError, ConfigErrors, SourceError
from benchrun.runner.errors import UserError


def register(subparsers: Any) -> None:
    """Add the ``validate``, ``schema`` and ``init`` sub-commands."""
    p = subparsers.add_parser(
        "validate",
        help="check an experiment file without running anything",
        description="Check an experiment file (keys, types, placeholders, matrix, hooks, "
        "executables on PATH, CPUs) without running anything. Exit 0 if valid; otherwise "
        "exit 2 after one line per problem, each FILE:LINE: key: message (every problem "
        "found, not only the first; a YAML syntax error ends the reading at once).",
    )
    p.add_argument("file", metavar="FILE", help="experiment YAML file")
    p.add_argument(
        "--json",
        action="store_true",
        help='print the verdict as JSON on stdout: {"valid": false, "errors": [{"file", '
        '"line", "key", "message"}, ...]}, or {"valid": true, "errors": [], "experiment", '
        '"workloads", ...}; the exit status is the same',
    )
    p.set_defaults(func=cmd_validate)

    p = subparsers.add_parser(
        "schema",
        help="print the JSON Schema of experiment files",
        description="Print a JSON Schema (draft 2020-12) of experiment files, for editors. "
        "It covers structure and types; `benchrun validate` checks the rest.",
    )
    p.set_defaults(func=cmd_schema)

    p = subparsers.add_parser(
        "init",
        help="write a commented example experiment",
        description="Write a commented example experiment that runs as is (to stdout, or to FILE).",
    )
    p.add_argument("file", metavar="FILE", nargs="?", help="where to write (default: stdout)")
    p.add_argument("--force", action="store_true", help="overwrite FILE if it exists")
    p.set_defaults(func=cmd_init)


def template_text() -> str:
    """The commented example experiment: ``runner/templates/init.yaml`` with its
    ``settings:`` block written from the settings' declarations
    (runner/config/settingsdoc.py)."""
    return render_init(
        resources.files("benchrun.runner")
        .joinpath("templates/init.yaml")
        .read_text(encoding="utf-8")
    )


def summary_lines(exp: Experiment, display: str) -> list[str]:
    """The short summary ``benchrun validate`` prints for a valid experiment."""
    s = exp.settings
    names = [w.name for w in exp.workloads]
    shown = ", ".join(names[:8]) + (f", ... ({len(names)} in all)" if len(names) > 8 else "")
    if s.adaptive:
        rounds = (
            f"adaptive: {s.min_rounds}..{s.max_rounds} rounds per workload, budget "
            f"{s.max_time:g} s, CI target "
            + ("off" if s.ci_rel_width is None else f"+/-{s.ci_rel_width:.1%}")
        )
    else:
        rounds = f"fixed: {s.rounds} rounds per workload"
    rounds += f", {s.warmup_rounds} warm-up, order {s.order} (seed {s.seed})"
    if isinstance(s.pin, tuple):
        pin = f"CPUs {format_cpu_list(s.pin)}"
    else:
        pin = s.pin
    try:
        db = os.path.relpath(exp.db_path)
    except ValueError:  # pragma: no cover - other drive on Windows
        db = str(exp.db_path)
    if exp.compare is None:
        compare = "neighbours in the ranking of each metric"
    else:
        compare = "; ".join(" ~ ".join(g) for g in exp.compare[:4]) + (
            f"; ... ({len(exp.compare)} groups)" if len(exp.compare) > 4 else ""
        )
    if s.reference is not None:
        compare += f"; each against {s.reference}"
    if s.adaptive:
        compare += f" ({s.comparison})"
    hooks = [
        f"{kind} ({n} workload{'s' if n > 1 else ''})"
        for kind in HOOK_KINDS
        for n in [sum(w.hook(kind) is not None for w in exp.workloads)]
        if n
    ]
    fleet = []
    if exp.executor is not None and exp.executor.node_types:
        where = ", ".join(f"{name} ({_where(t)})" for name, t in exp.executor.node_types)
        fleet = [
            f"  fleet:    {len(exp.executor.node_types)} node types: {where}; each workload "
            "runs on each, compared across them"
        ]
    return [
        f"{display}: OK, experiment {exp.name!r}",
        *fleet,
        f"  workloads ({len(names)}): {shown}",
        *metrics_lines(exp),
        *([f"  hooks:    {', '.join(hooks)}; untimed"] if hooks else []),
        f"  compare:  {compare}",
        f"  rounds:   {rounds}",
        f"  pinning:  {pin} (this machine has CPUs {format_cpu_list(available_cpus())}); "
        f"timeout {s.timeout:g} s per round",
        f"  results:  {db}",
    ]


def metrics_lines(exp: Experiment) -> list[str]:
    """The ``metrics:`` line of an experiment whose workloads name counter metrics or a
    metric list: each metric and, for a counter, the source that counts it on this machine
    (docs/metrics.md); [] otherwise. With rounds run here (no Slurm executor), a counter
    this machine cannot count is one :class:`UserError` line, as ``run`` would say."""
    if not any(w.extra_metrics or w.counters for w in exp.workloads):
        return []
    metrics = list(dict.fromkeys(m for w in exp.workloads for m in w.metrics))
    counters = tuple(dict.fromkeys(m for w in exp.workloads for m in w.counters))
    sources: dict[str, str] = {}
    if counters and exp.executor is None:
        from benchrun.runner.execute.counters import plan_counters

        sources = {m: src for m, (src, _) in plan_counters(counters).sources().items()}
    shown = ", ".join(f"{m} ({sources[m]})" if m in sources else m for m in metrics)
    return [f"  metrics:  {shown}; the first of each workload's list decides"]


def _where(spec: SlurmSpec) -> str:
    """``partition alpha, constraint skylake``: where a node type's jobs run."""
    parts = [
        f"{key} {value if isinstance(value, str | int) else ','.join(value)}"
        for key in ("partition", "constraint", "nodes", "account")
        for value in [getattr(spec, key)]
        if value is not None and not (key == "nodes" and value == 1)
    ]
    return ", ".join(parts) or "the cluster's default partition"


def validation_errors(file: str) -> tuple[Experiment | None, list[ConfigError]]:
    """Load ``file`` with every check, collecting every problem: the experiment (None
    when invalid) and the problems, each with file, line and key where it has them."""
    try:
        return load_experiment(file, collect=True), []
    except ConfigErrors as exc:
        return None, list(exc.errors)
    except SourceError as exc:  # a syntax error: nothing after it can be read
        return None, [exc.error]
    except UserError as exc:  # the file itself: missing, unreadable, too large
        message = exc.message.removeprefix(f"{file}: ")
        return None, [ConfigError(file, None, None, message)]


def cmd_validate(args: argparse.Namespace) -> int:
    """Check ``args.file``: the summary (exit 0), or every problem (exit 2), as text or
    (``--json``) as one JSON document on stdout."""
    exp, errors = validation_errors(args.file)
    if args.json:
        doc: dict[str, object] = {
            "valid": exp is not None,
            "file": args.file,
            "errors": [e.as_dict() for e in errors],
        }
        if exp is not None:
            doc.update(
                experiment=exp.name,
                workloads=list(exp.names),
                mode="adaptive" if exp.settings.adaptive else "fixed",
                results=str(exp.db_path),
            )
        print(json.dumps(doc, indent=2))
        return 0 if exp is not None else 2
    if exp is None:
        print("\n".join(ConfigErrors(errors).lines(args.file)), file=sys.stderr)
        return 2
    print("\n".join(summary_lines(exp, args.file)))
    return 0


def cmd_schema(args: argparse.Namespace) -> int:
    """Print the JSON Schema to stdout."""
    print(json.dumps(json_schema(), indent=2))
    return 0


def cmd_init(args: argparse.Namespace) -> int:
    """Write the example to stdout or ``args.file`` (refusing to overwrite without --force)."""
    text = template_text()
    if not args.file:
        sys.stdout.write(text)
        return 0
    target = Path(args.file)
    if target.exists() and not args.force:
        raise UserError(f"{args.file}: already exists; use --force to overwrite it")
    try:
        target.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UserError(f"{args.file}: cannot write: {exc.strerror or exc}") from None
    print(f"wrote {args.file}; check it with: benchrun validate {args.file}", file=sys.stderr)
    return 0
