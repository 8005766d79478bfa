"""A ledger file replaced at its path (a restore, a copy from another host) is noticed by every
long-running process: an open SQLite connection keeps reading the old, deleted file for as long
as it lives. A web worker keeps its ledger connections up to CONN_MAX_AGE_S (its pages showed
the old file for a minute), the background process for good (background/runner.py).

Each ledger connection remembers the file (device and inode) it opened; before each request a
worker closes those whose file is no longer the one at the path, and the next query opens the
new one. One stat() a request; nothing on PostgreSQL, where there is no file.
"""

import logging
import os

from django.core.signals import request_started
from django.db import connections
from django.db.backends.signals import connection_created

from ledgerweb.db import LEDGER, LEDGER_ALIASES, ledger_path_of, ledger_place

log = logging.getLogger(__name__)

FileIdentity = tuple[int, int]


def file_identity(alias: str = LEDGER) -> FileIdentity | None:
    """The device and inode of the SQLite ledger file at its path; None on PostgreSQL or when
    no file is there."""
    if connections[alias].vendor != "sqlite":
        return None
    try:
        found = os.stat(ledger_path_of(alias))
    except OSError:
        return None
    return found.st_dev, found.st_ino


def _remember_file(sender, connection, **kwargs) -> None:
    if connection.alias in LEDGER_ALIASES:
        connection.ledger_file = file_identity(connection.alias)


def close_if_replaced(**kwargs) -> bool:
    """Close the ledger connections opened on a file that is no longer the one at the path;
    True when there was one."""
    closed = False
    for alias in LEDGER_ALIASES:
        connection = connections[alias]
        opened = getattr(connection, "ledger_file", None)
        if connection.connection is None or opened is None or opened == file_identity(alias):
            continue
        connection.close()
        closed = True
    if closed:
        log.warning("The ledger at %s was replaced: reading the new file.", ledger_place())
    return closed


connection_created.connect(_remember_file, dispatch_uid="ledgerweb.replaced.remember_file")
request_started.connect(close_if_replaced, dispatch_uid="ledgerweb.replaced.close_if_replaced")
