"""The store's schema and its migrations: the tables of a new store, and each step that
upgrades an older one (docs/design.md "The store").

:data:`SCHEMA_VERSION` is the version this benchrun writes; ``_MIGRATIONS[v]`` upgrades a
store at version ``v`` to ``v + 1``. A new store gets every table at once
(:func:`create`); an older one is upgraded step by step when opened
(:meth:`runner.store.connection.StoreBase.open`, one transaction a step); a newer one is
refused (:func:`check_readable`). Adding a column or a table: one more step here, the
record that reads it in runner/store/records.py. A step that must also fill what it adds
is a function (``_MIGRATIONS[5]``: the parsed experiment, schema 6).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

from benchrun.runner.errors import UserError

SCHEMA_VERSION = 6
APPLICATION_ID = 0x62656E63  # "benc": marks the file as a benchrun store

_SCHEMA_V1 = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE campaign (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('running', 'interrupted', 'done', 'failed')),
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    config_path TEXT,
    config_text TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    settings_json TEXT NOT NULL,
    metadata_json TEXT,
    benchrun_version TEXT NOT NULL,
    command_line TEXT,
    stop_reason TEXT
);
CREATE TABLE workload (
    id INTEGER PRIMARY KEY,
    campaign_id INTEGER NOT NULL REFERENCES campaign(id),
    name TEXT NOT NULL,
    position INTEGER NOT NULL,
    metric TEXT NOT NULL,
    unit TEXT NOT NULL,
    direction TEXT NOT NULL,
    spec_json TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'active',
    status_reason TEXT,
    UNIQUE (campaign_id, name)
);
CREATE TABLE round (
    id INTEGER PRIMARY KEY,
    campaign_id INTEGER NOT NULL REFERENCES campaign(id),
    workload_id INTEGER NOT NULL REFERENCES workload(id),
    seq INTEGER NOT NULL,
    pass INTEGER NOT NULL,
    round_index INTEGER NOT NULL,
    status TEXT NOT NULL,
    reason TEXT,
    exit_code INTEGER,
    started_at REAL NOT NULL,
    wall_ns INTEGER NOT NULL,
    user_s REAL NOT NULL,
    sys_s REAL NOT NULL,
    max_rss_kib INTEGER NOT NULL,
    cpus TEXT,
    argv_json TEXT NOT NULL,
    work INTEGER,
    warmup INTEGER NOT NULL DEFAULT 0,
    flags TEXT NOT NULL DEFAULT '',
    stdout_tail TEXT,
    stderr_tail TEXT,
    facts_json TEXT,
    UNIQUE (workload_id, round_index),
    UNIQUE (campaign_id, seq)
);
CREATE TABLE reading (
    round_id INTEGER NOT NULL REFERENCES round(id),
    idx INTEGER NOT NULL,
    value REAL NOT NULL,
    flags TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (round_id, idx)
);
CREATE TABLE event (
    id INTEGER PRIMARY KEY,
    campaign_id INTEGER NOT NULL REFERENCES campaign(id),
    at REAL NOT NULL,
    kind TEXT NOT NULL,
    message TEXT NOT NULL,
    data_json TEXT
);
CREATE INDEX round_by_workload ON round (workload_id, round_index);
CREATE INDEX event_by_campaign ON event (campaign_id, at);
"""

#: schema 2: what the setup/prepare/cleanup hooks of a workload did (never timed, never
#: readings); ``round_index`` is the round a prepare ran before (NULL for setup/cleanup)
_HOOK_TABLE = """
CREATE TABLE hook (
    id INTEGER PRIMARY KEY,
    campaign_id INTEGER NOT NULL REFERENCES campaign(id),
    workload_id INTEGER NOT NULL REFERENCES workload(id),
    kind TEXT NOT NULL CHECK (kind IN ('setup', 'prepare', 'cleanup')),
    round_index INTEGER,
    status TEXT NOT NULL,
    reason TEXT,
    exit_code INTEGER,
    started_at REAL NOT NULL,
    wall_ns INTEGER NOT NULL,
    argv_json TEXT NOT NULL,
    stdout_tail TEXT,
    stderr_tail TEXT
);
CREATE INDEX hook_by_campaign ON hook (campaign_id, id);
"""

#: schema 3: each round's CPU wait (ns its processes were runnable but not running) and the
#: signal it was read from (docs/contention.md); NULL in rounds stored before
_WAIT_COLUMNS = """
ALTER TABLE round ADD COLUMN wait_ns INTEGER;
ALTER TABLE round ADD COLUMN wait_source TEXT;
"""

#: schema 4: the spans of wall-clock time each run (``benchrun run``, a resume) of a campaign
#: was active, so that ``max_time`` counts a campaign's time across resumes, hooks and
#: warm-up included (issue 29; runner/campaign/budget.py). ``seconds`` grows while the run
#: goes on (a killed run keeps what it last wrote); ``started_at`` is Unix seconds
_SPAN_TABLE = """
CREATE TABLE run_span (
    id INTEGER PRIMARY KEY,
    campaign_id INTEGER NOT NULL REFERENCES campaign(id),
    pid INTEGER NOT NULL,
    started_at REAL NOT NULL,
    seconds REAL NOT NULL DEFAULT 0
);
CREATE INDEX run_span_by_campaign ON run_span (campaign_id, id);
"""

