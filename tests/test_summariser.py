"""The first look at a big ledger: a background summariser (ledger_rollup --follow) builds the
chart hours, and charts meanwhile read a bounded live part and say which hours they left out."""

import io
import re

from builders import LEDGER_DB, T0
from django.core.management import call_command
from test_rollups import SINCE, UNTIL, WINDOW, every_chart, messy_requests, stored_hours

from background import lock
from ledgerfacts.timestamps import now_ms
from pipeline import charts, rollups

pytestmark = LEDGER_DB
H = rollups.HOUR


def hour_counts(ledger) -> dict[int, int]:
    return dict(
        ledger.conn.execute(
            "SELECT started_at / ? * ?, count(*) FROM nexus_requests GROUP BY 1", (H, H)
        ).fetchall()
    )


def card(client, slug: str) -> str:
    return client.get(f"/pipeline/charts/{slug}/?{WINDOW}").content.decode()


def test_a_chart_counts_the_newest_hours_not_summarised_and_says_which_it_left_out(
    viewer_client, ledger, monkeypatch
):
    messy_requests(ledger)
    monkeypatch.setattr(rollups, "BUILD_BUDGET_S", 0)  # as on a fresh install of a big ledger
    monkeypatch.setattr(charts, "LIVE_ROWS", 200)
    monkeypatch.setattr(charts, "LIVE_TIMING_ROWS", 100)
    # The window's whole hours (its first and last are cut, always read): newest first, those
    # that fit in 200 rows are read, the older ones left out.
    whole = sorted((h for h in hour_counts(ledger) if h > SINCE and h + H < UNTIL), reverse=True)
    counts = hour_counts(ledger)
    read = 0
    while counts[whole[0]] + read <= 200:
        read += counts[whole.pop(0)]
    left_rows = sum(counts[h] for h in whole)
    (in_window,) = ledger.conn.execute(
        "SELECT count(*) FROM nexus_requests WHERE started_at >= ? AND started_at < ?",
        (SINCE, UNTIL),
    ).fetchone()

    answer = viewer_client.get(f"/pipeline/charts/throughput/?{WINDOW}&format=json").json()
    assert sum(bucket["total"] for bucket in answer["buckets"]) == in_window - left_rows
    said = re.sub(r"\s+", " ", card(viewer_client, "throughput"))
    assert f"Summarising: 0 of 12 hours. Not counted yet: {len(whole)} hours ({left_rows} " in said
    for slug in charts.CHARTS:  # every chart says it, and none fails
        assert "Not counted yet" in card(viewer_client, slug)
    # The stage timings (each row's JSON read) read fewer rows live, and say so.
    assert f"Not counted yet: {len(whole)} hours" not in card(viewer_client, "stage-timings")


def test_with_a_summariser_running_pages_build_no_hours_and_say_it_summarises(
    viewer_client, ledger
):
    messy_requests(ledger)
    with lock.holding_lock():
        assert lock.running()
        every_chart(viewer_client, WINDOW)
        page = viewer_client.get(f"/pipeline/?{WINDOW}").content.decode()
    assert not stored_hours()
    assert "Summarising: 0 of 12 hours of this window, in the background" in page
    assert not lock.running()


def test_without_a_background_process_the_dashboard_says_so_and_how_to_start_one(
    viewer_client, ledger, monkeypatch
):
    messy_requests(ledger)
    monkeypatch.setattr(rollups, "BUILD_BUDGET_S", 0)  # pages summarise nothing here
    assert not lock.running()
    page = re.sub(r"\s+", " ", viewer_client.get(f"/pipeline/?{WINDOW}").content.decode())
    assert "No background process works for this ledger" in page
    assert "manage.py ledger_background</code> with this <code>LEDGER_DB" in page


