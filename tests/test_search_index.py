"""The search index follows the ledger: rows added or finished while the server runs become
searchable, a replaced ledger is indexed again from nothing, ledger_index resumes after a stop."""

import json
import os

import pytest
from builders import T0, LedgerBuilder, use_ledger
from django.core.management import call_command
from django.db import connection, connections

from ledgerfacts import schema
from ledgerfacts.timestamps import now_ms
from ledgerweb.db import is_postgres_url
from ledgerweb.pg_schema import create_postgres_ledger
from search import engine, indexer

# The writer's rows must be visible to the pages: no test transaction around them.
pytestmark = pytest.mark.django_db(transaction=True, databases="__all__")
URL = "/search/"


@pytest.fixture(autouse=True)
def pages_index_everything(monkeypatch):
    """A page indexes for at most INDEX_BUDGET_S; on a busy test machine that may not reach a
    test's last rows. Tests of what is searchable let pages index everything."""
    monkeypatch.setattr("search.views.INDEX_BUDGET_S", 60)
    monkeypatch.setattr("search.views.INDEX_BUDGET_BYTES", 10**9)


def found(client, q) -> list[tuple[str, str | None]]:
    data = client.get(URL, {"q": q, "format": "json"}).json()
    return [(hit["id"], hit["status"]) for group in data["groups"] for hit in group["hits"]]


def indexed_items() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM search_row")
        return cursor.fetchone()[0]


def test_rows_added_while_the_server_runs_become_searchable(viewer_client, ledger):
    s = ledger.session(id="S1")
    t = ledger.turn(s, id="T1")
    ledger.message(t, 1, id="M1", content="alpha")
    assert found(viewer_client, "alpha") == [("M1", "completed")]
    ledger.message(t, 2, id="M2", content="bravo alpha", created_at=T0 + 1)
    assert found(viewer_client, "bravo") == [("M2", "completed")]
    assert found(viewer_client, "alpha") == [("M2", "completed"), ("M1", "completed")]


def test_a_tool_result_that_arrives_later_becomes_searchable_once(viewer_client, ledger):
    s = ledger.session(id="S1")
    t = ledger.turn(s, id="T1", status="streaming", started_at=now_ms())
    ledger.tool_call(t, 1, id="C1", parameters='{"q": "walrus"}', result=None, status="pending")
    assert found(viewer_client, "walrus") == [("C1", "pending")]
    ledger.conn.execute(
        "UPDATE tool_calls SET result = ?, status = 'completed' WHERE id = 'C1'",
        (json.dumps({"answer": "narwhal"}),),
    )
    ledger.conn.execute("UPDATE turns SET status = 'completed' WHERE id = 'T1'")
    assert found(viewer_client, "narwhal") == [("C1", "completed")]
    assert found(viewer_client, "walrus") == [("C1", "completed")]  # once, not twice


def test_a_request_that_fails_after_it_was_indexed_shows_its_error(viewer_client, ledger):
    ledger.request(id="R1", status="processing", stage="runAgent", event_id="evt-9",
                   started_at=now_ms())  # fmt: skip
    assert found(viewer_client, '"evt 9"') == [("R1", "processing")]
    ledger.conn.execute(
        "UPDATE nexus_requests SET status = 'failed', error_message = 'quota exhausted'"
    )
    assert found(viewer_client, "quota") == [("R1", "failed")]


def replace_ledger(ledger, tmp_path, first_turn_at: int, messages: list[str]) -> None:
    """Write another ledger to the same path (a restore from backup, a rebuilt ledger) with the
    same ids: S1, T1 started at first_turn_at, and messages M1, M2… with these texts. On
    PostgreSQL: the same database, its tables made again from the DDL (pg_restore --clean)."""
    if is_postgres_url(ledger.path):
        tables = ", ".join(schema.LEDGER_TABLES)
        ledger.conn.execute(f"DROP TABLE IF EXISTS {tables}")
        create_postgres_ledger(ledger.conn.conn)
        fill_ledger(ledger, first_turn_at, messages)
        return
    ledger.conn.close()
    replacement = tmp_path / "other.sqlite3"
    schema.create_ledger(replacement)
    other = LedgerBuilder(replacement)
    fill_ledger(other, first_turn_at, messages)
    other.conn.close()
    for suffix in ("-wal", "-shm"):
        if os.path.exists(f"{ledger.path}{suffix}"):
            os.remove(f"{ledger.path}{suffix}")
    os.replace(replacement, ledger.path)
    use_ledger(ledger.path)


