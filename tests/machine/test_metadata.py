"""Tests of the reproducibility record and the noise rules (runner/machine/, docs/machine.md).

Expected values come from sources other than the code under test: os, psutil, platform,
sys, socket, py-cpuinfo, lscpu, files read directly here, a fabricated sysfs tree whose
content the test writes, and hand-built records for the noise rules.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import time
import timeit
from importlib.metadata import version
from pathlib import Path
from typing import Any

import psutil
import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchrun.runner.config.cpulist import format_cpu_list, parse_kernel_cpu_list
from benchrun.runner.machine import noise as noise
from benchrun.runner.machine import probes as probes
from benchrun.runner.machine.describe import format_bytes
from benchrun.runner.machine.facts import MachineFacts
from benchrun.runner.machine.metadata import (
    NoiseWarning,
    collect_metadata,
    describe_machine,
    noise_warnings,
    round_facts,
    unknown_noise_settings,
)

SECTIONS = ("hardware", "software", "timer", "environment")


@pytest.fixture(scope="module")
def meta() -> dict[str, Any]:
    return collect_metadata(env_names=["PATH", "BENCHRUN_SURELY_UNSET_VAR"])


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


# --------------------------------------------------------------------------- real machine


def test_fields_match_independent_sources(meta: dict[str, Any]) -> None:
    hw, sw, env = meta["hardware"], meta["software"], meta["environment"]
    assert hw["cores_logical"] == os.cpu_count()
    assert hw["memory_total_bytes"] == psutil.virtual_memory().total
    assert sw["kernel_release"] == platform.release()
    assert sw["python_version"] == "{}.{}.{}".format(*sys.version_info[:3])
    assert sw["python_build"] == sys.version
    assert sw["python_implementation"] == sys.implementation.name.replace("cpython", "CPython")
    assert sw["hostname"] == socket.gethostname()
    assert sw["benchrun_version"] == version("benchrun")
    assert env["variables"] == {
        "PATH": os.environ["PATH"],
        "BENCHRUN_SURELY_UNSET_VAR": None,
    }
    assert abs(env["load_average"][0] - os.getloadavg()[0]) < 0.5


def test_aslr_isolated_clocksource_read_directly(meta: dict[str, Any]) -> None:
    env, timer = meta["environment"], meta["timer"]
    aslr = _read("/proc/sys/kernel/randomize_va_space")
    if aslr is None:
        assert env["aslr"] is None and "aslr" in env["_unavailable"]
    else:
        assert env["aslr"] == int(aslr)
    isolated = _read("/sys/devices/system/cpu/isolated")
    if isolated is None:
        assert env["isolated_cpus"] is None and "isolated_cpus" in env["_unavailable"]
    elif isolated == "":
        assert env["isolated_cpus"] == []
    else:
        assert env["isolated_cpus"]  # non-empty list
    source = _read("/sys/devices/system/clocksource/clocksource0/current_clocksource")
    assert timer["clocksource"] == source


def test_cpu_identity_matches_py_cpuinfo(meta: dict[str, Any]) -> None:
    import cpuinfo

    info = cpuinfo.get_cpu_info()
    assert meta["hardware"]["cpu_model"] == info["brand_raw"]
    assert meta["hardware"]["cpu_vendor"] == info["vendor_id_raw"]
    if "avx2" in info.get("flags", []):
        assert "avx2" in meta["hardware"]["cpu_flags_notable"]


def test_physical_cores_match_proc_cpuinfo(meta: dict[str, Any]) -> None:
    text = _read("/proc/cpuinfo")
    if text is None or "core id" not in text:
        pytest.skip("no core ids in /proc/cpuinfo on this machine")
    cores, phys = set(), None
    for line in text.splitlines():
        key, _, value = (s.strip() for s in line.partition(":"))
        if key == "physical id":
            phys = value
        elif key == "core id":
            cores.add((phys, value))
    assert meta["hardware"]["cores_physical"] == len(cores)


def test_caches_match_lscpu(meta: dict[str, Any]) -> None:
    if shutil.which("lscpu") is None:
        pytest.skip("lscpu not installed")
    out = subprocess.run(["lscpu", "-B", "--caches=NAME,ONE-SIZE"], capture_output=True, text=True)
    if out.returncode != 0 or not out.stdout.strip():
        pytest.skip("lscpu cannot list caches here")
    sizes = dict(line.split() for line in out.stdout.splitlines()[1:] if line.strip())
    assert sizes
    for name, key in (
        ("L1d", "cache_l1d"),
        ("L1i", "cache_l1i"),
        ("L2", "cache_l2"),
        ("L3", "cache_l3"),
    ):
        if name in sizes:
            assert meta["hardware"][key] == int(sizes[name]), name


def test_timer_facts(meta: dict[str, Any]) -> None:
    timer = meta["timer"]
    declared = time.get_clock_info("monotonic").resolution * 1e9
    assert timer["declared_resolution_ns"] == pytest.approx(declared)
    # a clock cannot show a step smaller than its declared resolution
    assert timer["measured_resolution_ns"] >= declared
    # overhead against timeit (an independent loop over the same call); loose factor
    per_call = min(timeit.repeat(time.monotonic_ns, number=2000, repeat=7)) / 2000 * 1e9
    assert per_call / 5 <= timer["overhead_ns"] <= per_call * 5


def test_record_is_json_and_follows_the_null_convention(meta: dict[str, Any]) -> None:
    text = json.dumps(meta, allow_nan=False)
    assert json.loads(text) == meta
    for section in SECTIONS:
        sec = meta[section]
        assert isinstance(sec["_unavailable"], dict)
        for key, reason in sec["_unavailable"].items():
            assert sec[key] is None, key
            assert isinstance(reason, str) and reason


def test_collection_is_fast(meta: dict[str, Any]) -> None:
    # py-cpuinfo alone takes > 1 s; the record reads /proc/cpuinfo instead
    assert meta["collection_seconds"] < 1.0


# --------------------------------------------------------------- never fails, records why


def test_missing_proc_gives_null_and_reason(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import cpuinfo

    def broken() -> dict[str, Any]:
        raise RuntimeError("no cpuid here")

    monkeypatch.setattr(probes, "PROC", tmp_path / "missing")
    monkeypatch.setattr(cpuinfo, "get_cpu_info", broken)
    meta = collect_metadata()
    env, sw, hw = meta["environment"], meta["software"], meta["hardware"]
    assert env["aslr"] is None and "randomize_va_space" in env["_unavailable"]["aslr"]
    assert sw["kernel_cmdline"] is None and "cmdline" in sw["_unavailable"]["kernel_cmdline"]
    assert hw["cpu_model"] is None
    assert "no cpuid here" in hw["_unavailable"]["cpu_model"]
    assert json.dumps(meta, allow_nan=False)


def test_py_cpuinfo_is_the_fallback(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import cpuinfo

    fake = {"brand_raw": "Test CPU 9000", "vendor_id_raw": "TestVendor", "flags": ["avx2", "fma"]}
    monkeypatch.setattr(probes, "PROC", tmp_path / "missing")
    monkeypatch.setattr(cpuinfo, "get_cpu_info", lambda: fake)
    hw = collect_metadata()["hardware"]
    assert (hw["cpu_model"], hw["cpu_vendor"]) == ("Test CPU 9000", "TestVendor")
    assert hw["cpu_flags_count"] == 2 and hw["cpu_flags_notable"] == ["avx2", "fma"]
    assert hw["cpu_identity_source"] == "py-cpuinfo"


def test_missing_sysfs_gives_null_and_reason(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(probes, "SYS_CPU", tmp_path / "nosys")
    monkeypatch.setattr(probes, "SYS_NODE", tmp_path / "nonode")
    monkeypatch.setattr(probes, "CLOCKSOURCE", tmp_path / "noclock")
    meta = collect_metadata(workload_cpus=[1])
    hw, env, timer = meta["hardware"], meta["environment"], meta["timer"]
    for key in ("governor", "governors", "cache_l1d", "cache_l3", "numa_nodes", "turbo"):
        assert hw[key] is None and hw["_unavailable"][key], key
    assert env["isolated_cpus"] is None and "isolated" in env["_unavailable"]["isolated_cpus"]
    assert (
        timer["clocksource"] is None
        and "current_clocksource" in timer["_unavailable"]["clocksource"]
    )
    assert round_facts([1])["cpu_mhz"] is None
    # unreadable facts give no warning but are listed as unknown
    settings = [w.setting for w in noise_warnings(meta)]
    assert "CPU frequency governor" not in settings and "isolated CPUs" not in settings
    unknown = dict(unknown_noise_settings(meta))
    assert {"CPU frequency governor", "turbo boost", "isolated CPUs"} <= set(unknown)


def test_a_probe_that_raises_is_recorded(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom() -> dict[str, Any]:
        raise RuntimeError("boom")

    monkeypatch.setattr(psutil, "virtual_memory", boom)
    monkeypatch.setattr(probes, "probe_libc", boom)
    meta = collect_metadata(env_names=5, workload_cpus=["x"])  # type: ignore[arg-type]
    hw, sw = meta["hardware"], meta["software"]
    assert (
        hw["memory_total_bytes"] is None
        and "RuntimeError: boom" in hw["_unavailable"]["memory_total_bytes"]
    )
    assert sw["libc"] is None and "boom" in sw["_unavailable"]["libc"]
    assert meta["environment"]["variables"] == {}


# ------------------------------------------------------------------ fabricated sysfs tree


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")


def _fake_sys(root: Path, boost: bool = False) -> Path:
    """4 CPUs, SMT pairs (0,2) and (1,3), intel_pstate powersave, turbo on, CPUs 2-3 isolated."""
    cpu = root / "cpu"
    _write(cpu / "online", "0-3")
    _write(cpu / "isolated", "2-3")
    _write(cpu / "smt" / "active", "1")
    _write(cpu / "smt" / "control", "on")
    if boost:
        _write(cpu / "cpufreq" / "boost", "0")
    else:
        _write(cpu / "intel_pstate" / "no_turbo", "0")
    for n in range(4):
        _write(cpu / f"cpu{n}" / "topology" / "thread_siblings_list", f"{n % 2},{n % 2 + 2}")
        freq = cpu / f"cpu{n}" / "cpufreq"
        _write(freq / "scaling_governor", "performance" if n == 0 else "powersave")
        _write(freq / "cpuinfo_min_freq", "800000")
        _write(freq / "cpuinfo_max_freq", "3500000")
        _write(freq / "scaling_cur_freq", str(2400000 + 1000 * n))
        _write(freq / "scaling_driver", "intel_pstate")
    caches = [
        ("1", "Data", "48K"),
        ("1", "Instruction", "32K"),
        ("2", "Unified", "2048K"),
        ("3", "Unified", "30M"),
    ]
    for i, (level, kind, size) in enumerate(caches):
        index = cpu / "cpu1" / "cache" / f"index{i}"
        _write(index / "level", level)
        _write(index / "type", kind)
        _write(index / "size", size)
    return cpu


def test_fabricated_sysfs_is_read(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(probes, "SYS_CPU", _fake_sys(tmp_path))
    meta = collect_metadata(workload_cpus=[1])
    hw, env = meta["hardware"], meta["environment"]
    assert hw["governors"] == {
        "0": "performance",
        "1": "powersave",
        "2": "powersave",
        "3": "powersave",
    }
    assert hw["governor"] == "mixed"
    assert hw["turbo"] is True and hw["turbo_control"].endswith("intel_pstate/no_turbo")
    assert (hw["freq_min_mhz"], hw["freq_max_mhz"], hw["freq_current_mhz"]) == (
        800.0,
        3500.0,
        2401.0,
    )
    assert hw["scaling_driver"] == "intel_pstate"
    assert hw["smt_active"] is True and hw["smt_control"] == "on"
    assert hw["thread_siblings"] == {"0": [0, 2], "1": [1, 3], "2": [0, 2], "3": [1, 3]}
    assert (hw["cache_l1d"], hw["cache_l1i"]) == (48 * 1024, 32 * 1024)
    assert (hw["cache_l2"], hw["cache_l3"]) == (2048 * 1024, 30 * 1024 * 1024)
    assert env["isolated_cpus"] == [2, 3]
    found = {w.setting: w for w in noise_warnings(meta)}
    assert (
        found["CPU frequency governor"].fix_command
        == "sudo cpupower -c 1 frequency-set -g performance"
    )
    assert found["turbo boost"].fix_command.startswith("echo 1 | sudo tee ")
    assert found["SMT sibling online"].fix_command.endswith("/cpu3/online")
    assert "1" in found["isolated CPUs"].found  # CPU 1 is not among the isolated 2-3
    assert round_facts([1, 3]) == {
        "load_1min": pytest.approx(os.getloadavg()[0], abs=0.5),
        "cpu_mhz": {"1": 2401.0, "3": 2403.0},
    }


def test_boost_file_is_read(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(probes, "SYS_CPU", _fake_sys(tmp_path, boost=True))
    hw = collect_metadata()["hardware"]
    assert hw["turbo"] is False and hw["turbo_control"].endswith("cpufreq/boost")


def test_kernel_param() -> None:
    line = "ro quiet isolcpus=2,3 nohz_full=2-3 skew_tick -- isolcpus=9"
    assert probes.kernel_param(line, "isolcpus") == "2,3"
    assert probes.kernel_param(line, "nohz_full") == "2-3"
    assert probes.kernel_param(line, "skew_tick") == ""
    assert probes.kernel_param(line, "rcu_nocbs") is None


@given(st.sets(st.integers(min_value=0, max_value=300), max_size=40))
def test_cpu_list_round_trip(cpus: set[int]) -> None:
    # the record reads sysfs lists with the one parser of runner/config/cpulist.py
    text = format_cpu_list(cpus)
    assert parse_kernel_cpu_list(text) == tuple(sorted(cpus))
    assert parse_kernel_cpu_list(",".join(map(str, cpus))) == tuple(sorted(cpus))


def test_env_mapping_is_recorded_as_given() -> None:
    meta = collect_metadata(env_names={"OMP_NUM_THREADS": "1"})
    assert meta["environment"]["variables"] == {"OMP_NUM_THREADS": "1"}


# ------------------------------------------------------------------------------------ git


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


@pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")
def test_git_commit_and_dirty_flag(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    repo = tmp_path / "repo"
    repo.mkdir()
    exp = repo / "experiment.yaml"
    exp.write_text("name: x\n")
    _git(repo, "init", "-q")
    _git(repo, "add", "experiment.yaml")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "first")
    ref = (repo / ".git" / "HEAD").read_text().split()[1]
    commit = (repo / ".git" / ref).read_text().strip()
    env = collect_metadata(experiment_path=exp)["environment"]
    assert (env["git_commit"], env["git_dirty"]) == (commit, False)
    assert Path(env["git_repository"]).resolve() == repo.resolve()
    exp.write_text("name: y\n")
    assert collect_metadata(experiment_path=exp)["environment"]["git_dirty"] is True

    outside = tmp_path / "plain" / "e.yaml"
    outside.parent.mkdir()
    outside.write_text("")
    env = collect_metadata(experiment_path=outside)["environment"]
    assert (
        env["git_commit"] is None and "not in a git repository" in env["_unavailable"]["git_commit"]
    )

    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    env = collect_metadata(experiment_path=exp)["environment"]
    assert env["git_commit"] is None and env["_unavailable"]["git_commit"] == "git is not installed"


# ----------------------------------------------------------------------------- round facts


def test_round_facts_is_cheap() -> None:
    cpus = [0]
    times = []
    for _ in range(200):
        start = time.perf_counter()
        facts = round_facts(cpus)
        times.append(time.perf_counter() - start)
    assert facts["load_1min"] == pytest.approx(os.getloadavg()[0], abs=0.5)
    assert statistics.median(times) < 1e-3  # typically a few microseconds
    assert round_facts(None)["cpu_mhz"] is None


# ----------------------------------------------------------------------------- noise rules


def _quiet() -> dict[str, Any]:
    """A hand-built record of a well-tuned 4-CPU machine (no warning expected)."""
    return {
        "hardware": {
            "_unavailable": {},
            "cores_logical": 4,
            "governors": {"0": "performance", "1": "performance"},
            "turbo": False,
            "turbo_control": "/sys/devices/system/cpu/intel_pstate/no_turbo",
            "smt_active": False,
            "thread_siblings": {"0": [0], "1": [1], "2": [2], "3": [3]},
        },
        "environment": {
            "_unavailable": {},
            "workload_cpus": [1],
            "load_average": [0.2, 0.2, 0.2],
            "aslr": 0,
            "isolated_cpus": [1],
        },
    }


def _only(meta: dict[str, Any], cpus: list[int] | None = None) -> NoiseWarning:
    found = noise_warnings(meta, cpus)
    assert len(found) == 1, found
    return found[0]


def test_quiet_machine_has_no_warnings() -> None:
    assert noise_warnings(_quiet()) == []
    assert unknown_noise_settings(_quiet()) == []


def test_governor_rule() -> None:
    meta = _quiet()
    meta["hardware"]["governors"]["1"] = "powersave"
    w = _only(meta)
    assert w.setting == "CPU frequency governor" and "powersave" in w.found
    assert w.fix_command == "sudo cpupower -c 1 frequency-set -g performance"
    meta["hardware"]["governors"] = {"0": "powersave", "1": "performance"}
    assert noise_warnings(meta) == []  # CPU 0 is not a workload CPU


@pytest.mark.parametrize(
    ("control", "fix"),
    [
        (
            "/sys/devices/system/cpu/intel_pstate/no_turbo",
            "echo 1 | sudo tee /sys/devices/system/cpu/intel_pstate/no_turbo",
        ),
        (
            "/sys/devices/system/cpu/cpufreq/boost",
            "echo 0 | sudo tee /sys/devices/system/cpu/cpufreq/boost",
        ),
    ],
)
def test_turbo_rule(control: str, fix: str) -> None:
    meta = _quiet()
    meta["hardware"].update(turbo=True, turbo_control=control)
    assert _only(meta).fix_command == fix


def test_smt_rule() -> None:
    meta = _quiet()
    meta["hardware"]["thread_siblings"] = {"0": [0, 2], "1": [1, 3], "2": [0, 2], "3": [1, 3]}
    w = _only(meta)
    assert w.setting == "SMT sibling online"
    assert w.fix_command == "echo 0 | sudo tee /sys/devices/system/cpu/cpu3/online"
    # a sibling that is itself a workload CPU is the workload's own choice
    assert "SMT sibling online" not in [x.setting for x in noise_warnings(meta, [1, 3])]
    meta["environment"]["workload_cpus"] = None
    meta["hardware"]["smt_active"] = True
    settings = [x.setting for x in noise_warnings(meta)]
    assert "SMT (hyper-threading)" in settings


def test_load_rule() -> None:
    meta = _quiet()
    meta["environment"]["load_average"] = [2.4, 1.0, 1.0]  # 0.6 per CPU on 4 CPUs
    assert _only(meta).setting == "load average"
    meta["environment"]["load_average"] = [2.0, 1.0, 1.0]  # exactly 0.5: not above
    assert noise_warnings(meta) == []


def test_aslr_rule() -> None:
    meta = _quiet()
    meta["environment"]["aslr"] = 2
    assert _only(meta).fix_command == "echo 0 | sudo tee /proc/sys/kernel/randomize_va_space"


def test_isolation_rule() -> None:
    meta = _quiet()
    meta["environment"]["isolated_cpus"] = []
    w = _only(meta)
    assert w.setting == "isolated CPUs" and "isolcpus=1" in w.fix_command
    meta["environment"]["isolated_cpus"] = [2]
    assert "isolcpus=1" in _only(meta).fix_command


def test_unreadable_fact_is_unknown_not_warned() -> None:
    meta = _quiet()
    meta["hardware"]["governors"] = None
    meta["hardware"]["_unavailable"]["governors"] = "no cpufreq"
    meta["environment"]["aslr"] = None
    meta["environment"]["_unavailable"]["aslr"] = "no randomize_va_space"
    assert noise_warnings(meta) == []
    assert unknown_noise_settings(meta) == [
        ("CPU frequency governor", "no cpufreq"),
        ("ASLR", "no randomize_va_space"),
    ]


def _set(meta: dict[str, Any], section: str, key: str, value: Any) -> dict[str, Any]:
    meta[section][key] = value
    return meta


def _unreadable(meta: dict[str, Any], section: str, key: str) -> dict[str, Any]:
    meta[section][key] = None
    meta[section]["_unavailable"][key] = f"cannot read {key}"
    return meta


# each rule on its own: (rule, setting it warns about, a change of the quiet record that
# triggers it, the fact whose loss makes it unchecked, the setting named then)
RULE_CASES = [
    (
        noise.governor_rule,
        "CPU frequency governor",
        lambda m: _set(m, "hardware", "governors", {"0": "performance", "1": "schedutil"}),
        ("hardware", "governors"),
        "CPU frequency governor",
    ),
    (
        noise.turbo_rule,
        "turbo boost",
        lambda m: _set(m, "hardware", "turbo", True),
        ("hardware", "turbo"),
        "turbo boost",
    ),
    (
        noise.smt_rule,
        "SMT sibling online",
        lambda m: _set(m, "hardware", "thread_siblings", {"1": [0, 1], "0": [0, 1]}),
        ("hardware", "thread_siblings"),
        None,  # the smt_active flag still answers for the machine
    ),
    (
        noise.load_rule,
        "load average",
        lambda m: _set(m, "environment", "load_average", [3.0, 0.0, 0.0]),
        ("environment", "load_average"),
        "load average",
    ),
    (
        noise.aslr_rule,
        "ASLR",
        lambda m: _set(m, "environment", "aslr", 1),
        ("environment", "aslr"),
        "ASLR",
    ),
    (
        noise.isolation_rule,
        "isolated CPUs",
        lambda m: _set(m, "environment", "isolated_cpus", [0, 2]),
        ("environment", "isolated_cpus"),
        "isolated CPUs",
    ),
]


def test_rules_are_listed_once_in_report_order() -> None:
    assert list(noise.RULES) == [case[0] for case in RULE_CASES]


@pytest.mark.parametrize(
    ("rule", "setting", "trigger", "fact", "unchecked"),
    RULE_CASES,
    ids=[case[1] for case in RULE_CASES],
)
def test_each_rule_alone(
    rule: noise.Rule,
    setting: str,
    trigger: Any,
    fact: tuple[str, str],
    unchecked: str | None,
) -> None:
    cpus = [1]
    parse = MachineFacts.from_stored
    assert rule(parse(_quiet()), cpus) == []  # the quiet record does not trigger it
    found = rule(parse(trigger(_quiet())), cpus)
    assert len(found) == 1 and isinstance(found[0], NoiseWarning), found
    assert found[0].setting == setting
    assert all(found[0].to_dict().values())  # found, why and fix are all said
    # the other rules stay silent on the same change: each rule reads its own facts
    others = [r for r in noise.RULES if r is not rule]
    assert [f for r in others for f in r(parse(trigger(_quiet())), cpus)] == []
    # an unreadable fact is not a warning; it is listed as unchecked with the reason
    lost = rule(parse(_unreadable(_quiet(), *fact)), cpus)
    if unchecked is None:
        assert lost == []
    else:
        assert lost == [noise.Unchecked(unchecked, f"cannot read {fact[1]}")]


def test_smt_rule_unchecked_when_neither_fact_is_readable() -> None:
    meta = _unreadable(
        _unreadable(_quiet(), "hardware", "thread_siblings"), "hardware", "smt_active"
    )
    assert noise.smt_rule(MachineFacts.from_stored(meta), [1]) == [
        noise.Unchecked("SMT siblings", "cannot read thread_siblings")
    ]


def test_assess_keeps_rule_order_and_mixes_findings() -> None:
    meta = _quiet()
    meta["environment"].update(aslr=2, load_average=[4.0, 0, 0])
    meta = _unreadable(meta, "hardware", "turbo")
    found = noise.assess(meta)
    assert found == [
        noise.Unchecked("turbo boost", "cannot read turbo"),
        noise_warnings(meta)[0],
        noise_warnings(meta)[1],
    ]
    assert [w.setting for w in noise_warnings(meta)] == ["load average", "ASLR"]


# ------------------------------------------------------------------------------ describe


def test_describe_machine_layout(meta: dict[str, Any]) -> None:
    rows = describe_machine(meta)
    sections = list(dict.fromkeys(r[0] for r in rows))
    assert sections == ["Hardware", "Software", "Timer", "Environment"]
    text = {label: value for _, label, value in rows}
    assert text["Kernel"] == platform.release()
    assert text["$BENCHRUN_SURELY_UNSET_VAR"] == "not set"
    assert text["Git commit"] == "unknown (no experiment file given)"


def test_describe_unknown_and_formatting() -> None:
    meta = _quiet()
    meta["hardware"].update(cache_l1d=49152, cache_l3=33554432, memory_total_bytes=None)
    meta["hardware"]["_unavailable"]["memory_total_bytes"] = "psutil failed"
    text = {label: value for _, label, value in describe_machine(meta)}
    assert text["Memory"] == "unknown (psutil failed)"
    assert "L1d 48 KiB" in text["Caches"] and "L3 32 MiB" in text["Caches"]
    assert format_bytes(1536) == "1.5 KiB" and format_bytes(3 * 1024**3) == "3 GiB"
    w = NoiseWarning("a", "b", "c", "d")
    assert w.to_dict() == {"setting": "a", "found": "b", "why": "c", "fix_command": "d"}
