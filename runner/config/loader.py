"""Turning experiment YAML into :class:`runner.config.experiment.Experiment` (behind
:func:`runner.config.loader.load_experiment`): key checks, settings, matrix expansion,
placeholders, readings, executables.

Rules (documented for users in ``runner/templates/init.yaml``):

- ``output`` is relative to the current working directory (like hyperfine's export paths)
  and stored absolute; a workload's ``cwd`` and a command path containing ``/`` are
  relative to the experiment file's directory, which is also the default ``cwd``
  (``settings.workdir``, itself relative to the file, moves that start: benchrun sweep
  points it into each revision's worktree).
- ``params``/``matrix`` placeholders are filled in ``command`` and ``env`` at load time;
  ``{work}``/``{round}`` only in ``command``, at launch time.
- A workload is multiplied over the matrix names it uses (command or env), in the order
  the matrix lists them, and named ``name[a=1,b=2]``; one that uses none is not multiplied.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import itertools
import math
import os
import re
import shlex
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn, Self, TypeGuard

import regex
import yaml

from benchrun.runner.config.cpulist import available_cpus, parse_cpu_list
from benchrun.runner.config.durations import parse_job_time
from benchrun.runner.config.execstrings import env_problems, execve_problems
from benchrun.runner.config.experiment import (
    DEFAULT_OUTPUT,
    HOOK_KINDS,
    NODE_TYPE_PARAM,
    DuetSpec,
    Experiment,
    Hook,
    Metric,
    ParamValue,
    ReadingsSpec,
    Settings,
    SlurmSpec,
    Workload,
)
from benchrun.runner.config.placeholders import LAUNCH_TIME, placeholder_names, substitute
from benchrun.runner.config.schema import (
    DUET_KEYS,
    EXECUTOR_KEYS,
    MAX_JOB_TIME,
    MAX_NODE_TYPE_NAME,
    MAX_NODES,
    MIN_NODE_TYPES,
    NODE_TYPE_KEY_NAMES,
    NODE_TYPE_KEYS,
    NODE_TYPE_NAME_PATTERN,
    READINGS_KEYS,
    SETTINGS_KEYS,
    SIMPLE_KINDS,
    TOP_KEYS,
    WORKLOAD_KEYS,
    Key,
    check_simple,
    describe,
    key_names,
    unknown_key_message,
)
from benchrun.runner.config.yamlsource import (
    PathT,
    SourceError,
    SourceMap,
    dotted,
    env_limit,
    one_line,
    read_yaml,
)
from benchrun.runner.errors import UserError

_NAME_OK = re.compile(r"^[^/\\\s.\x00-\x1f\x7f][^/\\\s\x00-\x1f\x7f]{0,199}$")

#: largest experiment file read, in bytes (experiment files are a few kilobytes)
MAX_BYTES = 1 << 20
#: environment variable that raises :data:`MAX_BYTES`
MAX_BYTES_ENV = "BENCHRUN_MAX_CONFIG_BYTES"


def build_experiment(
    text: str,
    *,
    display: str,
    base_dir: Path,
    source_path: Path | None,
    check_commands: bool,
    overrides: Sequence[str] = (),
    collect: bool = False,
) -> Experiment:
    """See :func:`runner.config.loader.parse_experiment`."""
    doc, smap = _read_document(text, display, collect)
    name, description, output = _parse_header(doc, smap)
    doc, settings = _settings_with_overrides(doc, overrides, smap)
    matrix = _parse_matrix(doc.matrix, smap)
    for key_path, message in env_problems(
        ("settings", "env"), settings.env, "settings (every workload)"
    ):
        with smap.recover():
            smap.error(key_path, message)
    top_hooks, defaults = _top_hooks(doc.raw, smap)
    executor: SlurmSpec | None = None
    if "executor" in doc.raw:
        with smap.recover():
            executor = _parse_executor(doc.raw["executor"], ("executor",), smap, check_commands)
    fleet = executor is not None and bool(executor.node_types)
    if fleet:
        _check_fleet_names(doc, smap)
    settings, work_base = _resolve_workdir(settings, base_dir, check_commands, smap)
    workloads, complete = _parse_workloads(
        doc.workloads, matrix, settings, work_base, smap, check_commands, defaults
    )
    fleet_groups: tuple[tuple[str, ...], ...] = ()
    if fleet and complete:
        assert executor is not None
        with smap.recover():
            workloads, fleet_groups = _expand_node_types(workloads, executor, settings, smap)
    if check_commands:
        settings = _resolve_settings_paths(settings, base_dir, smap)
    compare = None
    if complete:  # names of a workload that could not be read would be reported missing
        compare = _check_comparisons(
            doc.compare, settings, workloads, matrix, fleet_groups if fleet else None, smap
        )
    if settings.duet and complete:
        with smap.recover():
            _check_duet(settings, executor, workloads, compare, smap)
    smap.raise_collected()
    out_path = Path(output).expanduser()
    return Experiment(
        name=name,
        description=description,
        output=out_path if out_path.is_absolute() else Path.cwd() / out_path,
        settings=settings,
        workloads=tuple(workloads),
        source_path=source_path,
        source_text=text,
        matrix={k: tuple(v) for k, v in matrix.items()},
        compare=compare,
        executor=executor,
        **top_hooks,
    )


@dataclasses.dataclass(frozen=True)
class _Sections:
    """A mapping of an experiment file as YAML gave it (``raw``, its keys checked by
    :func:`_check_keys`), with the keys each subclass names as fields read out of it: each
    such value still as YAML gave it (checked by its own parser), the field's default
    where the key is absent. ``raw`` serves the keys :func:`_simple` reads and the ones
    whose presence matters."""

    raw: Mapping[str, object]

    @classmethod
    def from_yaml(cls, raw: Mapping[str, object]) -> Self:
        """The record of ``raw``: the value of each key that names a field."""
        names = {f.name for f in dataclasses.fields(cls)} - {"raw"}
        return cls(raw, **{key: value for key, value in raw.items() if key in names})


@dataclasses.dataclass(frozen=True)
class _Document(_Sections):
    """The top level of an experiment file and its sections (an absent one None; an
    absent ``name`` is reported missing and ``experiment`` used)."""

    name: object = "experiment"
    settings: object = None
    workloads: object = None
    matrix: object = None
    compare: object = None


@dataclasses.dataclass(frozen=True)
class _WorkloadItem(_Sections):
    """One entry of ``workloads:`` and its keys that are null when absent (``params:``
    none, ``cwd:`` the experiment file's directory)."""

    params: object = None
    cwd: object = None


def _read_document(text: str, display: str, collect: bool) -> tuple[_Document, SourceMap]:
    """The experiment text read as YAML (within the size cap): a mapping whose top-level
    keys are checked, and its source map."""
    limit = byte_limit()
    if len(text) > limit and len(text.encode("utf-8")) > limit:
        raise UserError(_too_big(display, limit))
    data, smap = read_yaml(text, display, collect=collect)
    if data is None:
        smap.error(
            (),
            "the file is empty; expected a mapping with name: and workloads: "
            "(benchrun init writes an example)",
        )
    if not isinstance(data, dict):
        smap.error((), f"expected a mapping with name: and workloads:, got {describe(data)}")
    _check_keys(data, TOP_KEYS, (), smap)
    return _Document.from_yaml(data), smap


def _parse_header(doc: _Document, smap: SourceMap) -> tuple[str, str, str]:
    """``name``, ``description`` and ``output`` (a bad one reported, its default used)."""
    name = "experiment"
    with smap.recover():
        if not isinstance(doc.name, str) or not _NAME_OK.match(doc.name):
            smap.error(
                ("name",),
                f"bad experiment name {describe(doc.name)}; it names a directory: at most "
                "200 characters, no spaces, slashes or control characters, not starting with '.'",
            )
        name = doc.name
    description = ""
    with smap.recover():
        description = _simple(doc.raw, TOP_KEYS, "description", (), smap, "")
    output = DEFAULT_OUTPUT
    with smap.recover():
        output = _simple(doc.raw, TOP_KEYS, "output", (), smap, DEFAULT_OUTPUT)
        if not output.strip():
            output = DEFAULT_OUTPUT
            smap.error(("output",), "must not be empty; e.g. results")
    return name, description, output


def _settings_with_overrides(
    doc: _Document, overrides: Sequence[str], smap: SourceMap
) -> tuple[_Document, Settings]:
    """The document with ``--set`` items applied to its ``settings:``, and the settings."""
    if not overrides:
        return doc, _parse_settings(doc.settings, smap)
    doc = dataclasses.replace(doc, settings=_apply_overrides(doc.settings, overrides, smap))
    try:
        return doc, _parse_settings(doc.settings, smap)
    except UserError as exc:
        given = " ".join(f"--set {o}" for o in overrides)
        raise UserError(f"{exc} (settings of the file with {given})") from None


def _top_hooks(
    data: Mapping[str, object], smap: SourceMap
) -> tuple[dict[str, Hook | None], dict[str, tuple[object, PathT]]]:
    """The top-level hooks of the document ``data`` (their shape checked once; the
    keyword arguments of :class:`Experiment` of those given) and, for the workloads that
    give none, each one's value and key path."""
    defaults: dict[str, tuple[object, PathT]] = {}
    top_hooks: dict[str, Hook | None] = {}
    for kind in HOOK_KINDS:
        if kind in data:
            with smap.recover():
                top_hooks[kind] = _parse_hook(data[kind], kind, (kind,), smap)  # its shape, once
                defaults[kind] = (data[kind], (kind,))
    return top_hooks, defaults


def _resolve_workdir(
    settings: Settings, base_dir: Path, check_commands: bool, smap: SourceMap
) -> tuple[Settings, Path]:
    """Where the workloads' directories start: ``settings.workdir`` (relative to the file,
    stored absolute), else the file's directory."""
    if settings.workdir is None:
        return settings, base_dir
    where = Path(settings.workdir).expanduser()
    where = where if where.is_absolute() else base_dir / where
    with smap.recover():
        if check_commands and not where.is_dir():
            smap.error(
                ("settings", "workdir"),
                f"{settings.workdir} is not a directory (relative to the experiment file); "
                "give the directory the workloads' cwd starts from",
            )
        work_base = Path(os.path.normpath(where.absolute()))
        return dataclasses.replace(settings, workdir=str(work_base)), work_base
    return settings, base_dir


def _resolve_settings_paths(settings: Settings, base_dir: Path, smap: SourceMap) -> Settings:
    """``baseline`` and ``repository`` checked to exist and stored absolute (relative to
    the experiment file's directory)."""
    if settings.baseline is not None:
        where = Path(settings.baseline).expanduser()
        where = where if where.is_absolute() else base_dir / where
        with smap.recover():
            if not where.exists():
                smap.error(
                    ("settings", "baseline"),
                    f"{settings.baseline} not found (relative to the experiment file); give a "
                    "campaign directory, its benchrun.db, or a JSON summary",
                )
            settings = dataclasses.replace(settings, baseline=str(where.resolve()))
    if settings.repository is not None:
        where = Path(settings.repository).expanduser()
        where = where if where.is_absolute() else base_dir / where
        with smap.recover():
            if not where.is_dir():
                smap.error(
                    ("settings", "repository"),
                    f"{settings.repository} is not a directory (relative to the experiment "
                    "file); give the measured program's git checkout",
                )
            settings = dataclasses.replace(settings, repository=str(where.resolve()))
    return settings


def _check_comparisons(
    raw_compare: object,
    settings: Settings,
    workloads: list[Workload],
    matrix: dict[str, list[ParamValue]],
    fleet_groups: tuple[tuple[str, ...], ...] | None,
    smap: SourceMap,
) -> tuple[tuple[str, ...], ...] | None:
    """``settings.reference`` and ``settings.control`` checked to name workloads, and the
    comparison groups: a fleet's (``fleet_groups``), else those of ``compare:``
    (``raw_compare``, as YAML gave it)."""
    names = [w.name for w in workloads]
    compare = None
    with smap.recover():
        if settings.reference is not None and settings.reference not in names:
            smap.error(
                ("settings", "reference"),
                f"no workload named {settings.reference!r}; valid: {_listing(names)}",
            )
    with smap.recover():
        if settings.control is not None and settings.control not in names:
            smap.error(
                ("settings", "control"),
                f"no workload named {settings.control!r}; valid: {_listing(names)}",
            )
    with smap.recover():
        if fleet_groups is not None:  # the same workload across node types (compare: refused)
            compare = fleet_groups
        else:
            compare = _parse_compare(raw_compare, workloads, matrix, smap)
    with smap.recover():
        if settings.reference is not None and compare is not None:
            if not any(settings.reference in g for g in compare):
                smap.error(
                    ("settings", "reference"),
                    f"{settings.reference!r} is in no compare: group, so nothing is "
                    "compared with it",
                )
    return compare


def _parse_compare(
    raw: object, workloads: list[Workload], matrix: dict[str, list[ParamValue]], smap: SourceMap
) -> tuple[tuple[str, ...], ...] | None:
    """``compare:`` as groups of workload names (each workload in at most one group).

    An item is a list of names or shell-style patterns (an exact name wins over a pattern,
    so ``loop[n=1]`` is a name, not a character class), or ``{by: FACTOR}``: workloads
    that differ only in the matrix factor FACTOR form one group per combination of the
    other factors. Every group must hold >= 2 workloads of one metric and unit.
    """
    if raw is None:
        return None
    if not isinstance(raw, list) or not raw:
        smap.error(("compare",), f"expected a list of groups, got {describe(raw)}")
    names = [w.name for w in workloads]
    by_name = {w.name: w for w in workloads}
    groups: list[tuple[str, ...]] = []
    for i, item in enumerate(raw):
        path: PathT = ("compare", i)
        if isinstance(item, dict):
            if set(item) != {"by"}:
                smap.error(path, "expected {by: FACTOR} or a list of workload names")
            factor = item["by"]
            if factor not in matrix:
                smap.error(
                    path,
                    f"by: {describe(factor)} is not a matrix factor; valid: "
                    f"{_listing(list(matrix)) if matrix else '(no matrix)'}",
                )
            cells: dict[tuple[object, ...], list[str]] = {}
            for w in workloads:
                if factor in w.params and w.base_name is not None:
                    rest = (w.base_name, w.metric, w.unit) + tuple(
                        (k, str(v))
                        for k, v in sorted(w.params.items())
                        if k != factor and k in matrix
                    )
                    cells.setdefault(rest, []).append(w.name)
            found = [tuple(g) for g in cells.values() if len(g) >= 2]
            if not found:
                smap.error(path, f"no two workloads differ only in {factor!r}")
            groups.extend(found)
            continue
        if not isinstance(item, list) or not all(isinstance(x, str) for x in item):
            smap.error(path, f"expected a list of workload names, got {describe(item)}")
        group: list[str] = []
        for pattern in item:
            hits = [pattern] if pattern in by_name else fnmatch.filter(names, pattern)
            if not hits:
                smap.error(path, f"{pattern!r} matches no workload; valid: {_listing(names)}")
            group.extend(h for h in hits if h not in group)
        if len(group) < 2:
            smap.error(path, f"a group needs at least 2 workloads, got {group}")
        kinds = {(by_name[n].metric, by_name[n].unit) for n in group}
        if len(kinds) > 1:
            smap.error(
                path,
                "a group's workloads must share one metric and unit, got "
                + ", ".join(f"{m} ({u})" for m, u in sorted(kinds)),
            )
        groups.append(tuple(group))
    seen: dict[str, int] = {}
    for i, g in enumerate(groups):
        for n in g:
            if n in seen:
                smap.error(
                    ("compare",),
                    f"{n} is in two groups ({seen[n] + 1} and {i + 1}); "
                    "a workload may be in one group only",
                )
            seen[n] = i
    return tuple(groups)


def _check_duet(
    settings: Settings,
    executor: SlurmSpec | None,
    workloads: list[Workload],
    compare: tuple[tuple[str, ...], ...] | None,
    smap: SourceMap,
) -> None:
    """``duet: true`` needs one pair to run together (docs/duet.md): exactly two workloads,
    or one ``compare:`` group of two; two CPUs to pin them to; this machine."""
    path: PathT = ("settings", "duet")
    pair_ok = len(workloads) == 2 or (
        compare is not None and len(compare) == 1 and len(compare[0]) == 2
    )
    if not pair_ok:
        smap.error(
            path,
            f"duet runs two workloads at the same time, but the experiment has "
            f"{len(workloads)} and no single compare: group of 2; keep two workloads "
            "or give compare: [[A, B]]",
        )
    if settings.pin == "none":
        smap.error(path, "duet pins each side to its own CPU; remove pin: none (or use auto)")
    if isinstance(settings.pin, tuple) and len(settings.pin) < 2:
        smap.error(path, f"duet needs two CPUs, pin lists {list(settings.pin)}; list two")
    if executor is not None:
        smap.error(path, "duet runs on this machine only; remove executor: slurm")


# ------------------------------------------------------------------------------- helpers


def _listing(names: list[str], limit: int = 12) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f", ... ({len(names)} in all)" if len(names) > limit else "")


