"""Failure groups: an hour's failed requests grouped by failed stage and error signature (the
"similar failures" of pipeline/signatures.py), with when they happened, what they touched and
their newest requests. The failure inbox (issues/) and the alert rules (alerts/) are built on
them.

Exact by construction, as the charts' facts are (pipeline/rollups.py): one SQL query (ROWS)
selects the failed rows and one function (group_hours) folds them into GroupHour records. The
summariser runs both over each hour it builds and stores the records (FailureGroupHour); a
window's live ranges run the very same two over the ledger (pipeline/failure_window.py). So a
stored hour and the same hour read live cannot disagree.

What a group touched (principals, sessions, channels, personas, models) is kept as the sorted
distinct 64-bit hashes of the values, so that "how many sessions over 30 days" is a union of
arrays (numpy), not a count(DISTINCT) over every failure: exact unless two of a ledger's values
share a 64-bit hash (for a million values, a chance of one in ten million).
"""

import hashlib
import json
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from ledgerweb import dialect
from ledgerweb.text import as_text
from pipeline.signatures import SQL_FUNCTION

# What a group keeps of who and what it touched: the column each is read from. A channel is the
# one an event came in on (event_source: imessage, discord, gmail, a timer…); delivery_channel is
# only set once a request reached delivery, so most failures have none.
TOUCHED = {
    "principals": "principal_id",
    "sessions": "session_key",
    "channels": "event_source",
    "personas": "session_persona",
    "models": "agent_model",
}
# Newest requests a group keeps per hour (and a window shows).
NEWEST = 10
# A PostgreSQL ledger's requests are found again by id (it has no rowid): an id longer than this
# is not kept among the newest (it still counts), as no page would link it whole anyway.
MAX_REF_CHARS = 1_000

# The failed rows of `{where}`; the reference is how a row is found again (rowid on SQLite,
# id on PostgreSQL, see ref_column). status || '': the time range is the selective condition.
ROWS = f"""SELECT {{ref}}, CAST(started_at AS BIGINT), error_stage, {SQL_FUNCTION}(error_message),
        {", ".join(TOUCHED.values())}
    FROM nexus_requests WHERE {{where}} AND status || '' = 'failed'"""
HOUR = 3_600_000


def ref_column() -> str:
    return "id" if dialect.on_postgres() else "rowid"


def rows_sql(where: str) -> str:
    return ROWS.format(ref=ref_column(), where=where)


def value_hash(value) -> int | None:
    """A ledger value as a signed 64-bit number (None for NULL, which touches nothing): text and
    a BLOB holding the same bytes stay apart, as SQL's DISTINCT keeps them."""
    if value is None:
        return None
    if isinstance(value, bytes | bytearray | memoryview):
        data = b"b" + bytes(value)
    elif isinstance(value, str):
        data = b"s" + value.encode("utf-8", "surrogatepass")
    else:  # a number in a TEXT column (odd data)
        data = b"n" + repr(value).encode()
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little", signed=True)


def text_value(value) -> str | None:
    """A ledger value kept as text (a stage, a source, a persona): a BLOB written there is read
    as the text it most likely is, a number as its digits."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bytes | bytearray | memoryview):
        return as_text(bytes(value))
    return str(value)


@dataclass
class GroupHour:
    """The failures of one (failed stage, signature) in one hour, for one source and persona or
    for all of them (source and persona None)."""

    hour: int
    error_stage: str | None
    signature: str
    n: int
    first_at: int
    last_at: int
    # (started_at, ref), newest first, at most NEWEST: ref is a rowid (SQLite) or an id.
    newest: list[tuple[int, int | str]] = field(default_factory=list)
    # name (TOUCHED) → sorted distinct value hashes (int64)
    touched: dict[str, np.ndarray] = field(default_factory=dict)
    source: str | None = None
    persona: str | None = None
    combined: bool = True  # over every source and persona

    @property
    def group(self) -> tuple[str | None, str]:
        return self.error_stage, self.signature


class _Acc:
    __slots__ = ("n", "first", "last", "newest", "hashes")

    def __init__(self):
        self.n, self.first, self.last = 0, None, None
        self.newest: list[tuple[int, int | str]] = []
        self.hashes: dict[str, set[int]] = {name: set() for name in TOUCHED}

    def add(self, ref, started: int, touched: tuple) -> None:
        self.n += 1
        self.first = started if self.first is None else min(self.first, started)
        self.last = started if self.last is None else max(self.last, started)
        if not (isinstance(ref, str) and len(ref) > MAX_REF_CHARS):
            self.newest.append((started, ref))
        for name, value in zip(TOUCHED, touched, strict=True):
            if (h := value_hash(value)) is not None:
                self.hashes[name].add(h)

    def record(self, hour: int, stage, signature: str, *scope) -> GroupHour:
        """The record; `scope` is (source, persona), or nothing for one over all of them."""
        newest = sorted(self.newest, key=lambda s: (s[0], str(s[1])), reverse=True)[:NEWEST]
        touched = {name: np.array(sorted(h), dtype=np.int64) for name, h in self.hashes.items()}
        source, persona = scope or (None, None)
        return GroupHour(
            hour, stage, signature, self.n, self.first, self.last, newest, touched,
            source, persona, combined=not scope,
        )  # fmt: skip


def group_hours(rows, per_scope: bool = True) -> list[GroupHour]:
    """ROWS' rows as GroupHour records: per hour and group, combined over sources and personas,
    and (per_scope) once more per source and persona, as the charts' facts are kept, so that a
    filtered inbox reads the same stored records as an unfiltered one."""
    combined: dict[tuple, _Acc] = defaultdict(_Acc)
    scoped: dict[tuple, _Acc] = defaultdict(_Acc)
    for ref, started, stage, signature, *touched in rows:
        if started is None:
            continue
        hour = int(started) // HOUR * HOUR
        key = (hour, text_value(stage), signature)
        combined[key].add(ref, int(started), touched)
        if per_scope:
            source, persona = touched[2], touched[3]
            scoped[(*key, text_value(source), text_value(persona))].add(ref, int(started), touched)
    records = [acc.record(*key) for key, acc in combined.items()]
    records += [acc.record(*key) for key, acc in scoped.items()]
    return records


# -- Stored form (pipeline.models.FailureGroupHour) -------------------------------------------

STORED_FIELDS = (
    "source", "persona", "error_stage", "signature", "n", "first_at", "last_at", "newest",
    *(f"touched_{name}" for name in TOUCHED),
)  # fmt: skip


def stored(g: GroupHour) -> tuple:
    """A record's values for STORED_FIELDS."""
    return (
        g.source, g.persona, g.error_stage, g.signature, g.n, g.first_at, g.last_at,
        json.dumps(g.newest), *(g.touched[name].astype(np.int64).tobytes() for name in TOUCHED),
    )  # fmt: skip


def from_stored(hour: int, combined: bool, values: tuple, touched: bool = True) -> GroupHour:
    """A record from STORED_FIELDS' values (without `touched`: the hash columns left unread)."""
    source, persona, stage, signature, n, first_at, last_at, newest, *blobs = values
    arrays = {}
    if touched:
        arrays = {
            name: np.frombuffer(bytes(blob), dtype=np.int64)
            for name, blob in zip(TOUCHED, blobs, strict=True)
        }
    return GroupHour(
        hour, stage, signature, n, first_at, last_at,
        [tuple(item) for item in json.loads(newest)] if newest else [], arrays,
        source, persona, combined,
    )  # fmt: skip
