"""Everything SQLite-specific about reading a live ledger, in one place.

On a PostgreSQL ledger (LEDGER_DB a URL) the same functions work through their counterparts:
the connection's statement_timeout instead of the progress handler (ledgerweb/db.py), the
snapshot instead of data_version, information_schema instead of sqlite_master; the SQL that
differs is in ledgerweb/dialect.py.
"""

import json
import sqlite3
import time
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass

from django.conf import settings
from django.db import connections
from django.db.backends.signals import connection_created
from django.db.models import Func, TextField

from ledgerweb import dialect
from ledgerweb.db import LEDGER

# How many SQLite VM instructions run between two looks at the clock: small enough to stop
# within a few milliseconds of the limit, large enough to cost nothing measurable.
PROGRESS_STEPS = 1000


class LedgerQueryTimeout(Exception):
    """A ledger query ran past the time limit and was interrupted."""

    def __init__(self, limit_ms: int, sql: str = ""):
        self.limit_ms = limit_ms
        self.sql = sql
        super().__init__(
            f"A ledger query took longer than {limit_ms / 1000:g} s and was stopped. "
            "Narrow the filter or the time window and try again."
        )


class _Deadline:
    """The clock a connection's progress handler checks; reset by each query."""

    def __init__(self):
        self.limit_ms = settings.LEDGER_QUERY_TIMEOUT_MS
        self.override_ms: int | None = None  # set by longer_time_limit()
        self.ends_at = float("inf")

    def start(self) -> None:
        self.limit_ms = self.override_ms or settings.LEDGER_QUERY_TIMEOUT_MS
        self.ends_at = time.monotonic() + self.limit_ms / 1000

    def progress_handler(self) -> int:
        # A non-zero return makes SQLite abort the statement with "interrupted".
        return 1 if time.monotonic() > self.ends_at else 0

    def execute_wrapper(self, execute, sql, params, many, context):
        self.start()
        savepoint = _QuerySavepoint(context["connection"], sql)
        try:
            result = execute(sql, params, many, context)
        except Exception as error:
            if is_interrupted(error):
                savepoint.roll_back()
                raise LedgerQueryTimeout(self.limit_ms, sql) from error
            raise
        savepoint.release()
        return result


class _QuerySavepoint:
    """On PostgreSQL, a statement stopped by the time limit aborts the whole transaction, and a
    request reads in one (ATOMIC_REQUESTS): the page could not even say what took too long. So
    each query inside a transaction gets a savepoint, rolled back to after a timeout, as SQLite
    goes on after an interrupted statement. Issued on the raw connection: not a query of ours.
    Nothing on SQLite."""

    NAME = "ledger_query"

    def __init__(self, connection, sql: str):
        self.raw = None
        # Queries only: around Django's own SAVEPOINT/RELEASE, ours would release theirs.
        query = sql.lstrip().upper().startswith(("SELECT", "WITH", "("))
        if connection.vendor == "postgresql" and connection.in_atomic_block and query:
            self.raw = connection.connection
            self.raw.execute(f"SAVEPOINT {self.NAME}")

    def roll_back(self) -> None:
        if self.raw is not None:
            self.raw.execute(f"ROLLBACK TO SAVEPOINT {self.NAME}")

    def release(self) -> None:
        if self.raw is not None:
            self.raw.execute(f"RELEASE SAVEPOINT {self.NAME}")


def is_interrupted(error: BaseException) -> bool:
    """True for the error SQLite raises when the progress handler stopped a statement."""
    while error is not None:
        if isinstance(error, LedgerQueryTimeout):
            return True
        if isinstance(error, sqlite3.OperationalError) and "interrupted" in str(error):
            return True
        if type(error).__name__ == "QueryCanceled":  # PostgreSQL's statement_timeout
            return True
        error = error.__cause__
    return False


def install_time_limit(sender, connection, **kwargs) -> None:
    """Put the per-query time limit on every new read-only ledger connection."""
    if connection.alias != LEDGER:
        return
    # The wrapper object outlives its SQLite connections (one per request): add the execute
    # wrapper once, and hook each new raw connection to the same deadline.
    deadline = getattr(connection, "ledger_deadline", None)
    if deadline is None:
        deadline = connection.ledger_deadline = _Deadline()
        connection.execute_wrappers.append(deadline.execute_wrapper)
    if connection.vendor == "postgresql":
        return  # the server stops the statement itself (statement_timeout, ledgerweb/db.py)
    connection.connection.set_progress_handler(deadline.progress_handler, PROGRESS_STEPS)


