"""The ledger is someone else's file: migrate never touches it, browsing cannot write to it, and
no query on it can run for ever."""

import sqlite3

import pytest
from builders import LEDGER_DB, use_ledger
from django.core.management import CommandError, call_command
from django.db import OperationalError, connections
from django.test import override_settings

from ledgerweb.db import LEDGER, LEDGER_WRITE, ledger_path_of
from ledgerweb.sqlite import LedgerQueryTimeout
from pipeline.models import NexusRequest
from sessions.models import Session

# Counts without end: only the time limit stops it.
ENDLESS_QUERY = (
    "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n) SELECT count(*) FROM n"
)


def ledger_tables() -> set[str]:
    with sqlite3.connect(ledger_path_of(LEDGER)) as conn:
        return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}


@LEDGER_DB
def test_migrate_never_creates_a_table_in_the_ledger():
    before = ledger_tables()
    call_command("migrate", verbosity=0, interactive=False)
    after = ledger_tables()
    assert after == before
    assert not {t for t in after if t.startswith(("django_", "auth_"))}


@LEDGER_DB
@pytest.mark.parametrize("database", [LEDGER, LEDGER_WRITE])
def test_migrate_refuses_to_run_on_the_ledger(database):
    before = ledger_tables()
    with pytest.raises(CommandError, match="never migrates it"):
        call_command("migrate", database=database, verbosity=0, interactive=False)
    assert ledger_tables() == before


@LEDGER_DB
def test_ledger_models_read_from_the_read_only_alias(ledger):
    ledger.session(id="S1")
    assert Session.objects.db == LEDGER
    assert NexusRequest.objects.db == LEDGER
    assert list(Session.objects.values_list("id", flat=True)) == ["S1"]


@LEDGER_DB
def test_a_write_through_the_browsing_connection_fails(ledger):
    ledger.session(id="S1")
    with pytest.raises(OperationalError, match="readonly"), connections[LEDGER].cursor() as cur:
        cur.execute("UPDATE sessions SET status = 'archived'")


@LEDGER_DB
def test_an_accidental_save_of_a_ledger_model_fails(ledger):
    ledger.session(id="S1")
    session = Session.objects.get(id="S1")
    session.status = "archived"
    with pytest.raises(OperationalError, match="readonly"):
        session.save()


@LEDGER_DB
def test_operator_writes_go_through_the_writable_alias(ledger):
    ledger.session(id="S1")
    changed = Session.objects.using(LEDGER_WRITE).filter(id="S1").update(status="archived")
    assert changed == 1
    assert Session.objects.using(LEDGER_WRITE).get(id="S1").status == "archived"


@LEDGER_DB
@override_settings(LEDGER_QUERY_TIMEOUT_MS=50)
def test_a_slow_query_is_stopped_with_a_clear_message():
    with pytest.raises(LedgerQueryTimeout) as stopped, connections[LEDGER].cursor() as cur:
        cur.execute(ENDLESS_QUERY)
    assert "took longer than 0.05 s" in str(stopped.value)
    assert "Narrow the filter" in str(stopped.value)
    # The connection stays usable for the next query.
    with connections[LEDGER].cursor() as cur:
        cur.execute("SELECT 1")
        assert cur.fetchone() == (1,)


@LEDGER_DB
@override_settings(LEDGER_QUERY_TIMEOUT_MS=50)
def test_a_slow_page_answers_with_the_message_instead_of_hanging(viewer_client, monkeypatch):
    def slow_overview():
        with connections[LEDGER].cursor() as cur:
            cur.execute(ENDLESS_QUERY)

    monkeypatch.setattr("overview.views.ledger_overview", slow_overview)
    response = viewer_client.get("/")
    assert response.status_code == 503
    assert b"That took too long" in response.content
    assert b"Narrow the filter" in response.content

    response = viewer_client.get("/?format=json")
    assert response.status_code == 503
    assert response.json()["error"] == "That took too long"


@LEDGER_DB
def test_the_time_limit_is_added_once_per_connection_however_often_it_reconnects():
    connection = connections[LEDGER]
    for _ in range(3):
        connection.close()
        connection.ensure_connection()
    assert connection.execute_wrappers.count(connection.ledger_deadline.execute_wrapper) == 1


@pytest.fixture
def missing_ledger(tmp_path):
    original = ledger_path_of(LEDGER)
    use_ledger(tmp_path / "nowhere.sqlite3")
    yield
    use_ledger(original)


# transaction=True: the ledger file is swapped mid-test, outside any test transaction.
@pytest.mark.django_db(transaction=True, databases="__all__")
def test_a_missing_ledger_file_gives_a_clear_page(viewer_client, missing_ledger):
    response = viewer_client.get("/")
    assert response.status_code == 503
    assert b"could not be read" in response.content
    assert b"nowhere.sqlite3" in response.content


@pytest.mark.django_db(transaction=True, databases="__all__")
def test_healthz_says_unavailable_when_the_ledger_file_is_missing(client, missing_ledger):
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.content == b"ledger unavailable\n"