def fill_ledger(ledger, first_turn_at: int, messages: list[str]) -> None:
    t = ledger.turn(ledger.session(id="S1"), id="T1", started_at=first_turn_at)
    for i, text in enumerate(messages, start=1):
        ledger.message(t, i, id=f"M{i}", content=text, created_at=first_turn_at)


def test_a_row_stuck_for_a_day_is_not_read_again_at_every_step(viewer_client, ledger):
    s = ledger.session(id="S1")
    t = ledger.turn(s, id="T1", started_at=now_ms() - 2 * indexer.OPEN_FOR_MS)
    ledger.tool_call(t, 1, id="C1", parameters='{"q": "walrus"}', result=None, status="pending")
    assert found(viewer_client, "walrus") == [("C1", "pending")]
    assert engine.open_items(10) == []


def test_retention_taking_out_old_requests_keeps_the_index(ledger):
    ledger.turn(ledger.session(id="S1"), id="T1")
    for i in range(3):
        ledger.request(id=f"R{i}", error_message=f"boom {i}", status="failed")
    assert indexer.step(budget_s=60).reset is False
    ledger.conn.execute("DELETE FROM nexus_requests WHERE id IN ('R0', 'R1')")  # the oldest
    ledger.request(id="R9", error_message="boom 9", status="failed")
    progress = indexer.step(budget_s=60)
    assert (progress.reset, progress.indexed) == (False, 1)  # only the new request is read


def test_a_replaced_ledger_is_indexed_again_never_mixed(viewer_client, ledger, tmp_path):
    t = ledger.turn(ledger.session(id="S1"), id="T1")
    ledger.message(t, 1, id="M1", content="apple")
    assert found(viewer_client, "apple") == [("M1", "completed")]
    replace_ledger(ledger, tmp_path, T0 + 5, ["banana"])  # its first turn is another
    assert found(viewer_client, "apple") == []
    assert found(viewer_client, "banana") == [("M1", "completed")]


def test_a_rebuilt_ledger_with_the_same_first_turn_but_fewer_rows_is_indexed_again(
    viewer_client, ledger, tmp_path
):
    t = ledger.turn(ledger.session(id="S1"), id="T1")
    for i, text in enumerate(["apple", "cherry", "damson"], start=1):
        ledger.message(t, i, id=f"M{i}", content=text)
    assert found(viewer_client, "damson") == [("M3", "completed")]
    replace_ledger(ledger, tmp_path, T0, ["banana"])  # same anchor; fewer messages than marked
    assert found(viewer_client, "damson") == []
    assert found(viewer_client, "banana") == [("M1", "completed")]


def test_ledger_index_indexes_only_new_rows_and_resumes_after_a_stop(ledger, monkeypatch):
    s = ledger.session(id="S1", label=None)
    t = ledger.turn(s, id="T1")
    for i in range(5):
        ledger.message(t, i, id=f"M{i}", content=f"word{i}")
    monkeypatch.setattr(indexer, "BATCH", 2)
    real_add, calls = engine.add, []

    def add_then_stop(docs):
        calls.append(docs)
        if len(calls) == 2:
            raise KeyboardInterrupt  # Ctrl-C in the middle of the second batch
        real_add(docs)

    monkeypatch.setattr(engine, "add", add_then_stop)
    with pytest.raises(KeyboardInterrupt):
        call_command("ledger_index", verbosity=0)
    assert indexed_items() == 2  # the first batch, committed; the second rolled back
    monkeypatch.setattr(engine, "add", real_add)
    call_command("ledger_index", verbosity=0)
    assert indexed_items() == 5
    ledger.message(t, 9, id="M9", content="word9")
    call_command("ledger_index", verbosity=0)
    assert indexed_items() == 6