def _check_keys(
    mapping: Mapping[str, object], keys: tuple[Key, ...], path: PathT, smap: SourceMap
) -> list[str]:
    """Report every unknown key of ``mapping`` and every missing required one (each
    recorded on its own by a collecting map); returns the names of the missing ones."""
    valid = key_names(keys)
    for key in mapping:
        if key in valid:
            continue
        message = unknown_key_message(key, valid)
        if path != ("settings",) and key in key_names(SETTINGS_KEYS):
            message += f" ({key!r} is a setting: put it under settings:)"
        with smap.recover():
            smap.error(path + (key,), message)
    missing = [key.name for key in keys if key.required and key.name not in mapping]
    for name in missing:
        where = "the experiment" if not path else "this entry"
        with smap.recover():
            smap.error(path, f"missing required key {name!r} in {where}")
    return missing


def _simple(
    mapping: Mapping[str, object],
    keys: tuple[Key, ...],
    name: str,
    path: PathT,
    smap: SourceMap,
    default: Any,
) -> Any:
    """Key ``name`` of ``mapping`` (YAML as given) checked and converted by its kind
    (:func:`runner.config.schema.check_simple`), ``default`` when it is absent."""
    if name not in mapping:
        return default
    key = next(k for k in keys if k.name == name)
    try:
        return check_simple(key, mapping[name])
    except ValueError as exc:
        smap.error(path + (name,), str(exc))


