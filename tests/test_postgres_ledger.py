"""LEDGER_DB as a PostgreSQL URL: the same two aliases, reads unable to write and time-limited."""

import re
from io import StringIO

import pytest
from builders import LedgerBuilder, use_ledger
from django.conf import settings
from django.core.management import call_command
from django.db import DatabaseError, connections

from ledgerfacts.timestamps import now_ms
from ledgerweb.db import (
    LEDGER,
    LEDGER_WRITE,
    ledger_databases,
    ledger_location,
    ledger_name,
    shown_location,
)
from ledgerweb.sqlite import LedgerQueryTimeout, WhileUnchanged, ledger_version

# Counts without end: only the time limit stops it.
ENDLESS_QUERY = (
    "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n) SELECT count(*) FROM n"
)
ON_POSTGRES = pytest.mark.django_db(transaction=True, databases="__all__")


@pytest.fixture
def pg_ledger(postgres_database):
    """The ledger aliases on a new PostgreSQL ledger for one test, then back where they were."""
    import psycopg

    from ledgerweb.pg_schema import create_postgres_ledger

    with psycopg.connect(postgres_database, autocommit=True) as conn:
        create_postgres_ledger(conn)
    original = settings.LEDGER_DB
    use_ledger(postgres_database)
    builder = LedgerBuilder(postgres_database)
    yield builder
    builder.conn.close()
    use_ledger(original)


def test_a_postgres_url_in_ledger_db_stays_a_url_and_names_its_database(tmp_path):
    url = "postgres://ledgerweb@db.example:5432/central?sslmode=require"
    assert ledger_location(url, tmp_path / "x.sqlite3") == url
    assert ledger_location("", tmp_path / "x.sqlite3") == tmp_path / "x.sqlite3"
    assert ledger_name(url) == "central"


@pytest.mark.parametrize(
    "url",
    [
        "postgres://lw@127.0.0.1:5432/ledger",  # the README's shape: no ?options
        "postgres://ledgerweb@central.example/ledger",
        "postgres://lw@127.0.0.1:5432/ledger?sslmode=require",
        "postgres://lw@127.0.0.1/ledger?options=-c%20default_transaction_read_only%3Doff",
    ],
)
def test_every_postgres_url_shape_gives_a_read_only_time_limited_alias(url):
    databases = ledger_databases(url, query_timeout_ms=1234)
    read, write = databases[LEDGER], databases[LEDGER_WRITE]
    assert (read["NAME"], write["NAME"]) == ("ledger", "ledger")
    # The last -c wins in PostgreSQL: the read limits come after anything the URL sets.
    settings_of = dict(re.findall(r"-c (\w+)=(\S+)", read["OPTIONS"]["options"]))
    assert settings_of["default_transaction_read_only"] == "on"
    assert settings_of["statement_timeout"] == "1234"
    # Pages' queries are short: no JIT compiling hundreds of ms before a query of a few.
    assert read["OPTIONS"]["options"].startswith("-c jit=off")
    if "sslmode" in url:
        assert read["OPTIONS"]["sslmode"] == write["OPTIONS"]["sslmode"] == "require"


@ON_POSTGRES
def test_the_read_alias_cannot_write_a_postgres_ledger(pg_ledger):
    with (
        pytest.raises(DatabaseError, match="read-only transaction"),
        connections[LEDGER].cursor() as cursor,
    ):
        cursor.execute("DELETE FROM sessions")


@ON_POSTGRES
def test_a_postgres_ledger_is_read_without_jit_compilation(pg_ledger):
    """A chart hour's checksum spent 400 ms compiling for a 7 ms query (issue 33)."""
    with connections[LEDGER].cursor() as cursor:
        cursor.execute("SHOW jit")
        assert cursor.fetchone()[0] == "off"


@ON_POSTGRES
def test_the_write_alias_writes_a_postgres_ledger(pg_ledger):
    session = pg_ledger.session()
    with connections[LEDGER_WRITE].cursor() as cursor:
        cursor.execute("UPDATE sessions SET status = 'archived' WHERE id = %s", [session["id"]])
    (status,) = pg_ledger.conn.execute("SELECT status FROM sessions").fetchone()
    assert status == "archived"


