"""``benchrun daemon start|stop|status``: the process that runs queued campaigns.

``start`` detaches (the daemon's own log goes to ``$XDG_STATE_HOME/benchrun/daemon.log``)
unless ``--foreground`` (for systemd: logs go to stderr, the journal). See docs/daemon.md.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

from benchrun.runner.commands.replies import DaemonStatus
from benchrun.runner.config.durations import parse_duration
from benchrun.runner.daemon.paths import DaemonPaths
from benchrun.runner.daemon.protocol import request
from benchrun.runner.daemon.server import Daemon, lock_holder
from benchrun.runner.errors import UserError


def _duration(text: str) -> float:
    try:
        return parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _load(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError("must be > 0")
    return value


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "daemon",
        help="the background process that runs queued campaigns (start, stop, status)",
        description="The benchrun daemon runs submitted campaigns one at a time, survives "
        "crashes (a campaign that was running is resumed on the next start) and listens on "
        "a Unix socket only its user can use. See docs/daemon.md.",
    )
    dsub = p.add_subparsers(dest="daemon_command", metavar="ACTION", required=True)
    s = dsub.add_parser("start", help="start the daemon (detached unless --foreground)")
    s.add_argument("--foreground", action="store_true", help="stay in the foreground (for systemd)")
    s.add_argument(
        "--quiet-load",
        type=_load,
        metavar="LOAD",
        help="before each campaign (and each pass, for experiments without quiet_load) wait "
        "until the 1-minute load average is below LOAD",
    )
    s.add_argument(
        "--quiet-max-wait",
        type=_duration,
        default=600.0,
        metavar="DURATION",
        help="longest wait for a quiet machine (default 10m)",
    )
    s.add_argument(
        "--stop-timeout",
        type=_duration,
        default=120.0,
        metavar="DURATION",
        help="on stop, how long the campaign may take to commit before it is killed (default 2m)",
    )
    s.set_defaults(func=cmd_start)
    t = dsub.add_parser("stop", help="stop the daemon; a running campaign resumes on next start")
    t.add_argument(
        "--timeout",
        type=_duration,
        default=180.0,
        metavar="DURATION",
        help="how long to wait for the daemon to exit (default 3m)",
    )
    t.set_defaults(func=cmd_stop)
    st = dsub.add_parser("status", help="is the daemon running; its pid, memory and queue")
    st.set_defaults(func=cmd_status)


def cmd_start(args: argparse.Namespace) -> int:
    paths = DaemonPaths.from_env()
    paths.ensure()
    daemon = Daemon(
        paths,
        quiet_load=args.quiet_load,
        quiet_max_wait=args.quiet_max_wait,
        stop_timeout=args.stop_timeout,
    )
    if args.foreground:
        return daemon.serve()
    holder = lock_holder(paths)
    if holder is not None:
        raise UserError(
            f"another benchrun daemon is already running (pid {holder}, lock {paths.pid_file}); "
            "stop it with `benchrun daemon stop` first",
            exit_code=1,
        )
    argv = [sys.executable, "-m", "benchrun.runner.daemon"]
    if args.quiet_load is not None:
        argv += ["--quiet-load", repr(args.quiet_load)]
    argv += ["--quiet-max-wait", repr(args.quiet_max_wait)]
    argv += ["--stop-timeout", repr(args.stop_timeout)]
    try:  # in the state directory ensure() checked; never through a link
        log_fd = os.open(
            paths.daemon_log,
            os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC | os.O_NOFOLLOW,
            0o600,
        )
    except OSError as exc:
        raise UserError(f"{paths.daemon_log}: cannot open: {exc.strerror or exc}", 1) from None
    log_start = os.fstat(log_fd).st_size
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=log_fd,
            stderr=log_fd,
            start_new_session=True,
            cwd="/",
        )
    finally:
        os.close(log_fd)
    deadline = time.monotonic() + 20.0
    while time.monotonic() < deadline:
        code = proc.poll()
        if code is not None:
            raise UserError(_daemon_said(paths, log_start) or f"the daemon exited with {code}", 1)
        try:
            reply = request("ping", paths, timeout=2.0)
        except UserError:
            time.sleep(0.05)
            continue
        if reply["pid"] == proc.pid:
            print(f"benchrun daemon started (pid {proc.pid}, socket {paths.socket})")
            proc.returncode = 0  # detached: never wait for it
            return 0
        time.sleep(0.05)
    raise UserError(f"the daemon did not answer within 20 s; see {paths.daemon_log}", 1)


def _daemon_said(paths: DaemonPaths, offset: int) -> str | None:
    """The daemon's last error line in its log since ``offset``."""
    try:
        with open(paths.daemon_log, "rb") as f:
            f.seek(offset)
            text = f.read().decode("utf-8", errors="replace")
    except OSError:
        return None
    for line in reversed(text.splitlines()):
        if line.startswith("benchrun: error: "):
            return line[len("benchrun: error: ") :]
    return None


def cmd_stop(args: argparse.Namespace) -> int:
    paths = DaemonPaths.from_env()
    reply = request("stop", paths)
    pid = int(reply["pid"])
    running = reply["running"]
    if running is not None:
        print(
            f"stopping the daemon (pid {pid}); campaign {running} commits and resumes on next start"
        )
    deadline = time.monotonic() + args.timeout
    while time.monotonic() < deadline:
        if lock_holder(paths) != pid:
            print(f"benchrun daemon stopped (pid {pid})")
            return 0
        time.sleep(0.05)
    raise UserError(f"the daemon (pid {pid}) did not stop within {args.timeout:g} s", 1)


def cmd_status(args: argparse.Namespace) -> int:
    paths = DaemonPaths.from_env()
    holder = lock_holder(paths)
    if holder is None:
        raise UserError(
            "the benchrun daemon is not running; start it with `benchrun daemon start`", 1
        )
    r = DaemonStatus.from_json(request("daemon-status", paths))
    up = time.time() - r.started_at
    running = "none" if r.running is None else f"campaign {r.running}"
    print(f"benchrun daemon {r.version}: running, pid {r.pid}, up {up:.0f} s")
    print(f"  socket:  {r.socket}")
    print(f"  queue:   {r.queue_db} ({r.queued} queued; measuring: {running})")
    print(
        f"  memory:  RSS {r.rss_kib / 1024:.1f} MiB (at start {r.rss_at_start_kib / 1024:.1f} MiB)"
    )
    if r.quiet_load is not None:
        wait = "" if r.quiet_max_wait is None else f" (at most {r.quiet_max_wait:g} s)"
        print(f"  quiet:   wait for load < {r.quiet_load:g}{wait}")
    if r.stopping:
        print("  stopping: waiting for the campaign to commit")
    return 0