def _mapping(value: object, path: PathT, smap: SourceMap, what: str) -> Mapping[str, object]:
    """``value`` (YAML as given) as a mapping of ``what``; null is an empty one."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        smap.error(path, f"expected a mapping of {what}, got {describe(value)}")
    return value


# ------------------------------------------------------------------------------ settings

#: the environment variable that sets ``settings.contended`` for files that do not set it
#: (exclude, keep or fail; anything else is ignored). The test suite sets keep: its two
#: workers share the machine's CPUs (tests/conftest.py, docs/contention.md)
ENV_CONTENDED = "BENCHRUN_CONTENDED"
CONTENDED_CHOICES = ("exclude", "keep", "fail")


def _parse_settings(raw: object, smap: SourceMap) -> Settings:
    """``settings:`` (YAML as given) as :class:`Settings`: each value checked (a bad one
    reported, its default kept), then the rules between them."""
    path: PathT = ("settings",)
    section: Mapping[str, object] = {}
    with smap.recover():
        section = _mapping(raw, path, smap, "setting: value")
    _check_keys(section, SETTINGS_KEYS, path, smap)
    values = _parse_setting_values(section, smap)
    if "contended" not in section and os.environ.get(ENV_CONTENDED) in CONTENDED_CHOICES:
        # the default where the file says nothing (docs/contention.md); stored with the
        # campaign's settings like a value the file gave
        values["contended"] = os.environ[ENV_CONTENDED]
    settings = Settings(**values)
    if settings.extend_rounds is None:
        # time is the budget unless the file or --set gave max_rounds: then it is a cap
        # (stored resolved, so a resumed campaign keeps it; docs/controller.md "Budgets")
        settings = dataclasses.replace(settings, extend_rounds="max_rounds" not in section)
    with smap.recover():
        if "adaptive" not in section and "rounds" in section:
            # `rounds: N` alone asks for exactly N rounds
            settings = dataclasses.replace(settings, adaptive=False)
        elif settings.adaptive and "rounds" in section:
            smap.error(
                path + ("rounds",),
                "rounds is the count of fixed mode, but adaptive is true; remove rounds "
                "(adaptive mode runs until the statistics are good enough, see max_rounds) "
                "or set adaptive: false",
            )
    with smap.recover():
        if settings.min_rounds > settings.max_rounds:
            smap.error(
                path + ("max_rounds",),
                f"max_rounds ({settings.max_rounds}) is below "
                f"min_rounds ({settings.min_rounds}); raise max_rounds or lower min_rounds",
            )
    with smap.recover():
        if settings.adaptive and settings.warmup_rounds > settings.max_rounds:
            # warm-up rounds are rounds of the workload: max_rounds bounds them too, or a
            # large warmup_rounds runs for hours before the budget is ever looked at (issue
            # 29: 13 772 warm-up rounds with max_rounds 20); docs/limits.md "Budgets"
            smap.error(
                path + ("warmup_rounds",),
                f"warmup_rounds ({settings.warmup_rounds}) is above max_rounds "
                f"({settings.max_rounds}): warm-up rounds may not outnumber the most rounds "
                "a workload may run; lower warmup_rounds or raise max_rounds",
            )
    return settings


class _OverrideMap(SourceMap):
    """Source map of ``--set`` settings: errors name the option, not a file line."""

    def error(self, path: Sequence[str | int], message: str, at: str = "key") -> NoReturn:
        raise UserError(f"--set {dotted(tuple(path)[1:])}: {one_line(message)}")


def _apply_overrides(raw: object, overrides: Sequence[str], smap: SourceMap) -> dict[str, object]:
    """The file's ``settings:`` mapping with ``--set KEY=VALUE`` items applied (later items
    win). VALUE is read as YAML (``2m``, ``0.1``, ``null``, ``[0, 1]``); each key and the
    overrides on their own are validated first, so a bad item is reported as ``--set ...``
    rather than as a line of the file."""
    given: dict[str, object] = {}
    for item in overrides:
        key, sep, text = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise UserError(f"--set {item}: expected KEY=VALUE, e.g. --set max_time=2m")
        if key not in key_names(SETTINGS_KEYS):
            raise UserError(f"--set {key}: {unknown_key_message(key, key_names(SETTINGS_KEYS))}")
        try:
            yaml.compose(text, Loader=yaml.SafeLoader)  # syntax only: aliases not expanded
        except yaml.YAMLError as exc:
            raise UserError(f"--set {key}: value {text!r} is not valid YAML ({exc})") from None
        # read_yaml caps what aliases expand to, as for a file
        try:
            given[key] = read_yaml(text, f"--set {key}")[0] if text.strip() else None
        except SourceError as exc:  # a one-line value has no line to name
            raise UserError(f"--set {key}: {exc.error.message}") from None
    _parse_setting_values(given, _OverrideMap("--set"))
    section = dict(_mapping(raw, ("settings",), smap, "setting: value"))
    if "rounds" in given and "adaptive" not in given:
        section.pop("adaptive", None)  # --set rounds=N asks for fixed mode, as in a file
    match given:
        case {"adaptive": True} if "rounds" not in given:
            section.pop("rounds", None)  # --set adaptive=true overrides the file's fixed count
    section.update(given)
    return section


def settings_from_overrides(overrides: Sequence[str]) -> dict[str, object]:
    """The ``settings:`` mapping that ``--set KEY=VALUE`` items make on their own (values
    as read from YAML, later items winning), each item checked like :func:`load_experiment`
    checks them (one-line ``--set KEY: ...`` errors)."""
    return _apply_overrides(None, overrides, SourceMap("--set"))


def _parse_setting_values(section: Mapping[str, object], smap: SourceMap) -> dict[str, Any]:
    """Each setting of ``section`` (YAML as given) checked on its own (kind, range,
    choices); the keys are assumed valid. Returns the keyword arguments of
    :class:`runner.config.experiment.Settings`: each value converted to its field's type by
    its key's checks (the type of a field is declared with its key, so ``Any`` here)."""
    path: PathT = ("settings",)
    values: dict[str, Any] = {}
    for key in SETTINGS_KEYS:
        if key.name not in section:
            continue
        with smap.recover():  # a bad value is reported and the default kept
            if key.kind in SIMPLE_KINDS:
                values[key.name] = _simple(section, SETTINGS_KEYS, key.name, path, smap, None)
            elif key.kind == "pin":
                values["pin"] = _parse_pin(section["pin"], path + ("pin",), smap)
            elif key.kind == "duet":
                values["duet"] = _parse_duet(section["duet"], path + ("duet",), smap)
    return values


