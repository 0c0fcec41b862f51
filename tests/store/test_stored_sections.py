"""The typed parts of stored JSON (store/records.py, issue 30): a workload's spec and a
campaign's metadata sections, decoded once; a value of another shape takes the default."""

from __future__ import annotations

from benchrun.runner.store.database import CampaignRow, WorkloadRow
from benchrun.runner.store.records import StoredEnvironment, WorkloadSpec


def _workload(spec: dict[str, object]) -> WorkloadRow:
    return WorkloadRow(1, "w", 0, "wall_time", "s", "lower_is_better", spec, "active", None)


def _campaign(metadata: dict[str, object] | None) -> CampaignRow:
    return CampaignRow(1, "c", "done", 1.0, 2.0, None, "", "f", {}, metadata, "0", None, None)


def test_a_stored_spec_reads_as_the_typed_spec() -> None:
    spec = _workload(
        {"name": "w", "params": {"n": 3}, "base_name": "loop", "per_work": True,
         "command": ["sleep", "{n}"], "env": {"A": "1"}, "shell": False, "timeout": None}
    ).typed_spec  # fmt: skip
    assert spec == WorkloadSpec(
        params={"n": 3}, base_name="loop", per_work=True, command=("sleep", "{n}"), env={"A": "1"}
    )
    # a shell command stored as one string (an imported campaign) stays one string
    assert _workload({"command": "make -j4"}).typed_spec.command == "make -j4"


def test_a_spec_of_another_shape_takes_the_defaults() -> None:
    spec = _workload(
        {"params": ["n"], "base_name": 7, "per_work": "yes", "command": ["a", 1], "env": "A=1"}
    ).typed_spec
    assert spec == WorkloadSpec()
    assert _workload({}).typed_spec == WorkloadSpec()


def test_the_metadata_sections_outputs_read() -> None:
    sections = _campaign(
        {"revision": {"label": "v1"}, "tuning": {"changes": []},
         "environment": {"variables": {"HOME": "/h"}}, "cpu": {"model": "x"}}
    ).sections  # fmt: skip
    assert sections.revision == {"label": "v1"}
    assert sections.tuning == {"changes": []}
    assert sections.environment == StoredEnvironment(variables={"HOME": "/h"})
    bad = _campaign({"revision": "v1", "environment": {"variables": ["HOME"]}}).sections
    assert bad.revision is None and bad.environment is None
    none = _campaign(None).sections
    assert (none.revision, none.tuning, none.environment) == (None, None, None)
