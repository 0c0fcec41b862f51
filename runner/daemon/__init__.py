"""The benchrun daemon: a durable queue of campaigns run one at a time (docs/daemon.md).

- :mod:`runner.daemon.paths`: where the queue, logs, lock and socket live (XDG).
- :mod:`runner.daemon.protocol`: the newline-delimited JSON messages and the client side.
- :mod:`runner.daemon.queue`: the queue database (SQLite, separate from results).
- :mod:`runner.daemon.server`: the daemon process (lock, signals, event loop).
- :mod:`runner.daemon.connections`: the socket, peer check and request framing.
- :mod:`runner.daemon.handlers`: one function per request op.
- :mod:`runner.daemon.supervisor`: the queue's campaigns run as children, one at a time.
- :mod:`runner.daemon.child`: one ``benchrun run`` child (argv, launch, leftovers).
- :mod:`runner.daemon.live`: what ``benchrun status`` shows about a campaign in progress.
"""
