"""The pieces of sweep and bisect that need no process (issue 31, item 5): the search's
bound and answer against every possible first slower revision, a step's verdict from a
stored comparison, and the fingerprint that keeps the revisions of a sweep one series."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from benchrun.runner.campaign.revisions import (
    Search,
    StepResult,
    classify,
    search_steps,
    step_names,
    workdir_in,
)
from benchrun.runner.campaign.worktrees import Commit
from benchrun.runner.config.loader import parse_experiment
from benchrun.runner.results.verdicts import StoredComparison, verdicts_from_dict


def _commits(n: int) -> list[Commit]:
    return [Commit(f"{i:040x}", f"{i:07x}", "2026-01-01", f"commit {i}") for i in range(n)]


def _step(c: Commit, verdict: str) -> StepResult:
    return StepResult(c, 1, "db", False, None, None, None, "-", verdict, "")


@pytest.mark.parametrize("n", [1, 2, 3, 7, 8, 31, 32, 100])
def test_the_search_finds_every_first_bad_revision_within_its_bound(n: int) -> None:
    cands = _commits(n)
    assert search_steps(n) == 1 + math.ceil(math.log2(n))
    for first in range(n):  # the truth: candidates[first:] are slower
        search = Search(cands)
        while (i := search.next_index()) is not None:
            search.record(i, _step(cands[i], "bad" if i >= first else "good"))
        assert search.first_bad == cands[first]
        assert len(search.steps) <= search_steps(n)
        assert search.steps[0].revision == cands[-1]  # BAD is checked first


def test_bad_not_slower_and_undecided_stop_the_search() -> None:
    cands = _commits(31)
    search = Search(cands)
    search.record(30, _step(cands[30], "good"))
    assert search.next_index() is None and search.stopped == "not slower"
    assert search.first_bad is None
    search = Search(cands)
    search.record(30, _step(cands[30], "bad"))
    i = search.next_index()
    assert i == 14
    search.record(i, _step(cands[i], "good"))
    j = search.next_index()
    assert j is not None
    search.record(j, _step(cands[j], "undecided"))
    assert search.next_index() is None and search.first_bad is None
    assert search.remaining == cands[15:31]  # after the newest good, up to the oldest bad


def _cmp(verdict: str, ratio: float, low: float | None, high: float | None) -> StoredComparison:
    """The baseline comparison of ``b@t`` with ``b@good`` as a stored verdicts event holds it."""
    stored = {"name": "b@t", "baseline": "b@good", "verdict": verdict, "ratio": ratio,
              "ratio_low": low, "ratio_high": high}  # fmt: skip
    (comparison,) = verdicts_from_dict({"baselines": [stored]}).baselines
    return comparison


@pytest.mark.parametrize(
    ("comparison", "direction", "expected"),
    [
        (_cmp("slower", 1.10, 1.07, 1.13), "lower_is_better", "bad"),
        (_cmp("slower", 1.03, 1.01, 1.045), "lower_is_better", "good"),
        (_cmp("slower", 1.06, 1.03, 1.09), "lower_is_better", "undecided"),
        (_cmp("slower", 1.10, None, None), "lower_is_better", "undecided"),
        (_cmp("equivalent", 1.01, 0.99, 1.03), "lower_is_better", "good"),
        (_cmp("faster", 0.8, 0.78, 0.82), "lower_is_better", "good"),
        (_cmp("undecided", 1.2, 0.9, 1.5), "lower_is_better", "undecided"),
        # a throughput 10 % lower is 1/0.9 = 1.11x worse
        (_cmp("slower", 0.9, 0.88, 0.92), "higher_is_better", "bad"),
        (None, "lower_is_better", "undecided"),
    ],
)
def test_a_step_is_bad_only_when_its_whole_ci_is_beyond_the_threshold(
    comparison: StoredComparison | None, direction: str, expected: str
) -> None:
    verdict, why, ratio, low, high = classify(comparison, direction, 0.05)
    assert verdict == expected, why
    if expected == "bad" and direction == "higher_is_better":
        assert low is not None and low == pytest.approx(1 / 0.92)


def test_step_names_keep_a_matrix_workloads_brackets() -> None:
    assert step_names("nap", "abc1234") == ("nap@good", "nap@abc1234")
    assert step_names("parse[n=10]", "abc1234") == ("parse@good[n=10]", "parse@abc1234[n=10]")


def test_workdir_maps_the_file_place_into_the_worktree(tmp_path: Path) -> None:
    top, tree = tmp_path / "repo", tmp_path / "cache" / "abc"
    (top / "bench").mkdir(parents=True)
    assert workdir_in(tree, top, top / "bench") == tree / "bench"
    assert workdir_in(tree, top, top) == tree
    assert workdir_in(tree, top, tmp_path / "elsewhere") == tree  # a file outside the repo


EXPERIMENT = """
name: e
settings: {rounds: 3}
workloads:
  - name: a
    command: [sh, bench.sh]
  - name: b
    command: [sh, run.sh]
    cwd: sub
