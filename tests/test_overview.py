"""The overview says which ledger is open, how big it is and what happened lately."""

import sqlite3

import pytest
from builders import LEDGER_DB, T0, parse_html
from django.db import connections
from psycopg.conninfo import conninfo_to_dict

from ledgerfacts.timestamps import now_ms
from ledgerweb.db import LEDGER, is_postgres_url
from overview.summary import COUNT_CAP

pytestmark = LEDGER_DB


def test_overview_names_the_open_ledger(viewer_client, ledger):
    response = viewer_client.get("/")
    assert response.status_code == 200
    parse_html(response.content)
    page = response.content.decode()
    if is_postgres_url(ledger.path):  # the database's name, and no SQLite words
        assert f"Ledger <code>{conninfo_to_dict(ledger.path)['dbname']}</code>" in page
        assert "PostgreSQL" in page and "journal mode" not in page
    else:
        assert f"Ledger <code>{ledger.path.name}</code>" in page
        assert "journal mode <code>wal</code>" in page


def test_overview_counts_rows_per_table(viewer_client, ledger):
    session = ledger.session()
    ledger.turn(session)
    ledger.turn(session)
    counts = viewer_client.get("/?format=json").json()["counts"]
    assert counts["sessions"] == {"count": 1, "capped": False}
    assert counts["turns"] == {"count": 2, "capped": False}
    assert counts["nexus_requests"] == {"count": 0, "capped": False}


def test_counts_stop_at_the_cap_on_a_big_table(viewer_client, ledger):
    rows = [
        (f"R{i:07d}", "e", "message", "imessage", "finalize", "completed", T0)
        for i in range(COUNT_CAP + 5)
    ]
    ledger.conn.executemany(
        "INSERT INTO nexus_requests (id, event_id, event_type, event_source, stage, status,"
        " started_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
        rows,
    )
    assert viewer_client.get("/?format=json").json()["counts"]["nexus_requests"] == {
        "count": COUNT_CAP,
        "capped": True,
    }
    assert "10,000+" in viewer_client.get("/").content.decode()


def test_latest_sessions_and_requests_come_newest_first(viewer_client, ledger):
    ledger.session(id="S-old", label="Old chat", updated_at=T0)
    ledger.session(id="S-new", label="New chat", updated_at=T0 + 60_000)
    ledger.request(id="R-ok", started_at=T0)
    ledger.request(
        id="R-bad", status="failed", stage="runAgent", error_stage="runAgent", started_at=T0 + 1
    )
    data = viewer_client.get("/?format=json").json()
    assert [s["id"] for s in data["latest_sessions"]] == ["S-new", "S-old"]
    assert [r["id"] for r in data["latest_requests"]] == ["R-bad", "R-ok"]
    page = viewer_client.get("/").content.decode()
    assert page.index("New chat") < page.index("Old chat")
    assert "failed at runAgent" in page


def test_the_latest_rows_are_the_newest_up_to_now_and_the_others_are_said(viewer_client, ledger):
    """SQLite sorts a text time after every number: text-dated and far-future rows came before
    the real newest ones."""
    now = now_ms()
    rows = {"new": now - 60_000, "old": now - 120_000, "ahead": now + 3_600_000,
            "far": 253_400_000_000_000}  # fmt: skip
    if not is_postgres_url(ledger.path):  # a PostgreSQL ledger holds no text time
        rows["text"] = "2025-11-24T10:00:00Z"
    for row_id, at in rows.items():
        ledger.request(id=f"R-{row_id}", started_at=at)
        ledger.session(id=f"S-{row_id}", updated_at=at)
    data = viewer_client.get("/?format=json").json()
    assert [r["id"] for r in data["latest_requests"]] == ["R-new", "R-old"]
    assert [s["id"] for s in data["latest_sessions"]] == ["S-new", "S-old"]
    later = len(rows) - 2
    assert data["not_listed_as_latest"] == {"requests": later, "sessions": later}
    page = viewer_client.get("/").content.decode()
    assert f"{later} requests dated after now, or not as a number, are not listed" in page
    assert f"{later} sessions dated after now, or not as a number, are not listed" in page


def test_the_last_day_counts_only_recent_activity(viewer_client, ledger):
    now = now_ms()
    ledger.request(started_at=now - 60_000)
    ledger.request(started_at=now - 120_000, status="failed", stage="runAgent")
    ledger.request(started_at=now - 3 * 86_400_000)
    ledger.session(updated_at=now - 5_000)
    ledger.session(updated_at=now - 10 * 86_400_000)
    last_day = viewer_client.get("/?format=json").json()["last_24h"]
    assert last_day == {"sessions active": 1, "requests": 2, "failed requests": 1}


def test_the_last_day_leaves_out_rows_dated_in_the_future_or_in_iso_text(viewer_client, ledger):
    now = now_ms()
    ledger.request(started_at=now - 60_000, status="failed", stage="runAgent")
    ledger.request(started_at=now + 3_600_000, status="failed", stage="runAgent")  # clock ahead
    ledger.request(started_at="2025-11-24T10:00:00Z", status="failed", stage="runAgent")
    ledger.session(updated_at=now - 5_000)
    ledger.session(updated_at=now + 86_400_000)
    ledger.session(updated_at="2025-11-24 10:00")
    last_day = viewer_client.get("/?format=json").json()["last_24h"]
    assert last_day == {"sessions active": 1, "requests": 1, "failed requests": 1}
    page = viewer_client.get("/").content.decode()
    assert '<dt>requests</dt><dd><a href="/pipeline/requests/?window=24h">1</a></dd>' in page


