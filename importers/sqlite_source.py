"""Reading another program's SQLite ledger (AIX, Agent OS): read-only, checked, defensively.

Such a ledger may be written by its own program while we read it, may be of another format
altogether, and may hold rows that break its own rules. So: the file is opened with `mode=ro` and
read in one snapshot; a missing table or column refuses the file with WrongFormat; values are
converted by small helpers that return None for junk instead of raising.
"""

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from importers.bundle import WrongFormat
from ledgerweb.timestamps import looks_like_seconds

# Above this a number cannot be milliseconds of a real date (it is the year 5138): it is
# microseconds, and above a thousand times that, nanoseconds.
_MICROSECONDS_ABOVE = 100_000_000_000_000
_NANOSECONDS_ABOVE = _MICROSECONDS_ABOVE * 1000


@contextmanager
def open_source(path: Path, kind: str, required: dict[str, tuple[str, ...]]):
    """A read-only connection to `path` in one read snapshot, after checking that it has the
    `required` tables and columns; otherwise WrongFormat("not <kind>: …")."""
    try:
        # as_uri() percent-escapes the path, so a '?' or '#' in a folder name stays a path.
        conn = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True, isolation_level=None)
    except sqlite3.Error as error:
        raise WrongFormat(f"not {kind}: {path} cannot be opened ({error})") from None
    try:
        # Bytes that are not UTF-8 must not stop the import of everything else.
        conn.text_factory = lambda raw: raw.decode("utf-8", "replace")
        conn.row_factory = _dict_row
        try:
            conn.execute("BEGIN")  # one snapshot, however fast the source's writer appends
            found = {table: columns_of(conn, table) for table in required}
        except sqlite3.DatabaseError as error:
            raise WrongFormat(f"not {kind}: {path} is not a SQLite database ({error})") from None
        for table, needed in required.items():
            if not found[table]:
                raise WrongFormat(f"not {kind}: no {table} table")
            if missing := [c for c in needed if c not in found[table]]:
                raise WrongFormat(f"not {kind}: {table} has no {', '.join(missing)} column")
        yield conn
    finally:
        conn.close()


def _dict_row(cursor: sqlite3.Cursor, values: tuple) -> dict:
    # Plain dicts: a column an older or newer version of the source lacks reads as .get() → None.
    return {column[0]: value for column, value in zip(cursor.description, values, strict=True)}


def columns_of(conn: sqlite3.Connection, table: str) -> list[str]:
    rows = conn.execute("SELECT name FROM pragma_table_info(?)", (table,))
    return [row["name"] for row in rows]


def extra_columns(conn: sqlite3.Connection, table: str, known: set[str]) -> list[str]:
    """The table's columns the importer does not read: their values go to report.unmapped()."""
    return [c for c in columns_of(conn, table) if c not in known]


def filled(row: dict, columns: list[str]) -> Iterator[str]:
    """The columns of `row` that hold a value (not NULL, not an empty string)."""
    return (c for c in columns if row[c] is not None and row[c] != "")


class RowsByKey:
    """One table's rows ordered by a key column, handed out one key at a time.

    Sessions are read in key order and each table is read once in the same order (a merge
    join), so a source of any size is imported in one pass, whether or not it has an index on
    the key, and only one session's rows are in memory at a time. Keys are compared as text on
    both sides (SQLite's binary order of UTF-8 is Python's order of str).
    """

    def __init__(
        self, conn: sqlite3.Connection, table: str, key: str, order: str, columns: str = "*"
    ):
        self._rows = conn.execute(
            f"SELECT CAST({key} AS TEXT) AS _key, {columns} FROM {table} ORDER BY _key, {order}"
        )
        self._next = next(self._rows, None)

    def take(self, key: str) -> tuple[list[dict], list[dict]]:
        """The rows of `key`, and the rows before them whose key matched no earlier call."""
        orphans, rows = [], []
        while self._next is not None and (self._next["_key"] is None or self._next["_key"] < key):
            orphans.append(self._next)
            self._next = next(self._rows, None)
        while self._next is not None and self._next["_key"] == key:
            rows.append(self._next)
            self._next = next(self._rows, None)
        return rows, orphans

    def rest(self) -> list[dict]:
        """Rows left after the last key: their key names nothing that was taken."""
        rest = [] if self._next is None else [self._next]
        self._next = None
        return rest + list(self._rows)


def text_id(value) -> str | None:
    """An id as the ledger stores it (TEXT), or None when the value cannot be one."""
    if isinstance(value, str):
        return value if value.strip() else None
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


def to_ms(value) -> int | None:
    """Unix milliseconds from seconds, milliseconds, microseconds or an ISO 8601 string."""
    if isinstance(value, str):
        text = value.strip()
        try:
            value = float(text)
        except ValueError:
            return _iso_to_ms(text)
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        return None
    if not 0 < value < _NANOSECONDS_ABOVE * 1000:
        return None  # also inf; nothing past the year 5138 in nanoseconds is a time
    if looks_like_seconds(value):
        return int(value * 1000)
    if value > _NANOSECONDS_ABOVE:
        return int(value // 1_000_000)
    if value > _MICROSECONDS_ABOVE:
        return int(value // 1000)
    return int(value)


def _iso_to_ms(text: str) -> int | None:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    ms = int(moment.timestamp() * 1000)
    return ms if ms > 0 else None


def json_text(value, default: str | None) -> str | None:
    """A JSON column's value as the ledger stores it: text, kept as written even when it is not
    valid JSON (the dashboard shows such text raw, with a warning); `default` for NULL."""
    if value is None:
        return default
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value if isinstance(value, str) else json.dumps(value)


def first_line(text, limit: int = 80) -> str | None:
    """A label from free text: its first non-blank line, cut at `limit` characters."""
    if not isinstance(text, str):
        return None
    line = next((line.strip() for line in text.splitlines() if line.strip()), "")
    if not line:
        return None
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def error_in(result: str | None) -> str | None:
    """The error message a failed call's result carries, when it is a JSON object with one."""
    try:
        value = json.loads(result) if result else None
    except ValueError:
        return None
    if isinstance(value, dict):
        for key in ("error", "message", "stderr"):
            found = value.get(key)
            if isinstance(found, dict):
                found = found.get("message")
            if isinstance(found, str) and found.strip():
                return found
    return None