def test_a_ledger_without_the_agents_tables_is_not_indexed_and_breaks_nothing(
    viewer_client, ledger
):
    ledger.request(id="R-alone", error_message="a lonely failure")
    for table in ("tool_calls", "messages", "turns", "sessions"):
        ledger.conn.execute(f"DROP TABLE {table}")
    call_command("ledger_index")
    answer = viewer_client.get("/search/", {"q": "lonely", "format": "json"})
    assert answer.status_code == 200
    assert viewer_client.get("/search/", {"q": "R-alone"}).status_code in (200, 302)


def test_rows_of_one_millisecond_are_all_found_each_once(viewer_client, ledger, monkeypatch):
    """A document's id is its time in ms: a burst of rows in one ms (or a junk time, all 0)
    takes the next free ids, across batches too."""
    monkeypatch.setattr(indexer, "BATCH", 3)
    t = ledger.turn(ledger.session(id="S1"), id="T1")
    ledger.message(t, 0, id="LATER", content="burst", created_at=T0 + 2)
    for i in range(1, 8):
        ledger.message(t, i, id=f"M{i}", content="burst", created_at=T0)
    ledger.message(t, 8, id="JUNK", content="burst", created_at="not a time")
    ids = [hit_id for hit_id, _ in found(viewer_client, "burst")]
    assert sorted(ids) == sorted(["LATER", "JUNK", *(f"M{i}" for i in range(1, 8))])
    assert ids[-1] == "JUNK"  # the oldest, at 0


def test_a_pending_row_that_has_not_changed_is_not_indexed_again(
    viewer_client, ledger, monkeypatch
):
    """Each page view compares the open rows' statuses and lengths with what was indexed: it
    writes (and leaves old words behind) only for a row that changed."""
    t = ledger.turn(ledger.session(id="S1"), id="T1", status="streaming", started_at=now_ms())
    ledger.tool_call(t, 1, id="C1", parameters='{"q": "walrus"}', result=None, status="pending")
    assert found(viewer_client, "walrus") == [("C1", "pending")]
    added = []
    monkeypatch.setattr(engine, "add", lambda docs: added.append(docs))
    for _ in range(3):
        assert found(viewer_client, "walrus") == [("C1", "pending")]
    assert added == []
    ledger.conn.execute("UPDATE tool_calls SET status = 'running' WHERE id = 'C1'")
    viewer_client.get(URL, {"q": "walrus"})
    assert [doc.src for docs in added for doc in docs] == [1]


def test_a_pending_row_with_no_text_yet_becomes_searchable_when_its_text_arrives(
    viewer_client, ledger
):
    s = ledger.session(id="S1", label=None, created_at=now_ms())
    t = ledger.turn(s, id="T1", status="streaming", started_at=now_ms())
    ledger.tool_call(t, 1, id="C1", tool_name="", parameters="", result=None, status="pending")
    assert found(viewer_client, "walrus") == []
    ledger.conn.execute("UPDATE tool_calls SET result = '\"walrus\"', status = 'completed'")
    ledger.conn.execute("UPDATE sessions SET label = 'Narwhal watch'")
    assert found(viewer_client, "walrus") == [("C1", "completed")]
    assert found(viewer_client, "narwhal") == [("S1", "active")]


# -- A huge value: indexed in slices, never holding ledgerweb's database while reading ----------


def huge_result(word_at_end: str, megabytes: int = 3) -> str:
    return json.dumps({"log": "lorem ipsum " * (megabytes * 87_000) + word_at_end})