def _parse_duet(value: object, path: PathT, smap: SourceMap) -> DuetSpec | None:
    """``settings.duet``: true (the defaults), false or null (off), or a mapping of the
    keys of :data:`runner.config.schema.DUET_KEYS` (docs/duet.md)."""
    if value is None or value is False:
        return None
    if value is True:
        return DuetSpec()
    if not isinstance(value, dict):
        smap.error(
            path,
            f"expected true, false or a mapping (force, solo_every, asymmetry, cpus), "
            f"got {describe(value)}",
        )
    _check_keys(value, DUET_KEYS, path, smap)
    spec = DuetSpec()
    for key in DUET_KEYS:
        with smap.recover():
            got = _simple(value, DUET_KEYS, key.name, path, smap, getattr(spec, key.name))
            spec = dataclasses.replace(spec, **{key.name: got})
    if spec.solo_every == 1:
        smap.error(
            path + ("solo_every",),
            "1 would make every pass a solo pass (no duet left); use 0 (no solo passes) "
            "or at least 2",
        )
    return spec


def _parse_pin(value: object, path: PathT, smap: SourceMap) -> str | tuple[int, ...]:
    if value in ("auto", "none"):
        return str(value)
    try:
        return parse_cpu_list(value, available_cpus())
    except ValueError as exc:
        smap.error(path, f"{exc}; or use auto | none")


# -------------------------------------------------------------------------------- matrix


def _scalar(value: object) -> TypeGuard[ParamValue]:
    """Whether ``value`` (YAML as given) can be a placeholder's value."""
    return isinstance(value, (str, int, float, bool))


def _placeholder_name_ok(name: object, path: PathT, smap: SourceMap, what: str) -> None:
    if not isinstance(name, str) or not name.isidentifier():
        smap.error(
            path,
            f"{what} name {name!r} cannot be a placeholder; use letters, digits "
            "and _ (not starting with a digit)",
        )
    if name in LAUNCH_TIME:
        smap.error(
            path,
            f"{name!r} is reserved for {{{name}}}, filled in by the runner; pick another name",
        )


def _parse_matrix(raw: object, smap: SourceMap) -> dict[str, list[ParamValue]]:
    """``matrix:`` (YAML as given): factor name -> its values (a factor with bad values
    keeps a stand-in)."""
    matrix: Mapping[str, object] = {}
    with smap.recover():
        matrix = _mapping(raw, ("matrix",), smap, "name: [values]")
    out: dict[str, list[ParamValue]] = {}
    for name, values in matrix.items():
        path: PathT = ("matrix", name)
        with smap.recover():
            _placeholder_name_ok(name, path, smap, "matrix")
            # a name with bad values stays, with a stand-in value, so that the workloads
            # using it are checked too (collecting), without a second error for them
            out[name] = ["?"]
            if not isinstance(values, list) or not values:
                smap.error(
                    path,
                    f"expected a non-empty list of values, got {describe(values)}; e.g. "
                    f"{name}: [1, 2]",
                )
            for index, item in enumerate(values):
                if not _scalar(item):
                    smap.error(
                        path + (index,), f"expected a string or number, got {describe(item)}"
                    )
            out[name] = values
    return out


# ----------------------------------------------------------------------------- workloads


class _Skipped(Exception):
    """A workload that cannot be read further (its errors are already recorded)."""


def _parse_workloads(
    raw: object,
    matrix: dict[str, list[ParamValue]],
    settings: Settings,
    base_dir: Path,
    smap: SourceMap,
    check_commands: bool,
    defaults: dict[str, tuple[object, PathT]],
) -> tuple[list[Workload], bool]:
    """The expanded workloads, and whether every entry of the list could be read (a
    collecting map goes on past a broken workload, so the checks that need every name are
    skipped when one is missing). ``defaults``: the top-level hooks (value, key path)."""
    if raw is None:
        return [], False  # reported by _check_keys as a missing key
    if not isinstance(raw, list):
        smap.error(
            ("workloads",), f"expected a list of workloads (- name: ...), got {describe(raw)}"
        )
    if not raw:
        smap.error(
            ("workloads",), "the list is empty; add at least one workload with name: and command:"
        )
    out: list[Workload] = []
    complete = True
    first_seen: dict[str, int] = {}
    used_matrix: set[str] = set()
    for index, item in enumerate(raw):
        expanded: list[Workload] = []
        read = False
        try:
            with smap.recover():
                expanded, used = _parse_workload(
                    item,
                    ("workloads", index),
                    matrix,
                    settings,
                    base_dir,
                    smap,
                    check_commands,
                    room=settings.max_workloads - len(out),
                    defaults=defaults,
                )
                used_matrix |= used
                read = True
        except _Skipped:
            pass
        complete = complete and read
        for workload in expanded:
            with smap.recover():
                if workload.name in first_seen:
                    smap.error(
                        ("workloads", index, "name"),
                        f"duplicate workload name {workload.name!r} (also "
                        f"workloads[{first_seen[workload.name]}]); names must be unique after "
                        "matrix expansion",
                    )
                first_seen[workload.name] = index
                out.append(workload)
    for name in matrix:
        with smap.recover():
            if name not in used_matrix and complete:
                smap.error(
                    ("matrix", name),
                    f"no workload uses {{{name}}} in its command, env or hooks; use it or "
                    "remove it",
                )
    return out, complete


@dataclasses.dataclass(frozen=True)
class _Entry:
    """One entry of ``workloads:`` read and checked, its ``params``/``matrix`` placeholders
    not yet filled: what :func:`_expand_entry` makes each of its workloads from."""

    name: str
    path: PathT
    command: tuple[str, ...]
    shell: bool
    params: dict[str, ParamValue]
    work: int | None
    metric: Metric
    extra_metrics: tuple[Metric, ...]
    readings: ReadingsSpec | None
    env_templates: dict[str, str]
    cwd: str
    timeout: float | None
    per_work: bool
    memory_limit: int | None
    hooks: dict[str, tuple[Hook, PathT]]


def _simple_or_default(
    item: Mapping[str, object], key: str, path: PathT, smap: SourceMap, default: Any
) -> Any:
    """A simple key of a workload checked; a bad value is reported and ``default`` used."""
    with smap.recover():
        return _simple(item, WORKLOAD_KEYS, key, path, smap, default)
    return default