connection_created.connect(install_time_limit, dispatch_uid="ledgerweb.sqlite.time_limit")


@contextmanager
def longer_time_limit(limit_ms: int):
    """Give the queries inside a longer limit than browsing gets (the health check scans whole
    tables on purpose). Outside any request, e.g. in a command, there may be no limit at all."""
    connection = connections[LEDGER]
    connection.ensure_connection()
    deadline = connection.ledger_deadline
    previous, deadline.override_ms = deadline.override_ms, limit_ms
    if connection.vendor == "postgresql":
        _set_statement_timeout(connection, limit_ms)
    try:
        yield
    finally:
        deadline.override_ms = previous
        if connection.vendor == "postgresql":
            _set_statement_timeout(connection, previous or settings.LEDGER_QUERY_TIMEOUT_MS)


def _set_statement_timeout(connection, limit_ms: int) -> None:
    if connection.needs_rollback or connection.connection is None:
        return  # an aborted transaction takes no command; the next connection starts afresh
    with connection.cursor() as cursor:
        cursor.execute("SELECT set_config('statement_timeout', %s, false)", [str(limit_ms)])


def rows(sql: str, params=(), alias: str = LEDGER, *, named: bool = False) -> list:
    """Every row of one query, by default on the read-only ledger (and so under its time limit):
    tuples, or with `named` dicts by column name.

    The one place raw SQL meets a cursor (tests/test_sql_entry_point.py keeps it so). On
    PostgreSQL, NUMERIC sums come back as the int or float SQLite gives (dialect.plain_number)."""
    with connections[alias].cursor() as cursor:
        cursor.execute(sql, list(params))
        found = cursor.fetchall()
        if connections[alias].vendor == "postgresql":
            found = [tuple(map(dialect.plain_number, row)) for row in found]
        if not named:
            return found
        names = [column[0] for column in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in found]


def ledger_version() -> tuple[object, int]:
    """A value that moves whenever the ledger may have changed: the read connection with its
    PRAGMA data_version, which changes each time another connection (the runtime, our operator
    actions, an import) commits. Comparable only on the same open connection, hence the pair.
    Inside the request's read transaction it describes the snapshot the request reads."""
    ((version,),) = rows(dialect.version_sql())
    return connections[LEDGER].connection, version


class WhileUnchanged:
    """Results worked out from the ledger, kept by a worker while the ledger is unchanged: each is
    kept with ledger_version() and given back only on the same open connection at the same
    version, so any commit by anyone makes it be worked out again. Holds at most `keep`."""

    def __init__(self, keep: int):
        self.keep = keep
        self._kept: dict = {}

    def get(self, key, make: Callable[[], tuple[object, bool]]):
        """The result for `key`: kept, or make() → (result, worth keeping)."""
        return self.update(key, lambda _stale: make())

    def update(self, key, make: Callable[[object], tuple[object, bool]]):
        """get(), for results that can be brought up to date rather than worked out again:
        make(stale) is given the result kept for an older version on the same connection (None
        when there is none), and decides itself what of it still holds."""
        connection, version = ledger_version()
        known = self._kept.get(key)
        if known and known[0] is connection and known[1] == version:
            return known[2]
        stale = known[2] if known and known[0] is connection else None
        result, keep = make(stale)
        self._kept.pop(key, None)
        if keep:
            while len(self._kept) >= self.keep:
                del self._kept[next(iter(self._kept))]  # the oldest
            self._kept[key] = (connection, version, result)
        return result


# -- Introspection and bounded counts ------------------------------------------------------------


def table_names(alias: str = LEDGER) -> set[str]:
    return {name for (name,) in rows(dialect.table_names_sql(alias), (), alias)}