"""


def test_the_fingerprint_records_cwds_relative_to_workdir(tmp_path: Path) -> None:
    def fingerprint(workdir: str | None) -> tuple[str, list[str]]:
        sets = [] if workdir is None else [f"workdir={workdir}"]
        e = parse_experiment(EXPERIMENT, base_dir=tmp_path, overrides=sets,
                             check_commands=False)  # fmt: skip
        return e.measurement_fingerprint(), [w.cwd for w in e.workloads]

    one, cwds = fingerprint(str(tmp_path / "wt" / "aaa"))
    two, other = fingerprint(str(tmp_path / "wt" / "bbb"))
    assert cwds == [str(tmp_path / "wt" / "aaa"), str(tmp_path / "wt" / "aaa" / "sub")]
    assert other[1] == str(tmp_path / "wt" / "bbb" / "sub")
    assert one == two  # two worktrees, one series
    plain, plain_cwds = fingerprint(None)
    assert plain_cwds == [str(tmp_path), str(tmp_path / "sub")] and plain != one
    # a relative workdir starts at the experiment file's directory
    assert fingerprint("wt/aaa")[1] == cwds


MATRIX = """
name: e
matrix: {n: [10, 20], m: [1, 2]}
compare: [[parse*]]
settings: {reference: other, workdir: ..}
setup: make
workloads:
  - name: parse
    command: [./parse, "{n}"]
    cwd: build
  - name: other
    command: [./other, "{m}"]
"""


def test_a_step_is_the_chosen_workload_at_good_and_at_the_tested_revision(tmp_path: Path) -> None:
    from benchrun.runner.campaign.revisions import step_experiment

    good, tested = tmp_path / "wt" / "good", tmp_path / "wt" / "abc1234"
    text = step_experiment(MATRIX, "e-bisect-0000000", "parse", {"n": 20},
                           [("good", good), ("abc1234", tested)])  # fmt: skip
    e = parse_experiment(text, base_dir=tmp_path, check_commands=False)
    assert e.name == "e-bisect-0000000"
    assert [w.name for w in e.workloads] == ["parse@good[n=20]", "parse@abc1234[n=20]"]
    assert [w.cwd for w in e.workloads] == [str(good / "build"), str(tested / "build")]
    assert [w.command for w in e.workloads] == [("./parse", "20")] * 2
    assert all(w.setup is not None and w.setup.command == ("make",) for w in e.workloads)
    assert e.settings.reference is None and e.settings.workdir is None
    assert step_names("parse[n=20]", "abc1234") == tuple(w.name for w in e.workloads)


def test_a_step_of_an_entry_without_cwd_runs_in_the_worktree_and_a_missing_one_is_refused(
    tmp_path: Path,
) -> None:
    from benchrun.runner.campaign.revisions import step_experiment
    from benchrun.runner.errors import UserError

    good, tested = tmp_path / "good", tmp_path / "abc1234"
    text = step_experiment(MATRIX, "s", "other", {"m": 2}, [("good", good), ("abc1234", tested)])
    e = parse_experiment(text, base_dir=tmp_path, check_commands=False)
    assert [w.cwd for w in e.workloads] == [str(good), str(tested)]
    assert [w.command for w in e.workloads] == [("./other", "2")] * 2
    with pytest.raises(UserError, match="'nope' is not an entry of the experiment file"):
        step_experiment(MATRIX, "s", "nope", {}, [("good", good)])
