"""Duet mode (settings.duet, docs/duet.md) with the fake executor: the configuration's
errors, the duets the loops launch and store, and the paired verdict they lead to."""

from __future__ import annotations

import math
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from benchrun.runner.campaign.run import run_campaign
from benchrun.runner.config.experiment import Experiment
from benchrun.runner.config.loader import load_experiment, parse_experiment
from benchrun.runner.errors import UserError
from benchrun.runner.execute.duet import duet_cpus, plan_duet
from benchrun.runner.execute.executor import RoundOutcome, RoundSpec
from benchrun.runner.execute.fake import FakeExecutor, constant, lognormal
from benchrun.runner.results.workloads import final_verdicts
from benchrun.runner.store.database import Store


class NullDisplay:
    """A Display that remembers what it was told and prints nothing."""

    def __init__(self) -> None:
        self.messages: list[str] = []

    def start(self, campaign: Any, targets: dict[str, int], done: dict[str, int]) -> None:
        pass

    def round_done(
        self, workload: str, outcome: RoundOutcome, value: float | None, warmup: bool
    ) -> None:
        pass

    def message(self, text: str) -> None:
        self.messages.append(text)

    def show_decision(self, decision: Any, eta_s: float | None) -> None:
        pass

    def stop(self) -> None:
        pass


def experiment(
    tmp_path: Path, settings: str, names: tuple[str, ...] = ("a", "b"), top: str = ""
) -> Experiment:
    return parse_experiment(
        _text(tmp_path, settings, names, top), base_dir=tmp_path, check_commands=False
    )


def stored(exp: Experiment, probes: bool = False) -> tuple[Any, dict[str, list[Any]], list[Any]]:
    """The campaign, its rounds by workload and its events; each duet side's probe round
    (alone on both CPUs before its first duet) left out unless ``probes``."""
    with Store.open(exp.db_path) as store:
        campaign = store.campaign()
        rounds = {
            w.name: [
                r
                for r in store.rounds(campaign.id, w.id)
                if probes or "duet-probe" not in r.flags.split(",")
            ]
            for w in store.workloads(campaign.id)
        }
        return campaign, rounds, store.events(campaign.id)


#: without solo passes: every pass is a duet
FIXED = "adaptive: false\nrounds: 8\nwarmup_rounds: 1\nseed: 7\nduet: {solo_every: 0}"
ADAPTIVE = "seed: 3\nmin_round_time: 0\nmax_time: 10min\nci_rel_width: 0.02\nduet: true"


def _text(tmp_path: Path, settings: str, names: tuple[str, ...], top: str = "") -> str:
    workloads = "\n".join(f"  - name: {n}\n    command: [work, {n}]" for n in names)
    return (
        f"name: fake\noutput: {tmp_path / 'out'}\n{top}\nsettings:\n"
        + "".join(f"  {line}\n" for line in settings.strip().splitlines())
        + f"workloads:\n{workloads}\n"
    )


@pytest.mark.parametrize(
    ("settings", "names", "top", "words"),
    [
        ("duet: true", ("a", "b", "c"), "", "the experiment has 3"),
        ("duet: true", ("a", "b", "c"), "compare: [[a, b, c]]", "single compare: group of 2"),
        ("duet: true", ("a",), "", "the experiment has 1"),
        ("duet: true\npin: none", ("a", "b"), "", "remove pin: none"),
        ("duet: true\npin: [0]", ("a", "b"), "", "duet needs two CPUs"),
    ],
)
def test_duet_refuses_what_it_cannot_run_with_one_line(
    tmp_path: Path, settings: str, names: tuple[str, ...], top: str, words: str
) -> None:
    with pytest.raises(UserError) as err:
        parse_experiment(
            _text(tmp_path, settings, names, top), base_dir=tmp_path, check_commands=False
        )
    assert words in str(err.value)
    assert "settings.duet" in str(err.value)
    assert "\n" not in str(err.value)


def test_duet_accepts_a_compare_group_of_two_among_more_workloads(tmp_path: Path) -> None:
    exp = parse_experiment(
        _text(tmp_path, "duet: true", ("a", "b", "c"), "compare: [[a, c]]"),
        base_dir=tmp_path,
        check_commands=False,
    )
    assert exp.settings.duet and exp.duet_pair() == ("a", "c")


