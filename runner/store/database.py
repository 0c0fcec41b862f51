"""The durable store: one SQLite file per campaign directory (docs/design.md "The store").

:class:`Store` is the one object callers hold; it is composed of the modules that each
keep one part of it:

- runner/store/connection.py: opening (the file checked, created or migrated),
  transactions, group commit, read snapshots, the WAL flush (``StoreBase``);
- runner/store/schema.py: the tables and the migrations of older stores;
- runner/store/campaigns.py, rounds.py, events.py: the reads and writes of the
  ``campaign``/``workload``, ``round``/``reading``/``hook`` and ``event``/``run_span``
  tables;
- runner/store/records.py: the records given and read back; runner/store/faults.py: a full
  disk and a damaged file.

The names every caller imports stay importable from here (``from
benchrun.runner.store.database import Store, RoundRow, ...``).
"""

from __future__ import annotations

from benchrun.runner.store.campaigns import CampaignTables
from benchrun.runner.store.connection import SQLITE_SIDE_FILES, SYNC_EVERY_S, _claim
from benchrun.runner.store.events import EventTables
from benchrun.runner.store.faults import (
    EXIT_STORE_DAMAGED,
    EXIT_STORE_FULL,
    QUICK_CHECK_LIMIT,
    StoreDamaged,
    StoreFull,
    quick_check,
)
from benchrun.runner.store.records import (
    HOOK_COLUMNS,
    ROUND_COLUMNS,
    CampaignRow,
    EventRow,
    HookRow,
    NewHook,
    NewRound,
    RoundMetric,
    RoundRow,
    WorkloadRow,
)
from benchrun.runner.store.rounds import RoundTables
from benchrun.runner.store.schema import (
    _HOOK_TABLE,
    _METRIC_TABLE,
    _MIGRATIONS,
    _SCHEMA_V1,
    _SPAN_TABLE,
    _WAIT_COLUMNS,
    APPLICATION_ID,
    SCHEMA_VERSION,
)

__all__ = [
    "APPLICATION_ID",
    "EXIT_STORE_DAMAGED",
    "EXIT_STORE_FULL",
    "HOOK_COLUMNS",
    "QUICK_CHECK_LIMIT",
    "ROUND_COLUMNS",
    "SCHEMA_VERSION",
    "SQLITE_SIDE_FILES",
    "SYNC_EVERY_S",
    "_HOOK_TABLE",
    "_METRIC_TABLE",
    "_MIGRATIONS",
    "_SCHEMA_V1",
    "_SPAN_TABLE",
    "_WAIT_COLUMNS",
    "CampaignRow",
    "EventRow",
    "HookRow",
    "NewHook",
    "NewRound",
    "RoundMetric",
    "RoundRow",
    "Store",
    "StoreDamaged",
    "StoreFull",
    "WorkloadRow",
    "_claim",
    "quick_check",
]


class Store(CampaignTables, RoundTables, EventTables):
    """A benchrun SQLite store. Use :meth:`open` (existing) or :meth:`create_or_open`.

    The connection, transactions and snapshots are
    :class:`~benchrun.runner.store.connection.StoreBase`'s; each table's reads and writes
    are those of the class that keeps it (campaigns, rounds, events)."""
