"""Reading another program's SQLite ledger (AIX, Agent OS): read-only, checked, defensively.

Such a ledger may be written by its own program while we read it, may be of another format
altogether, and may hold rows that break its own rules. So: the file is opened with `mode=ro` and
read in one snapshot; a missing table or column refuses the file with WrongFormat; values are
converted by small helpers that return None for junk instead of raising. SourceReader is what the
AIX and Agent OS readers share: one pass over the sessions, ids checked, unread columns counted.
"""

import json
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from importers.bundle import ImportReport, SessionBundle, WrongFormat


def read_ledgers(
    paths: list[Path], report: ImportReport, *, kind: str, required: dict, reader: Callable
) -> Iterator[SessionBundle]:
    """The bundles `reader(conn, path, report).bundles()` reads from each ledger file, once
    open_source() has checked that it has the `required` tables and columns."""
    for path in paths:
        with open_source(path, kind, required) as conn:
            yield from reader(conn, str(path), report).bundles()


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
        self.key = key
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


class SourceReader:
    """What reading any source ledger takes: the sessions in one pass with their rows, rows
    checked for an id of their own, and messages naming a row ("path: table id=…").

    The values of columns the reader does not read (`read` names the ones it does, by table)
    are counted per column as what the Agents Ledger cannot hold.
    """

    def __init__(self, conn: sqlite3.Connection, path: str, report: ImportReport, read: dict):
        self.conn, self.path, self.report = conn, path, report
        self.unread = {
            table: [c for c in columns_of(conn, table) if c not in columns]
            for table, columns in read.items()
        }

    def where(self, table: str, row_id) -> str:
        return f"{self.path}: {table} id={row_id}"

    def skip(self, table: str, row: dict, why: str) -> None:
        self.report.skipped(self.where(table, row.get("id")), why)

    def count_unread(self, table: str, row: dict) -> None:
        for column in self.unread[table]:
            if row[column] is not None and row[column] != "":
                self.report.unmapped(f"{table}.{column}")

    def sessions_with_rows(
        self, table: str, noun: str, children: dict[str, RowsByKey]
    ) -> Iterator[tuple[dict, dict[str, list[dict]]]]:
        """Each row of `table` (the source's sessions, which it calls `noun`s) with its rows of
        the `children` tables, all read in one pass. A session with no id or a repeated one, and
        rows whose session does not exist, are reported and left out."""
        sessions = self.conn.execute(
            f"SELECT CAST(id AS TEXT) AS _key, * FROM {table} ORDER BY _key"
        )
        previous = None
        for session in sessions:
            key, has_id = session["_key"], text_id(session["id"]) is not None
            if not has_id or key == previous:
                why = f"repeats an earlier {noun}'s id" if has_id else "it has no id"
                self.skip(table, session, why)
                continue
            previous = key
            rows = {}
            for child, source in children.items():
                rows[child], orphans = source.take(key)
                self._skip_orphans(child, source, noun, orphans)
            yield session, rows
        for child, source in children.items():
            self._skip_orphans(child, source, noun, source.rest())

    def _skip_orphans(self, table: str, source: RowsByKey, noun: str, rows: list[dict]) -> None:
        for row in rows:
            self.skip(table, row, f"its {noun} {row[source.key]!r} does not exist")

    def valid_rows(
        self, table: str, noun: str, rows: list[dict], problem: Callable | None = None
    ) -> Iterator[tuple[str, dict]]:
        """(id, row) of each row with an id of its own in which `problem` (a function of the row
        that says what is wrong with it, else None) finds nothing wrong; the others are reported
        and left out."""
        seen = set()
        for row in rows:
            row_id = text_id(row["id"])
            if row_id is None:
                why = "it has no id"
            elif row_id in seen:
                why = f"repeats an earlier {noun}'s id"
            else:
                why = problem(row) if problem else None
            if why:
                self.skip(table, row, why)
                continue
            seen.add(row_id)
            yield row_id, row


def text_id(value) -> str | None:
    """An id as the ledger stores it (TEXT), or None when the value cannot be one."""
    if isinstance(value, str):
        return value if value.strip() else None
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


def json_as_written(value, default: str | None) -> str | None:
    """A JSON column's value as the ledger stores it: text, kept as written even when it is not
    valid JSON (the dashboard shows such text raw, with a warning); `default` for NULL."""
    if value is None:
        return default
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value if isinstance(value, str) else json.dumps(value)


def message_row(message: dict, turn_id: str, sequence: int) -> dict:
    """A `messages` row of a source message read with its id as text and its time under "ms"."""
    return {
        "id": message["id"],
        "turn_id": turn_id,
        "role": message["role"],
        "content": json_as_written(message["content"], ""),
        "sequence": sequence,
        "created_at": message["ms"],
    }


def call_outcome(word, result: str | None, statuses: dict) -> tuple[str, str | None]:
    """The ledger status of a call whose source status is `word` (looked up in `statuses` in
    any case; pending when unknown) and, when it failed, its error: the message its result
    carries, else the word itself ("rejected")."""
    status = statuses.get(word.lower() if isinstance(word, str) else word, "pending")
    return status, (_error_in(result) or word) if status == "failed" else None


def _error_in(result: str | None) -> str | None:
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