def test_duet_through_set(tmp_path: Path) -> None:
    path = tmp_path / "e.yaml"
    path.write_text(_text(tmp_path, "seed: 1", ("a", "b")))
    exp = load_experiment(path, check_commands=False, overrides=["duet=true"])
    assert exp.settings.duet
    with pytest.raises(UserError, match="--set duet"):
        load_experiment(path, check_commands=False, overrides=["duet=maybe"])
    path.write_text(_text(tmp_path, "pin: none", ("a", "b")))
    with pytest.raises(UserError, match="remove pin: none"):
        load_experiment(path, check_commands=False, overrides=["duet=true"])


def test_duet_changes_the_fingerprint_only_when_on(tmp_path: Path) -> None:
    off = experiment(tmp_path, "seed: 1")
    on = experiment(tmp_path, "seed: 1\nduet: true")
    assert off.measurement_fingerprint() != on.measurement_fingerprint()


def test_plan_duet_two_cores_and_a_third_cpu_for_the_runner(tmp_path: Path) -> None:
    plan = plan_duet("auto", allowed=[0, 1, 2, 3], sysfs=tmp_path / "none")
    assert plan.cpus == (2, 3) and plan.runner_cpus == (0, 1) and not plan.shares
    two = plan_duet("auto", allowed=[0, 1], sysfs=tmp_path / "none")
    assert two.cpus == (0, 1) and two.runner_cpus is None and two.shares
    assert "shares a CPU" in two.reason
    assert plan_duet([3, 1], allowed=[0, 1, 2, 3], sysfs=tmp_path / "none").cpus == (3, 1)
    with pytest.raises(UserError, match="two CPUs"):
        plan_duet("auto", allowed=[0])
    # the CPUs swap every duet
    assert [duet_cpus(two, i) for i in range(3)] == [((0,), (1,)), ((1,), (0,)), ((0,), (1,))]


def test_plan_duet_reads_smt_siblings(tmp_path: Path) -> None:
    for cpu, sib in {0: "0,2", 1: "1,3", 2: "0,2", 3: "1,3"}.items():
        topo = tmp_path / f"cpu{cpu}" / "topology"
        topo.mkdir(parents=True)
        (topo / "thread_siblings_list").write_text(sib + "\n")
    plan = plan_duet("auto", allowed=[0, 1, 2, 3], sysfs=tmp_path)
    assert plan.cpus == (0, 1)  # one CPU of each core, never two siblings
    assert plan.smt == {0: (0, 2), 1: (1, 3)}
    assert plan.shares  # the siblings are the duet's cores: nothing left for the runner


def test_fixed_duet_stores_both_rounds_of_each_pass_at_one_time_on_swapped_cpus(
    tmp_path: Path,
) -> None:
    exp = experiment(tmp_path, FIXED)
    fake = FakeExecutor({"a": constant(0.1), "b": constant(0.12)})
    display = NullDisplay()
    out = run_campaign(exp, fake, display)
    assert out.exit_code == 0
    _, rounds, events = stored(exp)
    assert len(rounds["a"]) == len(rounds["b"]) == 9
    assert len(fake.duets) == 9 and all(
        (x.workload, y.workload) == ("a", "b") for x, y in fake.duets
    )
    cpus = []
    for ra, rb in zip(rounds["a"], rounds["b"], strict=True):
        assert ra.pass_ == rb.pass_
        assert ra.started_at == rb.started_at  # released together
        assert ra.cpus != rb.cpus
        assert ra.facts is not None and ra.facts["duet"] == ra.pass_
        assert ra.facts["duet_with"] == "b"
        cpus.append(ra.cpus)
    assert len(set(cpus)) == 2
    assert all(cpus[i] != cpus[i + 1] for i in range(len(cpus) - 1))  # alternating
    assert any(e.kind == "duet-plan" for e in events)
    # both sides overlap: the clock moved by the longer side only
    assert fake.clock == pytest.approx(9 * 0.12 + 0.1 + 0.12)  # and each side's probe


