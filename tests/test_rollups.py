"""The dashboard's hourly rollups (pipeline/rollups.py) are an optimisation, never a different
answer: every chart read from stored hours equals the same chart read live from the ledger, with
and without filters, on messy rows; and a stored hour is not trusted once its rows change."""

import io
import json
import math
import os
import random
import re
import sqlite3
import time
from contextlib import closing

import pytest
from builders import LEDGER_DB, T0
from django.core.management import call_command
from django.db import connections
from pg_ledger import PostgresConnection

from ledgerfacts.timestamps import now_ms
from ledgerweb.db import LEDGER
from ledgerweb.prices import parse_price_overrides
from ledgerweb.sqlite import LedgerQueryTimeout
from pipeline import failure_groups, rollups
from pipeline.charts import CHARTS
from pipeline.models import RollupFact, RollupHour, RollupLedger, RollupTimings

pytestmark = LEDGER_DB
H = rollups.HOUR
# Not on hour boundaries, and over 12 hours so that charts bucket by whole hours.
SINCE, UNTIL = T0 + 20 * 60_000, T0 + 13 * H + 10 * 60_000
WINDOW = f"since={SINCE}&until={UNTIL}"
BUSY_HOUR = T0 + 5 * H  # holds a request still processing: always read live


@pytest.fixture(autouse=True)
def time_to_build_every_hour(monkeypatch):
    """A loaded test machine must not leave hours unbuilt (the default budget is 1 s), and each
    plan re-reads stored hours' content (by default at most every VERIFY_EVERY_S)."""
    monkeypatch.setattr(rollups, "BUILD_BUDGET_S", 60)
    monkeypatch.setattr(rollups, "VERIFY_EVERY_S", 0)


def messy_requests(ledger, seed: int = 7) -> None:
    """~40 requests an hour for 14 hours, with the junk real ledgers hold."""
    rng = random.Random(seed)
    usage_rng = random.Random(seed + 1)  # its own draws: the other columns stay as they were
    timings = [
        json.dumps({"receiveEvent": 3, "runAgent": 2500, "deliverResponse": 120}),
        json.dumps({"receiveEvent": 4, "runAgent": 7.5, "madeUpStage": 40}),
        '{"runAgent": 10, "runAgent": 99}',  # duplicate keys: both count, as json_each says
        '{"runAgent": -5, "finalize": "fast", "resolveAccess": 1e400}',
        "not json",
        "[1, 2]",
        None,
    ]
    hooks = ['["2fa", "quiet"]', '["2fa"]', "[]", "{bad", '"2fa"', None, '["x", 3, "x"]']
    for i in range(14 * 40):
        status = rng.choice(["completed"] * 5 + ["failed", "failed", "skipped", "weird"])
        ledger.request(
            started_at=T0 + rng.randrange(14 * H),
            status=status,
            stage=rng.choice(["finalize", "runAgent", "resolveAccess"]),
            event_source=rng.choice(["imessage", "gmail", "discord"]),
            session_persona=rng.choice(["atlas", "scout", None]),
            principal_id=rng.choice(["mom", "boss", "bot", None, f"p{i % 17}"]),
            stage_timings=rng.choice(timings),
            hooks_matched=rng.choice(hooks),
            hooks_fired=rng.choice(hooks),
            hooks_handled=rng.choice([0, 1, None, 2]),
            agent_model=rng.choice(["sonnet", "haiku", None]),
            agent_tokens_total=rng.choice([1200, 340, None, 12.5, "lots"]),
            # Past 200,000 prompt tokens claude-sonnet-4-5 charges its long-context tier.
            agent_tokens_prompt=usage_rng.choice([1200, 250_000, None, 12.5, "lots", -3, 9e15]),
            agent_tokens_completion=usage_rng.choice([80, None, 4.0, "x", 199_999]),
            delivery_channel=rng.choice(["imessage", "email", None]),
            delivery_success=rng.choice([1, 0, None, 2]),
            error_stage=rng.choice(["runAgent", "deliverResponse", None]) if status == "failed"
            else None,
            error_message=f"timeout after {rng.randrange(9000)} ms for '{i}'"
            if status == "failed" else None,
            hooks_context=rng.choice(['{"handled_by": "2fa"}', '{"handled_by": 3}', "{bad", None]),
        )  # fmt: skip
    ledger.request(started_at=BUSY_HOUR + 10, status="processing", stage="runAgent")


