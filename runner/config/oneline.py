"""The one-line form, ``benchrun run -c CMD -c CMD ...``: an experiment without a file.

The options become an ordinary experiment file's text (:func:`oneline_text`), which is
validated by the loader like any file and stored with the campaign (so ``--resume``,
``show``, ``report`` and ``compare`` see an ordinary campaign; ``--print-config`` prints
it). Rules (docs/oneline.md):

- each ``-c`` command is one workload, run by ``/bin/sh -c`` like hyperfine's (``-N``: split
  like a shell would and run without one); it runs in the current directory, written as
  the workload's absolute ``cwd:``;
- ``-n`` names the commands in order (default: the command itself, whitespace collapsed,
  shortened to :data:`NAME_CHARS` characters);
- ``-L NAME v1,v2`` is a matrix factor; ``{NAME}`` in a command (or hook) is replaced, as
  is ``{round}`` (the round's number, in commands and ``--prepare``), and every other
  brace is literal (``${HOME}``, ``awk '{print $1}'``), as in hyperfine;
- ``--setup/--prepare/--cleanup`` given once apply to every command, given once per ``-c``
  to each in order; they always run through ``/bin/sh -c``;
- the experiment's name is ``--experiment-name``, else made from the commands and a hash
  of everything that defines the measurement (:func:`derived_name`), so the same
  options name the same campaign directory and ``--resume`` finds it;
- ``--set``, ``-o`` and ``--baseline`` land in ``settings:`` and ``output:``;
- ``executor`` (``slurm`` or a mapping, docs/slurm.md) lands in ``executor:``;
- hyperfine's spellings (runner/config/hyperfine.py): ``--shell SHELL`` runs each command
  (and hook) as ``SHELL -c CMD``; ``--reference CMD`` is measured first (unless it is one
  of the ``-c`` commands) and is ``settings.reference``; ``--runs`` and the others arrive
  as ``--set`` items, and an error about them names the hyperfine flag.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from benchrun.runner.config.experiment import DEFAULT_OUTPUT, HOOK_KINDS, Experiment
from benchrun.runner.config.loader import parse_experiment, settings_from_overrides
from benchrun.runner.config.yamlsource import SourceError
from benchrun.runner.errors import UserError

#: longest default workload name (the command itself, shortened)
NAME_CHARS = 48
#: how errors in the generated text name it (they are rewritten to name the option)
DISPLAY = "<command line>"

_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_SLUG_DROP = re.compile(r"[^A-Za-z0-9._+=-]+")


@dataclass(frozen=True)
class OneLine:
    """The options of the one-line form, as given (see the module docstring).

    ``params`` holds each ``-L NAME VALUES`` pair with VALUES still comma-separated;
    ``setup``/``prepare``/``cleanup`` each hold one command for every workload or one
    per command; ``shell`` is false with ``-N``; ``baseline`` is ``--baseline`` as given.
    """

    commands: tuple[str, ...]
    names: tuple[str, ...] = ()
    params: tuple[tuple[str, str], ...] = ()
    setup: tuple[str, ...] = ()
    prepare: tuple[str, ...] = ()
    cleanup: tuple[str, ...] = ()
    shell: bool = True
    experiment_name: str | None = None
    output: str | None = None
    overrides: tuple[str, ...] = ()
    baseline: str | None = None
    description: str = ""
    #: ``executor:`` of the experiment: None (local), ``"slurm"``, or the mapping
    #: ``{"kind": "slurm", "partition": ...}`` (docs/slurm.md)
    executor: str | Mapping[str, object] | None = None
    #: ``--shell SHELL`` (hyperfine's): the shell's argv each command and hook runs with
    #: as ``SHELL -c CMD``; empty: ``/bin/sh -c`` (or none with ``shell`` false)
    shell_words: tuple[str, ...] = ()
    #: ``--reference CMD``: the command the others are compared with (hyperfine's)
    reference: str | None = None
    #: ``--reference-name NAME``: its name when it is not one of the ``-c`` commands
    reference_name: str | None = None
    #: ``--conclude``: like the hooks, one for all commands or one per command; run after
    #: every round by runner/execute/hyperfine_local.py (kept here for the name's hash)
    conclude: tuple[str, ...] = ()
    #: ``--input FILE`` as given (the name's hash: another input is another measurement)
    input: str | None = None
    #: ``-i``: a failing round is timed and kept (the name's hash)
    ignore_failure: bool = False
    #: the parameter of ``--parameter-scan`` (one of ``params``), for error messages
    scan: str | None = None
    #: setting -> the flag given that set it (``rounds`` -> ``--runs``), for error messages
    setting_flags: tuple[tuple[str, str], ...] = ()
    #: ``--metric``: every workload's ``metric:`` (one, or a list whose first decides;
    #: docs/metrics.md); empty: the default, wall_time
    metric: tuple[str, ...] = ()

    def hooks(self, kind: str) -> tuple[str, ...]:
        """The ``--setup``/``--prepare``/``--cleanup`` commands given."""
        hooks: tuple[str, ...] = getattr(self, kind)
        return hooks


def parse_params(params: Sequence[tuple[str, str]]) -> dict[str, list[str]]:
    """``-L NAME v1,v2,...`` pairs as the matrix ``{NAME: [v1, v2, ...]}`` (values stay
    strings, as typed: ``1.10`` is not ``1.1``); a malformed pair is a UserError."""
    matrix: dict[str, list[str]] = {}
    for name, raw in params:
        shown = f"-L {name} {raw}"
        if name in matrix:
            raise UserError(f"{shown}: parameter {name!r} given twice; give each -L NAME once")
        values = raw.split(",")
        if any(not v.strip() for v in values):
            raise UserError(
                f"{shown}: an empty value; give the values separated by commas, e.g. -L "
                f"{name} 1,2,3"
            )
        seen: set[str] = set()
        for v in values:
            if v in seen:
                raise UserError(f"{shown}: value {v!r} given twice")
            seen.add(v)
        matrix[name] = values
    return matrix


def _spread(kind: str, given: tuple[str, ...], count: int) -> list[str | None]:
    """One hook command per workload: none, the same for all, or one each in order."""
    if not given:
        return [None] * count
    if len(given) == 1:
        return [given[0]] * count
    if len(given) == count:
        return list(given)
    raise UserError(
        f"--{kind} given {len(given)} times for {count} commands (-c); give it once (for "
        "every command) or once per -c, in order"
    )


def escape_braces(text: str, names: Sequence[str]) -> str:
    """``text`` with every brace doubled except around ``{NAME}`` of a name in ``names``
    and ``{round}``, so that only the ``-L`` parameters and the round number are
    placeholders."""
    names = [*names, "round"]
    out: list[str] = []
    end = 0
    for m in _PLACEHOLDER.finditer(text):
        out.append(_double(text[end : m.start()]))
        out.append(m.group(0) if m.group(1) in names else _double(m.group(0)))
        end = m.end()
    out.append(_double(text[end:]))
    return "".join(out)


def _double(text: str) -> str:
    return text.replace("{", "{{").replace("}", "}}")


def default_names(commands: Sequence[str], names: Sequence[str]) -> list[str]:
    """The workload names: ``names`` in order, then each remaining command itself
    (whitespace collapsed, at most :data:`NAME_CHARS` characters); a repeated default
    name gets `` (N)``, N the command's position from 1."""
    if len(names) > len(commands):
        raise UserError(
            f"-n: {len(names)} names for {len(commands)} command"
            f"{'s' if len(commands) > 1 else ''} (-c); give at most one -n "
            "per -c, in the order of the commands"
        )
    for i, name in enumerate(names):
        if name in names[:i]:
            raise UserError(f"-n {name}: the name is given twice; workload names are unique")
    out = list(names)
    for i, command in enumerate(commands[len(names) :], start=len(names)):
        text = " ".join(command.split()) or f"command {i + 1}"
        if len(text) > NAME_CHARS:
            text = text[: NAME_CHARS - 3] + "..."
        if text in out:
            text = f"{text} ({i + 1})"
        out.append(text)
    return out


