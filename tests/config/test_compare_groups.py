"""``compare:`` in the experiment file: which workloads are compared (issue 14, item 4)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import jsonschema
import pytest
import yaml

from benchrun.runner.campaign.adaptive import controller_for
from benchrun.runner.config.loader import load_experiment
from benchrun.runner.config.schema import json_schema
from benchrun.runner.errors import UserError

BASE = """\
name: cmp
workloads:
  - name: sum
    command: ["true", "{n}"]
  - name: sleep
    command: ["true"]
  - name: rss
    command: ["true"]
    metric: max_rss
matrix:
  n: [1, 2, 3]
"""


def load(tmp_path: Path, compare: str, settings: str = "") -> object:
    text = BASE + textwrap.dedent(compare) + settings
    path = tmp_path / "exp.yaml"
    path.write_text(text)
    jsonschema.validate(yaml.safe_load(text), json_schema())
    return load_experiment(path)


def test_without_compare_every_metric_is_one_group(tmp_path: Path) -> None:
    e = load(tmp_path, "")
    assert e.compare is None
    groups = {n: e.comparison_group(n) for n in e.names}
    assert groups["sleep"] == groups["sum[n=1]"] == "wall_time:s"
    assert groups["rss"] != groups["sleep"]


def test_by_factor_groups_workloads_that_differ_only_in_it(tmp_path: Path) -> None:
    e = load(tmp_path, "compare:\n  - by: n\n")
    assert e.compare == (("sum[n=1]", "sum[n=2]", "sum[n=3]"),)
    assert e.comparison_group("sleep") is None
    ctrl = controller_for(e, [], None)
    # sleep and rss are compared with nothing: each alone in its group
    assert len({ctrl.group[n] for n in e.names}) == 3


def test_lists_take_names_and_patterns_exact_names_first(tmp_path: Path) -> None:
    e = load(tmp_path, 'compare:\n  - [sleep, "sum[n=1]"]\n  - ["sum[n=2*", "sum[n=3]"]\n')
    assert e.compare == (("sleep", "sum[n=1]"), ("sum[n=2]", "sum[n=3]"))


@pytest.mark.parametrize(
    ("compare", "message"),
    [
        ("compare:\n  - by: m\n", "'m' is not a matrix factor; valid: n"),
        ("compare:\n  - [sleep, nothing*]\n", "'nothing*' matches no workload"),
        ("compare:\n  - [sleep]\n", "a group needs at least 2 workloads"),
        ("compare:\n  - [sleep, rss]\n", "must share one metric and unit"),
        ("compare:\n  - [sleep, 'sum*']\n  - by: n\n", "is in two groups"),
        ("compare: sleep\n", "expected a list of groups"),
    ],
)
def test_bad_compare_names_the_line_and_the_fix(tmp_path: Path, compare: str, message: str) -> None:
    path = tmp_path / "exp.yaml"
    path.write_text(BASE + compare)
    with pytest.raises(UserError, match="exp.yaml:1[0-9]: compare") as err:
        load_experiment(path)
    assert message in str(err.value)


def test_reference_must_be_in_a_group(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="in no compare: group"):
        load(tmp_path, "compare:\n  - by: n\n", "settings: {reference: sleep}\n")
