"""ledgerweb's own database (`default`: users, sign-in lockouts, admin log, chart rollups, the
search index): a SQLite file, the one-machine default, or PostgreSQL given as a URL, which
several web hosts share so that they behave as one site (see README, "Running on more than one
machine").
"""

from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from ledgerweb.db import CONN_MAX_AGE_S, JIT_OFF

# A statement on PostgreSQL is stopped after this long, like a ledger query on SQLite (its
# progress handler), and waits at most LOCK_TIMEOUT_MS for a row another host locked, like
# SQLite's busy timeout (5 s): a stuck query ends with an error instead of a hung worker.
STATEMENT_TIMEOUT_MS = 10_000
LOCK_TIMEOUT_MS = 5_000


def is_url(raw: str) -> bool:
    return "://" in raw


def state_database(raw: str, default_path: Path) -> dict:
    """The DATABASES["default"] entry for DJANGO_DB: a database URL, or a SQLite file's path
    (default_path when empty)."""
    if is_url(raw):
        return postgres_database(raw)
    path = Path(raw).expanduser().resolve() if raw else default_path
    return sqlite_database(path)


def sqlite_database(path: Path) -> dict:
    return {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": path,
        # gunicorn workers write sessions concurrently: wait for a lock rather than fail. A
        # transaction takes its write lock when it begins (IMMEDIATE): a deferred one that read
        # first and then writes fails at once with "database is locked", whatever the timeout,
        # when another worker committed in between (SQLite cannot wait on a stale snapshot).
        "OPTIONS": {
            "timeout": 5,
            "init_command": "PRAGMA journal_mode = WAL",
            "transaction_mode": "IMMEDIATE",
        },
        "CONN_MAX_AGE": CONN_MAX_AGE_S,
        "CONN_HEALTH_CHECKS": True,
    }


def postgres_database(url: str) -> dict:
    try:
        config = dj_database_url.parse(url, conn_max_age=CONN_MAX_AGE_S, conn_health_checks=True)
    except ValueError as error:
        message = f"DJANGO_DB={url!r} is not a usable database URL: {error}"
        raise ImproperlyConfigured(message) from None
    if config.get("ENGINE") != "django.db.backends.postgresql":
        raise ImproperlyConfigured(
            f"DJANGO_DB={url!r}: a URL must name PostgreSQL (postgres://…); "
            "give SQLite as a file path"
        )
    # No JIT compilation (ledgerweb.db.JIT_OFF: the sums over stored hours are short queries).
    timeouts = (
        f"{JIT_OFF} -c statement_timeout={STATEMENT_TIMEOUT_MS} -c lock_timeout={LOCK_TIMEOUT_MS}"
    )
    options = config.setdefault("OPTIONS", {})
    # The URL's own options come last: `?options=-c%20statement_timeout%3D0` lifts the limit
    # (for a long migration, say).
    options["options"] = f"{timeouts} {options['options']}" if "options" in options else timeouts
    return config


def on_postgres() -> bool:
    """Whether ledgerweb's own database is PostgreSQL (the code that differs asks this)."""
    from django.db import connections  # here, not at the top: settings import this module

    return connections["default"].vendor == "postgresql"


def in_list(values) -> tuple[str, list]:
    """SQL and parameter for `column IN <this>` in ledgerweb's own database, over any number of
    values, as ONE bound parameter so a query's text does not grow with the list: a JSON array
    on SQLite, an array on PostgreSQL (ledgerweb.sqlite.in_list)."""
    from ledgerweb import sqlite

    return sqlite.in_list(values, alias="default")