def derived_name(spec: OneLine) -> str:
    """The experiment name of the one-line form without ``--experiment-name``: the commands
    as a slug (``sleep-0.1-vs-sleep-0.2``) and 8 hex digits of a SHA-256 over the commands,
    names, parameters, hooks and shell choice; budgets and other settings are left out,
    so ``--resume --set max_time=1h`` finds the same campaign."""
    parts = []
    for command in spec.commands:
        slug = _SLUG_DROP.sub("-", command).strip("-.")[:24].strip("-.")
        parts.append(slug or "cmd")
    stem = "-vs-".join(parts)[:64].strip("-.") or "oneline"
    doc = {
        "commands": list(spec.commands),
        "names": list(spec.names),
        "params": [list(p) for p in spec.params],
        "hooks": {k: list(spec.hooks(k)) for k in HOOK_KINDS},
        "shell": spec.shell,
    }
    # hyperfine's flags (issue 32) join the hash only when given, so that the names of
    # campaigns made without them stay as they were
    extra = {
        "shell_words": list(spec.shell_words),
        "reference": spec.reference,
        "reference_name": spec.reference_name,
        "conclude": list(spec.conclude),
        "input": spec.input,
        "ignore_failure": spec.ignore_failure,
        "metric": list(spec.metric),  # another metric is another campaign
    }
    doc.update({k: v for k, v in extra.items() if v})
    digest = hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:8]
    return f"{stem}-{digest}"