def test_fixed_duet_interrupted_then_resumed_stores_whole_duets(tmp_path: Path) -> None:
    exp = experiment(tmp_path, FIXED)

    def sigint_at_duet_4(spec: RoundSpec, i: int) -> None:
        if i == 10:  # the two probes, then two launches a duet: the fifth duet
            os.kill(os.getpid(), signal.SIGINT)

    first = FakeExecutor({"a": constant(0.1), "b": constant(0.1)}, on_launch=sigint_at_duet_4)
    out = run_campaign(exp, first, NullDisplay())
    assert out.status == "interrupted"
    _, rounds, _ = stored(exp)
    assert len(rounds["a"]) == len(rounds["b"]) == 4  # the interrupted duet is not stored
    second = FakeExecutor({"a": constant(0.1), "b": constant(0.1)})
    out = run_campaign(exp, second, NullDisplay(), resume=True)
    assert (out.status, out.exit_code) == ("done", 0)
    _, rounds, _ = stored(exp)
    passes_a = [r.pass_ for r in rounds["a"]]
    assert passes_a == [r.pass_ for r in rounds["b"]]
    assert len(passes_a) == 9 and len(set(passes_a)) == 9
    assert len({r.round_index for r in rounds["a"]}) == 9


def test_adaptive_duet_ratio_ci_covers_the_truth_under_fast_drift(tmp_path: Path) -> None:
    """A 3 % pair on a machine whose speed swings by +-20 % within fractions of a second:
    both sides of a duet see the same speed, so the paired ratio CI covers 1.03."""
    exp = experiment(tmp_path, ADAPTIVE, top="compare: [[a, b]]")

    def swing(clock: float) -> float:
        return 1.0 + 0.2 * math.sin(37.0 * clock)

    fake = FakeExecutor(
        {
            "a": lognormal(0.10, 0.01, seed=11, drift=swing),
            "b": lognormal(0.103, 0.01, seed=12, drift=swing),
        }
    )
    out = run_campaign(exp, fake, NullDisplay())
    assert out.exit_code == 0
    _, rounds, events = stored(exp)
    verdicts = final_verdicts(events)
    assert verdicts is not None
    (pair,) = verdicts["pairs"]
    assert pair["test"] == "paired"
    assert pair["verdict"] == "separated"
    assert pair["ratio_low"] <= 1.03 <= pair["ratio_high"]
    steady_a = {r.pass_ for r in rounds["a"] if r.status == "ok" and not r.warmup}
    steady_b = {r.pass_ for r in rounds["b"] if r.status == "ok" and not r.warmup}
    assert steady_a == steady_b  # every duet is one paired observation


def test_adaptive_duet_a_against_a_ratio_contains_one(tmp_path: Path) -> None:
    exp = experiment(tmp_path, ADAPTIVE + "\nmargin: 0.05", top="compare: [[a, b]]")
    fake = FakeExecutor({"a": lognormal(0.1, 0.03, seed=5), "b": lognormal(0.1, 0.03, seed=6)})
    run_campaign(exp, fake, NullDisplay())
    _, _, events = stored(exp)
    verdicts = final_verdicts(events)
    assert verdicts is not None
    (pair,) = verdicts["pairs"]
    # twins: never separated (the test is at alpha = 0.01), shown equivalent within the
    # 5 % margin; whether the 95 % CI holds 1 is a 1-in-20 event per seed, so its rate is
    # what tests/campaign/test_duet_checks.py and benchmarks/duet.py measure
    assert pair["verdict"] == "equivalent"
    assert 1 / 1.05 < pair["ratio_low"] <= pair["ratio_high"] < 1.05


def test_duet_with_a_third_workload_runs_it_alone_in_each_pass(tmp_path: Path) -> None:
    exp = experiment(tmp_path, FIXED, names=("a", "b", "c"), top="compare: [[a, b]]")
    fake = FakeExecutor({n: constant(0.1) for n in "abc"})
    assert run_campaign(exp, fake, NullDisplay()).exit_code == 0
    _, rounds, _ = stored(exp)
    assert {n: len(r) for n, r in rounds.items()} == {"a": 9, "b": 9, "c": 9}
    assert len(fake.duets) == 9


