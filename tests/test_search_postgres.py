"""Search over a PostgreSQL ledger: its rows keyed by the rowid column
(ledgerweb/sql/postgres/rowids.sql), writers that commit in rowid order, and a ledger made before
the column told how to add it. Runs on every pass (each test makes its own PostgreSQL ledger)."""

import threading
import time
from io import StringIO

import psycopg
import pytest
from builders import T0, LedgerBuilder, parse_html
from django.core.management import CommandError, call_command
from django.db import connections

from importers.bundle import ImportReport, SessionBundle
from importers.ship import ship
from importers.target import WriteTarget
from importers.writer import write
from ledgerfacts import schema
from ledgerfacts.dbapi import ROWID_ORDER_LOCK
from ledgerweb import health
from ledgerweb.pg_schema import (
    POSTGRES_SQL_DIR,
    ROWIDS,
    ROWIDS_FIX,
    create_postgres_ledger,
    create_sqlite_functions,
    postgres_ddl,
)
from search import indexer
from sessions.forking import fork_session
from sessions.models import Session

pytestmark = pytest.mark.django_db(transaction=True, databases="__all__")
URL = "/search/"


def found_ids(client, q: str) -> set[str]:
    data = client.get(URL, {"q": q, "format": "json"}).json()
    return {hit["id"] for group in data["groups"] for hit in group["hits"]}


# -- A ledger made before the rowid column ---------------------------------------------------------


@pytest.fixture
def old_ledger(central) -> LedgerBuilder:
    """A PostgreSQL ledger as made before rowids.sql: the tables and functions, no rowid, and a
    session whose message says 'quince'."""
    with psycopg.connect(central, autocommit=True) as conn:
        conn.execute(postgres_ddl())
        create_sqlite_functions(conn)
    builder = LedgerBuilder(central)
    s = builder.session(id="S1")
    t = builder.turn(s, id="T1")
    builder.set_head(s, t, t)
    builder.message(t, 1, id="M1", content="a quince tart")
    yield builder
    builder.conn.close()


def test_search_on_a_ledger_without_rowids_says_how_to_add_them(viewer_client, old_ledger):
    page = viewer_client.get(URL, {"q": "quince"})
    assert page.status_code == 200
    status = parse_html(page.content).find(".//*[@id='index-status']")
    said = " ".join("".join(status.itertext()).split())
    assert "have no rowid column" in said and ROWIDS_FIX in said
    twin = viewer_client.get(URL, {"q": "quince", "format": "json"}).json()
    assert ROWIDS_FIX in twin["index"]["unavailable"] and twin["groups"] == []
    fragment = viewer_client.get(URL, {"q": "quince"}, headers={"HX-Request": "true"})
    assert ROWIDS_FIX in fragment.content.decode().replace("&quot;", '"')
    find = viewer_client.get("/search/in/S1/", {"q": "quince"}).json()
    assert ROWIDS_FIX in find["error"] and find["turn_ids"] == []


def test_an_id_still_jumps_to_its_page_on_a_ledger_without_rowids(viewer_client, old_ledger):
    assert viewer_client.get(URL, {"q": "M1"}).url == "/sessions/S1/turns/T1/#message-M1"


def test_ledger_index_and_the_health_check_name_the_fix(old_ledger):
    with pytest.raises(CommandError, match="have no rowid column") as raised:
        call_command("ledger_index", stdout=StringIO())
    assert ROWIDS_FIX in str(raised.value)
    finding = next(f for f in health.run_checks() if f.check == "rowid columns")
    assert finding.is_problem and ROWIDS_FIX in finding.message
    assert {e.label for e in finding.examples} == set(schema.LEDGER_TABLES)


def test_the_fix_adds_the_rowids_and_search_then_finds_the_old_rows(viewer_client, old_ledger):
    old_ledger.conn.execute((POSTGRES_SQL_DIR / ROWIDS).read_text())  # what `psql -f` runs
    assert found_ids(viewer_client, "quince") == {"M1"}
    finding = next(f for f in health.run_checks() if f.check == "rowid columns")
    assert finding.passed


# -- Writers commit in rowid order -----------------------------------------------------------------


class SlowTarget(WriteTarget):
    """A shipper whose session transaction stops after its first message insert, until told to
    go on: a long session being written while another shipper commits."""

    def __init__(self, conn, inserted: threading.Event, go_on: threading.Event):
        super().__init__(conn)
        self.inserted, self.go_on = inserted, go_on

    def executemany(self, sql: str, rows) -> int:
        count = super().executemany(sql, rows)
        if sql.startswith("INSERT INTO messages") and not self.inserted.is_set():
            self.inserted.set()
            self.go_on.wait(timeout=30)
        return count