@dataclass(frozen=True)
class WorkloadEntry:
    """One ``workloads:`` entry of the experiment file of the one-line form, its
    placeholders as they are written (``{NAME}`` of the ``-L`` parameters, other braces
    doubled): ``command`` one string (run by ``/bin/sh -c`` with ``shell``, else split) or
    an argv (``--shell``); ``metric`` None for the default; ``hooks`` the ``(kind,
    command)`` of each hook given, in the order of :data:`HOOK_KINDS`."""

    name: str
    command: str | tuple[str, ...]
    shell: bool
    cwd: str
    metric: str | tuple[str, ...] | None = None
    hooks: tuple[tuple[str, str | tuple[str, ...]], ...] = ()

    def to_yaml(self) -> dict[str, object]:
        """The entry as the experiment file writes it (keys in this order; an argv or a
        metric list a list of its own, so YAML writes no anchors)."""
        entry: dict[str, object] = {"name": self.name, "command": _yaml_value(self.command)}
        if self.shell:
            entry["shell"] = True
        entry["cwd"] = self.cwd
        if self.metric is not None:
            entry["metric"] = _yaml_value(self.metric)
        entry.update((kind, _yaml_value(command)) for kind, command in self.hooks)
        return entry


def _yaml_value(value: str | tuple[str, ...]) -> str | list[str]:
    """A string, or a new list of the strings of a tuple."""
    return value if isinstance(value, str) else list(value)


@dataclass(frozen=True)
class OneLineDocument:
    """The experiment file the one-line options stand for (:func:`oneline_document`):
    ``settings`` and ``executor`` as the file writes them (YAML values), ``matrix`` each
    ``-L`` parameter's values as typed."""

    name: str
    output: str
    workloads: tuple[WorkloadEntry, ...]
    description: str = ""
    settings: Mapping[str, object] = field(default_factory=dict)
    matrix: Mapping[str, list[str]] = field(default_factory=dict)
    executor: str | Mapping[str, object] | None = None

    def to_yaml(self) -> dict[str, object]:
        """The document as the experiment file writes it (keys in this order, an empty
        part left out): what :func:`oneline_text` dumps."""
        doc: dict[str, object] = {"name": self.name}
        if self.description:
            doc["description"] = self.description
        doc["output"] = self.output
        if self.settings:
            doc["settings"] = dict(self.settings)
        doc["workloads"] = [w.to_yaml() for w in self.workloads]
        if self.matrix:
            doc["matrix"] = {name: list(values) for name, values in self.matrix.items()}
        if self.executor is not None:
            doc["executor"] = self.executor
        return doc


