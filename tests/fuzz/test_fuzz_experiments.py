"""Fuzzing experiment files: whatever the text, validation ends in a clear UserError or an
Experiment, never another exception, a hang or unbounded memory (issue 16).

Three generators: structured files built from the real key tables with hostile values
(huge and non-finite numbers, NUL and control characters, wrong types, deep nesting),
random mutations of the example experiments in configs/, and arbitrary text.
"""

from __future__ import annotations

import copy
import resource
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchrun.runner.config.experiment import Experiment
from benchrun.runner.config.loader import parse_experiment
from benchrun.runner.config.schema import READINGS_KEYS, SETTINGS_KEYS, TOP_KEYS, WORKLOAD_KEYS
from benchrun.runner.errors import UserError

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((REPO / "configs").glob("*.yaml"))
FUZZ = settings(
    max_examples=1200,
    deadline=2000,  # ms per example: a hang or a blow-up fails here
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=True,
)

hostile_numbers = st.sampled_from(
    [0, -1, 1, 2**63, 2**64 + 1, 10**30, -(10**30), 1e308, -1e308, 5e-324,
     float("inf"), float("-inf"), float("nan"), 0.5, 1e-9]
)  # fmt: skip
hostile_text = st.one_of(
    st.text(max_size=30),
    st.sampled_from(
        ["", " ", "\x00", "a\x00b", "1e999s", "NaNs", "-5s", "1e15h", "99999999999999999999GiB",
         "{work}", "{", "}", "{nope}", "{{", "(a+)+b", "(", "0-", "0-99999", "auto", "none",
         "../..", "/", ".hidden", "x" * 300, "1.5.3", "true", "null"]
    ),
)  # fmt: skip
scalars = st.one_of(st.none(), st.booleans(), st.integers(), hostile_numbers, hostile_text)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(hostile_text, inner, max_size=4)
    ),
    max_leaves=12,
)


BASE: dict[str, Any] = {
    "name": "fuzz",
    "settings": {"adaptive": False, "rounds": 3},
    "matrix": {"x": [1, 2]},
    "workloads": [
        {"name": "a", "command": ["echo", "{work}", "{x}"], "work": 10},
        {"name": "b", "command": "echo b", "readings": {"pattern": "b=([0-9]+)"}},
    ],
}
SLOTS = (
    [((), k.name) for k in TOP_KEYS]
    + [(("settings",), k.name) for k in SETTINGS_KEYS]
    + [(("workloads", i), k.name) for k in WORKLOAD_KEYS for i in (0, 1)]
    + [(("workloads", 1, "readings"), k.name) for k in READINGS_KEYS]
    + [(("matrix",), "x"), (("matrix",), "work"), ((), "unknown"), (("settings",), "rouns")]
)


def _perturbed(changes: list[tuple[int, Any]]) -> dict[str, Any]:
    """BASE with each ``(slot index, value)`` written in (deep copy; bad parents skipped)."""
    doc: Any = copy.deepcopy(BASE)  # plain dicts, lists, str and int: as a YAML round trip
    for slot, value in changes:
        where, key = SLOTS[slot % len(SLOTS)]
        node = doc
        for part in where:
            if isinstance(node, dict) and part in node:
                node = node[part]
            elif isinstance(node, list) and isinstance(part, int) and part < len(node):
                node = node[part]
            else:
                node = None
        if isinstance(node, dict):
            node[key] = value
    return doc


experiments = st.builds(
    _perturbed,
    st.lists(st.tuples(st.integers(0, len(SLOTS) - 1), values), min_size=1, max_size=3),
)


def _check(text: str) -> None:
    try:
        result = parse_experiment(text, check_commands=False)
    except UserError as exc:
        message = str(exc)
        assert message and "\n" not in message and "Traceback" not in message
    else:
        assert isinstance(result, Experiment)


@FUZZ
@given(experiments)
def test_structured_hostile_experiments_give_a_clear_error_or_an_experiment(
    doc: dict[str, Any],
) -> None:
    _check(yaml.safe_dump(doc, allow_unicode=True))


@FUZZ
@given(st.sampled_from(EXAMPLES), st.data())
def test_mutated_example_experiments_give_a_clear_error_or_an_experiment(
    example: Path, data: st.DataObject
) -> None:
    text = example.read_text()
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(text)))
        cut = data.draw(st.integers(0, 8))
        insert = data.draw(
            st.one_of(
                hostile_text, st.sampled_from(["&a ", "*a", "- ", ": ", "\n  ", "'", '"', "[", "{"])
            )
        )
        text = text[:at] + insert + text[at + cut :]
    _check(text)


@settings(max_examples=600, deadline=2000, derandomize=True)
@given(st.text(max_size=400))
def test_arbitrary_text_gives_a_clear_error_or_an_experiment(text: str) -> None:
    _check(text)


def test_fuzzing_kept_memory_bounded() -> None:
    """Runs after the fuzz tests in this module: the process never grew past 1 GiB."""
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss < 1 << 20  # KiB
