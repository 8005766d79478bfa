"""Where the ledger stood when a page was drawn, in a cursor the page sends back.

A cursor holds three things:

- the ledger it belongs to (`epoch`, a hash of where the ledger is), so a cursor of another
  ledger, or of a ledger file replaced by an older copy, is not compared with this one;
- the **high-water marks**: the largest rowid of each table a page watches. The ledger is
  append-only and a row's rowid never changes, so the rows added since a page was drawn are
  exactly those above its marks, found by a range scan of the rowid (the primary key's order on
  SQLite; an indexed identity column on PostgreSQL, ledgerweb/sql/postgres/rowids.sql, whose
  writers commit in rowid order);
- a **digest** of what the page shows that changes in place rather than by new rows: a turn
  going from pending to completed, a session's head moving, a request reaching its next stage
  (live/watches.py says what each kind of page digests).

Nothing in it is a secret or a permission: a cursor only says what a page has already seen.
"""

import hashlib
import re
from dataclasses import dataclass

from ledgerweb import sqlite
from ledgerweb.db import ledger_identity

# The tables whose rows pages show, in the order their marks are written in a cursor.
TABLES = ("sessions", "turns", "messages", "tool_calls", "nexus_requests")
VERSION = "1"
_CURSOR = re.compile(r"1\.([0-9a-f]{8})\.((?:[0-9]{1,19}\.){5})([0-9a-f]{12})")


class RowidsMissing(Exception):
    """A PostgreSQL ledger made before ledgerweb/sql/postgres/rowids.sql: no rowid to mark."""

    def __init__(self, tables: list[str]):
        self.tables = tables
        super().__init__(
            "Live updates need the rowid column on this PostgreSQL ledger's tables "
            f'({", ".join(tables)}): run psql "$LEDGER_DB" -f ledgerweb/sql/postgres/rowids.sql'
        )


@dataclass(frozen=True)
class Cursor:
    epoch: str
    marks: tuple[int, ...]  # one per TABLES; 0 for a table the ledger does not have
    digest: str

    def __str__(self) -> str:
        marks = "".join(f"{mark}." for mark in self.marks)
        return f"{VERSION}.{self.epoch}.{marks}{self.digest}"

    def mark(self, table: str) -> int:
        return self.marks[TABLES.index(table)]

    def moved(self, other: "Cursor", *tables: str) -> bool:
        """Whether rows were added to any of `tables` between `other`'s marks and these."""
        return any(self.mark(t) != other.mark(t) for t in tables)

    def is_behind(self, other: "Cursor") -> bool:
        """Whether `other` was drawn from rows this ledger no longer holds: another ledger, or a
        file replaced by an older copy (its marks are above the ledger's). The page reloads."""
        if self.epoch != other.epoch:
            return True
        return any(theirs > ours for theirs, ours in zip(other.marks, self.marks, strict=True))


def parse(raw: str) -> Cursor | None:
    """A cursor as a page sends it back, or None when it is not one this site wrote."""
    found = _CURSOR.fullmatch(raw or "")
    if found is None:
        return None
    marks = tuple(int(mark) for mark in found.group(2).split(".")[:-1])
    if any(mark >= 2**63 for mark in marks):
        return None
    return Cursor(found.group(1), marks, found.group(3))


def digest(*parts) -> str:
    """A short fingerprint of the values a page shows that may change in place."""
    return hashlib.blake2b(repr(parts).encode("utf-8", "surrogatepass"), digest_size=6).hexdigest()


def epoch() -> str:
    where = ledger_identity().encode("utf-8", "surrogatepass")
    return hashlib.blake2b(where, digest_size=4).hexdigest()


def marks() -> tuple[int, ...]:
    """The largest rowid of each table, read in one query (each a look at the end of an index)."""
    present = sqlite.tables_and_rowids()
    watched = [table for table in TABLES if table in present]
    if missing := sorted(table for table in watched if not present[table]):
        raise RowidsMissing(missing)
    if not watched:
        return (0,) * len(TABLES)
    sql = "SELECT " + ", ".join(f"(SELECT max(rowid) FROM {table})" for table in watched)
    (found,) = sqlite.rows(sql)
    by_table = dict(zip(watched, found, strict=True))
    return tuple(int(by_table.get(table) or 0) for table in TABLES)


def now(state_digest: str) -> Cursor:
    """The cursor of the ledger as this request reads it, with a page's digest."""
    return Cursor(epoch(), marks(), state_digest)