@ON_POSTGRES
def test_a_runaway_query_on_a_postgres_ledger_is_stopped_with_the_time_limit_message(
    pg_ledger, settings
):
    connections[LEDGER].close()  # the limit is set when a connection opens
    connections[LEDGER].settings_dict["OPTIONS"]["options"] = (
        "-c default_transaction_read_only=on -c statement_timeout=200"
    )
    with (
        pytest.raises(LedgerQueryTimeout, match="Narrow the filter"),
        connections[LEDGER].cursor() as cursor,
    ):
        cursor.execute(ENDLESS_QUERY)


@ON_POSTGRES
def test_a_postgres_ledger_seen_unchanged_keeps_results_and_a_commit_drops_them(pg_ledger):
    pg_ledger.session()
    kept = WhileUnchanged(keep=4)
    made = []

    def make():
        made.append(1)
        return len(made), True

    assert kept.get("k", make) == 1
    assert kept.get("k", make) == 1  # nothing committed: kept
    before = ledger_version()[1]
    pg_ledger.session()  # the runtime commits
    assert ledger_version()[1] != before
    assert kept.get("k", make) == 2


ERROR_MESSAGES = [
    None,
    "",
    "   \n  ",
    "timeout after 5012 ms for 01HQZX3Y4K5M6N7P8Q9R0S1T2V",
    "Failed 'fetch' of \"https://x.example/a?b=1\" (attempt 3/5)",
    "uuid 123e4567-e89b-12d3-a456-426614174000 not found; hash deadbeef00112233",
    "command_v2 exited with -1.5 at 12:30:01,5\nTraceback (most recent call last): …",
    "  spaces\tand\ttabs   everywhere ",
    "x" * 400 + " 42",
    "HTML <script>alert(1)</script> ok",
    "\nTimeout after 5 s",  # a first line empty, or blank: the first with text is masked
    "  \n\t\n  Disk full at 3\nmore",
    "\r\nwindows line 2",
]


@pytest.mark.parametrize("message", ERROR_MESSAGES)
def test_the_error_signature_in_postgres_sql_is_the_python_one(postgres_database, message):
    import psycopg

    from ledgerweb.pg_schema import create_sqlite_functions
    from pipeline.signatures import signature

    with psycopg.connect(postgres_database, autocommit=True) as conn:
        create_sqlite_functions(conn)
        (in_sql,) = conn.execute("SELECT ledger_error_signature(%s::text)", [message]).fetchone()
    assert in_sql == signature(message)


@ON_POSTGRES
def test_a_postgres_ledger_that_does_not_open_is_named_as_a_database(
    pg_ledger, postgres, client, viewer, admin_user
):
    use_ledger(postgres.url("no_such_ledger"))
    client.force_login(viewer)
    response = client.get("/")
    assert response.status_code == 503
    assert "Ledger database: no_such_ledger (staff see where it is)" in response.content.decode()
    client.force_login(admin_user)  # staff see where it is: server and database, no password
    page = client.get("/").content.decode()
    assert re.search(r"Ledger database: postgres://postgres@\S+/no_such_ledger\b", page)


@ON_POSTGRES
def test_ledger_rollup_names_a_postgres_ledger_by_server_and_database(pg_ledger, monkeypatch):
    monkeypatch.setitem(connections[LEDGER].settings_dict, "PASSWORD", "s3cret")
    pg_ledger.request(id="R1", started_at=now_ms() - 3 * 3_600_000)
    out = StringIO()
    call_command("ledger_rollup", days=1, stdout=out)
    name = connections[LEDGER].settings_dict["NAME"]
    assert re.search(rf"verified for postgres://postgres@\S+/{name};", out.getvalue())
    assert "s3cret" not in out.getvalue()


def test_a_postgres_location_is_shown_without_its_password():
    url = "postgres://ledgerweb:s3cret@db.example:5433/central?sslmode=require"
    assert shown_location(url) == "postgres://ledgerweb@db.example:5433/central"