#: schema 5: every metric of a round whose workload names a ``metric:`` list or a counter
#: metric (issue 33; docs/metrics.md): the first (deciding) one, whose value is also the
#: round's reading, and the others, each with the source that measured it (``clock``,
#: ``wait4``, ``perf_event``, ``cachegrind``) and its scope (``process tree``, ...); rounds
#: of other workloads, and rounds stored before, have none
_METRIC_TABLE = """
CREATE TABLE round_metric (
    round_id INTEGER NOT NULL REFERENCES round(id),
    name TEXT NOT NULL,
    value REAL NOT NULL,
    source TEXT NOT NULL,
    scope TEXT NOT NULL,
    PRIMARY KEY (round_id, name)
);
"""

#: schema 6: the campaign's experiment as parsed when it started, as JSON
#: (runner/config/stored.py ``experiment_to_json``; issue 30), so that no reader parses the
#: YAML of ``config_text`` again. NULL: not stored (a writer that did not pass it): readers
#: parse ``config_text`` then; the JSON ``null``: the text did not parse when an older
#: store was migrated (readers know no experiment, as they did before)
_EXPERIMENT_COLUMN = """
ALTER TABLE campaign ADD COLUMN experiment_json TEXT;
"""


def add_experiments(c: sqlite3.Connection) -> None:
    """Schema 5 -> 6: add ``campaign.experiment_json`` (where missing) and store the
    parsed experiment of every campaign: its ``config_text`` parsed once (as readers parsed
    it before: no check of this machine's files), as JSON; ``null`` when the text no longer
    parses or names other workloads than the campaign stored (then readers know no
    ``compare:`` groups, as before)."""
    # imported here: only a migration parses YAML (the loader is large)
    from benchrun.runner.config.loader import parse_experiment
    from benchrun.runner.config.stored import experiment_to_json

    columns = {str(r[1]) for r in c.execute("PRAGMA table_info(campaign)")}
    if "experiment_json" not in columns:
        for statement in _statements(_EXPERIMENT_COLUMN):
            c.execute(statement)
    campaigns = c.execute("SELECT id, config_text FROM campaign ORDER BY id").fetchall()
    for campaign_id, text in campaigns:
        names = {
            str(r[0])
            for r in c.execute("SELECT name FROM workload WHERE campaign_id = ?", (campaign_id,))
        }
        try:
            experiment = parse_experiment(
                str(text), display="stored experiment", check_commands=False
            )
            doc = experiment_to_json(experiment) if set(experiment.names) == names else "null"
        except (UserError, ValueError, TypeError, KeyError):
            doc = "null"
        c.execute("UPDATE campaign SET experiment_json = ? WHERE id = ?", (doc, campaign_id))


#: migrations[v] upgrades a store at version v to v + 1: SQL, or a function run with the
#: connection (inside the step's transaction)
_MIGRATIONS: dict[int, str | Callable[[sqlite3.Connection], None]] = {
    1: _HOOK_TABLE,
    2: _WAIT_COLUMNS,
    3: _SPAN_TABLE,
    4: _METRIC_TABLE,
    5: add_experiments,
}


def _statements(script: str) -> list[str]:
    """The SQL statements of ``script`` (separated by ``;``), blank ones left out."""
    return [statement for statement in script.split(";") if statement.strip()]


def create(c: sqlite3.Connection) -> None:
    """Create every table of :data:`SCHEMA_VERSION` in an empty database, mark the file as
    benchrun's (``application_id``) and record the version (inside the caller's
    transaction)."""
    script = (
        _SCHEMA_V1 + _HOOK_TABLE + _WAIT_COLUMNS + _SPAN_TABLE + _METRIC_TABLE + _EXPERIMENT_COLUMN
    )
    for statement in _statements(script):
        c.execute(statement)
    c.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    c.execute(
        "INSERT INTO meta (key, value) VALUES ('schema_version', ?)",
        (str(SCHEMA_VERSION),),
    )


def read_version(c: sqlite3.Connection) -> int:
    """The schema version recorded in the store (0 when none is)."""
    row = c.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    return int(row[0]) if row else 0


def check_readable(version: int, path: Path) -> None:
    """Refuse (one line) a store of a newer schema than :data:`SCHEMA_VERSION`."""
    if version > SCHEMA_VERSION:
        raise UserError(
            f"{path}: written by a newer benchrun (schema {version}, this one reads "
            f"up to {SCHEMA_VERSION}); upgrade benchrun"
        )


def upgrade(c: sqlite3.Connection, version: int) -> int:
    """Upgrade a store at ``version`` by one step (inside the caller's transaction) and
    record it; returns the new version."""
    step = _MIGRATIONS[version]
    if isinstance(step, str):
        for statement in _statements(step):
            c.execute(statement)
    else:
        step(c)
    version += 1
    c.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(version),))
    return version
