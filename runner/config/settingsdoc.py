"""What is written about the settings, derived from their one declaration (the fields of
:class:`runner.config.settings.Settings`, runner/config/keys.py): the ``settings:``
block of ``benchrun init``'s example and the table of docs/settings.md.

``python -m benchrun.runner.config.settingsdoc > docs/settings.md`` writes the table;
tests/config/test_settings_declared.py checks that the file is current.
"""

from __future__ import annotations

import json

from benchrun.runner.config.keys import Key, declared_default, declared_init_lines
from benchrun.runner.config.schema import DUET_KEYS, SETTINGS_KEYS, bounds_text
from benchrun.runner.config.settings import DuetSpec, Settings

#: the groups of ``benchrun init``'s ``settings:`` block: the comment that opens each and
#: its settings in the order the example shows them (presentation only: what each line
#: says is its setting's declaration; every setting is in exactly one group)
INIT_GROUPS: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = tuple(
    (header, tuple(names.split()))
    for header, names in (
        (
            (
                "--- adaptive mode (the default): run each workload until its CI is tight "
                "enough and",
                "    every pair of neighbouring results is told apart or shown equivalent, with "
                "error",
                "    rates that stay honest however long it runs (docs/methods.md section 10)",
            ),
            "adaptive ci_rel_width alpha margin min_rounds min_subsessions max_rounds max_time "
            "min_round_time baseline reference comparison paired_test duet warmup_readings "
            "control",
        ),
        (
            (
                "--- fixed mode: a file that sets `rounds:` (and not adaptive:) runs exactly "
                "that many",
            ),
            "rounds",
        ),
        (
            ("--- both modes",),
            "warmup_rounds order seed pin timeout confidence env record_env secret_env "
            "repository workdir tune fail_fast max_consecutive_failures on_interrupt "
            "output_limit memory_limit quiet_load quiet_max_wait max_workloads hook_timeout "
            "wait_for_cpus contended contended_threshold extend_rounds",
        ),
    )
)

#: the column of ``benchrun init``'s example where the comments start
INIT_COMMENT_COLUMN = 31
#: where ``init``'s template (runner/templates/init.yaml) takes the ``settings:`` block
INIT_MARKER = "  # {settings}"


def init_settings_block() -> str:
    """The ``settings:`` entries of ``benchrun init``'s example (without the ``settings:``
    line), each setting's value and comment as its declaration gives them.

    Raises ``AssertionError`` when :data:`INIT_GROUPS` does not name every setting once.
    """
    lines_of = declared_init_lines(Settings)
    shown = [name for _, names in INIT_GROUPS for name in names]
    assert sorted(shown) == sorted(lines_of), "INIT_GROUPS must name every setting once"
    out: list[str] = []
    for i, (header, names) in enumerate(INIT_GROUPS):
        if i:
            out.append("")
        out.extend(f"  # {line}" for line in header)
        for name in names:
            line = lines_of[name]
            entry = f"  {'# ' if line.commented_out else ''}{name}: {line.value}"
            out.append(f"{entry.ljust(INIT_COMMENT_COLUMN)}# {line.comment[0]}")
            out.extend(" " * INIT_COMMENT_COLUMN + f"# {more}" for more in line.comment[1:])
    return "\n".join(out)


def render_init(template: str) -> str:
    """``template`` (runner/templates/init.yaml) with its :data:`INIT_MARKER` line replaced
    by :func:`init_settings_block`."""
    marker = INIT_MARKER + "\n"
    assert template.count(marker) == 1, f"init.yaml must hold {INIT_MARKER!r} once"
    return template.replace(marker, init_settings_block() + "\n")


_KIND_TEXT = {
    "int": "integer",
    "number": "number",
    "bool": "true or false",
    "str": "string",
    "duration": "duration (90s, 2h)",
    "size": "size (64KiB)",
    "str_list": "list of strings",
    "str_map": "mapping NAME: value",
    "pin": "auto, none or a CPU list",
    "duet": "true or a mapping (docs/duet.md)",
}


def _kind_text(key: Key) -> str:
    text = " \\| ".join(key.choices) if key.kind == "enum" else _KIND_TEXT[key.kind]
    return text + (", or null" if key.nullable else "")


def _default_text(key: Key, value: object) -> str:
    """The default as YAML the loader reads back to it (durations in seconds, sizes in
    bytes)."""
    if isinstance(value, tuple):
        value = list(value)
    if isinstance(value, float) and value.is_integer() and key.kind == "duration":
        value = int(value)
    if isinstance(value, str):
        return value
    return json.dumps(value)


def settings_table() -> str:
    """docs/settings.md: one row per setting (key, kind, default, range, description)."""
    rows = [
        "# Settings",
        "",
        "<!-- written by `python -m benchrun.runner.config.settingsdoc > docs/settings.md`",
        "     from the declaration of each setting (runner/config/settings.py Settings) -->",
        "",
        "Every key of an experiment file's `settings:` section, in the order `benchrun schema`",
        "lists them. `benchrun init` writes an example with a comment on each;",
        "`--set KEY=VALUE` (run, validate) gives one on the command line. A duration is a",
        "number of seconds or a number with a unit (500ms, 90s, 30m, 2h, 1h30m); a size a",
        "number of bytes or a number with a unit (64KiB, 1MB). The defaults are written in",
        "seconds and bytes.",
        "",
        "| key | value | default | range | what it does |",
        "| --- | --- | --- | --- | --- |",
    ]
    rows.extend(_rows(Settings, SETTINGS_KEYS))
    rows += [
        "",
        "## `duet:` as a mapping",
        "",
        "`duet: true` takes these defaults (docs/duet.md).",
        "",
        "| key | value | default | range | what it does |",
        "| --- | --- | --- | --- | --- |",
    ]
    rows.extend(_rows(DuetSpec, DUET_KEYS))
    return "\n".join(rows) + "\n"


def _rows(cls: type, keys: tuple[Key, ...]) -> list[str]:
    """The table rows of ``keys``, the fields of dataclass ``cls``."""
    rows = []
    for key in keys:
        default = _default_text(key, declared_default(cls, key.name))
        doc = key.doc.replace("|", "\\|")
        rows.append(
            f"| `{key.name}` | {_kind_text(key)} | `{default}` | {bounds_text(key)} | {doc} |"
        )
    return rows


if __name__ == "__main__":  # pragma: no cover
    print(settings_table(), end="")
