"""Fault injection: ``benchrun run`` killed with SIGKILL at seeded random moments while its
rounds fork children; each ``--resume`` must first end the dead run's round, and in the end
no process of any run is left and every round is stored exactly once (issue 16)."""

from __future__ import annotations

import json
import random
import signal
import time
import uuid
from pathlib import Path

from e2e_util import cli, query, start_benchrun, write_experiment

from benchrun.runner.execute.containment import probe_containment
from benchrun.runner.store.database import Store

ROUNDS = 6


def _ours(prefix: str) -> dict[int, bytes]:
    """Processes whose arguments hold ``prefix``: pid -> /proc/PID/stat start (for identity)."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            args = (entry / "cmdline").read_bytes().split(b"\0")
            stat = (entry / "stat").read_bytes()
        except OSError:
            continue
        if any(a.startswith(prefix.encode()) for a in args):
            found[int(entry.name)] = stat.rsplit(b")", 1)[1].split()[19]
    return found


def _alive(pid: int, start: bytes) -> bool:
    try:
        stat = (Path("/proc") / str(pid) / "stat").read_bytes()
    except OSError:
        return False
    return stat.rsplit(b")", 1)[1].split()[19] == start and b") Z" not in stat


def _stored(db: Path) -> int:
    try:
        return query(db, "SELECT count(*) FROM round")[0][0]
    except Exception:  # no database yet
        return 0


def _describe(pid: int) -> str:
    proc = Path("/proc") / str(pid)
    try:
        return f"{pid}: {(proc / 'cmdline').read_bytes()!r} {(proc / 'cgroup').read_text().splitlines()[-1]!r}"
    except OSError:
        return f"{pid}: gone"


def test_sigkill_at_random_moments_leaves_no_process_and_no_duplicate(tmp_path: Path) -> None:
    prefix = f"3000.{uuid.uuid4().int % 10**6}"
    exp = write_experiment(
        tmp_path,
        f"""
        name: forks
        output: {tmp_path}
        settings: {{adaptive: false, rounds: {ROUNDS}, warmup_rounds: 0, pin: none}}
        workloads:
          - name: forker
            command: >-
              pgrep -f "^sleep {prefix}" >/dev/null && exit 9;
              sleep {prefix}{{round}} >/dev/null 2>&1 & sleep {prefix}{{round}} >/dev/null 2>&1 & sleep 0.4
            shell: true
        """,
    )
    db = tmp_path / "forks" / "benchrun.db"
    rng = random.Random(20261124)
    stranded: dict[int, bytes] = {}
    for attempt in range(3):
        args = ["run", str(exp), "-q"] + (["--resume"] if attempt else [])
        before = _stored(db)
        proc = start_benchrun(*args)
        deadline = time.monotonic() + 20
        while _stored(db) == before and time.monotonic() < deadline:
            time.sleep(0.01)  # the run is measuring: its first round is stored
        time.sleep(rng.uniform(0.0, 0.5))  # a seeded moment within the next round or two
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        stranded.update(_ours(prefix))  # what the dead run left running
    done = cli("run", str(exp), "-q", "--resume")
    with Store.open(db) as store:  # read only: the rounds as benchrun stores them
        (campaign,) = store.campaigns()
        rounds = store.rounds(campaign.id)
        events = store.events(campaign.id)
    beside = [r.seq for r in rounds if r.exit_code == 9]
    assert not beside, f"rounds {beside} started while an earlier round's processes ran"
    assert stranded, "every kill landed between rounds: pick another seed"
    assert done.returncode == 0, done.stderr
    # a run killed right after ending its predecessor's round stores no note: no count here
    survivors = [pid for pid, start in stranded.items() if _alive(pid, start)]
    assert not survivors, [_describe(pid) for pid in survivors]
    left = _ours(prefix)
    assert not left, [_describe(pid) for pid in left] + [str(sorted(stranded))]
    # no round lost, none duplicated: every launched round stored once, numbered on
    assert [r.seq for r in rounds] == list(range(len(rounds)))
    assert [r.round_index for r in rounds] == list(range(ROUNDS))
    # each round starts with no process of an earlier one left (else it exits 9)
    assert all(r.status == "ok" for r in rounds), [(r.status, r.reason) for r in rounds]
    # a killed run's round was not stored; the next run redid it and said so
    assert all(
        "ended the processes of a round" in e.message for e in events if e.kind == "leftovers"
    )
    # the campaign records which containment it had; the report's methods say it
    kind = (campaign.metadata or {})["containment"]["kind"]
    assert kind == probe_containment().kind
    report = cli("report", str(tmp_path / "forks"), "--format", "md", "-o", "-")
    expected = "its own cgroup" if kind == "cgroup" else "process group"
    assert expected in report.stdout, report.stderr


def test_system_says_which_containment_rounds_get_and_leaves_no_cgroup() -> None:
    probe = probe_containment()
    proc = start_benchrun("system", "--json")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    record = json.loads(out)["containment"]
    assert record["kind"] == probe.kind and record["detail"] == probe.describe()
    if probe.home is not None:  # its probe made a cgroup and removed it
        assert not list(probe.home.glob(f"benchrun-{proc.pid}-*"))
    human = cli("system")
    assert "Containment of rounds" in human.stdout and probe.kind in human.stdout
