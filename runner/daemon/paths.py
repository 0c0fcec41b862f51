"""Where the daemon keeps its files, following the XDG base directory specification.

- data (``$XDG_DATA_HOME/benchrun``, default ``~/.local/share/benchrun``): the queue
  database ``queue.db`` and one log file per campaign under ``logs/``.
- state (``$XDG_STATE_HOME/benchrun``, default ``~/.local/state/benchrun``): the lock and
  pid file ``daemon.pid`` and the daemon's own log ``daemon.log``.
- runtime (``$XDG_RUNTIME_DIR/benchrun``, else the state directory): ``daemon.sock``.

Every directory is created with mode 0700: the socket and the logs are the user's only.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from benchrun.runner.errors import UserError

#: longest path a Unix socket address holds on Linux (sun_path is 108 bytes with the NUL)
MAX_SOCKET_PATH = 107


def _xdg(var: str, default: str) -> Path:
    value = os.environ.get(var, "")
    if value and os.path.isabs(value):
        return Path(value)
    return Path.home() / default


@dataclass(frozen=True)
class DaemonPaths:
    """The daemon's files for the current user (see the module docstring)."""

    data_dir: Path
    state_dir: Path
    runtime_dir: Path

    @classmethod
    def from_env(cls) -> DaemonPaths:
        """Paths from ``XDG_DATA_HOME``, ``XDG_STATE_HOME`` and ``XDG_RUNTIME_DIR``."""
        data = _xdg("XDG_DATA_HOME", ".local/share") / "benchrun"
        state = _xdg("XDG_STATE_HOME", ".local/state") / "benchrun"
        runtime_root = os.environ.get("XDG_RUNTIME_DIR", "")
        runtime = Path(runtime_root) / "benchrun" if os.path.isabs(runtime_root) else state
        return cls(data, state, runtime)

    @property
    def queue_db(self) -> Path:
        return self.data_dir / "queue.db"

    @property
    def logs_dir(self) -> Path:
        return self.data_dir / "logs"

    def campaign_log(self, entry_id: int) -> Path:
        """The log file of queue entry ``entry_id`` (the child's stdout and stderr)."""
        return self.logs_dir / f"{entry_id}.log"

    @property
    def pid_file(self) -> Path:
        return self.state_dir / "daemon.pid"

    @property
    def daemon_log(self) -> Path:
        return self.state_dir / "daemon.log"

    @property
    def socket(self) -> Path:
        return self.runtime_dir / "daemon.sock"

    def ensure(self) -> None:
        """Create the directories (mode 0700); a clear UserError if that is impossible."""
        for d in (self.data_dir, self.logs_dir, self.state_dir, self.runtime_dir):
            try:
                d.mkdir(parents=True, exist_ok=True, mode=0o700)
                os.chmod(d, 0o700)
            except OSError as exc:
                raise UserError(f"cannot create {d}: {exc.strerror or exc}", exit_code=1) from None
        if len(os.fsencode(str(self.socket))) > MAX_SOCKET_PATH:
            raise UserError(
                f"socket path {self.socket} is longer than {MAX_SOCKET_PATH} bytes; set "
                "XDG_RUNTIME_DIR to a shorter directory",
                exit_code=1,
            )
