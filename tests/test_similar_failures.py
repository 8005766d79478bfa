"""Similar failures are answered from the signatures stored with the summarised hours
(pipeline/signature_search.py): the same rows as masking every failure's message, on hostile
rows and on a replaced ledger; hours not summarised are masked live up to a bound, and the ones
left out are said, never a silently shorter list."""

import math
import os
import sqlite3
from contextlib import closing

import pytest
from builders import LEDGER_DB, T0
from django.db import connections
from test_rollups import SINCE, UNTIL, changing, messy_requests, stored_hours, swap_statuses

from ledgerweb.db import LEDGER
from pipeline import rollups, signature_search
from pipeline.signatures import SQL_FUNCTION, signature

pytestmark = LEDGER_DB
H = rollups.HOUR
HOSTILE_MESSAGES = [
    None,
    "",
    "   ",
    12.5,  # a REAL where text belongs
    "x" * 1_000_000 + " after 5 ms\nsecond line",  # huge: masked by its first line
    "<script>alert(1)</script> after 42 ms",
    "Rate limited: 429 (retry after 31 s)",
    "Rate limited: 500 (retry after 2 s)",
    "multi\nline 7",
]
HOSTILE_STAGES = ["runAgent", None, "", 3.0]


@pytest.fixture(autouse=True)
def fresh_plans(monkeypatch):
    """Each test starts without kept plans (a plan is kept while the ledger is unchanged)."""
    monkeypatch.setattr(rollups, "_plans", rollups.sqlite.WhileUnchanged(keep=64))
    monkeypatch.setattr(rollups, "VERIFY_EVERY_S", 0)


def hostile_failures(ledger) -> None:
    messy_requests(ledger)
    for i in range(120):
        ledger.request(
            started_at=T0 + (i % 14) * H + i * 1_000,
            status="failed",
            stage="runAgent",
            error_stage=HOSTILE_STAGES[i % len(HOSTILE_STAGES)],
            error_message=HOSTILE_MESSAGES[i % len(HOSTILE_MESSAGES)],
        )


def masked_in_python(ledger, sig: str, since: int, until: int) -> list[str]:
    """The live computation: every failure of the window whose message masks to `sig`."""
    rows = ledger.conn.execute(
        "SELECT id, error_message FROM nexus_requests"
        " WHERE status = 'failed' AND started_at >= ? AND started_at < ?",
        (since, until),
    )
    return sorted(row_id for row_id, message in rows if signature(message) == sig)


def listed(client, query: dict) -> tuple[list[str], dict]:
    """Every id the list shows for the query, page after page, and its first page's JSON."""
    first = page = client.get("/pipeline/requests/", query | {"format": "json"}).json()
    ids = [r["id"] for r in page["requests"]]
    while page["next"]:
        page = client.get("/pipeline/requests/", query | {"format": "json", "after": page["next"]})
        page = page.json()
        ids += [r["id"] for r in page["requests"]]
    return sorted(ids), first


def similar_query(sig: str, since: int = SINCE, until: int = UNTIL) -> dict:
    return {"status": "failed", "signature": sig, "since": since, "until": until}


def build_every_hour() -> None:
    rollups.plan(T0, T0 + 14 * H, budget_s=math.inf)
    rollups._plans = rollups.sqlite.WhileUnchanged(keep=64)  # the list plans afresh


def test_similar_failures_from_stored_hours_are_those_masked_live_on_hostile_rows(
    viewer_client, ledger
):
    hostile_failures(ledger)
    signatures = {signature(m) for m in HOSTILE_MESSAGES} | {
        signature(m) for (m,) in ledger.conn.execute("SELECT error_message FROM nexus_requests")
    }
    live = {sig: listed(viewer_client, similar_query(sig))[0] for sig in signatures}
    assert not stored_hours()

    build_every_hour()
    assert stored_hours() == set(range(T0, T0 + 14 * H, H))
    for sig in signatures:
        ids, page = listed(viewer_client, similar_query(sig))
        assert ids == live[sig] == masked_in_python(ledger, sig, SINCE, UNTIL), sig
        assert page["count"] == len(ids) and page["not_searched"] is None
    assert len(live[signature(None)]) > 1 and len(live[signature(HOSTILE_MESSAGES[4])]) > 1