def tables_without_rowid(tables, alias: str = LEDGER) -> list[str]:
    """Of these tables, those without a rowid: none in SQLite (every table has one); in a
    PostgreSQL ledger made before ledgerweb/sql/postgres/rowids.sql, all of them."""
    if not dialect.on_postgres(alias):
        return []
    with_rowid = rows(
        "SELECT table_name FROM information_schema.columns"
        " WHERE table_schema = current_schema() AND column_name = 'rowid'",
        (),
        alias,
    )
    return sorted(set(tables) - {name for (name,) in with_rowid})


def tables_and_rowids(alias: str = LEDGER) -> dict[str, bool]:
    """The ledger's tables, each with whether it has a rowid, in one query: table_names() and
    tables_without_rowid() together, for a page that asks both on every request (the live
    bar's cursor). SQLite: every table has one."""
    if not dialect.on_postgres(alias):
        return dict.fromkeys(table_names(alias), True)
    found = rows(
        """SELECT t.table_name, EXISTS (
               SELECT 1 FROM information_schema.columns c
               WHERE c.table_schema = t.table_schema AND c.table_name = t.table_name
                 AND c.column_name = 'rowid')
           FROM information_schema.tables t
           WHERE t.table_schema = current_schema() AND t.table_type = 'BASE TABLE'""",
        (),
        alias,
    )
    return {name: bool(has_rowid) for name, has_rowid in found}


@dataclass(frozen=True)
class CappedCount:
    """A row count that stops at a cap, like Datasette's "10,000+"."""

    value: int
    capped: bool

    def __str__(self) -> str:
        return f"{self.value:,}+" if self.capped else f"{self.value:,}"


def capped_count(table: str, cap: int, alias: str = LEDGER) -> CappedCount:
    """Count at most `cap` rows: bounded work on a table of any size."""
    quoted = connections[alias].ops.quote_name(table)
    ((count,),) = rows(
        f"SELECT count(*) FROM (SELECT 1 FROM {quoted} LIMIT %s) AS c", [cap + 1], alias
    )
    return CappedCount(min(count, cap), count > cap)


def journal_mode(alias: str = LEDGER) -> str:
    """SQLite's journal mode; 'postgresql' on PostgreSQL, where readers never block the writer."""
    if dialect.on_postgres(alias):
        return "postgresql"
    ((mode,),) = rows("PRAGMA journal_mode", (), alias)
    return str(mode).lower()


def distinct_values(table: str, column: str, limit: int = 200, alias: str = LEDGER) -> list[str]:
    """Distinct values of an indexed column by skip-scan: one index seek per value, so a handful
    of personas costs a handful of seeks even on a million rows."""
    ops = connections[alias].ops
    t, c = ops.quote_name(table), ops.quote_name(column)
    sql = f"""
        WITH RECURSIVE v(value) AS (
            SELECT (SELECT {c} FROM {t} WHERE {c} IS NOT NULL ORDER BY {c} LIMIT 1)
            UNION ALL
            SELECT (SELECT {c} FROM {t} WHERE {c} > v.value ORDER BY {c} LIMIT 1)
            FROM v WHERE v.value IS NOT NULL
        )
        SELECT value FROM v WHERE value IS NOT NULL LIMIT %s"""
    return [value for (value,) in rows(sql, [limit], alias)]


def distinct_prefixes(
    table: str, column: str, separator: str = ":", limit: int = 200, alias: str = LEDGER
) -> list[str]:
    """Distinct `prefix` parts of `prefix<separator>rest` values, by skip-scan over the index:
    after each prefix, jump to the first value past every key that starts with it."""
    ops = connections[alias].ops
    t, c = ops.quote_name(table), ops.quote_name(column)
    # The character right after the separator sorts after every "prefix<separator>…" key.
    after = chr(ord(separator) + 1)
    at = dialect.position("%s", c, alias)
    prefix_of = f"CASE WHEN {at} > 0 THEN substr({c}, 1, {at} - 1) ELSE {c} END"
    # ORDER BY the column by its table's name: PostgreSQL names that CASE after the column (its
    # ELSE), so a bare name would sort by the prefix, scan the table and skip prefixes.
    key = f"{t}.{c}"
    sql = f"""
        WITH RECURSIVE p(prefix) AS (
            SELECT (SELECT {prefix_of} FROM {t} ORDER BY {key} LIMIT 1)
            UNION ALL
            SELECT (SELECT {prefix_of} FROM {t} WHERE {c} >= p.prefix || %s ORDER BY {key} LIMIT 1)
            FROM p WHERE p.prefix IS NOT NULL
        )
        SELECT prefix FROM p WHERE prefix IS NOT NULL LIMIT %s"""
    params = [separator, separator, separator, separator, after, limit]
    return [prefix for (prefix,) in rows(sql, params, alias)]


