"""What the overview page says about the open ledger, in bounded work on a ledger of any size."""

from dataclasses import dataclass, field
from pathlib import Path

from django.db import connections

from ledgerfacts import schema
from ledgerfacts.timestamps import now_ms
from ledgerweb import dialect, sqlite
from ledgerweb.costs import CostSum
from ledgerweb.db import LEDGER, ledger_path_of, ledger_place
from ledgerweb.pg_schema import inspect_postgres_ledger
from pipeline.charts import window_costs
from pipeline.filters import window_bounds

COUNT_CAP = 10_000
SHIPMENTS = "ledger_shipments"  # ledgerweb/sql/postgres/ledger_shipments.sql
SHIP_LEFT_OUT = "ledger_ship_left_out"  # ledgerweb/sql/postgres/ledger_ship_left_out.sql
MAX_SHIPMENTS = 50
LAST_DAY = "24h"
COST_WINDOWS = (LAST_DAY, "30d")
LATEST = 8


@dataclass
class TableCount:
    table: str
    count: sqlite.CappedCount | None  # None: the ledger has no such table


@dataclass(frozen=True)
class DatabasePlace:
    """Where a PostgreSQL ledger is, in the terms the page uses for a file: a name and where."""

    name: str
    where: str

    def __str__(self) -> str:
        return self.where


@dataclass
class LedgerOverview:
    path: Path | DatabasePlace
    size_bytes: int
    wal_bytes: int
    journal_mode: str
    counts: list[TableCount]
    other_tables: list[str]
    missing_tables: list[str]
    mismatches: dict[str, list[str]]
    last_day: dict[str, int] = field(default_factory=dict)
    # The dashboard's "24h" window [since, until) the last-day figures and the 24 h cost count.
    last_day_window: tuple[int, int] = (0, 0)
    latest_sessions: list[dict] = field(default_factory=list)
    latest_requests: list[dict] = field(default_factory=list)
    # Rows dated after now (a clock ahead, junk) or in text, which the latest lists leave out.
    not_latest: dict[str, sqlite.CappedCount] = field(default_factory=dict)
    # Central ledger (PostgreSQL) only: the agent hosts that shipped into it (ledger_ship).
    shipments: list[dict] = field(default_factory=list)
    # What the agent runs cost over the last 24 h and 30 d (the dashboard's cost chart totals).
    costs: dict[str, CostSum] = field(default_factory=dict)
    cost_notes: list[str] = field(default_factory=list)  # hours not summarised yet, said

    @property
    def has_sessions(self) -> bool:
        return "sessions" not in self.missing_tables

    @property
    def has_requests(self) -> bool:
        return "nexus_requests" not in self.missing_tables


def ledger_overview() -> LedgerOverview:
    conn = connections[LEDGER]
    conn.ensure_connection()
    if dialect.on_postgres():
        inspection = inspect_postgres_ledger(conn.connection)
        path = DatabasePlace(conn.settings_dict["NAME"], ledger_place())
        size_bytes, wal_bytes = _scalar("SELECT pg_database_size(current_database())", []), 0
    else:
        inspection = schema.inspect_ledger(conn.connection)
        path = ledger_path_of(LEDGER)
        size_bytes, wal_bytes = _size(path), _size(path.with_name(path.name + "-wal"))
    present = inspection.tables
    overview = LedgerOverview(
        path=path,
        size_bytes=size_bytes,
        wal_bytes=wal_bytes,
        journal_mode=sqlite.journal_mode(),
        counts=[
            TableCount(t, sqlite.capped_count(t, COUNT_CAP) if t in present else None)
            for t in schema.LEDGER_TABLES
        ],
        # ledger_ship's own (the card below), not the ledger's
        other_tables=sorted(inspection.other_tables - {SHIPMENTS, SHIP_LEFT_OUT}),
        missing_tables=sorted(inspection.missing_tables),
        mismatches=inspection.mismatches,
    )
    # The last day is the dashboard's "24h" (whole hours, ending now), as the cost beside it and
    # the request list it links to. Both ends bound it: a row dated in the future is not recent
    # activity, and an ISO-text time (which SQLite sorts after every number) falls outside any
    # range of numbers; the latest rows are likewise the newest up to now.
    now = now_ms()
    overview.last_day_window = last_day = window_bounds(LAST_DAY, now)
    if overview.has_sessions:
        overview.latest_sessions = _rows(
            "SELECT id, label, persona, routing_key, status, updated_at FROM sessions"
            " WHERE updated_at <= %s ORDER BY updated_at DESC LIMIT %s",
            [now, LATEST],
        )
        ((active, later),) = sqlite.rows(
            f"SELECT count(*), ({_dated_after('sessions', 'updated_at')}) FROM sessions"
            " WHERE updated_at >= %s AND updated_at < %s",
            [now, COUNT_CAP + 1, *last_day],
        )
        overview.last_day["sessions active"] = active
        overview.not_latest["sessions"] = _capped(later)
    if overview.has_requests:
        overview.latest_requests = _rows(
            "SELECT id, event_source, event_type, stage, status, error_stage, started_at"
            " FROM nexus_requests WHERE started_at <= %s ORDER BY started_at DESC LIMIT %s",
            [now, LATEST],
        )
        # Bounded by the started_at index: one day of rows, not the whole table.
        ((requests, failed, later),) = sqlite.rows(
            "SELECT count(*), count(CASE WHEN status = 'failed' THEN 1 END),"
            f" ({_dated_after('nexus_requests', 'started_at')}) FROM nexus_requests"
            " WHERE started_at >= %s AND started_at < %s",
            [now, COUNT_CAP + 1, *last_day],
        )
        overview.last_day |= {"requests": requests, "failed requests": failed}
        overview.not_latest["requests"] = _capped(later)
        overview.costs, overview.cost_notes = window_costs(COST_WINDOWS, now)
    if SHIPMENTS in present:
        overview.shipments = _rows(
            f"SELECT host, source, shipped_at, rows_added, problems FROM {SHIPMENTS}"
            " ORDER BY shipped_at DESC LIMIT %s",
            [MAX_SHIPMENTS],
        )
    return overview


def _dated_after(table: str, column: str) -> str:
    """SQL counting the rows dated after now (%s), or in text (SQLite sorts text after every
    number), through the column's index, up to a cap (%s)."""
    return f"SELECT count(*) FROM (SELECT 1 FROM {table} WHERE {column} > %s LIMIT %s) AS later"


def _capped(count: int) -> sqlite.CappedCount:
    return sqlite.CappedCount(min(count, COUNT_CAP), count > COUNT_CAP)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _rows(sql: str, params: list) -> list[dict]:
    return sqlite.rows(sql, params, named=True)


def _scalar(sql: str, params: list):
    return sqlite.rows(sql, params)[0][0]