def test_a_side_on_more_than_one_cpu_stops_the_campaign_unless_forced(tmp_path: Path) -> None:
    # b burns 3 CPU-seconds per wall second (it escaped its pin): duet's premise of one
    # CPU per side fails; the campaign stops after that duet, keeping what it stored
    from benchrun.runner.execute.fake import FakeRound

    def three_cpus(spec: RoundSpec, k: int, clock: float) -> FakeRound:
        return FakeRound(0.1, cpu_s=0.3 if k >= 3 else 0.1)  # from duet 2 on (k 0: probe)

    exp = experiment(tmp_path, FIXED)
    display = NullDisplay()
    out = run_campaign(exp, FakeExecutor({"a": constant(0.1), "b": three_cpus}), display)
    assert (out.status, out.exit_code) == ("failed", 1)
    assert "b used 3.0 CPUs in duet 2" in out.message and "duet: {force: true}" in out.message
    assert "\n" not in out.message
    _, rounds, events = stored(exp)
    assert len(rounds["a"]) == len(rounds["b"]) == 3  # the finished rounds are kept
    (said,) = [e for e in events if e.kind == "duet-multi-cpu"]
    assert said.data["workload"] == "b" and said.data["cpus_used"] == pytest.approx(3.0)
    # forced: it runs to the end and says so once
    exp2 = experiment(
        tmp_path / "2", FIXED.replace("{solo_every: 0}", "{solo_every: 0, force: true}")
    )
    loud = NullDisplay()
    out2 = run_campaign(exp2, FakeExecutor({"a": constant(0.1), "b": three_cpus}), loud)
    assert out2.exit_code == 0
    said2 = [m for m in loud.messages if "CPUs in duet" in m]
    assert len(said2) == 1 and said2[0].startswith("duet: b used 3.0 CPUs in duet 2")
    # one CPU each: nothing said
    exp3 = experiment(tmp_path / "3", FIXED)
    quiet = NullDisplay()
    run_campaign(exp3, FakeExecutor({"a": constant(0.1), "b": constant(0.1)}), quiet)
    assert not any("CPUs in duet" in m for m in quiet.messages)


def test_a_multi_threaded_side_is_caught_by_its_probe_on_both_cpus(tmp_path: Path) -> None:
    """b runs two busy threads and respects its pin: on one CPU it shows one CPU-second per
    wall second (invisible in a duet), given the two CPUs of its probe it uses both."""
    from benchrun.runner.execute.fake import FakeRound

    def two_threads(spec: RoundSpec, k: int, clock: float) -> FakeRound:
        used = min(2, len(spec.cpus or (0, 1)))
        return FakeRound(0.1, cpu_s=0.1 * used)

    exp = experiment(tmp_path, FIXED)
    fake = FakeExecutor({"a": constant(0.1), "b": two_threads})
    out = run_campaign(exp, fake, NullDisplay())
    assert (out.status, out.exit_code) == ("failed", 1)
    assert "b used 2.0 CPUs alone on two CPUs before duet 0" in out.message
    assert "duet: {force: true}" in out.message and "\n" not in out.message
    assert fake.duets == []  # stopped before any duet
    _, rounds, events = stored(exp, probes=True)
    probes = {n: [r for r in rs if "duet-probe" in r.flags.split(",")] for n, rs in rounds.items()}
    assert {n: len(p) for n, p in probes.items()} == {"a": 1, "b": 1}
    for (r,) in probes.values():
        assert r.warmup and r.pass_ == 0 and r.cpus == "0,1"
    (said,) = [e for e in events if e.kind == "duet-multi-cpu"]
    assert said.data["probe"] is True and said.data["cpus_used"] == pytest.approx(2.0)
    # a one-CPU side passes its probe: the pair runs, one probe per side, then the duets
    exp2 = experiment(tmp_path / "2", FIXED)
    fake2 = FakeExecutor({"a": constant(0.1), "b": constant(0.1)})
    assert run_campaign(exp2, fake2, NullDisplay()).exit_code == 0
    _, rounds2, _ = stored(exp2, probes=True)
    assert [r.flags for r in rounds2["b"]].count("duet-probe") == 1
    assert len(fake2.duets) == 9  # the probe takes no warm-up duet's place
    # forced: the multi-threaded side runs on, said once
    exp3 = experiment(
        tmp_path / "3", FIXED.replace("{solo_every: 0}", "{solo_every: 0, force: true}")
    )
    out3 = run_campaign(exp3, FakeExecutor({"a": constant(0.1), "b": two_threads}), NullDisplay())
    assert out3.exit_code == 0