def test_a_failing_summariser_is_said_on_the_dashboard(viewer_client, ledger):
    from background.models import JobStatus
    from ledgerweb.db import ledger_identity

    messy_requests(ledger)
    failed = "OperationalError: database is locked"
    JobStatus.objects.create(
        ledger=ledger_identity(), name="summarise", last_error_at=now_ms(), last_error=failed
    )
    with lock.holding_lock():
        page = re.sub(r"\s+", " ", viewer_client.get(f"/pipeline/?{WINDOW}").content.decode())
    assert "The background process could not summarise this ledger" in page
    assert "database is locked" in page and "It tries again every minute" in page


def test_the_summariser_builds_every_hour_then_the_charts_read_them_from_the_store(
    viewer_client, ledger
):
    messy_requests(ledger)
    days = (now_ms() - T0) // (24 * H) + 2
    out = io.StringIO()
    call_command("ledger_rollup", follow=True, every=0, rounds=1, days=days, stdout=out)
    assert stored_hours() == set(hour_counts(ledger))
    assert "14 of 14 hours summarised" in out.getvalue()
    page = viewer_client.get(f"/pipeline/?{WINDOW}").content.decode()
    assert "Summarising:" not in page


def test_the_overviews_cost_says_which_hours_it_did_not_count_yet(
    viewer_client, ledger, monkeypatch
):
    start = now_ms() // H * H - 20 * H
    for n in range(30):  # one request an hour for the last 20 hours or so, with tokens
        ledger.request(id=f"C{n}", started_at=start + n * H // 2, agent_model="gpt-5",
                       agent_tokens_prompt=1000, agent_tokens_completion=100)  # fmt: skip
    monkeypatch.setattr(rollups, "BUILD_BUDGET_S", 0)
    monkeypatch.setattr(charts, "LIVE_ROWS", 5)
    page = re.sub(r"\s+", " ", viewer_client.get("/").content.decode())
    assert "Not counted yet:" in page
    assert viewer_client.get("/?format=json").json()["cost_not_counted"]


def test_a_window_under_twelve_hours_reads_the_newest_rows_up_to_the_bound_and_says_so(
    viewer_client, ledger, monkeypatch
):
    """Buckets under an hour cannot come from stored hours: such a chart reads its window live,
    at most LIVE_ROWS rows of the newest hours, and says which hours it did not count (not that
    they are being summarised)."""
    for hour in range(6):
        for minute in range(30):
            ledger.request(started_at=T0 + hour * H + minute * 60_000)
    monkeypatch.setattr(charts, "LIVE_ROWS", 70)  # the newest two hours (60 rows) fit
    window = f"since={T0}&until={T0 + 6 * H}"

    answer = viewer_client.get(f"/pipeline/charts/throughput/?{window}&format=json").json()
    assert answer["bucket_ms"] < H
    assert sum(bucket["total"] for bucket in answer["buckets"]) == 60
    dashboard = viewer_client.get(f"/pipeline/?{window}&format=json").json()
    for slug in ("throughput", "tokens", "cost"):
        (note,) = [n for n in dashboard["charts"][slug]["notes"] if "Not counted" in n]
        assert note.startswith("Read live (stored hours cannot fill buckets under an hour)")
        assert "Not counted: 4 hours (120 requests) between 2025-11-24 16:00 and" in note
    said = re.sub(
        r"\s+", " ", viewer_client.get(f"/pipeline/charts/throughput/?{window}").content.decode()
    )
    assert "Not counted: 4 hours (120 requests)" in said and "Summarising" not in said


def test_the_dashboards_json_twin_takes_one_census_of_its_window(viewer_client, ledger):
    from django.db import connections
    from django.test.utils import CaptureQueriesContext

    from ledgerweb.db import LEDGER

    messy_requests(ledger)
    with CaptureQueriesContext(connections[LEDGER]) as ledger_queries:
        answer = viewer_client.get(f"/pipeline/?{WINDOW}&format=json")
    assert answer.status_code == 200 and answer.json()["summarised_hours"] == 12
    censuses = [q for q in ledger_queries.captured_queries if "WITH RECURSIVE hour" in q["sql"]]
    assert len(censuses) == 1
