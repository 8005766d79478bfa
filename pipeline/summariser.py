"""The background summariser: `manage.py ledger_rollup --follow` (started by `make serve` beside
gunicorn) builds the dashboard's missing hours, newest first, and keeps up as the ledger grows,
so that no page view pays for building them (see docs/decisions.md).

It holds an exclusive lock on a file (settings.SUMMARISER_LOCK) while it runs: a second one
started by mistake waits for the first to end, and pages see that the hours are being built
for them. The operating system drops the lock when the process dies, so a crash never leaves a
stale "running" behind.

When ledgerweb's own database is PostgreSQL (several web hosts share it), the lock is an
advisory lock in that database instead, held by a connection of the summariser's own: every
host sees it, and the server drops it when that connection ends.
"""

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager

from django.conf import settings
from django.db import connections

from ledgerweb.state_db import on_postgres

# The advisory lock's key on PostgreSQL (one bigint; any number no other code of ours uses).
ADVISORY_KEY = 19_0001


@contextmanager
def holding_lock(wait: bool = True) -> Iterator[bool]:
    """Hold the summariser's lock while inside; yields False (lock not held) when another
    process holds it and `wait` is False."""
    if on_postgres():
        with _holding_advisory_lock(wait) as held:
            yield held
        return
    path = settings.SUMMARISER_LOCK
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
    taken = False
    try:
        conn.autocommit = True
        if wait:  # as long as it takes, not the statement time limit pages have
            conn.execute("SET statement_timeout = 0; SET lock_timeout = 0")
            conn.execute("SELECT pg_advisory_lock(%s)", [ADVISORY_KEY])
            taken = True
        else:
            taken = conn.execute("SELECT pg_try_advisory_lock(%s)", [ADVISORY_KEY]).fetchone()[0]
        yield taken
    finally:
        # Released here, not only by the session's end: a closed connection's server process
        # exits a moment later, and until then pg_locks (running()) still shows the lock.
        if taken and not conn.closed:
            conn.execute("SELECT pg_advisory_unlock(%s)", [ADVISORY_KEY])
        conn.close()


def running() -> bool:
    """Whether a summariser holds the lock now (a probe: takes and drops it when free)."""
    if on_postgres():
        with connections["default"].cursor() as cursor:
            cursor.execute(
                """SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted
                   AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
                   AND classid = 0 AND objid = %s AND objsubid = 1)""",
                [ADVISORY_KEY],
            )
            return cursor.fetchone()[0]
    if not settings.SUMMARISER_LOCK.exists():
        return False
    with holding_lock(wait=False) as free:
        return not free