def host_session(host: str, word: str) -> SessionBundle:
    turn = {"id": f"T-{host}", "session_id": f"S-{host}", "status": "completed",
            "started_at": T0}  # fmt: skip
    return SessionBundle(
        where=host,
        session={"id": f"S-{host}", "persona": "p", "routing_key": f"r:{host}", "created_at": T0,
                 "updated_at": T0, "current_turn_id": turn["id"], "root_turn_id": turn["id"]},
        turns=[turn],
        messages=[{"id": f"M-{host}", "turn_id": turn["id"], "role": "user", "content": word,
                   "sequence": 1, "created_at": T0}],
        tool_calls=[],
    )  # fmt: skip


def host_ledger(tmp_path, host: str, word: str):
    path = tmp_path / f"{host}.sqlite3"
    schema.create_ledger(path)
    builder = LedgerBuilder(path)
    s = builder.session(id=f"S-{host}")
    t = builder.turn(s, id=f"T-{host}")
    builder.set_head(s, t, t)
    builder.message(t, 1, id=f"M-{host}", content=word)
    builder.conn.close()
    return path


def test_a_row_committed_after_a_later_one_is_still_indexed(viewer_client, central, tmp_path):
    """Shipper A takes the first rowids and is still writing when shipper B ships and the index
    takes a step: B waits for A (the writers' lock), so no step sees B's rows before A's."""
    call_command("ledger_ship", str(host_ledger(tmp_path, "first", "apple")), "--to", central,
                 "--host", "first", stdout=StringIO(), stderr=StringIO())  # fmt: skip
    assert found_ids(viewer_client, "apple") == {"M-first"}  # the index has its marks
    inserted, go_on = threading.Event(), threading.Event()

    def slow_shipper():
        with psycopg.connect(central, autocommit=True) as conn:
            write(SlowTarget(conn, inserted, go_on), host_session("a", "walrus"), ImportReport())

    def other_shipper():
        with psycopg.connect(central, autocommit=True) as conn:
            ship(host_ledger(tmp_path, "b", "narwhal"), conn, "b", ImportReport())

    a = threading.Thread(target=slow_shipper)
    a.start()
    assert inserted.wait(timeout=30)
    b = threading.Thread(target=other_shipper)
    b.start()
    b.join(timeout=3)  # done at once without the lock; waiting for A with it
    indexer.step(60)  # a page view while A is still writing
    go_on.set()
    a.join()
    b.join()
    assert found_ids(viewer_client, "walrus") == {"M-a"}
    assert found_ids(viewer_client, "narwhal") == {"M-b"}


def test_two_shippers_at_once_while_pages_search_then_every_row_is_found(
    viewer_client, central, tmp_path
):
    words = {host: f"word{host}" for host in ("h1", "h2")}
    sources = {host: host_ledger(tmp_path, host, word) for host, word in words.items()}
    with psycopg.connect(central, autocommit=True) as conn:  # the schema first: both then add
        ship(host_ledger(tmp_path, "h0", "word0"), conn, "h0", ImportReport())

    def shipper(host: str):
        with psycopg.connect(central, autocommit=True) as conn:
            ship(sources[host], conn, host, ImportReport())

    threads = [threading.Thread(target=shipper, args=(host,)) for host in words]
    for thread in threads:
        thread.start()
    while any(thread.is_alive() for thread in threads):
        indexer.step(1)
    for thread in threads:
        thread.join()
    for host, word in words.items():
        assert found_ids(viewer_client, word) == {f"M-{host}"}


def waits_for_the_lock(conn) -> bool:
    found = "SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
    deadline = time.monotonic() + 30
    while not conn.execute(found).fetchall():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_a_fork_takes_its_turn_with_the_shippers(central):
    with psycopg.connect(central, autocommit=True) as conn:
        create_postgres_ledger(conn)
    builder = LedgerBuilder(central)
    s = builder.session(id="S1")
    t = builder.turn(s, id="T1")
    builder.set_head(s, t, t)
    origin = Session.objects.get(id="S1")

    def fork():
        fork_session(origin, "T1", "a fork")
        connections.close_all()

    with psycopg.connect(central) as shipper, psycopg.connect(central, autocommit=True) as watch:
        shipper.execute(ROWID_ORDER_LOCK)  # a shipper in the middle of a session
        forking = threading.Thread(target=fork)
        forking.start()
        assert waits_for_the_lock(watch)
        shipper.commit()
    forking.join()
    assert builder.conn.execute("SELECT count(*) FROM sessions").fetchone() == (2,)
    builder.conn.close()