def oneline_document(spec: OneLine, cwd: Path) -> OneLineDocument:
    """The experiment file of ``spec`` (see :func:`oneline_text`); a contradiction among
    the options is a UserError naming them."""
    if not spec.commands:
        raise UserError("no command; give one or more with -c CMD")
    matrix = parse_params(spec.params)
    commands, names = all_commands(spec)
    hooks = {k: _spread(k, spec.hooks(k), len(commands)) for k in HOOK_KINDS}
    settings = _settings(spec)
    if spec.reference is not None:
        if "reference" in settings:
            raise UserError("--reference and --set reference both name the reference; give one")
        settings["reference"] = names[commands.index(spec.reference)]
    if spec.baseline is not None:
        where = Path(spec.baseline).expanduser()
        if not where.exists():
            raise UserError(
                f"--baseline {spec.baseline}: not found; give a campaign directory, its "
                "benchrun.db, or a JSON summary"
            )
        settings["baseline"] = str(where.resolve())
    metric: str | tuple[str, ...] | None = None
    if spec.metric:
        metric = spec.metric[0] if len(spec.metric) == 1 else spec.metric
    workloads = []
    for i, command in enumerate(commands):
        given: list[tuple[str, str | tuple[str, ...]]] = []
        for kind in HOOK_KINDS:
            hook = hooks[kind][i]
            if hook is not None:
                given.append((kind, _in_shell(spec, escape_braces(hook, list(matrix)))))
        workloads.append(
            WorkloadEntry(
                name=names[i],
                command=_in_shell(spec, escape_braces(command, list(matrix))),
                shell=spec.shell,
                cwd=str(cwd),
                metric=metric,
                hooks=tuple(given),
            )
        )
    return OneLineDocument(
        name=spec.experiment_name or derived_name(spec),
        output=spec.output or DEFAULT_OUTPUT,
        workloads=tuple(workloads),
        description=spec.description,
        settings=settings,
        matrix=matrix,
        executor=spec.executor,
    )


def _settings(spec: OneLine) -> dict[str, object]:
    """``settings:`` of the ``--set`` items; an error about an item that a hyperfine flag
    made (``rounds`` of ``--runs``) names that flag."""
    if not spec.overrides:
        return {}
    try:
        return settings_from_overrides(spec.overrides)
    except UserError as exc:
        message = str(exc)
        for key, flag in spec.setting_flags:
            if message.startswith(f"--set {key}:"):  # only the flag sets it (hyperfine.py)
                raise UserError(flag + message[len(f"--set {key}") :]) from None
        raise


def _in_shell(spec: OneLine, command: str) -> str | tuple[str, ...]:
    """A command as the workload's ``command:`` or a hook: itself (run by ``/bin/sh -c``,
    or split with ``-N``), or ``(SHELL..., -c, command)`` with ``--shell SHELL``."""
    return (*spec.shell_words, "-c", command) if spec.shell_words else command


def all_commands(spec: OneLine) -> tuple[list[str], list[str]]:
    """Every command measured and its workload name, in order: with ``--reference CMD``
    that is not one of the ``-c`` commands, CMD first (named ``--reference-name`` or
    after itself), then the ``-c`` commands (named by ``-n``, in order)."""
    commands = list(spec.commands)
    names = default_names(commands, spec.names)
    if spec.reference is None:
        if spec.reference_name is not None:
            raise UserError("--reference-name needs --reference CMD")
        return commands, names
    if spec.reference in commands:
        if spec.reference_name is not None:
            raise UserError(
                f"--reference-name {spec.reference_name}: the reference is the command -c "
                f"{spec.reference!r}; name it with -n"
            )
        return commands, names
    name = spec.reference_name or default_names([spec.reference], [])[0]
    if name in names:
        raise UserError(
            f"--reference {spec.reference!r}: its name {name!r} is taken by a -c command; "
            "give --reference-name NAME"
        )
    return [spec.reference, *commands], [name, *names]


