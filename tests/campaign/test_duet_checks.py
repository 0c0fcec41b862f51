"""Duet mode's checks (docs/duet.md): the ``duet:`` mapping, the CPU pattern, the solo
passes and the asymmetry check, with the fake executor and known truth."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats as sps
from test_duet import NullDisplay, _text, experiment, stored

from benchrun.runner.campaign.run import run_campaign
from benchrun.runner.config.experiment import DuetSpec
from benchrun.runner.config.loader import load_experiment
from benchrun.runner.control.duet_asymmetry import duet_asymmetry
from benchrun.runner.errors import UserError
from benchrun.runner.execute.duet import CPU_BLOCK, DuetPlan, duet_cpus, duet_swapped
from benchrun.runner.execute.fake import FakeExecutor, lognormal
from benchrun.runner.results.workloads import final_verdicts


def _file(tmp_path: Path, settings: str) -> Path:
    path = tmp_path / "e.yaml"
    path.write_text(_text(tmp_path, settings, ("a", "b")))
    return path


# ------------------------------------------------------------------ the duet: key


def test_duet_key_takes_true_false_or_a_mapping(tmp_path: Path) -> None:
    def spec(value: str) -> DuetSpec | None:
        return load_experiment(
            _file(tmp_path, f"duet: {value}"), check_commands=False
        ).settings.duet

    assert spec("true") == DuetSpec()
    assert spec("false") is None and spec("null") is None
    full = spec("{force: true, solo_every: 3, asymmetry: refuse, cpus: random}")
    assert full == DuetSpec(force=True, solo_every=3, asymmetry="refuse", cpus="random")
    assert spec("{solo_every: 0}") == DuetSpec(solo_every=0)


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ("{solo_evry: 3}", "solo_every"),  # unknown key: the valid one suggested
        ("{solo_every: 1}", "every pass a solo pass"),
        ("{solo_every: -2}", "out of range"),
        ("{asymmetry: ignore}", "warn | refuse"),
        ("{cpus: fixed}", "alternate | random"),
        ("{force: 1}", "true or false"),
        ("often", "expected true, false or a mapping"),
    ],
)
def test_bad_duet_values_are_one_line_naming_file_line_and_key(
    tmp_path: Path, value: str, words: str
) -> None:
    path = _file(tmp_path, f"duet: {value}")
    with pytest.raises(UserError) as err:
        load_experiment(path, check_commands=False)
    text = str(err.value)
    assert "\n" not in text and words in text
    assert text.startswith(f"{path}:5:")  # the line of duet: in the file
    assert "settings.duet" in text


def test_duet_mapping_through_set(tmp_path: Path) -> None:
    path = _file(tmp_path, "seed: 1")
    exp = load_experiment(path, check_commands=False, overrides=["duet={solo_every: 3}"])
    assert exp.settings.duet == DuetSpec(solo_every=3)
    with pytest.raises(UserError, match=r"--set duet\.cpus: .*alternate \| random"):
        load_experiment(path, check_commands=False, overrides=["duet={cpus: maybe}"])


def test_fingerprint_changes_with_what_is_measured_only(tmp_path: Path) -> None:
    def fp(value: str) -> str:
        return experiment(tmp_path, f"seed: 1\nduet: {value}").measurement_fingerprint()

    base = fp("true")
    assert fp("{force: true, asymmetry: refuse}") == base  # how results are judged
    assert fp("{solo_every: 3}") != base  # what runs
    assert fp("{cpus: random}") != base
    assert experiment(tmp_path, "seed: 1").measurement_fingerprint() != base


# ------------------------------------------------------------------ the CPU pattern


def test_alternate_swaps_every_duet() -> None:
    assert [duet_swapped(i) for i in range(6)] == [False, True] * 3


def test_random_pattern_is_balanced_in_every_block_and_reproducible() -> None:
    plan = DuetPlan((3, 5), None, True)
    n = 400 * CPU_BLOCK
    swaps = np.array([duet_swapped(i, "random", seed=11) for i in range(n)])
    blocks = swaps.reshape(-1, CPU_BLOCK)
    assert (blocks.sum(axis=1) == CPU_BLOCK // 2).all()  # each side on each CPU twice
    # every arrangement of a block turns up, about equally often (chi-square, 6 cells)
    codes = blocks @ (1 << np.arange(CPU_BLOCK))
    counts = np.array([np.sum(codes == c) for c in np.unique(codes)])
    assert len(counts) == math.comb(CPU_BLOCK, CPU_BLOCK // 2)
    assert sps.chisquare(counts).pvalue > 1e-3
    # the same for a given seed, whatever order it is asked in; another seed differs
    again = [duet_swapped(i, "random", seed=11) for i in reversed(range(n))][::-1]
    assert (np.array(again) == swaps).all()
    other = np.array([duet_swapped(i, "random", seed=12) for i in range(n)])
    assert (other != swaps).any()
    assert duet_cpus(plan, 0, "random", 11) == (((5,), (3,)) if swaps[0] else ((3,), (5,)))
    with pytest.raises(ValueError):
        duet_swapped(0, "sometimes")


def test_random_pattern_in_a_campaign(tmp_path: Path) -> None:
    exp = experiment(
        tmp_path,
        "adaptive: false\nrounds: 12\nwarmup_rounds: 0\nseed: 5\n"
        "duet: {cpus: random, solo_every: 0}",
    )
    fake = FakeExecutor({"a": lognormal(0.1, 0.01, seed=1), "b": lognormal(0.1, 0.01, seed=2)})
    assert run_campaign(exp, fake, NullDisplay()).exit_code == 0
    _, rounds, _ = stored(exp)
    first = rounds["a"][0].cpus
    swapped = [r.cpus != first for r in rounds["a"]]
    expected = [
        duet_swapped(r.pass_, "random", 5) != duet_swapped(0, "random", 5) for r in rounds["a"]
    ]
    assert swapped == expected
    assert sum(swapped) == 6  # 12 duets: three blocks of four, each side twice on each CPU


# ------------------------------------------------------------------ solo passes

SOLO = "adaptive: false\nrounds: 12\nwarmup_rounds: 1\nseed: 3\nduet: {solo_every: 4}"


def test_solo_passes_run_each_side_alone_and_are_stored_apart(tmp_path: Path) -> None:
    exp = experiment(tmp_path, SOLO)
    fake = FakeExecutor(
        {"a": lognormal(0.1, 0.01, seed=1), "b": lognormal(0.1, 0.01, seed=2)},
        duet_slowdown={"a": 1.2, "b": 1.2},
    )
    out = run_campaign(exp, fake, NullDisplay())
    assert out.exit_code == 0
    _, rounds, events = stored(exp)
    solo = {n: [r for r in rs if "duet-solo" in r.flags] for n, rs in rounds.items()}
    duet = {n: [r for r in rs if "duet-solo" not in r.flags] for n, rs in rounds.items()}
    # passes 3, 7, 11, 15 are solo (every 4th); 12 steady duets + 1 warm-up duet
    assert [r.pass_ for r in solo["a"]] == [r.pass_ for r in solo["b"]] == [3, 7, 11, 15]
    assert len(duet["a"]) == len(duet["b"]) == 13 == len(fake.duets)
    for ra, rb in zip(solo["a"], solo["b"], strict=True):
        assert ra.warmup and rb.warmup  # out of every analysis but the check
        assert ra.facts is not None and ra.facts["duet_solo"] == ra.pass_
        assert "duet" not in ra.facts
        assert ra.cpus != rb.cpus  # each on its CPU of the pass
        # one after the other: the later starts when the earlier ended
        first, second = sorted((ra, rb), key=lambda r: r.started_at)
        assert second.started_at == pytest.approx(first.started_at + first.wall_ns / 1e9)
        # alone: no duet slowdown (the duets' rounds are 1.2x)
        assert ra.wall_ns / 1e9 < 0.11
    (check,) = [e for e in events if e.kind == "duet-asymmetry"]
    assert check.data["computed"] and check.data["n_solo"] == 4 and check.data["n_duet"] == 12
    assert check.data["slowdown_a"] == pytest.approx(1.2, rel=0.03)
    assert check.data["slowdown_b"] == pytest.approx(1.2, rel=0.03)


def test_too_few_solo_passes_say_so(tmp_path: Path) -> None:
    exp = experiment(tmp_path, SOLO.replace("rounds: 12", "rounds: 4"))
    display = NullDisplay()
    fake = FakeExecutor({"a": lognormal(0.1, 0.01, seed=1), "b": lognormal(0.1, 0.01, seed=2)})
    assert run_campaign(exp, fake, display).exit_code == 0
    _, _, events = stored(exp)
    (check,) = [e for e in events if e.kind == "duet-asymmetry"]
    assert check.data["computed"] is False
    assert any("no asymmetry check: fewer than two solo passes" in m for m in display.messages)


# ------------------------------------------------------------------ the asymmetry check


def test_asymmetry_interval_is_welchs_on_the_log_ratios() -> None:
    rng = np.random.default_rng(4)
    duet_a = dict(enumerate(rng.lognormal(0.0, 0.02, 30)))
    duet_b = {p: v * 1.05 * rng.lognormal(0.0, 0.02) for p, v in duet_a.items()}
    solo_a = {100 + i: v for i, v in enumerate(rng.lognormal(0.0, 0.03, 8))}
    solo_b = {p: v * rng.lognormal(0.0, 0.03) for p, v in solo_a.items()}
    res = duet_asymmetry(duet_a, duet_b, solo_a, solo_b, confidence=0.9)
    assert res is not None
    d = np.log([duet_b[p] / duet_a[p] for p in sorted(duet_a)])
    e = np.log([solo_b[p] / solo_a[p] for p in sorted(solo_a)])
    ref = sps.ttest_ind(d, e, equal_var=False)
    low, high = ref.confidence_interval(0.9)
    assert res.pvalue == pytest.approx(ref.pvalue, rel=1e-9)
    assert (math.log(res.low), math.log(res.high)) == pytest.approx((low, high), rel=1e-9)
    assert math.log(res.asymmetry) == pytest.approx(d.mean() - e.mean(), rel=1e-12)
    solo_ci = sps.t.interval(0.9, len(e) - 1, loc=e.mean(), scale=sps.sem(e))
    assert (math.log(res.solo_low), math.log(res.solo_high)) == pytest.approx(solo_ci, rel=1e-9)
    # each side's slowdown: geometric mean in duet over geometric mean alone
    ga = np.exp(np.mean(np.log(list(duet_a.values()))) - np.mean(np.log(list(solo_a.values()))))
    assert res.slowdown_a == pytest.approx(ga, rel=1e-12)
    assert res.flagged == (not low <= 0.0 <= high)
    assert duet_asymmetry(duet_a, duet_b, {1: 1.0}, {1: 1.0}) is None  # one solo pass


def _flag_rate(asym: float, sims: int, n_duet: int, n_solo: int, seed: int) -> float:
    """Share of simulated campaigns flagged: per round lognormal noise (cv 3 %), a and b
    equally fast, a duet slowing a by 1.15 and b by 1.15 * asym; solo rounds alone."""
    rng = np.random.default_rng(seed)
    sd = 0.03
    shared = rng.normal(0.0, 0.02, (sims, n_duet))  # what a duet's second does to both
    la = np.log(1.15) + shared + rng.normal(0.0, sd, (sims, n_duet))
    lb = np.log(1.15 * asym) + shared + rng.normal(0.0, sd, (sims, n_duet))
    sa = rng.normal(0.0, sd, (sims, n_solo)) + rng.normal(0.0, 0.02, (sims, n_solo))
    sb = rng.normal(0.0, sd, (sims, n_solo)) + rng.normal(0.0, 0.02, (sims, n_solo))
    flagged = 0
    for i in range(sims):
        res = duet_asymmetry(
            dict(enumerate(np.exp(la[i]))),
            dict(enumerate(np.exp(lb[i]))),
            dict(enumerate(np.exp(sa[i]))),
            dict(enumerate(np.exp(sb[i]))),
        )
        assert res is not None
        flagged += res.flagged
    return flagged / sims


def test_symmetric_interference_is_flagged_at_about_alpha() -> None:
    rate = _flag_rate(1.0, 3000, 40, 10, seed=1)
    # 3000 campaigns: the binomial sd of the rate at 0.05 is 0.004
    assert 0.04 <= rate <= 0.062


def test_ten_percent_asymmetry_is_flagged_with_high_power() -> None:
    assert _flag_rate(1.10, 500, 40, 10, seed=2) >= 0.95
    assert _flag_rate(1.10, 500, 20, 4, seed=3) >= 0.6  # few solo passes: less power


def _pair_campaign(tmp_path: Path, slow_b: float, seed: int, extra: str = "") -> Any:
    exp = experiment(
        tmp_path,
        f"adaptive: false\nrounds: 30\nwarmup_rounds: 1\nseed: {seed}\n"
        f"duet: {{solo_every: 4{extra}}}",
    )
    fake = FakeExecutor(
        {
            "a": lognormal(0.10, 0.02, seed=seed),
            "b": lognormal(0.10 * 1.03, 0.02, seed=seed + 1000),
        },
        duet_slowdown={"a": 1.15, "b": 1.15 * slow_b},
    )
    display = NullDisplay()
    out = run_campaign(exp, fake, display)
    _, _, events = stored(exp)
    (check,) = [e for e in events if e.kind == "duet-asymmetry"]
    return out, check, display


def test_fake_campaigns_flag_asymmetric_pairs_and_not_symmetric_ones(tmp_path: Path) -> None:
    """Known truth through whole campaigns: b 3 % slower than a; a duet slows both by
    15 % (symmetric) or b by 10 % more than a (asymmetric)."""
    sym = [_pair_campaign(tmp_path / f"s{i}", 1.0, i)[1].data["flagged"] for i in range(20)]
    assert sum(sym) <= 4  # 5 % expected: P(X >= 5 | n=20, p=0.05) = 0.003
    asym = [_pair_campaign(tmp_path / f"a{i}", 1.10, 100 + i)[1] for i in range(6)]
    assert all(c.data["flagged"] for c in asym)
    for c in asym:
        assert c.data["low"] <= 1.10 <= c.data["high"] or abs(c.data["asymmetry"] - 1.1) < 0.03
        assert c.data["solo_low"] <= 1.03 <= c.data["solo_high"] or (
            abs(c.data["solo_ratio"] - 1.03) < 0.02
        )


def test_warn_says_it_and_keeps_the_verdict(tmp_path: Path) -> None:
    out, check, display = _pair_campaign(tmp_path, 1.10, 7)
    assert out.exit_code == 0 and check.data["verdict_valid"] is True
    (said,) = [m for m in display.messages if m.startswith("duet: b/a in duet")]
    assert "interferes asymmetrically" in said


def test_refuse_marks_the_duet_verdict_invalid_and_gives_the_solo_ratio(tmp_path: Path) -> None:
    out, check, _ = _pair_campaign(tmp_path, 1.10, 7, ", asymmetry: refuse")
    assert out.exit_code == 1 and out.status == "done"
    assert out.message.startswith("duet verdict refused")
    assert f"{check.data['solo_ratio']:.4g}" in out.message
    assert check.data["verdict_valid"] is False
    sym_out, sym_check, _ = _pair_campaign(tmp_path / "sym", 1.0, 7, ", asymmetry: refuse")
    assert not sym_check.data["flagged"]
    assert sym_out.exit_code == 0 and sym_check.data["verdict_valid"] is True


def test_adaptive_duet_with_solo_passes_pairs_duets_only(tmp_path: Path) -> None:
    exp = experiment(
        tmp_path,
        "seed: 3\nmin_round_time: 0\nmax_time: 10min\nci_rel_width: 0.02\nduet: {solo_every: 3}",
        top="compare: [[a, b]]",
    )
    fake = FakeExecutor(
        {"a": lognormal(0.10, 0.01, seed=11), "b": lognormal(0.103, 0.01, seed=12)},
        duet_slowdown={"a": 1.1, "b": 1.1},
    )
    assert run_campaign(exp, fake, NullDisplay()).exit_code == 0
    _, rounds, events = stored(exp)
    verdicts = final_verdicts(events)
    assert verdicts is not None
    (pair,) = verdicts["pairs"]
    # the duets' ratio: the solo passes (no slowdown, b/a the same) would not move it,
    # but they are not paired: the steady duets are exactly the verdict's passes
    steady = [r for r in rounds["a"] if r.status == "ok" and not r.warmup]
    assert all("duet" in (r.facts or {}) for r in steady)
    assert pair["ratio_low"] <= 1.03 <= pair["ratio_high"]
    assert any("duet-solo" in r.flags for r in rounds["a"])
    assert any(e.kind == "duet-asymmetry" for e in events)


def test_show_and_the_report_say_what_the_checks_found(tmp_path: Path) -> None:
    from benchrun.runner.commands.show import read_summary, summary_json
    from benchrun.runner.report.methods import rules_checklist
    from benchrun.runner.report.model import load_campaign
    from benchrun.runner.results.duet import duet_lines

    out, check, _ = _pair_campaign(tmp_path, 1.10, 7, ", asymmetry: refuse")
    s = read_summary(out.db_path)
    lines = duet_lines(s.duet)
    assert lines[0] == check.message and "interferes asymmetrically" in lines[0]
    assert lines[1].startswith("duet verdict INVALID")
    assert f"b/a = {check.data['solo_ratio']:.4g}" in lines[1]
    doc = summary_json(s)
    assert doc["duet"]["asymmetry"]["verdict_valid"] is False
    rule = rules_checklist(load_campaign(out.db_path), [], None)[6]
    assert rule.status == "missing" and "duet verdict INVALID" in rule.detail
    # a symmetric pair: the check's sentence, the rule as without duet
    sym, sym_check, _ = _pair_campaign(tmp_path / "sym", 1.0, 7)
    assert duet_lines(read_summary(sym.db_path).duet) == [sym_check.message]
    sym_rule = rules_checklist(load_campaign(sym.db_path), [], None)[6]
    assert "no asymmetric interference found" in sym_rule.detail
    # no duet: nothing
    plain = experiment(tmp_path / "plain", "adaptive: false\nrounds: 3")
    run_campaign(
        plain,
        FakeExecutor({"a": lognormal(0.1, 0.01, seed=1), "b": lognormal(0.1, 0.01, seed=2)}),
        NullDisplay(),
    )
    assert read_summary(plain.db_path).duet is None


def test_the_stored_duet_settings_load_back_for_a_resume(tmp_path: Path) -> None:
    import dataclasses
    import json

    from benchrun.runner.config.stored import stored_experiment_text

    exp = experiment(tmp_path, "seed: 1\nduet: {solo_every: 3, cpus: random, force: true}")
    stored_json = json.loads(json.dumps(dataclasses.asdict(exp.settings)))  # as the store has it
    text = stored_experiment_text(exp.source_text, stored_json)
    again = load_experiment(tmp_path / "x.yaml", check_commands=False, text=text)
    assert again.settings.duet == exp.settings.duet
    assert again.measurement_fingerprint() == exp.measurement_fingerprint()
    # a campaign stored when duet was a bool
    old = stored_experiment_text(exp.source_text, {**stored_json, "duet": True})
    assert load_experiment(tmp_path / "x.yaml", check_commands=False, text=old).settings.duet == (
        DuetSpec()
    )


def test_benchrun_schema_describes_the_duet_mapping() -> None:
    import jsonschema

    from benchrun.runner.config.schema import json_schema

    schema = json_schema()
    duet = schema["properties"]["settings"]["properties"]["duet"]["anyOf"][0]["anyOf"][1]
    assert {k: v.get("default") for k, v in duet["properties"].items()} == {
        "force": False,
        "solo_every": 5,
        "asymmetry": "warn",
        "cpus": "alternate",
    }
    doc: dict[str, Any] = {"name": "x", "workloads": [{"name": "a", "command": "true"}]}
    for ok in (True, None, {"solo_every": 3, "cpus": "random"}):
        jsonschema.validate({**doc, "settings": {"duet": ok}}, schema)
    for bad in ({"cpus": "fixed"}, {"solo_every": -1}, {"soloevery": 3}, "yes"):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate({**doc, "settings": {"duet": bad}}, schema)