def every_chart(client, query: str) -> dict:
    answers = {}
    for slug in CHARTS:
        response = client.get(f"/pipeline/charts/{slug}/?{query}&format=json")
        assert response.status_code == 200, (slug, response.content[:300])
        answers[slug] = response.json()
    return answers


def stored_hours() -> set[int]:
    return set(RollupHour.objects.values_list("hour", flat=True))


@pytest.mark.parametrize(
    "filters", ["", "&source=gmail", "&persona=atlas", "&source=imessage&persona=scout"]
)
def test_every_chart_from_stored_hours_equals_the_chart_read_live(
    viewer_client, ledger, monkeypatch, settings, filters
):
    # "sonnet" priced as claude-sonnet-4-5 (long-context tiers), "haiku" left without a price.
    settings.MODEL_PRICES = parse_price_overrides({"sonnet": "claude-sonnet-4-5"}, "test")
    messy_requests(ledger)
    monkeypatch.setattr(rollups, "BUILD_BUDGET_S", 0)  # nothing built: every hour read live
    live = every_chart(viewer_client, WINDOW + filters)
    assert not stored_hours()
    assert live["cost"]["total"]["unpriced"]
    # On a PostgreSQL ledger, ledger_ship leaves out the 4 in 5 of these rows it cannot hold (a
    # REAL or text count, a flag of 2: tests/pg_ledger.py); imessage × scout keeps none priced.
    narrowest_on_postgres = ledger.left_out and filters == "&source=imessage&persona=scout"
    assert live["cost"]["total"]["priced"] or narrowest_on_postgres

    monkeypatch.setattr(rollups, "BUILD_BUDGET_S", 60)
    every_chart(viewer_client, WINDOW + filters)  # builds the hours
    # The first and last hours hold rows outside the window: read live. The busy hour's
    # settled rows are stored, its 'processing' one is read live.
    assert stored_hours() == set(range(T0 + H, T0 + 13 * H, H))
    assert every_chart(viewer_client, WINDOW + filters) == live


def test_the_rollups_keep_every_kind_of_junk_the_charts_show(viewer_client, ledger):
    """Not a vacuous equality: the messy ledger reaches every branch of every chart."""
    messy_requests(ledger)
    every_chart(viewer_client, WINDOW)
    charts = every_chart(viewer_client, WINDOW)
    stages = {s["stage"]: s for s in charts["stage-timings"]["stages"]}
    assert {"madeUpStage", "runAgent"} <= set(stages)
    assert stages["runAgent"]["min"] == 7.5 and stages["runAgent"]["max"] == 2500
    assert {h["hook"] for h in charts["hooks"]["hooks"]} == {"2fa", "quiet", "x"}
    assert all(any(h[credit] for h in charts["hooks"]["hooks"]) for credit in ("handled", "shared"))
    assert charts["throughput"]["bucket_ms"] == H
    assert any("weird" in bucket for bucket in charts["throughput"]["buckets"])
    # A delivery flag without a channel is a response too: channel None (NULL).
    assert {c["channel"] for c in charts["delivery"]["channels"]} == {"imessage", "email", None}
    assert RollupFact.objects.filter(combined=True).exists()
    assert RollupFact.objects.filter(combined=False, source="gmail").exists()


