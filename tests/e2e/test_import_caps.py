"""Issue 29, item 8: imported files have a size cap, checked before they are read.

The probe: a 200 MB hyperfine export made ``benchrun analyze`` take 2.8 GB of RSS. Now a
file over the cap (64 MiB by default) is refused with one line, and the memory the child
used, as the kernel reports it (``wait4``'s ``ru_maxrss``), stays that of a small run. A
gzip bomb is stopped once it has decompressed to the cap; a pipe is read at most one byte
past it; ``BENCHRUN_MAX_IMPORT_BYTES`` moves the cap both ways. Real processes, since
memory is the point.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path

import pytest
from e2e_util import benchrun_argv, cli

#: the default cap (runner/importers/readfile.py MAX_IMPORT_BYTES), written out here
DEFAULT_CAP = 64 * 1024 * 1024
#: peak RSS a refused import may reach, in MiB: start-up (numpy, rich) is about 60-110
#: MiB here; the gzip bomb holds up to the cap (64 MiB) before it is refused
BOUNDED_MIB = 260


def _run_measured(
    args: list[str],
    cwd: Path,
    env: dict[str, str] | None = None,
    stdin: object = subprocess.DEVNULL,
) -> tuple[int, str, float]:
    """(exit code, stderr, peak RSS in MiB of the child) of ``benchrun ARGS``.

    The child is started by a small Python launcher, not by this (pytest) process: Linux
    counts the RSS a process had before ``exec`` in its ``ru_maxrss``, and a child forked
    from a test worker that already holds 300 MiB would report that, whatever benchrun
    itself used. The launcher (about 10 MiB) prints its child's ``ru_maxrss`` (KiB)."""
    full = dict(os.environ, **(env or {}))
    launcher = (
        "import os, subprocess, sys\n"
        "p = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL)\n"
        "_, status, usage = os.wait4(p.pid, 0)\n"
        "print(os.waitstatus_to_exitcode(status), usage.ru_maxrss)\n"
    )
    with tempfile.TemporaryFile() as err:
        out = subprocess.run(
            [sys.executable, "-c", launcher, *benchrun_argv(), *args],
            cwd=cwd,
            env=full,
            stdin=stdin,  # type: ignore[arg-type]
            stdout=subprocess.PIPE,
            stderr=err,
            check=True,
        )
        code, maxrss_kib = (int(x) for x in out.stdout.split())
        err.seek(0)
        return code, err.read().decode(), maxrss_kib / 1024


def _hyperfine_bytes(n_times: int) -> bytes:
    times = ", ".join(f"0.1{i % 997:012d}" for i in range(n_times))
    return f'{{"results": [{{"command": "c", "times": [{times}]}}]}}'.encode()


def test_a_200_mb_import_is_refused_before_it_is_read(tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    unit = _hyperfine_bytes(1)[:-4]  # '{"results": [{"command": "c", "times": [0.1...'
    with big.open("wb") as fh:  # a real hyperfine export of 200 MB, written in chunks
        fh.write(unit)
        chunk = b", 0.100000000123" * 65536
        while fh.tell() < 200_000_000:
            fh.write(chunk)
        fh.write(b"]}]}")
    size = big.stat().st_size
    code, err, rss = _run_measured(["analyze", "summary", str(big)], tmp_path)
    assert code == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err == (
        f"benchrun: error: {big}: {size} bytes, more than the {DEFAULT_CAP} bytes imported "
        "files may hold; set BENCHRUN_MAX_IMPORT_BYTES to raise the limit\n"
    )
    assert rss < BOUNDED_MIB, f"peak RSS {rss:.0f} MiB"
    # compare reads through the same door
    code, err, rss = _run_measured(["compare", str(big), str(big)], tmp_path)
    assert code == 2 and "imported files may hold" in err and rss < BOUNDED_MIB


def test_a_gzip_bomb_stops_at_the_cap(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.json.gz"
    z = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    with bomb.open("wb") as fh:
        fh.write(z.compress(b'{"results": ['))
        block = b" " * (1 << 20)
        for _ in range(400):  # 400 MiB of spaces inside the JSON
            fh.write(z.compress(block))
        fh.write(z.compress(b"]}") + z.flush())
    assert bomb.stat().st_size < 1 << 20
    code, err, rss = _run_measured(["analyze", "summary", str(bomb)], tmp_path)
    assert code == 2, err
    assert err.strip().endswith(
        f"decompresses to more than the {DEFAULT_CAP} bytes imported files may hold; "
        "set BENCHRUN_MAX_IMPORT_BYTES to raise the limit"
    )
    assert rss < BOUNDED_MIB + 64, f"peak RSS {rss:.0f} MiB"


def test_the_variable_raises_and_lowers_the_cap(tmp_path: Path) -> None:
    data = tmp_path / "h.json"
    data.write_bytes(_hyperfine_bytes(200))
    size = data.stat().st_size
    assert 2000 < size < 5000
    r = cli("analyze", "summary", str(data), env={"BENCHRUN_MAX_IMPORT_BYTES": "2000"})
    assert r.returncode == 2
    assert r.stderr == (
        f"benchrun: error: {data}: {size} bytes, more than the 2000 bytes imported files "
        "may hold; set BENCHRUN_MAX_IMPORT_BYTES to raise the limit\n"
    )
    r = cli("analyze", "summary", str(data), env={"BENCHRUN_MAX_IMPORT_BYTES": str(size)})
    assert r.returncode == 0, r.stderr
    r = cli("analyze", "summary", str(data), env={"BENCHRUN_MAX_IMPORT_BYTES": "lots"})
    assert r.returncode == 2 and "BENCHRUN_MAX_IMPORT_BYTES='lots'" in r.stderr


def test_a_pipe_is_read_at_most_one_byte_past_the_cap(tmp_path: Path) -> None:
    """A pipe has no size to check: the reader stops one byte past the cap, and the
    writer is left with what was not read (it sees EPIPE), not the whole stream."""
    writer = subprocess.Popen(
        ["sh", "-c", "yes 0.1 | head -c 50000000; echo done >&2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert writer.stdout is not None
    code, err, rss = _run_measured(
        ["analyze", "summary", "/dev/stdin"],
        tmp_path,
        env={"BENCHRUN_MAX_IMPORT_BYTES": "100000"},
        stdin=writer.stdout,
    )
    writer.stdout.close()
    writer.wait(timeout=120)
    assert code == 2
    assert err == (
        "benchrun: error: /dev/stdin: more than the 100000 bytes imported files may hold; "
        "set BENCHRUN_MAX_IMPORT_BYTES to raise the limit\n"
    )


def test_weights_and_exports_have_the_cap_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from benchrun.runner.errors import UserError
    from benchrun.runner.importers.weights import read_weights

    weights = tmp_path / "w.csv"
    weights.write_text("benchmark,weight\n" + "x,1\n" * 1000, encoding="utf-8")
    monkeypatch.setenv("BENCHRUN_MAX_IMPORT_BYTES", "3000")
    with pytest.raises(UserError, match="3000 bytes imported files may hold"):
        read_weights(weights)
    export = tmp_path / "e.json"
    export.write_text(json.dumps({"format": "benchrun-export", "pad": "x" * 5000}), "utf-8")
    data = tmp_path / "h.json"
    data.write_bytes(_hyperfine_bytes(20))
    r = cli("compare", str(export), str(data))
    assert r.returncode == 2 and f"{export}: " in r.stderr and "3000 bytes" in r.stderr