def test_a_summarised_window_masks_no_message_at_request_time(viewer_client, ledger):
    hostile_failures(ledger)
    build_every_hour()
    masked = []
    connections[LEDGER].ensure_connection()
    connections[LEDGER].connection.create_function(
        SQL_FUNCTION, 1, lambda message: masked.append(1) or signature(message)
    )
    sig = signature("Rate limited: 1 (retry after 1 s)")

    ids, _ = listed(viewer_client, similar_query(sig, T0, T0 + 14 * H))

    assert ids == masked_in_python(ledger, sig, T0, T0 + 14 * H) and len(ids) > 5
    assert masked == []  # every hour answered from its stored signatures


def test_hours_past_the_live_bound_are_said_and_left_out_of_count_and_list(
    viewer_client, ledger, monkeypatch
):
    hostile_failures(ledger)
    monkeypatch.setattr(signature_search, "LIVE_ROWS", 100)  # ~2 of the 14 hours
    sig = signature(None)

    ids, page = listed(viewer_client, similar_query(sig, T0, T0 + 14 * H))

    assert "12 hours not searched yet" in page["not_searched"]
    assert 0 < page["count"] == len(ids) < len(masked_in_python(ledger, sig, T0, T0 + 14 * H))
    assert ids == masked_in_python(ledger, sig, T0 + 12 * H, T0 + 14 * H)  # the newest hours
    html = viewer_client.get("/pipeline/requests/", similar_query(sig, T0, T0 + 14 * H))
    assert "⚠ 12 hours not searched yet (between 2025-11-24 16:00 and" in html.content.decode()


def test_the_request_page_says_which_hours_its_similar_failures_did_not_search(
    viewer_client, ledger, monkeypatch
):
    hostile_failures(ledger)
    monkeypatch.setattr(signature_search, "LIVE_ROWS", 100)
    failed = ledger.request(
        started_at=T0 + 13 * H, status="failed", error_stage="runAgent", error_message=None
    )
    fragment = viewer_client.get(f"/pipeline/requests/{failed['id']}/similar/").content.decode()
    assert "hours not searched yet" in fragment
    data = viewer_client.get(f"/pipeline/requests/{failed['id']}/?format=json").json()
    assert "hours not searched yet" in data["similar_failures_not_searched"]


@changing
def test_a_replaced_ledger_lists_its_own_similar_failures(viewer_client, ledger):
    hostile_failures(ledger)
    build_every_hour()  # the old ledger's signatures are stored
    replacement = ledger.path.with_name("replacement.sqlite3")
    with closing(sqlite3.connect(replacement, isolation_level=None)) as new:
        ledger.conn.backup(new)
        new.execute("UPDATE nexus_requests SET id = 'other-' || id")
        swap_statuses(new)  # same rows per hour, other failures
    connections[LEDGER].close()
    ledger.conn.close()
    os.replace(replacement, ledger.path)
    ledger.conn = sqlite3.connect(ledger.path, isolation_level=None)
    sig = signature(None)

    ids, _ = listed(viewer_client, similar_query(sig, T0, T0 + 14 * H))

    assert ids == masked_in_python(ledger, sig, T0, T0 + 14 * H) and ids
    assert all(row_id.startswith("other-") for row_id in ids)


def test_the_queries_of_similar_failures_do_not_grow_with_the_hours(
    viewer_client, ledger, django_assert_max_num_queries
):
    hostile_failures(ledger)
    build_every_hour()
    sig = signature(None)
    with django_assert_max_num_queries(14):  # 14 hours stored: fewer queries than hours
        listed(viewer_client, similar_query(sig, T0, T0 + 14 * H))


def test_a_signature_with_too_many_stored_failures_is_searched_in_its_newest_hours(
    viewer_client, ledger, monkeypatch
):
    hostile_failures(ledger)
    build_every_hour()
    monkeypatch.setattr(signature_search, "MAX_STORED_ROWIDS", 10)
    sig = signature(None)
    everything = masked_in_python(ledger, sig, T0, T0 + 14 * H)

    ids, page = listed(viewer_client, similar_query(sig, T0, T0 + 14 * H))

    assert "not searched yet" in page["not_searched"]
    assert 0 < page["count"] == len(ids) <= 10 < len(everything)
    assert set(ids) <= set(everything)