def _parse_workload(
    item: object,
    path: PathT,
    matrix: dict[str, list[ParamValue]],
    settings: Settings,
    base_dir: Path,
    smap: SourceMap,
    check_commands: bool,
    room: int,
    defaults: dict[str, tuple[object, PathT]],
) -> tuple[list[Workload], set[str]]:
    """One entry of ``workloads:`` expanded over the matrix names it uses, and those names.

    A collecting map records each problem and goes on with the key's default; problems
    that leave nothing to go on with (no command, no name) raise :class:`_Skipped`.
    """
    if not isinstance(item, dict):
        smap.error(
            path, f"expected a workload mapping (name:, command:, ...), got {describe(item)}"
        )
    if _check_keys(item, WORKLOAD_KEYS, path, smap):
        raise _Skipped
    name = item["name"]
    if not isinstance(name, str) or not name.strip() or any(_control(c) for c in name):
        smap.error(path + ("name",), f"expected a non-empty one-line string, got {describe(name)}")
    shell = _simple_or_default(item, "shell", path, smap, False)
    work = _simple_or_default(item, "work", path, smap, None)
    per_work = _simple_or_default(item, "per_work", path, smap, False)
    memory_limit = _simple_or_default(item, "memory_limit", path, smap, None)
    timeout = _simple_or_default(item, "timeout", path, smap, None)
    env_templates = _simple_or_default(item, "env", path, smap, {})
    command = _parse_command(item["command"], shell, path + ("command",), smap)
    given = _WorkloadItem.from_yaml(item)
    params = _parse_params(given, path, matrix, smap)
    readings, metric, extra_metrics = _parse_metrics(item, path, smap)
    with smap.recover():
        if per_work and work is None:
            smap.error(
                path + ("per_work",), "per_work: true needs work: N (the amount each round does)"
            )
    cwd = str(base_dir)
    with smap.recover():
        cwd = _parse_cwd(given.cwd, base_dir, path + ("cwd",), smap, check_commands)
    used = _command_placeholders(command, shell, work, path, smap)
    used |= _env_placeholders(env_templates, path, smap)
    hooks = _workload_hooks(item, path, defaults, work, used, smap)
    factors = [m for m in matrix if m in used]
    count = math.prod(len(matrix[f]) for f in factors)
    if count > room:
        cap = settings.max_workloads
        smap.error(
            path,
            f"expands over the matrix to {count} workloads, and the experiment may have at "
            f"most {cap} (settings: max_workloads); raise max_workloads if you mean it",
        )
    entry = _Entry(
        name=name,
        path=path,
        command=command,
        shell=shell,
        params=params,
        work=work,
        metric=metric,
        extra_metrics=extra_metrics,
        readings=readings,
        env_templates=env_templates,
        cwd=cwd,
        timeout=timeout,
        per_work=per_work,
        memory_limit=memory_limit,
        hooks=hooks,
    )
    out = [
        _expand_entry(entry, dict(zip(factors, combo, strict=True)), settings, smap, check_commands)
        for combo in itertools.product(*(matrix[f] for f in factors))
    ]
    return out, set(factors)


def _parse_params(
    item: _WorkloadItem,
    path: PathT,
    matrix: dict[str, list[ParamValue]],
    smap: SourceMap,
) -> dict[str, ParamValue]:
    """A workload's ``params:`` (of the entry ``item``): names that are placeholders and
    not matrix names, scalar values (a bad one reported and kept as ``?`` so that its uses
    are still checked)."""
    given: Mapping[str, object] = {}
    with smap.recover():
        given = _mapping(item.params, path + ("params",), smap, "name: value")
    params: dict[str, ParamValue] = {}
    for pname, value in given.items():
        params[pname] = value if _scalar(value) else "?"
        with smap.recover():
            _placeholder_name_ok(pname, path + ("params", pname), smap, "param")
            if pname in matrix:
                smap.error(
                    path + ("params", pname),
                    f"{pname!r} is also a matrix name; give it in params or in matrix, not both",
                )
            if not _scalar(value):  # kept as "?": the places that use it are still checked
                smap.error(
                    path + ("params", pname), f"expected a string or number, got {describe(value)}"
                )
    return params


def _parse_metrics(
    item: Mapping[str, object], path: PathT, smap: SourceMap
) -> tuple[ReadingsSpec | None, Metric, tuple[Metric, ...]]:
    """A workload's ``readings:`` and ``metric:``: the readings spec, the deciding metric
    and the others of a metric list."""
    readings = None
    readings_ok = True
    if "readings" in item:
        readings_ok = False
        with smap.recover():
            readings = _parse_readings(item["readings"], path + ("readings",), smap)
            readings_ok = True
    default = ("readings",) if "readings" in item else ("wall_time",)
    metrics = _simple_or_default(item, "metric", path, smap, default)
    metric = metrics[0]
    with smap.recover():
        if readings_ok and readings is not None and metric != "readings":
            smap.error(
                path + ("metric",),
                f"metric {metric!r} with readings:; readings imply "
                "metric: readings first (drop metric or drop readings)",
            )
        if readings_ok and readings is None and metric == "readings":
            smap.error(
                path + ("metric",),
                "metric: readings needs readings: (pattern: or format: jsonl + field:)",
            )
        if "readings" in metrics[1:]:
            smap.error(
                path + ("metric",),
                "readings can only be the first metric of a list (the round's values are the "
                "readings); put it first or leave it out",
            )
    if not readings_ok:
        metric = "wall_time"  # the readings are reported; check the rest as if they were not
    return readings, metric, tuple(m for m in metrics[1:] if m != "readings")


def _command_placeholders(
    command: tuple[str, ...], shell: bool, work: int | None, path: PathT, smap: SourceMap
) -> set[str]:
    """The placeholder names a workload's command uses (``{work}`` needs ``work:``)."""
    used: set[str] = set()
    for i, part in enumerate(command):
        try:
            used.update(placeholder_names(part))
        except ValueError as exc:
            smap.error(path + ("command",) + (() if shell else (i,)), str(exc))
    with smap.recover():
        if "work" in used and work is None:
            smap.error(
                path + ("command",),
                "uses {work} but the workload has no work:; add work: N "
                "(the amount substituted for {work})",
            )
    return used


def _env_placeholders(env_templates: dict[str, str], path: PathT, smap: SourceMap) -> set[str]:
    """The placeholder names a workload's ``env:`` values use; a variable whose value is
    bad (or uses ``{work}``/``{round}``) is reported and dropped from ``env_templates``."""
    used: set[str] = set()
    for var, template in list(env_templates.items()):
        with smap.recover():
            try:
                names = placeholder_names(template)
            except ValueError as exc:
                del env_templates[var]
                smap.error(path + ("env", var), str(exc))
            if set(names) & set(LAUNCH_TIME):
                del env_templates[var]
                smap.error(
                    path + ("env", var),
                    "{work} and {round} are filled in command only (and in prepare), not in env",
                )
            used.update(names)
    return used


def _workload_hooks(
    item: Mapping[str, object],
    path: PathT,
    defaults: dict[str, tuple[object, PathT]],
    work: int | None,
    used: set[str],
    smap: SourceMap,
) -> dict[str, tuple[Hook, PathT]]:
    """A workload's hooks (its own, else the top-level default) with the key path each was
    written at; the placeholder names they use are added to ``used``."""
    hooks: dict[str, tuple[Hook, PathT]] = {}
    for kind in HOOK_KINDS:
        raw, hpath = (
            (item[kind], path + (kind,)) if kind in item else defaults.get(kind, (None, ()))
        )
        with smap.recover():
            hook = _parse_hook(raw, kind, hpath, smap)
            if hook is None:
                continue
            for i, part in enumerate(hook.command):
                where = hpath + (() if hook.shell else (i,))
                try:
                    names = placeholder_names(part)
                except ValueError as exc:
                    smap.error(where, str(exc))
                if kind == "prepare" and "work" in names and work is None:
                    smap.error(
                        where,
                        "uses {work} but the workload has no work:; add work: N "
                        "(the amount substituted for {work})",
                    )
                if kind != "prepare" and set(names) & set(LAUNCH_TIME):
                    smap.error(
                        where,
                        f"{{work}} and {{round}} are filled in command and prepare only, not in "
                        f"{kind}",
                    )
                used.update(n for n in names if n not in LAUNCH_TIME)
            hooks[kind] = (hook, hpath)
    return hooks


