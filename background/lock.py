"""The background process's lock: one process per ledger.

On SQLite (ledgerweb's own database a file) the lock is an exclusive lock on a file next to
settings.SUMMARISER_LOCK whose name carries the ledger's identity, so a second process started for
the same ledger waits for the first, and one started for another ledger from the same checkout
(another `make serve` on another port) works beside it. The operating system drops the lock when
the process dies, so a crash never leaves a stale "running" behind.

When ledgerweb's own database is PostgreSQL (several web hosts share it), the lock is an advisory
lock in that database instead, keyed by the ledger too, held by a connection of the process's own:
every host sees it, and the server drops it when that connection ends.
"""

import fcntl
import os
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings
from django.db import connections

from ledgerweb.db import ledger_identity
from ledgerweb.state_db import on_postgres

# The advisory lock's first key on PostgreSQL (the second is the ledger's): a number no other
# code of ours uses.
ADVISORY_CLASS = 19_0001


def _ledger_number() -> int:
    """The ledger's identity as a signed 32-bit number (PostgreSQL's int4 key)."""
    n = zlib.crc32(ledger_identity().encode())
    return n - (1 << 32) if n >= 1 << 31 else n


def lock_path() -> Path:
    base = Path(settings.SUMMARISER_LOCK)
    return base.with_name(f"{base.name}.{zlib.crc32(ledger_identity().encode()):08x}")


@contextmanager
def holding_lock(wait: bool = True) -> Iterator[bool]:
    """Hold this ledger's background lock while inside; yields False (lock not held) when another
    process holds it and `wait` is False."""
    if on_postgres():
        with _holding_advisory_lock(wait) as held:
            yield held
        return
    path = lock_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)  # closing releases the lock


@contextmanager
def _holding_advisory_lock(wait: bool) -> Iterator[bool]:
    database = connections["default"]
    conn = database.get_new_connection(database.get_connection_params())
    key = [ADVISORY_CLASS, _ledger_number()]
    taken = False
    try:
        conn.autocommit = True
        if wait:  # as long as it takes, not the statement time limit pages have
            conn.execute("SET statement_timeout = 0; SET lock_timeout = 0")
            conn.execute("SELECT pg_advisory_lock(%s, %s)", key)
            taken = True
        else:
            taken = conn.execute("SELECT pg_try_advisory_lock(%s, %s)", key).fetchone()[0]
        yield taken
    finally:
        # Released here, not only by the session's end: a closed connection's server process
        # exits a moment later, and until then pg_locks (running()) still shows the lock.
        if taken and not conn.closed:
            conn.execute("SELECT pg_advisory_unlock(%s, %s)", key)
        conn.close()


def running() -> bool:
    """Whether a background process holds this ledger's lock now (a probe: takes and drops it
    when free)."""
    if on_postgres():
        with connections["default"].cursor() as cursor:
            # The two-int4 form of an advisory lock shows as classid, objid and objsubid 2.
            cursor.execute(
                """SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted
                   AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
                   AND classid = %s AND objid = %s::oid AND objsubid = 2)""",
                [ADVISORY_CLASS, _ledger_number() & 0xFFFFFFFF],
            )
            return cursor.fetchone()[0]
    if not lock_path().exists():
        return False
    with holding_lock(wait=False) as free:
        return not free
