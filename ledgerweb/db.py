"""The two database aliases and the router between them.

`default` holds Django's own tables (users, groups, admin log). The ledger belongs to the agent
runtime, which writes it while we read it, so it gets two connections to the same file:

- `ledger` — every read. Opened read-only (SQLite URI `mode=ro` plus `PRAGMA query_only`), so
  nothing reached through it can write, whatever a view does; every query on it has a time limit
  (see ledgerweb/sqlite.py).
- `ledger_write` — the few explicit operator actions (archive, restore, fork, retention, import).
  Nothing is routed here: code that writes names it with `.using(LEDGER_WRITE)`, so a write is
  always a visible decision.

LEDGER_DB may also be a PostgreSQL URL (a central ledger fed by many hosts, see ledger_ship): the
same two aliases, read-only by `default_transaction_read_only` and time-limited by
`statement_timeout` — the counterparts of `mode=ro` and the progress handler.
"""

from pathlib import Path

POSTGRES_SCHEMES = ("postgres", "postgresql", "pgsql")

LEDGER = "ledger"
LEDGER_WRITE = "ledger_write"
LEDGER_ALIASES = (LEDGER, LEDGER_WRITE)
LEDGER_APPS = {"conversations", "pipeline"}

# PostgreSQL compiles a query to machine code when its estimated cost passes jit_above_cost
# (on by default since PostgreSQL 12): 200-400 ms spent before a query that then runs in a few ms,
# as a chart hour's checksum over a JSON list of hours does (bench/first_look.py, issue 33). Our
# queries are short and bounded: never worth it.
JIT_OFF = "-c jit=off"
# Seconds a connection waits for a lock held by the live writer before giving up.
BUSY_TIMEOUT_S = 5
# Seconds a worker keeps a database connection open between requests.
CONN_MAX_AGE_S = 60


def is_postgres_url(location) -> bool:
    return isinstance(location, str) and location.split("://", 1)[0] in POSTGRES_SCHEMES


def ledger_location(raw: str, default: Path) -> Path | str:
    """LEDGER_DB's value: a PostgreSQL URL as given, anything else a ledger file's path."""
    raw = raw.strip()
    if is_postgres_url(raw):
        return raw
    return Path(raw).expanduser().resolve() if raw else default


def ledger_databases(location: Path | str, query_timeout_ms: int = 2000) -> dict[str, dict]:
    """DATABASES entries for a ledger file or URL: a read-only alias and a writable one."""
    if is_postgres_url(location):
        return postgres_ledger_databases(location, query_timeout_ms)
    path = location
    return {
        LEDGER: {
            "ENGINE": "django.db.backends.sqlite3",
            # Django's SQLite backend opens with uri=True, so mode=ro is honoured.
            "NAME": f"file:{path}?mode=ro",
            "OPTIONS": {"timeout": BUSY_TIMEOUT_S, "init_command": "PRAGMA query_only = 1"},
            # One read transaction per request: every query of a page sees the same snapshot,
            # however fast the runtime writes (in WAL mode readers never block the writer).
            "ATOMIC_REQUESTS": True,
            # Kept open between requests of a worker (opening one costs a few ms a page, and
            # rollups.plan reuses its work while the connection's data_version is unchanged); at
            # most a minute, so a ledger file replaced on disk is picked up soon.
            "CONN_MAX_AGE": CONN_MAX_AGE_S,
            "CONN_HEALTH_CHECKS": True,
            "TEST": {"MIGRATE": False},
        },
        LEDGER_WRITE: {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": str(path),
            # The ledger's foreign keys name tables that live elsewhere (events) and sessions and
            # turns refer to each other; the runtime does not enforce them, and neither do we.
            "OPTIONS": {"timeout": BUSY_TIMEOUT_S, "init_command": "PRAGMA foreign_keys = OFF"},
            "TEST": {"MIGRATE": False},
        },
    }


def postgres_ledger_databases(url: str, query_timeout_ms: int) -> dict[str, dict]:
    """The two aliases on a PostgreSQL ledger. Reads: every transaction read-only and every
    statement stopped after the time limit, set on the connection itself so no query can escape
    them; REPEATABLE READ so a request's queries share one snapshot, as a SQLite read transaction
    does. The writable alias has neither: operator actions and ledger_ship may take their time."""
    import dj_database_url
    from psycopg import IsolationLevel

    read = dj_database_url.parse(url, conn_max_age=CONN_MAX_AGE_S, conn_health_checks=True)
    limits = (
        f"-c default_transaction_read_only=on -c statement_timeout={query_timeout_ms}"
        f" -c lock_timeout={BUSY_TIMEOUT_S * 1000}"
    )
    # A URL without ?options has no OPTIONS at all (the README's own shape). The URL's options
    # (sslmode, -c settings) are kept, and the read limits come after them: the last -c wins, so
    # no URL can make browsing writable or unlimited. JIT compilation comes first (a URL may turn
    # it on): off, see JIT_OFF.
    options = read.setdefault("OPTIONS", {})
    url_options = f" {options['options']}" if "options" in options else ""
    options["options"] = f"{JIT_OFF}{url_options} {limits}"
    options["isolation_level"] = IsolationLevel.REPEATABLE_READ
    read |= {"ATOMIC_REQUESTS": True, "TEST": {"MIGRATE": False}}
    write = dj_database_url.parse(url) | {"TEST": {"MIGRATE": False}}
    return {LEDGER: read, LEDGER_WRITE: write}