def test_a_chart_over_thirty_days_takes_a_bounded_number_of_queries(
    viewer_client, ledger, django_assert_max_num_queries
):
    messy_requests(ledger)
    query = f"since={T0 - 29 * 24 * H}&until={UNTIL}"
    viewer_client.get(f"/pipeline/charts/sources/?{query}")  # builds
    # census, 'processing' counts, the cut edges' probe, and the chart's own live queries:
    # the same number for 30 days as for one.
    with django_assert_max_num_queries(7, connection=connections[LEDGER]):
        response = viewer_client.get(f"/pipeline/charts/sources/?{query}&format=json")
    (in_window,) = ledger.conn.execute(
        "SELECT count(*) FROM nexus_requests WHERE started_at < ?", (UNTIL,)
    ).fetchone()
    assert sum(s["total"] for s in response.json()["event_source"]) == in_window


# The ledger changes under the stored hours: no test transaction, so each request sees it.
changing = pytest.mark.django_db(transaction=True, databases="__all__")


def hourly_totals(client) -> dict[int, int]:
    buckets = client.get(f"/pipeline/charts/throughput/?{WINDOW}&format=json").json()["buckets"]
    return {b["start"] // H * H: b["total"] for b in buckets}


def ledger_hourly_totals(ledger) -> dict[int, int]:
    rows = ledger.conn.execute(
        "SELECT started_at / ? * ?, count(*) FROM nexus_requests"
        " WHERE started_at >= ? AND started_at < ? GROUP BY 1",
        (H, H, SINCE, UNTIL),
    )
    return dict(rows.fetchall())


@changing
def test_a_stored_hour_is_read_again_when_rows_arrive_or_leave(viewer_client, ledger):
    messy_requests(ledger)
    hourly_totals(viewer_client)
    hour = T0 + 3 * H
    assert hour in stored_hours()

    ledger.request(id="LATE", started_at=hour + 5, status="failed", error_stage="runAgent")
    ledger.conn.execute(  # retention-like: rows of another stored hour leave
        "DELETE FROM nexus_requests WHERE started_at >= ? AND started_at < ?"
        " AND CAST(substr(id, 2) AS INTEGER) % 2 = 0",  # every other row (ids R000001…)
        (T0 + 7 * H, T0 + 8 * H),
    )
    assert hourly_totals(viewer_client) == ledger_hourly_totals(ledger)
    assert RollupHour.objects.get(hour=hour).requests == ledger_hourly_totals(ledger)[hour]


@changing
def test_a_request_that_finishes_in_a_stored_hour_is_counted_as_it_ends(viewer_client, ledger):
    messy_requests(ledger)
    failures = f"/pipeline/charts/failures/?{WINDOW}&format=json"
    throughput = f"/pipeline/charts/throughput/?{WINDOW}&format=json"
    before = viewer_client.get(failures).json()
    busy = next(
        b for b in viewer_client.get(throughput).json()["buckets"] if b["start"] == BUSY_HOUR
    )
    assert busy.get("processing") == 1  # read live next to the hour's stored rows
    stored_before = RollupHour.objects.get(hour=BUSY_HOUR).requests

    ledger.conn.execute(
        "UPDATE nexus_requests SET status = 'failed', error_stage = 'madeUpStage'"
        " WHERE status = 'processing'"
    )
    after = viewer_client.get(failures).json()
    assert RollupHour.objects.get(hour=BUSY_HOUR).requests == stored_before + 1  # rebuilt
    counts = {s["error_stage"]: s["count"] for s in after["by_stage"]}
    assert counts["madeUpStage"] == 1
    assert sum(counts.values()) == sum(s["count"] for s in before["by_stage"]) + 1
    busy = next(
        b for b in viewer_client.get(throughput).json()["buckets"] if b["start"] == BUSY_HOUR
    )
    assert "processing" not in busy


def test_a_window_cut_where_no_rows_lie_outside_reads_its_edge_hours_from_the_store(
    viewer_client, ledger
):
    """A window ending at the ledger's last request (a ledger no longer written, a bar's exact
    range) is cut mid-hour, yet the whole hour is in it: it comes from the store."""
    messy_requests(ledger)
    ((newest,),) = ledger.conn.execute("SELECT max(started_at) FROM nexus_requests").fetchall()
    window = f"since={T0 - 20 * 60_000}&until={newest + 1}"
    live = {}
    for slug in CHARTS:  # nothing stored yet: the charts as the ledger alone answers them
        live[slug] = viewer_client.get(f"/pipeline/charts/{slug}/?{window}&format=json").json()
    assert {T0, newest // H * H} <= stored_hours()  # both cut hours were built
    assert every_chart(viewer_client, window) == live


def test_preset_windows_start_on_the_hour_and_say_so(viewer_client, ledger):
    """Whole hours come from the rollups: "24 h" at 14:37 starts at 14:00 yesterday."""
    from ledgerfacts.timestamps import now_ms

    before = now_ms()
    data = viewer_client.get("/pipeline/charts/throughput/?window=24h&format=json").json()
    start = data["buckets"][0]["start"]
    assert start % H == 0 and before - 25 * H < start <= before - 24 * H
    page = viewer_client.get("/pipeline/?window=24h").content.decode()
    assert ":00" in page.split("From ", 1)[1].split(" to ", 1)[0]


def test_the_top_principals_are_exact_when_the_live_part_changes_the_order(viewer_client, ledger):
    """A principal with few stored requests but many in the live part still makes the top."""
    for i in range(12):  # twelve principals, 3 stored requests each, in an old hour
        for k in range(3):
            ledger.request(principal_id=f"stored-{i:02d}", started_at=T0 + 2 * H + i * 10 + k)
    for k in range(2):
        ledger.request(principal_id="rising", started_at=T0 + 3 * H + k)
    for k in range(5):  # the live part: the window's cut last hour
        ledger.request(principal_id="rising", started_at=T0 + 5 * H + k)
    # A row of that hour outside the window: the hour cannot come from the store.
    ledger.request(principal_id="later", started_at=T0 + 5 * H + 45 * 60_000)
    query = f"since={T0}&until={T0 + 5 * H + 30 * 60_000}&format=json"
    viewer_client.get(f"/pipeline/charts/sources/?{query}")  # builds the whole hours
    principals = viewer_client.get(f"/pipeline/charts/sources/?{query}").json()["principal_id"]
    assert T0 + 3 * H in stored_hours()
    assert principals[0] == {
        "principal_id": "rising", "total": 7, "by_status": {"completed": 7}, "failure_rate": 0.0
    }  # fmt: skip
    assert [p["principal_id"] for p in principals[1:]] == [f"stored-{i:02d}" for i in range(9)]


# -- Stored hours are tied to this ledger and to each hour's content ---------------------------


# The first completed request of an hour (bound: the hour's start and end). By id, not rowid
# (which a PostgreSQL ledger has not): the builders' ids count up as rows are written.
FIRST_COMPLETED = """id = (SELECT min(id) FROM nexus_requests
    WHERE status = 'completed' AND started_at >= ? AND started_at < ?)"""


def live_charts(client, query: str, monkeypatch) -> dict:
    """Every chart read from the ledger alone, as if nothing were stored."""
    with monkeypatch.context() as m:
        m.setattr(rollups, "plan", lambda since, until, **kw: rollups.Plan([], [(since, until)]))
        return every_chart(client, query)


def swap_statuses(conn) -> None:
    """Completed rows fail and failed ones complete: same rows per hour, other figures."""
    conn.execute(
        """UPDATE nexus_requests SET status = CASE status WHEN 'completed' THEN 'failed'
               WHEN 'failed' THEN 'completed' ELSE status END,
           agent_tokens_total = 7"""
    )


@changing
def test_a_ledger_replaced_at_the_same_path_shows_its_own_figures(
    viewer_client, ledger, monkeypatch
):
    """Another file at the same path with the same rows per hour, even the same rowids and start
    times, but other requests: none of the old ledger's stored hours is read."""
    messy_requests(ledger)
    every_chart(viewer_client, WINDOW)  # stores the old ledger's hours
    monkeypatch.setattr(rollups, "VERIFY_ROWS", 0)  # the content check sees one hour a chart

    replacement = ledger.path.with_name("replacement.sqlite3")
    with closing(sqlite3.connect(replacement, isolation_level=None)) as new:
        ledger.conn.backup(new)
        new.execute("UPDATE nexus_requests SET id = 'other-' || id")
        swap_statuses(new)
    connections[LEDGER].close()  # a restart: the next request opens the new file
    ledger.conn.close()
    os.replace(replacement, ledger.path)  # as `ledger_demo --replace` does

    assert every_chart(viewer_client, WINDOW) == live_charts(viewer_client, WINDOW, monkeypatch)
    assert RollupLedger.objects.count() == 2  # the old ledger's hours are kept apart


@changing
def test_a_row_deleted_and_another_inserted_in_a_stored_hour_is_counted(
    viewer_client, ledger, monkeypatch
):
    messy_requests(ledger)
    every_chart(viewer_client, WINDOW)
    monkeypatch.setattr(rollups, "VERIFY_ROWS", 0)  # found by the census, not the content check
    hour = T0 + 3 * H
    ledger.conn.execute(f"DELETE FROM nexus_requests WHERE {FIRST_COMPLETED}", (hour, hour + H))
    ledger.request(started_at=hour + 60_000, status="failed", error_stage="runAgent")

    charts = every_chart(viewer_client, WINDOW)
    assert charts == live_charts(viewer_client, WINDOW, monkeypatch)
    assert RollupHour.objects.get(hour=hour).requests == ledger_hourly_totals(ledger)[hour]


@changing
def test_a_settled_row_edited_in_place_shows_its_new_values(viewer_client, ledger, monkeypatch):
    messy_requests(ledger)
    every_chart(viewer_client, WINDOW)
    hour = T0 + 3 * H
    ledger.conn.execute(
        f"""UPDATE nexus_requests SET status = 'failed', agent_tokens_total = 99999,
                agent_model = 'sonnet' WHERE {FIRST_COMPLETED}""",
        (hour, hour + H),
    )
    charts = every_chart(viewer_client, WINDOW)
    assert charts == live_charts(viewer_client, WINDOW, monkeypatch)
    assert sum(charts["tokens"]["models"]["sonnet"]) >= 99999


def test_the_content_checksum_covers_every_column_the_facts_read():
    """An edit of a column the charts read but the checksum skips would go unseen."""
    from ledgerfacts import schema
    from ledgerweb import sqlite

    items = sqlite.json_object_items("stage_timings")  # as rollups._raw_timings reads them
    queries = " ".join(
        [
            *rollups.FACTS.values(),
            rollups.TIMINGS.format(items=items, where="", bucket="", number=""),
            failure_groups.ROWS,  # the failure groups stored with each hour
        ]
    )
    read = {
        column.name
        for column in schema.expected_columns()["nexus_requests"]
        if re.search(rf"\b{column.name}\b", queries)
    }
    assert read <= set(rollups.FACT_COLUMNS)


@changing
def test_an_edit_in_an_hour_the_content_check_has_not_reached_is_found_on_a_later_chart(
    viewer_client, ledger, monkeypatch
):
    """Each plan re-reads only the hours verified longest ago (VERIFY_ROWS rows): an edit in
    any stored hour is found within as many plans as there are stored hours."""
    messy_requests(ledger)
    every_chart(viewer_client, WINDOW)
    monkeypatch.setattr(rollups, "VERIFY_ROWS", 0)  # one hour a plan
    hour = T0 + 3 * H
    ledger.conn.execute(
        f"UPDATE nexus_requests SET status = 'failed' WHERE {FIRST_COMPLETED}", (hour, hour + H)
    )
    live = live_charts(viewer_client, WINDOW, monkeypatch)
    for _ in range(len(stored_hours())):
        rollups._plans._kept.clear()  # as after the ledger's next commit
        hourly_totals(viewer_client)
    assert every_chart(viewer_client, WINDOW) == live


def test_a_preset_window_reuses_its_plan_while_the_ledger_is_unchanged(
    viewer_client, ledger, monkeypatch
):
    """The dashboard asks for ?window=30d, which ends now: a new `until` on every chart must not
    make the plan (the census of 720 hours) again."""
    for days in (3, 9, 20):
        ledger.request(started_at=now_ms() - days * 24 * H)
    censuses = []
    census = rollups.census
    monkeypatch.setattr(rollups, "census", lambda *a: censuses.append(a) or census(*a))
    first = viewer_client.get("/pipeline/charts/throughput/?window=30d&format=json").json()
    time.sleep(0.002)  # the next chart's window ends a few ms later
    second = viewer_client.get("/pipeline/charts/sources/?window=30d&format=json").json()
    assert len(censuses) == 1
    assert sum(b["total"] for b in first["buckets"]) == 3
    assert sum(s["total"] for s in second["event_source"]) == 3


@changing
def test_ledger_rollup_re_reads_every_stored_hour_and_rebuilds_an_edited_one(
    viewer_client, ledger, monkeypatch
):
    messy_requests(ledger)
    every_chart(viewer_client, WINDOW)
    monkeypatch.setattr(rollups, "VERIFY_ROWS", 0)  # a chart re-reads one hour, not this one
    hour = T0 + 3 * H
    ledger.conn.execute(
        f"UPDATE nexus_requests SET status = 'failed' WHERE {FIRST_COMPLETED}", (hour, hour + H)
    )
    built = RollupHour.objects.get(hour=hour).built_at
    days = (now_ms() - T0) // (24 * H) + 2
    call_command("ledger_rollup", days=days, stdout=io.StringIO(), stderr=io.StringIO())
    assert RollupHour.objects.get(hour=hour).built_at > built
    assert every_chart(viewer_client, WINDOW) == live_charts(viewer_client, WINDOW, monkeypatch)


def test_the_charts_of_a_dashboard_re_read_stored_content_once_per_interval(
    viewer_client, ledger, monkeypatch
):
    """After each ledger commit every chart makes its plan again; the content re-read (rows, not
    the index) is paid once per VERIFY_EVERY_S by a worker, not by every chart."""
    messy_requests(ledger)
    every_chart(viewer_client, WINDOW)  # builds
    monkeypatch.setattr(rollups, "VERIFY_EVERY_S", 3600)
    monkeypatch.setattr(rollups, "_content_checked_at", -math.inf)
    reads = []
    checksums = rollups.content_checksums
    monkeypatch.setattr(rollups, "content_checksums", lambda h: reads.append(h) or checksums(h))
    for slug in CHARTS:
        rollups._plans._kept.clear()  # as after a commit
        viewer_client.get(f"/pipeline/charts/{slug}/?{WINDOW}&format=json")
    assert len(reads) == 1


def test_a_replaced_ledgers_hours_are_forgotten_a_day_later_a_batch_at_a_time(
    viewer_client, ledger, monkeypatch
):
    messy_requests(ledger)
    every_chart(viewer_client, WINDOW)
    (old,) = RollupLedger.objects.all()
    old_facts = RollupFact.objects.filter(ledger=old.key).count()
    # Another ledger was here, unseen for two days: its anchor is not in this file.
    old.anchor_id, old.seen_at = "gone", now_ms() - 48 * H
    old.save()
    monkeypatch.setattr(rollups, "FORGET_ROWS", old_facts // 3 + 1)

    rollups._plans._kept.clear()
    every_chart(viewer_client, WINDOW)  # a new key for this ledger, and a first batch forgotten
    assert 0 < RollupFact.objects.filter(ledger=old.key).count() < old_facts
    for _ in range(3):
        rollups._forget_stale_ledgers(old.path, now_ms())
    assert not RollupLedger.objects.filter(key=old.key).exists()
    for model in (RollupHour, RollupFact, RollupTimings):
        assert not model.objects.filter(ledger=old.key).exists()
    assert RollupHour.objects.exists()  # this ledger's own hours


def test_stored_hours_too_big_to_re_read_in_time_do_not_break_the_charts(
    viewer_client, ledger, monkeypatch
):
    """Huge rows can make the content re-read hit the page's query time limit: the charts still
    answer (from the store), and the next re-read moves on to other hours."""
    messy_requests(ledger)
    live = every_chart(viewer_client, WINDOW)  # builds

    def too_slow(hours):
        raise LedgerQueryTimeout(2000)

    monkeypatch.setattr(rollups, "content_checksums", too_slow)
    rollups._plans._kept.clear()
    assert every_chart(viewer_client, WINDOW) == live


@changing
def test_a_census_kept_up_to_date_is_the_census_taken_whole(ledger, monkeypatch):
    """A live dashboard or overview plans its charts every few seconds while the ledger moves.
    Between whole censuses a worker adds the rows written since to the census it kept: after
    every kind of write its figures are a whole census's, hour for hour; a row deleted or
    replaced, or the time limit passing, makes it whole again."""
    # PostgreSQL's census is always taken whole (its fingerprint is a sum of id hashes, and a
    # count is a scan): there every census must be whole, and right.
    on_postgres = isinstance(ledger.conn, PostgresConnection)
    since, until = T0, T0 + rollups.CENSUS_KEPT_FROM_HOURS * H
    taken_whole = []
    whole_census = rollups._whole_census
    monkeypatch.setattr(
        rollups, "_whole_census", lambda *a: taken_whole.append(a) or whole_census(*a)
    )

    def census_is_right(whole: bool) -> None:
        before = len(taken_whole)
        kept = rollups.census(since, until)
        truth = whole_census(since, until)
        assert {h: json.loads(f) for h, f in kept.items()} == {
            h: json.loads(f) for h, f in truth.items()
        }
        assert list(kept) == sorted(kept)
        assert (len(taken_whole) > before) == (whole or on_postgres)

    ledger.request(started_at=T0 + H + 5)
    census_is_right(whole=True)
    for started_at in (
        T0 + H + 9,  # an hour it holds
        T0 + 4 * H,  # an hour it did not hold, on its first millisecond
        T0 + 2 * H + 0.5,  # REAL in an INTEGER column
        until - 0.5,  # the last moment inside
        until,  # outside: the census ends there
        since - 1,  # outside, before
        "2026-11-27T08:00:00Z",  # text: no hour's
        T0 + 3 * H + 1e-3,
    ):
        ledger.request(started_at=started_at)
        census_is_right(whole=False)
    for _ in range(3):  # several rows in one commit, one of them replacing another
        ledger.request(started_at=T0 + 5 * H + 7)
    census_is_right(whole=False)

    first = "(SELECT min(rowid) FROM nexus_requests)"
    ledger.conn.execute(f"DELETE FROM nexus_requests WHERE rowid = {first}")
    census_is_right(whole=True)
    if not on_postgres:  # SQLite's REPLACE: the row deleted, then written again under a new rowid
        ledger.conn.execute(
            "INSERT OR REPLACE INTO nexus_requests"
            f" SELECT * FROM nexus_requests WHERE rowid = {first}"
        )
        census_is_right(whole=True)
    ledger.request(started_at=T0 + 5 * H + 8)
    census_is_right(whole=False)
    monkeypatch.setattr(rollups, "CENSUS_WHOLE_EVERY_S", -1)  # its time is up
    ledger.request(started_at=T0 + 5 * H + 9)
    census_is_right(whole=True)