def oneline_text(spec: OneLine, cwd: Path) -> str:
    """The experiment file the one-line options stand for, as YAML text: what is stored
    with the campaign and what ``--print-config`` prints (``benchrun run`` runs it the
    same way)."""
    header = (
        "# benchrun experiment made by the one-line form of `benchrun run` (-c); run it "
        "with\n# `benchrun run FILE` (docs/oneline.md)\n"
    )
    body = yaml.safe_dump(
        oneline_document(spec, cwd).to_yaml(),
        sort_keys=False,
        allow_unicode=True,
        width=1000,
        default_flow_style=False,
    )
    return header + body


def oneline_experiment(spec: OneLine, cwd: Path, check_commands: bool = True) -> Experiment:
    """The :class:`Experiment` of the one-line options (its ``source_text`` is
    :func:`oneline_text`); an error in it names the option it came from (``-c 'sleep x'``,
    ``-L n``, ``--set rounds``) rather than a line of the generated text."""
    text = oneline_text(spec, cwd)
    try:
        return parse_experiment(
            text, display=DISPLAY, base_dir=cwd, source_path=None, check_commands=check_commands
        )
    except SourceError as exc:
        raise UserError(_option_error(spec, exc)) from None


def _option_error(spec: OneLine, exc: SourceError) -> str:
    """The loader's error about the generated text, naming the option instead."""
    path = exc.error.path
    message = exc.error.message
    option = "the one-line options"
    if path[:1] == ("name",):
        option = f"--experiment-name {spec.experiment_name}"
    elif path[:1] == ("output",):
        option = f"-o {spec.output}"
    elif path[:1] == ("settings",) and len(path) > 1:
        flags = dict(spec.setting_flags)
        if path[1] == "baseline":
            option = "--baseline"
        elif path[1] == "reference" and spec.reference is not None:
            option = f"--reference {spec.reference!r}"
        else:
            option = flags.get(str(path[1]), f"--set {path[1]}")
    elif path[:1] == ("executor",):
        option = "--executor"
    elif path[:1] == ("matrix",) and len(path) > 1:
        option = f"--parameter-scan {path[1]}" if path[1] == spec.scan else f"-L {path[1]}"
    elif path[:1] == ("workloads",) and len(path) > 1 and isinstance(path[1], int):
        commands, names = all_commands(spec)
        i = path[1]
        key = path[2] if len(path) > 2 else "command"
        shift = len(commands) - len(spec.commands)  # 1 with a --reference of its own
        if i < shift:
            option = f"--reference {spec.reference!r}"
        elif key == "name" and i - shift < len(spec.names):
            option = f"-n {names[i]!r}"
        elif key in HOOK_KINDS:
            given = spec.hooks(str(key))
            option = f"--{key} {(given[i] if len(given) > 1 else given[0])!r}"
        elif key == "metric":
            option = f"--metric {','.join(spec.metric)}"
        else:
            option = f"-c {spec.commands[i - shift]!r}"
    return f"{option}: {message}"


@dataclass(frozen=True)
class CommandSource:
    """One command of the one-line form as given, before the matrix: its workload
    ``name``, the ``command`` text, its ``-n``/``--reference-name`` name (None: named
    after itself) and its ``--conclude`` command (None: none)."""

    name: str
    command: str
    given_name: str | None
    conclude: str | None


def command_sources(spec: OneLine) -> list[CommandSource]:
    """Every command measured, in order, as :class:`CommandSource` (the ``--reference``
    first when it is not one of the ``-c`` commands); ``--conclude`` is spread like the
    hooks (once for all, or once per command)."""
    commands, names = all_commands(spec)
    shift = len(commands) - len(spec.commands)
    concludes = _spread("conclude", spec.conclude, len(commands))
    out = []
    for i, (command, name) in enumerate(zip(commands, names, strict=True)):
        if i < shift:
            given = spec.reference_name
        else:
            given = spec.names[i - shift] if i - shift < len(spec.names) else None
        out.append(CommandSource(name, command, given, concludes[i]))
    return out


def fill_params(text: str, params: Mapping[str, object]) -> str:
    """``text`` with ``{NAME}`` of each parameter replaced by its value (every other
    brace stays as it is, as in the commands of the one-line form)."""
    return _PLACEHOLDER.sub(
        lambda m: str(params[m.group(1)]) if m.group(1) in params else m.group(0), text
    )