def _expand_entry(
    entry: _Entry,
    chosen: dict[str, ParamValue],
    settings: Settings,
    smap: SourceMap,
    check_commands: bool,
) -> Workload:
    """The workload of ``entry`` for one combination ``chosen`` of its matrix factors:
    placeholders filled, named ``name[a=1,b=2]``, its strings checked for execve."""
    values = {**entry.params, **chosen}
    path, shell = entry.path, entry.shell

    def fill(template: str, keep: tuple[str, ...], where: PathT) -> str:
        with smap.recover():
            return _fill(template, values, keep, where, smap)
        return template  # reported; the rest of the workload is still checked

    argv = tuple(
        fill(part, LAUNCH_TIME, path + ("command",) + (() if shell else (i,)))
        for i, part in enumerate(entry.command)
    )
    env = {var: fill(t, (), path + ("env", var)) for var, t in entry.env_templates.items()}
    filled: dict[str, Hook] = {}  # the keyword arguments of Workload of its hooks
    for kind, (hook, hpath) in entry.hooks.items():
        keep = LAUNCH_TIME if kind == "prepare" else ()
        filled[kind] = Hook(
            tuple(
                fill(part, keep, hpath + (() if hook.shell else (i,)))
                for i, part in enumerate(hook.command)
            ),
            hook.shell,
        )
    full_name = entry.name
    if chosen:
        full_name = f"{entry.name}[{','.join(f'{k}={v}' for k, v in chosen.items())}]"
    # NUL and unencodable text in what execve is handed (runner/config/execstrings.py)
    for key_path, message in execve_problems(
        full_name,
        (path + ("command",), argv),
        (path + ("env",), env),
        [(k, entry.hooks[k][1], h.command, h.shell) for k, h in filled.items()],
        shell,
    ):
        with smap.recover():
            smap.error(key_path, message)
    if check_commands and not shell:
        with smap.recover():
            _check_executable(argv[0], entry.cwd, env, settings, path + ("command",), smap)
    return Workload(
        name=full_name,
        command=argv,
        shell=shell,
        params=values,
        work=entry.work,
        metric=entry.metric,
        extra_metrics=entry.extra_metrics,
        readings=entry.readings,
        env=env,
        cwd=entry.cwd,
        timeout=entry.timeout,
        per_work=entry.per_work,
        memory_limit=entry.memory_limit,
        base_name=entry.name if chosen else None,
        **filled,
    )


def _parse_hook(raw: object, kind: str, path: PathT, smap: SourceMap) -> Hook | None:
    """A ``setup``/``prepare``/``cleanup`` value: one string (run by ``/bin/sh -c``), a
    list of arguments (run without a shell), or null (none)."""
    if raw is None:
        return None
    if isinstance(raw, str):
        if not raw.strip():
            smap.error(path, f"empty {kind} command; give a command, or null for none")
        return Hook((raw,), shell=True)
    if not isinstance(raw, list):
        smap.error(
            path,
            f"expected a command: one string (run by /bin/sh -c) or a list of arguments, "
            f"got {describe(raw)}",
        )
    if not raw:
        smap.error(path, f"empty {kind} command; give a command, or null for none")
    for i, part in enumerate(raw):
        if isinstance(part, bool) or not isinstance(part, (str, int, float)):
            smap.error(path + (i,), f"expected a string argument, got {describe(part)}; quote it")
    return Hook(tuple(str(part) for part in raw), shell=False)


def _control(char: str) -> bool:
    """True for ASCII control characters (NUL, newlines, tabs, DEL)."""
    return ord(char) < 32 or ord(char) == 127


def _fill(
    template: str,
    values: Mapping[str, ParamValue],
    keep: tuple[str, ...],
    path: PathT,
    smap: SourceMap,
) -> str:
    try:
        return substitute(template, values, keep=keep)
    except ValueError as exc:
        smap.error(path, str(exc))


def _parse_command(raw: object, shell: bool, path: PathT, smap: SourceMap) -> tuple[str, ...]:
    if isinstance(raw, str):
        if not raw.strip():
            smap.error(path, "empty command; give the program and its arguments")
        if shell:
            return (raw,)
        try:
            parts = shlex.split(raw)
        except ValueError as exc:
            smap.error(
                path,
                f"cannot split the command like a shell would ({exc}); fix the quoting "
                "or give a list of arguments",
            )
        return tuple(parts)
    if not isinstance(raw, list):
        smap.error(path, f"expected a list of arguments or a string, got {describe(raw)}")
    if not raw:
        smap.error(path, "empty command; give the program and its arguments")
    for i, part in enumerate(raw):
        if isinstance(part, bool) or not isinstance(part, (str, int, float)):
            smap.error(path + (i,), f"expected a string argument, got {describe(part)}; quote it")
    if shell and len(raw) != 1:
        smap.error(path, "with shell: true give the command as one string (run by /bin/sh -c)")
    return tuple(str(part) for part in raw)


def _parse_cwd(raw: object, base_dir: Path, path: PathT, smap: SourceMap, check: bool) -> str:
    """A workload's directory: its ``cwd:`` ``raw`` relative to ``base_dir`` (null:
    ``base_dir``), normalised; with ``check`` it must exist."""
    if raw is None:
        return str(base_dir)
    if not isinstance(raw, str) or not raw:
        smap.error(path, f"expected a directory path, got {describe(raw)}")
    directory = base_dir / Path(raw).expanduser()
    if check and not directory.is_dir():
        smap.error(
            path,
            f"directory {str(directory)!r} does not exist; cwd is relative to the "
            "experiment file's directory",
        )
    return os.path.normpath(directory)


def _check_executable(
    program: str, cwd: str, env: dict[str, str], settings: Settings, path: PathT, smap: SourceMap
) -> None:
    if any(p in program for p in ("{work}", "{round}")):
        return
    if "/" in program:
        candidate = Path(cwd) / program
        if not candidate.exists():
            smap.error(
                path,
                f"executable {program!r} not found (looked for {str(candidate)!r}); "
                "paths are relative to the experiment file's directory or cwd:",
            )
        if candidate.is_dir() or not os.access(candidate, os.X_OK):
            smap.error(
                path,
                f"{program!r} is not an executable file; chmod +x it, or run it through "
                "its interpreter (e.g. [python3, script.py])",
            )
        return
    search = env.get("PATH", settings.env.get("PATH", os.environ.get("PATH", os.defpath)))
    if shutil.which(program, path=search) is None:
        smap.error(
            path,
            f"executable {program!r} not found on PATH; install it, fix the name, "
            "or give its path (e.g. ./prog)",
        )


# ------------------------------------------------------------------------------ executor

#: sbatch options that other keys of ``executor:`` set (option -> the key to use)
_SBATCH_KEYS = {
    "-p": "partition",
    "--partition": "partition",
    "-C": "constraint",
    "--constraint": "constraint",
    "-N": "nodes",
    "--nodes": "nodes",
    "-w": "nodes",
    "--nodelist": "nodes",
    "-A": "account",
    "--account": "account",
    "-t": "time",
    "--time": "time",
    "--exclusive": "exclusive",
}
#: sbatch options benchrun sets itself: the job must run its agent and nothing else
_SBATCH_OWN = ("--wrap", "--parsable", "-o", "--output", "-e", "--error", "-a", "--array")
#: characters refused in partition, constraint and account names (they end up in argv,
#: never in a shell, but a newline or NUL there is always a mistake)
_SLURM_NAME_BAD = re.compile(r"[\s\x00-\x1f\x7f]")


def _parse_executor(raw: object, path: PathT, smap: SourceMap, check: bool) -> SlurmSpec | None:
    """``executor:``: ``local`` (None), ``slurm`` (a :class:`SlurmSpec` of defaults) or a
    mapping with ``kind:`` and the keys of :data:`EXECUTOR_KEYS`. With ``check``, sbatch
    must be on PATH for ``slurm``."""
    if raw is None or raw == "local":
        return None
    if isinstance(raw, str):
        if raw != "slurm":
            smap.error(path, f"got {describe(raw)}; valid: local | slurm, or a mapping with kind:")
        spec = SlurmSpec()
    elif isinstance(raw, dict):
        missing = _check_keys(raw, EXECUTOR_KEYS, path, smap)
        if missing:
            return None
        kind = _simple(raw, EXECUTOR_KEYS, "kind", path, smap, None)
        if kind == "local":
            extra = sorted(str(k) for k in raw if k != "kind")
            if extra:
                smap.error(
                    path + (extra[0],), f"{extra[0]} is a key of kind: slurm; kind local has none"
                )
            return None
        keys = tuple(k for k in EXECUTOR_KEYS if k.name != "node_types")
        values = _executor_values(raw, keys, path, smap)
        spec = SlurmSpec(**{k: v for k, v in values.items() if v is not None or k == "time"})
        if "node_types" in raw:
            types = _parse_node_types(raw["node_types"], values, path + ("node_types",), smap)
            spec = dataclasses.replace(spec, node_types=types)
    else:
        smap.error(path, f"got {describe(raw)}; valid: local | slurm, or a mapping with kind:")
    if check and shutil.which("sbatch") is None:
        smap.error(
            path,
            "executor slurm needs the Slurm commands (sbatch, squeue, scancel, sinfo), and "
            "sbatch is not on PATH; run benchrun on a submit host of the cluster",
        )
    return spec