def in_list(ids, alias: str = LEDGER) -> tuple[str, list]:
    """SQL and parameter for `column IN <this>` over any number of ids, as ONE bound parameter,
    so a query's text and count do not grow with the list: a JSON array read by json_each on
    SQLite, an array on PostgreSQL. There json_each would work too (ledgerweb/sql/postgres/),
    but the planner guesses it holds 200 values and scans whole tables rather than look the ids
    up by index (a session's turns: ~75 ms instead of ~1 ms on the bench ledger); an array
    given as a constant it counts."""
    ids = list(ids)
    if connections[alias].vendor != "postgresql":
        # json_each ends a text at a NUL ("a\x00b" comes out as "a", which matches nothing): an
        # id holding one is bound on its own (PostgreSQL's text cannot hold one at all).
        with_nul = [v for v in ids if isinstance(v, str) and "\x00" in v]
        if with_nul:
            plain = [v for v in ids if not (isinstance(v, str) and "\x00" in v)]
            each = " UNION ALL SELECT %s" * len(with_nul)
            return f"(SELECT value FROM json_each(%s){each})", [json.dumps(plain), *with_nul]
        return "(SELECT value FROM json_each(%s))", [json.dumps(ids)]
    if not ids:  # an empty array has no type to unnest
        return "(NULL)", []
    if all(isinstance(v, int) for v in ids):
        return "(SELECT unnest(%s::bigint[]) AS value)", [ids]
    return "(SELECT unnest(%s::text[]) AS value)", [[str(v) for v in ids]]


def json_array_has(column: str) -> str:
    """SQL true when `column` is a JSON array holding the bound parameter: exact, and safe on
    invalid JSON (json_each would abort the whole query, so it only runs on valid arrays). A
    comparison, not SQLite's 0/1, so PostgreSQL reads it as a condition too."""
    return (
        f"(CASE WHEN json_valid({column}) THEN CASE WHEN json_type({column}) = 'array' THEN"
        f" CASE WHEN EXISTS (SELECT 1 FROM json_each({column}) WHERE type = 'text' AND value = %s)"
        " THEN 1 ELSE 0 END ELSE 0 END ELSE 0 END) = 1"
    )


def json_object_items(column: str, alias: str = LEDGER) -> str:
    """A table-valued source of a JSON object column's members (key, value, type), empty for
    anything that is not a valid JSON object.

    PostgreSQL's json_each (ledgerweb/sql/postgres/functions.sql) already reads invalid JSON and
    scalars as nothing, and an array's items have no key: its members with a key are the
    object's. One parse of the document per row, where the SQLite form's checks cost three more
    there (each a subtransaction: 2.4x the stage timings' time, issue 33)."""
    if dialect.on_postgres(alias):
        return f"LATERAL (SELECT * FROM json_each({column}) AS member WHERE member.key IS NOT NULL)"
    return (
        f"json_each(CASE WHEN json_valid({column}) AND json_type(CASE WHEN json_valid({column})"
        f" THEN {column} END) = 'object' THEN {column} ELSE '{{}}' END)"
    )


class Unindexed(Func):
    """`+column`: the same value, but SQLite will not use an index on it.

    For newest-first pages over a common value (status = 'completed' on a million rows) walking
    the started_at index and stopping after one page beats reading every matching row through
    the column's index and sorting them. (PostgreSQL plans this well on its own.)
    """

    template = "+%(expressions)s"
    output_field = TextField()

    def as_postgresql(self, compiler, connection, **extra):
        return self.as_sql(compiler, connection, template="%(expressions)s", **extra)


def routing_parent(key: str) -> str:
    """SQL for the second part of a `kind:<parent id>:<rest>` routing key (ARCHITECTURE §2):
    a subagent's parent or a fork's origin ('' when the key has no second colon)."""
    rest = f"substr({key}, instr({key}, ':') + 1)"
    return f"substr({rest}, 1, instr({rest}, ':') - 1)"