def ledger_is_postgres(alias: str = LEDGER) -> bool:
    from django.db import connections

    return connections[alias].vendor == "postgresql"


def ledger_identity(alias: str = LEDGER) -> str:
    """What tells one ledger from another, for keys of things derived from it: where it is, as
    ledger_place says it (a file's path; a PostgreSQL database without its password)."""
    return ledger_place(alias)


def ledger_place(alias: str = LEDGER) -> str:
    """Where the ledger is, as a person is told: the file's path, or the PostgreSQL database as
    postgres://user@host:port/name (never the password)."""
    from django.db import connections

    settings = connections[alias].settings_dict
    if connections[alias].vendor != "postgresql":
        return str(ledger_path_of(alias))
    options = settings.get("OPTIONS", {})
    host = settings.get("HOST") or options.get("host", "")
    port = settings.get("PORT") or options.get("port", "")
    return postgres_place(settings.get("USER", ""), host, port, settings["NAME"])


def ledger_shown_to(staff: bool, alias: str = LEDGER) -> str:
    """The ledger as a page names it: where it is for staff, its short name (the file's or the
    database's) for others, since where it is tells about the server."""
    from django.db import connections

    if staff:
        return ledger_place(alias)
    if connections[alias].vendor == "postgresql":
        return connections[alias].settings_dict["NAME"]
    return ledger_path_of(alias).name


def postgres_place(user, host, port, name) -> str:
    return f"postgres://{user or ''}@{host or ''}:{port or ''}/{name}"


def shown_location(location: Path | str) -> str:
    """A ledger file's path, or a PostgreSQL URL or connection string without its password."""
    if isinstance(location, Path):
        return str(location)
    from psycopg.conninfo import conninfo_to_dict

    found = conninfo_to_dict(location)
    return postgres_place(found.get("user"), found.get("host"), found.get("port"), found["dbname"])


def ledger_connectable(alias: str = LEDGER) -> Path | str:
    """What a program of its own opens to reach the ledger behind an alias (retention): the file's
    Path, or a libpq connection string for a PostgreSQL ledger. The string holds the password:
    show ledger_place instead."""
    from django.db import connections
    from psycopg.conninfo import make_conninfo

    connection = connections[alias]
    if connection.vendor != "postgresql":
        return ledger_path_of(alias)
    # Django's own cursor class and type adapters stay with Django's connections.
    params = connection.get_connection_params()
    return make_conninfo(**{k: v for k, v in params.items() if isinstance(v, str | int)})


def ledger_name(location: Path | str) -> str:
    """The ledger's short name for page headers: the file's name, or the database's."""
    if is_postgres_url(location):
        return location.split("?", 1)[0].rsplit("/", 1)[-1]
    return Path(location).name


def ledger_path_of(alias: str = LEDGER) -> Path:
    """The ledger file behind an alias, whether its NAME is a URI or a plain path. SQLite only: on
    PostgreSQL this is the database's bare name, no file; name the ledger with ledger_place."""
    from django.db import connections  # here, not at the top: settings import this module

    name = str(connections[alias].settings_dict["NAME"])
    if name.startswith("file:"):
        name = name.removeprefix("file:").split("?", 1)[0]
    return Path(name)


def in_ledger(model) -> bool:
    """The ledger apps' unmanaged models are the ledger's tables; their managed models (the
    pipeline's rollups) are ours and live in Django's database."""
    return model._meta.app_label in LEDGER_APPS and not model._meta.managed


class LedgerRouter:
    """Sends the ledger's tables to the read-only ledger and keeps migrate away from the ledger."""

    def db_for_read(self, model, **hints):
        return LEDGER if in_ledger(model) else None

    def db_for_write(self, model, **hints):
        # Writes are routed to the read-only alias on purpose: an accidental .save() fails.
        return LEDGER if in_ledger(model) else None

    def allow_relation(self, obj1, obj2, **hints):
        return len({in_ledger(obj) for obj in (obj1, obj2)}) == 1 or None

    def allow_migrate(self, db, app_label, model_name=None, **hints):
        if db in LEDGER_ALIASES:
            return False  # never create, alter or record anything in someone's ledger
        model = hints.get("model")
        if app_label in LEDGER_APPS and (model is None or in_ledger(model)):
            return False  # unmanaged: their tables are the ledger's, not ours
        return None