def _executor_values(
    raw: Mapping[str, object], keys: tuple[Key, ...], path: PathT, smap: SourceMap
) -> dict[str, Any]:
    """The keys of ``keys`` that ``raw`` (YAML as given) gives (``kind`` aside), checked
    and converted: keyword arguments of :class:`SlurmSpec` (a collecting map goes on past
    a bad one; each value of its field's type by its key's checks, so ``Any`` here)."""
    values: dict[str, Any] = {}
    for key in keys:
        if key.name == "kind" or key.name not in raw:
            continue
        where = path + (key.name,)
        with smap.recover():
            value = raw[key.name]
            if key.kind == "nodes":
                values["nodes"] = _parse_nodes(value, where, smap)
            elif key.kind == "slurm_time":
                values["time"] = _parse_job_time(value, key, where, smap)
            else:
                values[key.name] = _simple(raw, keys, key.name, path, smap, None)
            if key.name in ("partition", "constraint", "account", "python"):
                _slurm_name(values[key.name], key.name, where, smap)
            elif key.name == "sbatch_args":
                _check_sbatch_args(values["sbatch_args"], where, smap)
            elif key.name == "listen":
                _check_listen(values["listen"], where, smap)
    return values


def _parse_node_types(
    raw: object, shared: Mapping[str, object], path: PathT, smap: SourceMap
) -> tuple[tuple[str, SlurmSpec], ...]:
    """``node_types:`` (docs/slurm.md, Fleet): name -> where-keys (:data:`NODE_TYPE_KEYS`),
    each type's spec being the shared keys ``shared`` with its own on top."""
    if not isinstance(raw, dict):
        smap.error(
            path,
            f"expected a mapping of node type name -> {{partition: ..., constraint: ...}}, "
            f"got {describe(raw)}",
        )
    if len(raw) < MIN_NODE_TYPES:
        smap.error(
            path,
            f"a fleet compares at least {MIN_NODE_TYPES} node types, got {len(raw)}; for one "
            "kind of node give its partition/constraint in executor: itself",
        )
    types: list[tuple[str, SlurmSpec]] = []
    for name, item in raw.items():
        where = path + (name,)
        with smap.recover():
            if not isinstance(name, str) or not re.match(NODE_TYPE_NAME_PATTERN, name):
                smap.error(
                    where,
                    f"bad node type name {describe(name)}: it is part of workload names "
                    f"(bench[{NODE_TYPE_PARAM}=NAME]), so 1 to {MAX_NODE_TYPE_NAME} letters, "
                    "digits, '_', '-', '.', '+', starting with a letter or digit",
                )
            if item is None:
                item = {}
            if not isinstance(item, dict):
                smap.error(
                    where,
                    f"expected a mapping of {', '.join(NODE_TYPE_KEY_NAMES)}, got {describe(item)}",
                )
            for key in item:
                if key not in NODE_TYPE_KEY_NAMES:
                    with smap.recover():
                        shared_key = key in key_names(EXECUTOR_KEYS)
                        smap.error(
                            where + (key,),
                            f"{key} is shared by every node type: give it in executor: itself"
                            if shared_key
                            else unknown_key_message(key, NODE_TYPE_KEY_NAMES),
                        )
            own = _executor_values(item, NODE_TYPE_KEYS, where, smap)
            merged = {**shared, **own}
            spec = SlurmSpec(**{k: v for k, v in merged.items() if v is not None or k == "time"})
            types.append((name, spec))
    seen: dict[SlurmSpec, str] = {}
    for name, spec in types:
        if spec in seen:
            with smap.recover():
                smap.error(
                    path + (name,),
                    f"node types {seen[spec]} and {name} ask for the same jobs: a node type "
                    "compared with itself; give each type its own partition, constraint or nodes",
                )
        seen.setdefault(spec, name)
    return tuple(types)


def _expand_node_types(
    workloads: list[Workload],
    executor: SlurmSpec,
    settings: Settings,
    smap: SourceMap,
) -> tuple[list[Workload], tuple[tuple[str, ...], ...]]:
    """Each workload once per node type (param ``node_type``, name ``bench[node_type=alpha]``
    or ``loop[n=1,node_type=alpha]``), and the comparison groups: each workload's
    copies, "the same benchmark across node types" (docs/slurm.md, Fleet)."""
    names = executor.node_type_names
    count = len(workloads) * len(names)
    if count > settings.max_workloads:
        smap.error(
            ("executor", "node_types"),
            f"{len(workloads)} workloads on {len(names)} node types are {count} workloads, and "
            f"the experiment may have at most {settings.max_workloads} (settings: "
            "max_workloads); raise max_workloads if you mean it",
        )
    out: list[Workload] = []
    groups: list[tuple[str, ...]] = []
    for w in workloads:
        copies = []
        for t in names:
            part = f"{NODE_TYPE_PARAM}={t}"
            if w.base_name is not None and w.name.endswith("]"):
                name = f"{w.name[:-1]},{part}]"
            else:
                name = f"{w.name}[{part}]"
            copies.append(
                dataclasses.replace(
                    w,
                    name=name,
                    params={**w.params, NODE_TYPE_PARAM: t},
                    base_name=w.base_name or w.name,
                )
            )
        out.extend(copies)
        groups.append(tuple(c.name for c in copies))
    return out, tuple(groups)


def _check_fleet_names(doc: _Document, smap: SourceMap) -> None:
    """``node_type`` is the fleet's own factor: no ``matrix:`` factor and no param has it."""
    if isinstance(doc.matrix, dict) and NODE_TYPE_PARAM in doc.matrix:
        with smap.recover():
            smap.error(
                ("matrix", NODE_TYPE_PARAM),
                f"{NODE_TYPE_PARAM} is the fleet's own factor (executor: node_types:), every "
                "workload runs on each node type; rename this factor",
            )
    for i, item in enumerate(doc.workloads if isinstance(doc.workloads, list) else []):
        params = _WorkloadItem.from_yaml(item).params if isinstance(item, dict) else None
        if isinstance(params, dict) and NODE_TYPE_PARAM in params:
            with smap.recover():
                smap.error(
                    ("workloads", i, "params", NODE_TYPE_PARAM),
                    f"{NODE_TYPE_PARAM} is set by the fleet (executor: node_types:) to each "
                    "node type in turn; rename this param",
                )
    if doc.compare is not None:
        with smap.recover():
            smap.error(
                ("compare",),
                "not with executor node_types: in a fleet the comparison is across node "
                "types (each workload on one type against the same workload on the "
                "others); remove compare:",
            )


def _parse_nodes(value: object, path: PathT, smap: SourceMap) -> int | tuple[str, ...]:
    if isinstance(value, bool) or value is None:
        smap.error(path, f"expected a node count or a list of node names, got {describe(value)}")
    if isinstance(value, int):
        if not 1 <= value <= MAX_NODES:
            smap.error(path, f"{value} is out of range; a node count is 1 to {MAX_NODES}")
        return value
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value:
        smap.error(path, f"expected a node count or a list of node names, got {describe(value)}")
    names: list[str] = []
    for i, item in enumerate(value):
        if not isinstance(item, str) or not item or _SLURM_NAME_BAD.search(item) or "," in item:
            smap.error(
                path + (i,),
                f"expected a node name or a hostlist expression like node[01-04], got "
                f"{describe(item)}",
            )
        if item in names:
            smap.error(path + (i,), f"node {item!r} is listed twice")
        names.append(item)
    return tuple(names)