def test_html_in_ledger_text_is_shown_not_run(viewer_client, ledger):
    ledger.session(label='<script>alert("x")</script>', persona="<img src=x onerror=alert(1)>")
    page = viewer_client.get("/").content.decode()
    assert '<script>alert("x")</script>' not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page
    assert "<img src=x" not in page


def test_timestamps_in_seconds_are_flagged(viewer_client, ledger):
    ledger.session(label="Written in seconds", updated_at=1_764_000_000)
    page = viewer_client.get("/").content.decode()
    assert "(seconds?)" in page


def test_a_ledger_with_only_the_pipeline_table_still_works(viewer_client, ledger):
    for table in ("tool_calls", "messages", "compactions", "turns", "sessions"):
        ledger.conn.execute(f"DROP TABLE {table}")
    response = viewer_client.get("/")
    assert response.status_code == 200
    page = response.content.decode()
    assert "no messages, sessions, tool_calls, turns tables" in " ".join(page.split())
    assert "Latest pipeline requests" in page
    assert "Latest sessions" not in page


def test_a_ledger_not_in_wal_mode_gets_a_warning(viewer_client, ledger):
    ledger.conn.execute("PRAGMA journal_mode = DELETE")
    page = viewer_client.get("/").content.decode()
    assert "Not in WAL mode" in page


def test_a_column_that_differs_from_the_schema_is_reported(viewer_client, ledger):
    ledger.conn.execute("ALTER TABLE turns ADD COLUMN cost_usd REAL")
    data = viewer_client.get("/?format=json").json()
    assert data["ledger"]["schema_mismatches"] == {"turns": ["extra column cost_usd"]}


def test_the_overview_runs_a_bounded_number_of_queries(
    viewer_client, ledger, django_assert_max_num_queries
):
    for i in range(30):
        session = ledger.session(id=f"S{i}")
        ledger.turn(session)
        ledger.request(id=f"R{i}")
    # 13 reads (a row count per ledger table among them), 6 for the agent cost of the last 30
    # days (the cost chart's plan: the ledger's identity and its hours; and its facts: the same
    # however many requests), 7 for the issues needing attention (the ledger's first hour and the
    # failure inbox's plan over all of them, which builds no hour here, and its live failures) +
    # the savepoint and release of the request's read transaction, 3 for the live bar's cursor
    # (live/), and for each of the two plans' censuses 2 more: the ledger's version it is kept
    # at, and the table's count and largest rowid it is brought up to date from
    with django_assert_max_num_queries(35, connection=connections[LEDGER]):
        assert viewer_client.get("/").status_code == 200


def test_healthz_says_ok_without_login(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.content == b"ok\n"


@pytest.mark.django_db(transaction=True, databases="__all__")
def test_healthz_says_unavailable_when_the_ledger_does_not_open(client, tmp_path):
    from builders import use_ledger

    from ledgerweb.db import ledger_path_of

    original = ledger_path_of(LEDGER)
    not_a_db = tmp_path / "garbage.sqlite3"
    not_a_db.write_bytes(b"this is not sqlite" * 100)
    use_ledger(not_a_db)
    try:
        response = client.get("/healthz")
    finally:
        use_ledger(original)
    assert response.status_code == 503
    assert b"ledger unavailable" in response.content


def test_pages_carry_a_strict_content_security_policy(viewer_client):
    response = viewer_client.get("/")
    policy = response["Content-Security-Policy"]
    assert "default-src 'self'" in policy
    assert "script-src 'self' 'nonce-" in policy
    assert "unsafe-inline" not in policy
    assert "unsafe-eval" not in policy


def test_pages_load_htmx_and_no_third_party_script(viewer_client):
    tree = parse_html(viewer_client.get("/").content)
    sources = [s.get("src") for s in tree.iter("script") if s.get("src")]
    assert any("htmx" in src for src in sources)
    assert all(src.startswith("/static/") for src in sources), sources


def test_plotly_js_is_served_from_the_plotly_package():
    from django.contrib.staticfiles import finders

    found = finders.find("vendor/plotly.min.js")
    assert found and found.endswith("plotly/package_data/plotly.min.js")
    assert finders.find("vendor/datasets/iris.csv.gz") is None


def test_the_ledger_file_is_unchanged_by_browsing(viewer_client, ledger):
    ledger.session()
    ledger.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    before = ledger.path.read_bytes()
    for url in ("/", "/?format=json", "/healthz"):
        viewer_client.get(url)
    with sqlite3.connect(ledger.path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    assert ledger.path.read_bytes() == before


def test_recent_activity_reads_as_just_now(viewer_client, ledger):
    ledger.session(label="Fresh", updated_at=now_ms() - 5_000)
    assert "just now" in viewer_client.get("/").content.decode()


def test_no_template_comment_leaks_into_a_page(viewer_client):
    page = viewer_client.get("/").content.decode()
    assert "{#" not in page and "#}" not in page and "{%" not in page
