"""The background summariser: `manage.py ledger_rollup --follow` (started by `make serve` beside
gunicorn) builds the dashboard's missing hours, newest first, and keeps up as the ledger grows,
so that no page view pays for building them (see docs/decisions.md).

It holds an exclusive lock on a file (settings.SUMMARISER_LOCK) while it runs: a second one
started by mistake waits for the first to end, and pages see that the hours are being built
for them. The operating system drops the lock when the process dies, so a crash never leaves a
stale "running" behind.
"""

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager

from django.conf import settings


@contextmanager
def holding_lock(wait: bool = True) -> Iterator[bool]:
    """Hold the summariser's lock while inside; yields False (lock not held) when another
    process holds it and `wait` is False."""
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


def running() -> bool:
    """Whether a summariser holds the lock now (a probe: takes and drops it when free)."""
    if not settings.SUMMARISER_LOCK.exists():
        return False
    with holding_lock(wait=False) as free:
        return not free