def _parse_job_time(value: object, key: Key, path: PathT, smap: SourceMap) -> float | None:
    if value is None:
        return None
    try:
        seconds = parse_job_time(value, smap.plain_scalars.get(path))
    except ValueError as exc:
        smap.error(path, str(exc))
    if not 60 <= seconds <= MAX_JOB_TIME:
        smap.error(
            path,
            f"{seconds:g} s is out of range; Slurm keeps time limits in whole minutes, so "
            f"give 1 minute to {MAX_JOB_TIME / 86400:g} days (or null: the partition's default)",
        )
    return seconds


def _slurm_name(value: str | None, name: str, path: PathT, smap: SourceMap) -> None:
    if value is not None and (not value or _SLURM_NAME_BAD.search(value)):
        smap.error(path, f"bad {name} {value!r}: empty, or holds spaces or control characters")


def _check_sbatch_args(args: tuple[str, ...], path: PathT, smap: SourceMap) -> None:
    for i, arg in enumerate(args):
        option = arg.split("=", 1)[0]
        if not arg.startswith("-") or "\x00" in arg or "\n" in arg:
            smap.error(
                path + (i,),
                f"{arg!r} is not an sbatch option; give each option as one string "
                "starting with -, e.g. --qos=short",
            )
        if option in _SBATCH_KEYS:
            smap.error(
                path + (i,),
                f"{option} is set by executor key {_SBATCH_KEYS[option]}:; give it there",
            )
        short = option[:2] if not option.startswith("--") else option
        if option in _SBATCH_OWN or short in _SBATCH_OWN:
            smap.error(
                path + (i,),
                f"benchrun sets {option} itself (the job runs benchrun's agent); remove it",
            )
        if not option.startswith("--") and short in _SBATCH_KEYS:
            smap.error(
                path + (i,),
                f"{short} is set by executor key {_SBATCH_KEYS[short]}:; give it there",
            )


def _check_listen(value: str | None, path: PathT, smap: SourceMap) -> None:
    if value is None:
        return
    host, sep, port = value.rpartition(":") if value.count(":") == 1 else (value, "", "")
    if not sep:
        host = value
    bad_port = sep and (not port.isdigit() or not 0 <= int(port) <= 65535)
    if not host or _SLURM_NAME_BAD.search(host) or bad_port:
        smap.error(
            path, f"bad address {value!r}; give HOST or HOST:PORT, e.g. login1 or 10.0.0.5:7700"
        )


# ------------------------------------------------------------------------------ readings


def _parse_readings(raw: object, path: PathT, smap: SourceMap) -> ReadingsSpec:
    if not isinstance(raw, dict):
        smap.error(
            path, f"expected a mapping (pattern: REGEX, unit:, direction:), got {describe(raw)}"
        )
    _check_keys(raw, READINGS_KEYS, path, smap)

    def simple(key: str, default: Any) -> Any:
        return _simple(raw, READINGS_KEYS, key, path, smap, default)

    pattern = simple("pattern", None)
    field_name = simple("field", None)
    if pattern is not None and field_name is not None:
        smap.error(path, "give pattern: (regex) or field: (jsonl), not both")
    inferred = "jsonl" if field_name is not None else "regex"
    fmt = simple("format", inferred)
    if fmt == "regex":
        if pattern is None:
            smap.error(
                path, "format regex needs pattern: with one capture group, e.g. 'time=([0-9.]+)'"
            )
        try:
            groups = regex.compile(pattern).groups
        except regex.error as exc:
            smap.error(path + ("pattern",), f"invalid regular expression: {exc}")
        if groups != 1:
            smap.error(
                path + ("pattern",),
                f"the pattern has {groups} capture groups; it needs exactly "
                "one, around the number (use (?:...) for other groups)",
            )
    else:
        if field_name is None or not field_name:
            smap.error(
                path, "format jsonl needs field: (the key holding the value in each JSON line)"
            )
        if pattern is not None:
            smap.error(
                path + ("pattern",), "pattern: is for format regex; format jsonl uses field:"
            )
    return ReadingsSpec(
        format=fmt,
        pattern=pattern,
        field=field_name,
        unit=simple("unit", ""),
        direction=simple("direction", "lower_is_better"),
        max_readings=simple("max_readings", ReadingsSpec.max_readings),
        match_timeout=simple("match_timeout", ReadingsSpec.match_timeout),
    )


def load_experiment(
    path: str | Path,
    *,
    check_commands: bool = True,
    overrides: Sequence[str] = (),
    text: str | None = None,
    collect: bool = False,
) -> Experiment:
    """Read, validate and expand an experiment file.

    Raises :class:`runner.errors.UserError` (exit code 2) with one line
    ``FILE:LINE: key: what is wrong; what is valid`` for any problem; with ``collect``,
    every problem found in one pass is in the :class:`ConfigErrors` raised (its ``errors``),
    each with file, line and key (``benchrun validate``).
    ``check_commands=False`` skips the checks that depend on this machine's files
    (executables on PATH, ``cwd`` existing) — e.g. to re-read a stored config.
    ``overrides``: ``KEY=VALUE`` settings that replace the file's (``benchrun run --set``).
    ``text``: the file's content as it was earlier (the daemon runs the text submitted):
    used instead of reading ``path``, which still anchors relative paths.
    """
    display = str(path)
    file = Path(path).expanduser()
    try:
        if text is None:
            text = _read_capped(file, display)
    except FileNotFoundError:
        raise UserError(
            f"{display}: file not found; check the path (benchrun init FILE writes an example)"
        ) from None
    except IsADirectoryError:
        raise UserError(f"{display}: is a directory; give the experiment YAML file") from None
    except UnicodeDecodeError as exc:
        raise UserError(f"{display}: not UTF-8 text ({exc.reason}); save it as UTF-8") from None
    except OSError as exc:
        raise UserError(f"{display}: cannot read: {exc.strerror or exc}") from None
    resolved = file.resolve()
    return parse_experiment(
        text,
        display=display,
        base_dir=resolved.parent,
        source_path=resolved,
        check_commands=check_commands,
        overrides=overrides,
        collect=collect,
    )


def _read_capped(file: Path, display: str) -> str:
    """The UTF-8 text of ``file``, refusing more than :func:`byte_limit` bytes without
    reading past the limit (``/dev/zero`` is refused at once)."""
    limit = byte_limit()
    with file.open("rb") as stream:
        data = stream.read(limit + 1)
    if len(data) > limit:
        raise UserError(_too_big(display, limit))
    return data.decode("utf-8")


def byte_limit() -> int:
    """:data:`MAX_BYTES`, or the value of the environment variable :data:`MAX_BYTES_ENV`."""
    return env_limit(MAX_BYTES_ENV, MAX_BYTES, "bytes")


def _too_big(display: str, limit: int) -> str:
    return (
        f"{display}: larger than {limit} bytes; an experiment file is a few kilobytes "
        f"(is this the right file?); set {MAX_BYTES_ENV} to raise the limit"
    )


def parse_experiment(
    text: str,
    *,
    display: str = "<experiment>",
    base_dir: Path | None = None,
    source_path: Path | None = None,
    check_commands: bool = True,
    overrides: Sequence[str] = (),
    collect: bool = False,
) -> Experiment:
    """Validate and expand experiment YAML ``text`` (what :func:`load_experiment` does after
    reading the file). ``base_dir`` anchors relative ``cwd`` and executable paths
    (default: the current directory); ``display`` names the file in errors; ``overrides``
    are ``KEY=VALUE`` settings applied over the file's ``settings:``; ``collect``: report
    every problem at once (:class:`runner.config.yamlsource.ConfigErrors`)."""
    return build_experiment(
        text,
        display=display,
        base_dir=base_dir if base_dir is not None else Path.cwd(),
        source_path=source_path,
        check_commands=check_commands,
        overrides=overrides,
        collect=collect,
    )