def test_a_page_indexes_a_huge_value_a_bounded_slice_at_a_time_and_says_so(
    viewer_client, ledger, monkeypatch
):
    monkeypatch.setattr("search.views.INDEX_BUDGET_BYTES", 1_000_000)
    t = ledger.turn(ledger.session(id="S1"), id="T1")
    ledger.tool_call(t, 1, id="C1", result=huge_result("zanzibar"))  # 3 MB
    data = viewer_client.get(URL, {"q": "lorem", "format": "json"}).json()
    assert [hit["id"] for group in data["groups"] for hit in group["hits"]] == ["C1"]
    assert data["index"]["values_still_indexing"] == 1
    page = viewer_client.get(URL, {"q": "zanzibar"}).content.decode()
    assert "the rest of 1 value over 64 KB is still being indexed" in page
    for _ in range(5):  # each page reads at most 1 MB more
        found(viewer_client, "zanzibar")
    assert found(viewer_client, "zanzibar") == [("C1", "completed")]
    data = viewer_client.get(URL, {"q": "zanzibar", "format": "json"}).json()
    assert data["index"]["values_still_indexing"] == 0


def test_the_ledger_is_read_and_words_cut_before_the_index_is_locked(ledger, monkeypatch):
    """A sign-in writes to ledgerweb's database: the indexer holds its write lock only to write
    what it has already read and cut, never while it reads the ledger (a 60 MB value read in
    one transaction made every sign-in wait and fail)."""
    t = ledger.turn(ledger.session(id="S1"), id="T1")
    ledger.tool_call(t, 1, id="C1", result=huge_result("zanzibar", megabytes=1))
    for i in range(20):
        ledger.message(t, i, id=f"M{i}", content=f"message {i}")
    reads_in_a_transaction = []
    real_rows = indexer.sqlite.rows

    def watched_rows(*args, **kwargs):
        reads_in_a_transaction.append(connection.in_atomic_block)
        return real_rows(*args, **kwargs)

    monkeypatch.setattr(indexer.sqlite, "rows", watched_rows)
    while indexer.step(budget_s=60).more:
        pass
    assert reads_in_a_transaction and not any(reads_in_a_transaction)
    assert engine.pending_count() == 0


def test_the_background_process_keeps_the_index_caught_up(viewer_client, ledger, monkeypatch):
    """A fresh install's first search finds every row: the background job indexed them."""
    t = ledger.turn(ledger.session(id="S1"), id="T1")
    ledger.tool_call(t, 1, id="C1", result=huge_result("zanzibar", megabytes=1))
    for i in range(30):
        ledger.message(t, i, id=f"M{i}", content=f"walrus {i}", created_at=T0 + i)
    call_command("ledger_background", "--only", "search-index", "--rounds", "1")
    monkeypatch.setattr("search.views.INDEX_BUDGET_S", 0)  # the page itself indexes nothing
    data = viewer_client.get(URL, {"q": "walrus", "format": "json"}).json()
    assert data["count"] == 30 and data["index"]["not_yet_indexed"] == {}
    assert found(viewer_client, "zanzibar") == [("C1", "completed")]
    from background.models import JobStatus

    assert JobStatus.objects.get(name="search-index").last_error == ""


def test_a_locked_ledgerweb_database_is_not_reported_as_the_ledger(client, viewer, ledger):
    import sqlite3

    default = connections["default"]
    if default.vendor != "sqlite":
        pytest.skip("SQLite's one write lock: PostgreSQL locks rows, a sign-in never waits on it")
    default.close()
    default.settings_dict["OPTIONS"] = {**default.settings_dict["OPTIONS"], "timeout": 0.1}
    holder = sqlite3.connect(default.settings_dict["NAME"])
    holder.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    try:
        response = client.post("/accounts/login/", {"username": "vera", "password": "pw"})
    finally:
        holder.rollback()
        holder.close()
        default.close()
        default.settings_dict["OPTIONS"] = {**default.settings_dict["OPTIONS"], "timeout": 5}
    assert response.status_code == 503
    page = response.content.decode()
    assert "ledgerweb is busy" in page and "database is locked" in page
    assert "ledger could not be read" not in page.lower()
