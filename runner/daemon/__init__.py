"""The benchrun daemon: a durable queue of campaigns run one at a time (docs/daemon.md).

- :mod:`runner.daemon.paths`: where the queue, logs, lock and socket live (XDG).
- :mod:`runner.daemon.protocol`: the newline-delimited JSON messages and the client side.
- :mod:`runner.daemon.queue`: the queue database (SQLite, separate from results).
- :mod:`runner.daemon.supervisor`: launching ``benchrun run`` children and reading their end.
- :mod:`runner.daemon.server`: the daemon process (lock, socket, event loop, recovery).
- :mod:`runner.daemon.live`: what ``benchrun status`` shows about a campaign in progress.
"""
