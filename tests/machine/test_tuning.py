"""``benchrun system tune`` / ``reset`` and ``settings.tune`` (runner/machine/tuning.py,
docs/tuning.md).

Every setting is tuned and restored in a fake sysfs/procfs tree whose values the tests
wrote, so the expected values are the tests' own (a 4-CPU machine, SMT siblings 0/2 and
1/3). The real kernel's ``perf_event_max_sample_rate`` and IRQ affinities are tuned and
restored where this machine allows it (root), read back from /proc.
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from benchrun.runner.campaign.run import run_campaign
from benchrun.runner.config.loader import parse_experiment
from benchrun.runner.errors import UserError
from benchrun.runner.execute.executor import RoundSpec
from benchrun.runner.execute.fake import FakeExecutor, constant
from benchrun.runner.machine import tuning
from benchrun.runner.machine.tuning import (
    campaign_tuning,
    current_journal,
    recover,
    system_reset,
    system_tune,
)
from benchrun.runner.machine.tuning_journal import JournalStore
from benchrun.runner.safefs import UnsafePath
from benchrun.runner.store.database import Store
from tests.other_user import OTHER_UID, as_other_user, needs_root, plant_symlink
from tests.real_tuning import (
    GROUP,
    MARK,
    needs_real_sample_rate,
    read_sample_rate,
    real_sample_rate,
)

#: the fake machine: path relative to the root -> content (each with its newline, as the
#: kernel shows it)
FAKE: dict[str, str] = {
    **{f"sys/devices/system/cpu/cpu{c}/cpufreq/scaling_governor": "powersave\n" for c in range(4)},
    **{
        f"sys/devices/system/cpu/cpu{c}/cpufreq/scaling_available_governors": "performance powersave\n"
        for c in range(4)
    },
    **{
        f"sys/devices/system/cpu/cpu{c}/topology/thread_siblings_list": f"{c % 2},{c % 2 + 2}\n"
        for c in range(4)
    },
    **{f"sys/devices/system/cpu/cpu{c}/online": "1\n" for c in range(1, 4)},
    "sys/devices/system/cpu/online": "0-3\n",
    "sys/devices/system/cpu/smt/control": "on\n",
    "sys/devices/system/cpu/intel_pstate/no_turbo": "0\n",
    "proc/sys/kernel/perf_event_max_sample_rate": f"{MARK}\n",
    "proc/sys/kernel/randomize_va_space": "2\n",
    "proc/irq/5/smp_affinity_list": "0-3\n",
    "proc/irq/9/smp_affinity_list": "0\n",
    "proc/irq/12/smp_affinity_list": "1,3\n",
    "proc/irq/default_smp_affinity": "f\n",
    "etc/passwd": "root:x:0:0::/root:/bin/sh\n",
}


def make_tree(root: Path, files: dict[str, str] = FAKE) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def snapshot(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}


def value(root: Path, rel: str) -> str:
    return (root / rel).read_text().strip()


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    return make_tree(tmp_path / "root")


@pytest.fixture
def state(tmp_path: Path) -> Path:
    return tmp_path / "state"


# -- every setting in a fake tree ------------------------------------------------------


def test_tune_changes_every_setting_of_the_benchmark_cpu_and_reset_restores_the_tree(
    tree: Path, state: Path
) -> None:
    before = snapshot(tree)
    recovered, report = system_tune([1], root=tree, directory=state, aslr=True)
    assert recovered is None
    cpu = "sys/devices/system/cpu"
    # the values a tuned machine has, written down by hand for this topology
    assert value(tree, f"{cpu}/cpu1/cpufreq/scaling_governor") == "performance"
    for other in (0, 2, 3):
        assert value(tree, f"{cpu}/cpu{other}/cpufreq/scaling_governor") == "powersave"
    assert value(tree, f"{cpu}/intel_pstate/no_turbo") == "1"
    assert value(tree, "proc/sys/kernel/perf_event_max_sample_rate") == "1"
    assert value(tree, "proc/sys/kernel/randomize_va_space") == "0"
    assert value(tree, f"{cpu}/cpu3/online") == "0"  # CPU 1's sibling
    assert value(tree, f"{cpu}/cpu2/online") == "1"  # not a sibling of CPU 1
    # IRQs off CPU 1 and off the sibling taken offline: CPUs 0 and 2 remain
    assert value(tree, "proc/irq/5/smp_affinity_list") == "0,2"
    assert value(tree, "proc/irq/9/smp_affinity_list") == "0"  # never on CPU 1
    assert value(tree, "proc/irq/12/smp_affinity_list") == "0,2"  # 1,3: none left
    assert value(tree, "proc/irq/default_smp_affinity") == "5"  # CPUs 0 and 2
    changed = {e.path: (e.before, e.after) for e in report.changes}
    assert changed["proc/sys/kernel/perf_event_max_sample_rate"] == (MARK, "1")
    assert changed[f"{cpu}/cpu3/online"] == ("1", "0")
    assert len(changed) == 8  # governor, turbo, rate, ASLR, sibling, IRQ 5, 12, default
    assert report.skipped == ()

    result = system_reset(root=tree, directory=state)
    assert result is not None and result.removed and not result.refused
    # the journal's order reversed: IRQs first, the governor last
    assert [e.path for e in result.restored] == [e.path for e in reversed(report.changes)]
    assert snapshot(tree) == before
    assert not (state / "tuning.json").exists()
    assert system_reset(root=tree, directory=state) is None


def test_cpufreq_boost_is_turned_off_where_intel_pstate_is_absent(tmp_path: Path) -> None:
    files = {k: v for k, v in FAKE.items() if "intel_pstate" not in k}
    files["sys/devices/system/cpu/cpufreq/boost"] = "1\n"
    root = make_tree(tmp_path / "root", files)
    system_tune([1], root=root, directory=tmp_path / "s")
    assert value(root, "sys/devices/system/cpu/cpufreq/boost") == "0"
    system_reset(root=root, directory=tmp_path / "s")
    assert value(root, "sys/devices/system/cpu/cpufreq/boost") == "1"


def test_a_machine_without_cpufreq_turbo_or_smt_says_what_it_lacks(tmp_path: Path) -> None:
    # this VM's kind: no cpufreq, no turbo file, one thread per core
    files = {
        k: v
        for k, v in FAKE.items()
        if "cpufreq" not in k and "intel_pstate" not in k and "topology" not in k
    }
    files.update(
        {f"sys/devices/system/cpu/cpu{c}/topology/thread_siblings_list": f"{c}\n" for c in range(4)}
    )
    root = make_tree(tmp_path / "root", files)
    _, report = system_tune([1], root=root, directory=tmp_path / "s")
    kinds = {s.setting: s.kind for s in report.skipped}
    assert kinds == {"CPU frequency governor": "absent", "turbo": "absent", "SMT siblings": "done"}
    assert {e.path for e in report.changes} == {
        "proc/sys/kernel/perf_event_max_sample_rate",
        "proc/irq/5/smp_affinity_list",
        "proc/irq/12/smp_affinity_list",
        "proc/irq/default_smp_affinity",
    }
    assert value(root, "proc/irq/12/smp_affinity_list") == "3"  # 1,3 without CPU 1
    assert value(root, "proc/irq/5/smp_affinity_list") == "0,2-3"


def test_aslr_is_only_tuned_when_asked(tree: Path, state: Path) -> None:
    system_tune([1], root=tree, directory=state)
    assert value(tree, "proc/sys/kernel/randomize_va_space") == "2"


def test_a_second_tune_changes_nothing_and_one_reset_restores_all(tree: Path, state: Path) -> None:
    before = snapshot(tree)
    system_tune([1], root=tree, directory=state)
    _, again = system_tune([1], root=tree, directory=state)
    assert again.changes == ()
    assert {s.kind for s in again.skipped} == {"done"}
    system_reset(root=tree, directory=state)
    assert snapshot(tree) == before


def test_a_value_changed_between_two_tunes_is_restored_to_the_first_value(
    tree: Path, state: Path
) -> None:
    rate = "proc/sys/kernel/perf_event_max_sample_rate"
    system_tune([1], root=tree, directory=state)
    (tree / rate).write_text("777\n")  # someone raised it meanwhile
    _, again = system_tune([1], root=tree, directory=state)
    assert [(e.before, e.after) for e in again.changes] == [("777", "1")]
    system_reset(root=tree, directory=state)
    assert value(tree, rate) == MARK  # the journal restored in reverse order


# -- the journal: written before each change, durable, refusals kept ------------------


def test_a_crash_between_two_changes_leaves_every_previous_value_in_the_journal(
    tree: Path, state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = snapshot(tree)
    real_write = tuning.write_value

    class Crash(BaseException):
        pass

    def crash_at_smt(path: Path, text: str) -> None:
        if path.name == "online":
            raise Crash  # the process dies before this write
        real_write(path, text)

    monkeypatch.setattr(tuning, "write_value", crash_at_smt)
    with pytest.raises(Crash):
        system_tune([1], root=tree, directory=state)
    monkeypatch.setattr(tuning, "write_value", real_write)
    journal = json.loads((state / "tuning.json").read_text())
    # every previous value went to the journal before the first change: also those of
    # the writes that never happened (restoring them writes the value they still have)
    assert [(e["path"], e["before"]) for e in journal["entries"]] == [
        ("sys/devices/system/cpu/cpu1/cpufreq/scaling_governor", "powersave"),
        ("sys/devices/system/cpu/intel_pstate/no_turbo", "0"),
        ("proc/sys/kernel/perf_event_max_sample_rate", MARK),
        ("sys/devices/system/cpu/cpu3/online", "1"),
        ("proc/irq/5/smp_affinity_list", "0-3"),
        ("proc/irq/12/smp_affinity_list", "1,3"),
        ("proc/irq/default_smp_affinity", "f"),
    ]
    assert value(tree, "proc/sys/kernel/perf_event_max_sample_rate") == "1"  # made
    assert value(tree, "sys/devices/system/cpu/cpu3/online") == "1"  # not made
    system_reset(root=tree, directory=state)
    assert snapshot(tree) == before


def test_a_value_the_kernel_refuses_on_reset_is_reported_and_kept(tree: Path, state: Path) -> None:
    rate = tree / "proc/sys/kernel/perf_event_max_sample_rate"
    _, report = system_tune([1], root=tree, directory=state)
    # the file now refuses writes (a symbolic link is never written through: ELOOP)
    real = tree / "rate-elsewhere"
    real.write_text(rate.read_text())
    rate.unlink()
    rate.symlink_to(real)
    result = system_reset(root=tree, directory=state)
    assert result is not None and not result.removed
    assert [e.setting for e, _ in result.refused] == ["perf_event_max_sample_rate"]
    assert len(result.restored) == len(report.changes) - 1
    lines = result.lines()
    assert lines[0].startswith("perf_event_max_sample_rate: the kernel refused '54321' (")
    kept = json.loads((state / "tuning.json").read_text())["entries"]
    assert [(e["path"], e["before"]) for e in kept] == [
        ("proc/sys/kernel/perf_event_max_sample_rate", MARK)
    ]
    rate.unlink()
    rate.write_text("1\n")  # the kernel takes values again
    again = system_reset(root=tree, directory=state)
    assert again is not None and again.removed
    assert value(tree, "proc/sys/kernel/perf_event_max_sample_rate") == MARK


def test_a_write_refused_while_tuning_is_left_out_of_the_journal(tree: Path, state: Path) -> None:
    rate = tree / "proc/sys/kernel/perf_event_max_sample_rate"
    rate.unlink()
    (tree / "elsewhere").write_text(f"{MARK}\n")
    rate.symlink_to(tree / "elsewhere")
    _, report = system_tune([1], root=tree, directory=state)
    refused = [s for s in report.skipped if s.kind == "refused"]
    assert [s.setting for s in refused] == ["perf_event_max_sample_rate"]
    journal = json.loads((state / "tuning.json").read_text())
    assert "proc/sys/kernel/perf_event_max_sample_rate" not in {
        e["path"] for e in journal["entries"]
    }
    assert value(tree, "elsewhere") == MARK


def test_the_journal_is_private_and_fsynced_in_place(tree: Path, state: Path) -> None:
    system_tune([1], root=tree, directory=state)
    st = os.stat(state / "tuning.json")
    assert st.st_mode & 0o777 == 0o600 and st.st_uid == os.geteuid()
    assert os.stat(state).st_mode & 0o777 == 0o700
    assert sorted(os.listdir(state)) == ["tuning.json", "tuning.lock"]  # no temporary left


@needs_root
def test_a_journal_of_another_user_is_refused_and_nothing_is_written(
    tree: Path, state: Path
) -> None:
    system_tune([1], root=tree, directory=state)
    tuned = snapshot(tree)
    os.chown(state / "tuning.json", OTHER_UID, OTHER_UID)
    with pytest.raises(UnsafePath, match="owned by uid 65534"):
        system_reset(root=tree, directory=state)
    assert snapshot(tree) == tuned


@pytest.mark.parametrize("mode", [0o620, 0o602])
def test_a_journal_others_may_write_is_refused(tree: Path, state: Path, mode: int) -> None:
    system_tune([1], root=tree, directory=state)
    tuned = snapshot(tree)
    os.chmod(state / "tuning.json", mode)
    with pytest.raises(UnsafePath, match="writable by other users"):
        system_reset(root=tree, directory=state)
    assert snapshot(tree) == tuned


@needs_root
def test_a_planted_symlink_journal_is_refused(tree: Path, state: Path, tmp_path: Path) -> None:
    state.mkdir(mode=0o700)
    target = tmp_path / "theirs.json"
    target.write_text("{}")
    plant_symlink(state / "tuning.json", target)
    with pytest.raises(UnsafePath, match="symbolic link"):
        system_reset(root=tree, directory=state)


def test_a_journal_naming_another_file_is_refused(tree: Path, state: Path) -> None:
    system_tune([1], root=tree, directory=state)
    doc = json.loads((state / "tuning.json").read_text())
    doc["entries"].append({"setting": "x", "path": "etc/passwd", "before": "owned", "after": "x"})
    (state / "tuning.json").write_text(json.dumps(doc))
    with pytest.raises(UserError, match="'etc/passwd' is not a setting benchrun tunes"):
        system_reset(root=tree, directory=state)
    assert (tree / "etc/passwd").read_text() == FAKE["etc/passwd"]


@needs_root
def test_a_journal_directory_others_may_write_is_refused(tree: Path, tmp_path: Path) -> None:
    open_to_all = tmp_path / "open-to-all"
    open_to_all.mkdir()
    os.chmod(open_to_all, 0o777)
    with pytest.raises(UnsafePath, match="writable by other users"):
        system_tune([1], root=tree, directory=open_to_all)
    assert value(tree, "proc/sys/kernel/perf_event_max_sample_rate") == MARK


# -- who holds the tuning: a live campaign, a dead one, a manual tune ------------------


def test_a_live_campaigns_tuning_is_left_and_a_dead_ones_is_restored(
    tree: Path, state: Path
) -> None:
    before = snapshot(tree)
    with campaign_tuning([1], "/c", root=tree, directory=state) as held:
        assert held.report is not None and held.report.changes
        assert recover(root=tree, directory=state) is None  # its lock is held: alive
        with pytest.raises(UserError, match="the campaign /c .* holds the machine tuned"):
            system_reset(root=tree, directory=state)
        journal, live = current_journal(state)
        assert journal is not None and journal.owner.kind == "campaign" and live
    assert snapshot(tree) == before  # restored at its end
    assert not (state / "tuning.json").exists()


def test_a_campaign_that_raised_restores_on_the_way_out(tree: Path, state: Path) -> None:
    before = snapshot(tree)
    with pytest.raises(RuntimeError), campaign_tuning([1], "/c", root=tree, directory=state):
        assert value(tree, "proc/sys/kernel/perf_event_max_sample_rate") == "1"
        raise RuntimeError
    assert snapshot(tree) == before


def test_recover_restores_a_dead_campaigns_journal_but_never_a_manual_one(
    tree: Path, state: Path
) -> None:
    before = snapshot(tree)
    # a campaign's journal whose process is gone: its lock is free
    with JournalStore(state, create=True) as store:
        store.try_lock()
        report = tuning.tune_locked(store, tree, [1], tuning.owner_now("campaign", "/dead"))
    assert report.changes
    restored = recover(root=tree, directory=state)
    assert restored is not None and restored.removed
    assert restored.owner is not None and restored.owner.campaign == "/dead"
    assert snapshot(tree) == before
    system_tune([1], root=tree, directory=state)
    tuned = snapshot(tree)
    assert recover(root=tree, directory=state) is None
    assert snapshot(tree) == tuned


def test_a_campaign_leaves_a_manual_tuning_as_it_is(tree: Path, state: Path) -> None:
    system_tune([1], root=tree, directory=state)
    tuned = snapshot(tree)
    with campaign_tuning([1], "/c", root=tree, directory=state) as held:
        assert held.report is None and held.note and "benchrun system tune" in held.note
    assert snapshot(tree) == tuned
    assert (state / "tuning.json").exists()


# -- a campaign with settings.tune (fake executor, fake tree) --------------------------


class Quiet:
    def __init__(self) -> None:
        self.messages: list[str] = []

    def start(self, *a: Any) -> None: ...

    def round_done(self, *a: Any) -> None: ...

    def message(self, text: str) -> None:
        self.messages.append(text)

    def show_decision(self, *a: Any) -> None: ...

    def stop(self) -> None: ...


def test_a_tune_campaign_is_tuned_while_it_runs_and_records_before_and_after(
    tree: Path, state: Path, tmp_path: Path
) -> None:
    before = snapshot(tree)
    text = (
        f"name: tuned\noutput: {tmp_path / 'out'}\nsettings:\n  adaptive: false\n  rounds: 3\n"
        "  warmup_rounds: 0\n  pin: none\n  tune: true\nworkloads:\n  - name: a\n    command: [w]\n"
    )
    exp = parse_experiment(text, base_dir=tmp_path, check_commands=False)
    seen: list[str] = []

    def during(spec: RoundSpec, index: int) -> None:
        seen.append(value(tree, "proc/sys/kernel/perf_event_max_sample_rate"))

    out = run_campaign(
        exp,
        FakeExecutor({"a": constant(0.01)}, on_launch=during),
        Quiet(),
        metadata_fn=lambda: {"hardware": {}},
        workload_cpus=(1,),
        tuning_root=tree,
        tuning_dir=state,
    )
    assert out.exit_code == 0
    assert seen == ["1", "1", "1"]
    assert snapshot(tree) == before
    with Store.open(exp.db_path) as store:
        campaign = store.campaign()
        events = {e.kind: e for e in store.events(campaign.id)}
    changes = {c["path"]: (c["before"], c["after"]) for c in campaign.metadata["tuning"]["changes"]}
    assert changes["proc/sys/kernel/perf_event_max_sample_rate"] == (MARK, "1")
    assert changes["sys/devices/system/cpu/cpu3/online"] == ("1", "0")
    assert events["tuned"].data["changes"] == campaign.metadata["tuning"]["changes"]
    restored = events["tuning-restored"].data
    assert restored["journal_removed"] and len(restored["restored"]) == len(changes)
    # the report's methods paragraph says what was tuned, with the values the kernel had
    from benchrun.runner.report.analysis import rank_groups
    from benchrun.runner.report.methods import methods_paragraph
    from benchrun.runner.report.model import load_campaign

    model = load_campaign(exp.db_path)
    text = methods_paragraph(model, rank_groups(model, quantreg=False), None)
    assert "benchrun tuned the machine (settings.tune) and restored it" in text
    assert f"perf_event_max_sample_rate: {MARK} -> 1" in text
    assert "SMT sibling CPU 3 online: 1 -> 0" in text, text
    # and `benchrun show` says it under the campaign's header
    shown = subprocess.run(
        [sys.executable, "-m", "benchrun.runner.cli", "show", str(exp.campaign_dir)],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "300"},
        timeout=120,
    )
    assert shown.returncode == 0, shown.stderr
    (line,) = [ln for ln in shown.stdout.splitlines() if ln.startswith("tuned for the campaign")]
    assert f"perf_event_max_sample_rate: {MARK} -> 1" in line
    assert "SMT sibling CPU 3 online: 1 -> 0" in line


def test_any_campaign_first_restores_what_a_dead_tune_campaign_left(
    tree: Path, state: Path, tmp_path: Path
) -> None:
    before = snapshot(tree)
    with JournalStore(state, create=True) as store:
        store.try_lock()
        tuning.tune_locked(store, tree, [1], tuning.owner_now("campaign", "/dead"))
    text = (
        f"name: next\noutput: {tmp_path / 'out'}\nsettings:\n  adaptive: false\n  rounds: 1\n"
        "  warmup_rounds: 0\n  pin: none\nworkloads:\n  - name: a\n    command: [w]\n"
    )
    exp = parse_experiment(text, base_dir=tmp_path, check_commands=False)
    display = Quiet()
    run_campaign(
        exp, FakeExecutor({"a": constant(0.01)}), display, tuning_root=tree, tuning_dir=state
    )
    assert snapshot(tree) == before
    assert any("the campaign /dead" in m and "restored" in m for m in display.messages)
    with Store.open(exp.db_path) as store:
        kinds = [e.kind for e in store.events(store.campaign().id)]
    assert "tuning-restored" in kinds


# -- non-root --------------------------------------------------------------------------


@pytest.fixture
def public_tmp() -> Any:
    """A directory the other user can reach (pytest's own is root's, 0700)."""
    path = Path(tempfile.mkdtemp(prefix="benchrun-tune-"))
    os.chmod(path, 0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@needs_root
def test_a_non_root_user_is_told_what_needs_root_and_nothing_changes(public_tmp: Path) -> None:
    root = make_tree(public_tmp / "root")  # root's files, 0644: nobody may not write them
    before = snapshot(root)
    state = public_tmp / "nobody-state"
    state.mkdir()
    os.chown(state, OTHER_UID, OTHER_UID)

    def tune() -> Any:
        _, report = system_tune([1], root=root, directory=state)
        return [len(report.changes), [(s.setting, s.kind) for s in report.needs_root]]

    changes, needs = as_other_user(tune)
    assert changes == 0
    assert len(needs) == 1 and needs[0][1] == "root"
    assert needs[0][0].split(", ") == [
        "governor CPU 1",
        "turbo (no_turbo)",
        "perf_event_max_sample_rate",
        "SMT sibling CPU 3 online",
        "default IRQ affinity",
        "IRQ 5,12 affinity",
    ]
    assert snapshot(root) == before
    assert not (state / "tuning.json").exists()


@needs_real_sample_rate
@pytest.mark.xdist_group(GROUP)
def test_system_tune_as_non_root_exits_1_naming_root_and_the_kernel_value_stays(
    public_tmp: Path,
) -> None:
    state = public_tmp / "s"
    state.mkdir()
    os.chown(state, OTHER_UID, OTHER_UID)
    # what the command imports, imported here: the other user cannot read this
    # interpreter's standard library under /root
    import encodings.ascii  # noqa: F401

    import rich.console  # noqa: F401

    import benchrun.runner.cli  # noqa: F401
    import benchrun.runner.commands.system  # noqa: F401
    import benchrun.runner.execute.pinning  # noqa: F401

    def cli() -> Any:
        from benchrun.runner.cli import main

        os.environ["BENCHRUN_TUNING_DIR"] = str(state)
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            code = main(["system", "tune", "--cpus", "1"])
        return [code, err.getvalue()]

    with real_sample_rate(MARK):  # no other real test changes it meanwhile
        code, stderr = as_other_user(cli)
        assert read_sample_rate() == MARK
    assert code == 1, stderr
    assert "needs root" in stderr and "Traceback" not in stderr
    assert len(stderr.strip().splitlines()) == 1


# -- the real kernel -------------------------------------------------------------------


def _cli(*args: str, state: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "BENCHRUN_TUNING_DIR": str(state)}
    return subprocess.run(
        [sys.executable, "-m", "benchrun.runner.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


@needs_real_sample_rate
@pytest.mark.xdist_group(GROUP)
def test_real_sample_rate_54321_is_tuned_then_reset_to_54321(tmp_path: Path) -> None:
    with real_sample_rate(MARK):
        assert read_sample_rate() == MARK
        tuned = _cli("system", "tune", "--cpus", "1", state=tmp_path)
        assert tuned.returncode == 0, tuned.stderr
        assert read_sample_rate() == "1"
        assert "perf_event_max_sample_rate: 54321 -> 1" in tuned.stdout
        shown = _cli("system", "--json", state=tmp_path)
        doc = json.loads(shown.stdout)["tuning"]
        assert any(e["before"] == MARK for e in doc["tuned"]["entries"])
        reset = _cli("system", "reset", state=tmp_path)
        assert read_sample_rate() == MARK
        assert reset.returncode in (0, 1), reset.stderr  # 1: an IRQ the kernel refuses
        assert not (tmp_path / "tuning.json").exists() or reset.returncode == 1


@needs_real_sample_rate
@pytest.mark.xdist_group(GROUP)
def test_the_daemon_restores_a_dead_campaigns_real_tuning_at_its_start(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tests.daemon.daemon_util import xdg_env

    with real_sample_rate(MARK), xdg_env() as env:
        state = Path(env.vars["XDG_STATE_HOME"]) / "benchrun"
        with JournalStore(state, create=True) as store:  # a campaign that died tuned
            store.try_lock()
            tuning.tune_locked(store, Path("/"), [1], tuning.owner_now("campaign", "/dead"))
        assert read_sample_rate() == "1"
        monkeypatch.setenv("BENCHRUN_TUNING_DIR", str(state))  # the daemon's (root: /var/lib)
        env.start_daemon()
        assert read_sample_rate() == MARK
        log = (env.root / "daemon-test.log").read_text()
        assert "the campaign /dead" in log and "perf_event_max_sample_rate: 1 -> 54321" in log


def test_the_lock_is_released_when_its_holder_is_killed(state: Path) -> None:
    """The liveness test every recovery relies on: the kernel drops a killed process's
    flock (SIGKILL: no handler runs)."""
    state.mkdir(mode=0o700)
    lock = state / "tuning.lock"
    lock.touch(mode=0o600)
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl,sys,time; f=open(sys.argv[1],'a'); fcntl.flock(f,fcntl.LOCK_EX); "
            "print('held',flush=True); time.sleep(60)",
            str(lock),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "held"
        with JournalStore(state, create=False) as store:
            assert not store.try_lock()
        child.kill()
        child.wait(30)
        with JournalStore(state, create=False) as store:
            assert store.try_lock()
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(30)
    with open(lock) as f:  # and nobody holds it now
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)


def test_the_files_tuned_are_those_the_probes_read_and_the_noise_fixes_name() -> None:
    from benchrun.runner.machine import noise, probes
    from benchrun.runner.machine import tuning_plan as tp
    from benchrun.runner.machine.facts import (
        Aslr,
        EnvironmentFacts,
        Frequency,
        HardwareFacts,
        MachineFacts,
        Smt,
    )

    assert probes.SYS_CPU == Path("/") / tp.CPU_DIR
    assert probes.PROC / "sys/kernel/perf_event_max_sample_rate" == Path("/") / tp.SAMPLE_RATE_PATH
    aslr = noise.aslr_rule(MachineFacts(environment=EnvironmentFacts(aslr=Aslr(aslr=2))), None)[0]
    assert isinstance(aslr, noise.NoiseWarning)
    assert f"/{tp.ASLR_PATH}" in aslr.fix_command
    for control, path in (("no_turbo", tp.NO_TURBO_PATH), ("boost", tp.BOOST_PATH)):
        turbo = Frequency(turbo=True, turbo_control=f"/{path}")
        fix = noise.turbo_rule(MachineFacts(HardwareFacts(frequency=turbo)), None)[0]
        assert isinstance(fix, noise.NoiseWarning) and f"/{path}" in fix.fix_command, control
    siblings = HardwareFacts(smt=Smt(thread_siblings={"1": (1, 3)}))
    smt = noise.smt_rule(MachineFacts(siblings), [1])[0]
    assert isinstance(smt, noise.NoiseWarning)
    assert f"/{tp.CPU_DIR}/cpu3/online" in smt.fix_command
