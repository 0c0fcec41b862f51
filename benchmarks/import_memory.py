"""Peak memory of ``benchrun analyze summary`` on large imported files (issue 29, item 8).

Writes a hyperfine ``--export-json`` file of about SIZE MB per size asked for (two
commands, one time per run, as hyperfine writes them), runs ``benchrun analyze summary`` on
it in a child and prints the child's wall time, exit code and maximum resident set size as
the kernel reports it (``wait4``'s ``ru_maxrss``). Use ``--benchrun`` to time another
installation (main: its venv's ``benchrun``) on the same files.

    python benchmarks/import_memory.py 8 32 60 200
    python benchmarks/import_memory.py 200 --benchrun /path/to/other/.venv/bin/benchrun

Results: docs/imported-data.md "Size".
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path


def write_hyperfine(path: Path, megabytes: float) -> int:
    """A hyperfine export of about ``megabytes`` MB (two commands); returns its size."""
    per_time = len("0.123456789012345, ")
    n = int(megabytes * 1e6 / per_time / 2)
    with path.open("w", encoding="utf-8") as fh:
        fh.write('{"results": [')
        for k, command in enumerate(("sleep 0.1", "sleep 0.2")):
            fh.write(("," if k else "") + f'{{"command": "{command}", "times": [')
            chunk = 100_000
            for start in range(0, n, chunk):
                count = min(chunk, n - start)
                body = ", ".join(f"{0.1 + ((start + i) % 997) * 1e-6:.15f}" for i in range(count))
                fh.write(("" if start == 0 else ", ") + body)
            fh.write("]}")
        fh.write("]}")
    return path.stat().st_size


def measure(argv: list[str], env: dict[str, str]) -> tuple[int, float, int, str]:
    """(exit code, wall s, max RSS in KiB, the last line of stderr) of one child."""
    with tempfile.TemporaryFile() as err:
        t0 = time.monotonic()
        p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err, env=env)
        _, status, usage = os.wait4(p.pid, 0)
        wall = time.monotonic() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        lines = err.read().decode(errors="replace").strip().splitlines()
    return p.returncode, wall, usage.ru_maxrss, (lines[-1] if lines else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sizes", nargs="+", type=float, help="file sizes in MB")
    parser.add_argument("--benchrun", default=shutil.which("benchrun") or "benchrun")
    parser.add_argument("--max-import-bytes", default="", help="BENCHRUN_MAX_IMPORT_BYTES to set")
    args = parser.parse_args()
    env = dict(os.environ)
    if args.max_import_bytes:
        env["BENCHRUN_MAX_IMPORT_BYTES"] = args.max_import_bytes
    with tempfile.TemporaryDirectory() as tmp:
        for mb in args.sizes:
            path = Path(tmp) / f"hyperfine_{mb:g}mb.json"
            size = write_hyperfine(path, mb)
            code, wall, rss, last = measure([args.benchrun, "analyze", "summary", str(path)], env)
            print(
                f"{size / 1e6:8.1f} MB  exit {code}  {wall:7.2f} s  max RSS {rss / 1024:8.0f} MiB"
                + (f"  {last}" if code else "")
            )
            path.unlink()


if __name__ == "__main__":
    main()
