"""The failure inbox's figures against SQL (issue 30): failures built into a ledger over the last
40 days (odd stages and messages, REAL times, '' next to NULL, every script), and every figure of
every issue on /pipeline/issues/ (count in the window, the window before, in all, first and last
seen, the hourly and daily trends, what it touched, its newest requests) equal to a query over
the ledger's rows; read live before any hour is summarised, from the summaries after, and again
after a late writer and new failures."""

import math
import random

import pytest
from builders import LEDGER_DB, parse_html
from django.urls import reverse

from ledgerfacts.timestamps import now_ms
from pipeline import rollups
from pipeline.signatures import SQL_FUNCTION, signature

pytestmark = LEDGER_DB
H = rollups.HOUR
DAY = 24 * H
MESSAGES = [
    "Tool crashed: run_terminal_command killed after 5012 ms",
    "Tool crashed: run_terminal_command killed after 77 ms",  # the same issue, masked
    "Discord API 429: retry after 3 s",
    "Ошибка доступа к 'файлу' № 12",
    "接続がタイムアウトしました (30 秒)",
    "שגיאה בשליחה 🚫",
    None,
    "",
    "first line 1\nsecond line 2",
    "x" * 200_000 + " after 5 ms",
]
STAGES = ["runAgent", "deliverResponse", None, "", "resolveAccess"]
PERSONAS = ["atlas", "scout", None, "", "Ἀθηνᾶ"]
SOURCES = ["imessage", "discord", "gmail", ""]


@pytest.fixture(autouse=True)
def fresh_plans(monkeypatch):
    monkeypatch.setattr(rollups, "_plans", rollups.sqlite.WhileUnchanged(keep=64))
    monkeypatch.setattr(rollups, "VERIFY_EVERY_S", 0)


def failures_over_time(ledger, now: int, count: int = 260, seed: int = 3) -> None:
    """Failures spread over the last 40 days (denser lately), and requests that did not fail."""
    rng = random.Random(seed)
    for i in range(count):
        ago = int(rng.choice([rng.random() * 2 * H, rng.random() * DAY, rng.random() * 40 * DAY]))
        started = now - ago - i  # distinct times: the newest requests have one order
        ledger.request(
            id=f"F{i:04d}",
            started_at=started + 0.5 if i % 37 == 0 else started,  # a REAL time, now and then
            status="failed",
            stage="runAgent",
            error_stage=rng.choice(STAGES),
            error_message=rng.choice(MESSAGES),
            error_stack=f"Traceback {i}",
            event_source=rng.choice(SOURCES),
            session_persona=rng.choice(PERSONAS),
            principal_id=rng.choice(["mom", "boss", "", None, f"p{i % 11}"]),
            session_key=rng.choice([None, f"imessage:+1555{i % 7}", ""]),
            agent_model=rng.choice(["sonnet", "haiku", None]),
            turn_id=f"T{i}" if i % 3 else None,
        )
        if i % 2:
            ledger.request(id=f"C{i:04d}", started_at=started + 1, status="completed")


def with_signatures(ledger):
    """The builder's connection with the masking function (a PostgreSQL ledger has its own)."""
    if hasattr(ledger.conn, "create_function"):
        ledger.conn.create_function(SQL_FUNCTION, 1, signature, deterministic=True)
    return ledger.conn


FAILED = "status = 'failed'"
GROUP = f"error_stage IS NOT DISTINCT FROM ? AND {SQL_FUNCTION}(error_message) = ?"
SCOPE = {"source": "event_source", "persona": "session_persona"}


def expected(ledger, since: int, until: int, previous_since: int, now: int, **scope) -> dict:
    """Every issue's figures, each from a query over the ledger's rows (of a channel or a
    persona: `scope`)."""
    conn = with_signatures(ledger)
    failed = FAILED + "".join(f" AND {SCOPE[name]} = '{value}'" for name, value in scope.items())
    of_group = f"{failed} AND {GROUP}"
    start = now - 60 * DAY  # before every row; text times sort after every number: left out
    groups = conn.execute(
        f"SELECT DISTINCT error_stage, {SQL_FUNCTION}(error_message) FROM nexus_requests"
        f" WHERE started_at >= ? AND started_at < ? AND {failed}",
        (since, until),
    ).fetchall()
    out = {}
    for stage, sig in groups:

        def one(sql: str, *params, group=(stage, sig)):
            return conn.execute(f"{sql} AND {of_group}", (*params, *group)).fetchone()

        def trend(start: int, size: int, buckets: int, group=(stage, sig)) -> list[int]:
            counts = dict(
                conn.execute(
                    f"SELECT (CAST(started_at AS BIGINT) - ?) / {size}, count(*)"
                    " FROM nexus_requests WHERE started_at >= ? AND started_at < ?"
                    f" AND {of_group} GROUP BY 1",
                    (start, start, start + buckets * size, *group),
                ).fetchall()
            )
            return [counts.get(i, 0) for i in range(buckets)]

        n, last_in = one(
            "SELECT count(*), max(CAST(started_at AS BIGINT)) FROM nexus_requests"
            " WHERE started_at >= ? AND started_at < ?",
            since, until,
        )  # fmt: skip
        total, first, last = one(
            "SELECT count(*), min(CAST(started_at AS BIGINT)), max(CAST(started_at AS BIGINT))"
            " FROM nexus_requests WHERE started_at >= ? AND started_at < ?",
            start, now + H,
        )  # fmt: skip
        (previous,) = one(
            "SELECT count(*) FROM nexus_requests WHERE started_at >= ? AND started_at < ?",
            previous_since, since,
        )  # fmt: skip
        touched = one(
            "SELECT count(DISTINCT principal_id), count(DISTINCT session_key),"
            " count(DISTINCT event_source), count(DISTINCT session_persona),"
            " count(DISTINCT agent_model) FROM nexus_requests"
            " WHERE started_at >= ? AND started_at < ?",
            since, until,
        )  # fmt: skip
        newest = conn.execute(
            "SELECT id FROM nexus_requests WHERE started_at >= ? AND started_at < ?"
            f" AND {of_group} ORDER BY started_at DESC LIMIT 3",
            (since, until, stage, sig),
        ).fetchall()
        names = ["principals", "sessions", "channels", "personas", "models"]
        out[(stage, sig)] = {
            "count": n,
            "previous_count": previous,
            "total": total,
            "first_seen": first,
            "last_seen": last,
            "last_seen_in_window": last_in,
            "touched": dict(zip(names, touched, strict=True)),
            "newest_requests": [row[0] for row in newest],
            "hourly": trend(now // H * H - 23 * H, H, 24),
            "daily": trend(now // DAY * DAY - 29 * DAY, DAY, 30),
        }
    return out


def inbox(client, **query) -> tuple[dict, list[dict]]:
    """The inbox's JSON twin (every status), page after page."""
    first = page = client.get(
        reverse("issues:inbox"), {"format": "json", "status": "all"} | query
    ).json()
    issues = list(page["issues"])
    while page["next"]:
        page = client.get(page["next"]).json()
        issues += page["issues"]
    return first, issues


def shown(issue: dict) -> dict:
    return {
        "count": issue["count"],
        "previous_count": issue["previous_count"],
        "total": issue["total"],
        "first_seen": issue["first_seen"],
        "last_seen": issue["last_seen"],
        "last_seen_in_window": issue["last_seen_in_window"],
        "touched": issue["touched"],
        "newest_requests": [r["id"] for r in issue["newest_requests"]],
        "hourly": [b["count"] for b in issue["trend"]["hourly"]],
        "daily": [b["count"] for b in issue["trend"]["daily"]],
    }


def check_every_figure(client, ledger, now: int, window: str, **scope) -> int:
    page, issues = inbox(client, window=window, **scope)
    assert page["not_counted"] == [], page["not_counted"]
    # The window before is as many whole hours as the window touches, ending where it starts.
    assert page["since"] - page["previous_since"] == -(-(page["until"] - page["since"]) // H) * H
    want = expected(ledger, page["since"], page["until"], page["previous_since"], now_ms(), **scope)
    got = {(i["error_stage"], i["signature"]): shown(i) for i in issues}
    assert got.keys() == want.keys()
    for group, figures in want.items():
        assert got[group] == figures, group
    assert page["count"] == len(want)
    return len(want)


def build_every_hour(now: int) -> None:
    rollups.plan(now - 60 * DAY, now, budget_s=math.inf)
    rollups._plans = rollups.sqlite.WhileUnchanged(keep=64)


# Rows written after a page was read: each request must read a snapshot of its own.
@pytest.mark.django_db(transaction=True, databases="__all__")
def test_every_figure_of_the_inbox_equals_sql_live_and_from_the_summaries(
    viewer_client, ledger, settings, monkeypatch
):
    now = now_ms()
    failures_over_time(ledger, now)
    # Live: the pages build no hour (a background process would), all read from the ledger.
    monkeypatch.setattr("pipeline.failure_window.background.running", lambda: True)
    from pipeline import failure_window

    monkeypatch.setattr(failure_window, "LIVE_ROWS", 10**6)
    for window in ("24h", "7d", "30d"):
        assert check_every_figure(viewer_client, ledger, now, window) > 5
    assert not rollups.RollupHour.objects.exists()

    build_every_hour(now)
    assert rollups.RollupHour.objects.exists()
    for window in ("24h", "7d", "30d"):
        check_every_figure(viewer_client, ledger, now, window)
    # A channel's or a persona's failures: the records kept per source and persona.
    check_every_figure(viewer_client, ledger, now, "30d", source="discord")
    check_every_figure(viewer_client, ledger, now, "7d", persona="Ἀθηνᾶ")

    # A late writer in a stored hour and new failures now: the figures follow.
    ledger.request(id="LATE", started_at=now - 20 * DAY, status="failed", error_stage="runAgent",
                   error_message=MESSAGES[0], principal_id="late")  # fmt: skip
    ledger.request(id="NOW", started_at=now_ms() - 1000, status="failed", error_stage="runAgent",
                   error_message=MESSAGES[2], principal_id="new one")  # fmt: skip
    for window in ("24h", "30d"):
        check_every_figure(viewer_client, ledger, now, window)


def test_an_issues_breakdowns_equal_sql_and_each_count_is_the_list_it_links(viewer_client, ledger):
    now = now_ms()
    failures_over_time(ledger, now, count=120, seed=5)
    _, issues = inbox(viewer_client, window="30d")
    busiest = max(issues, key=lambda i: i["count"])
    page = viewer_client.get(busiest["url"], {"window": "30d", "format": "json"}).json()
    conn = with_signatures(ledger)
    stage, sig = busiest["error_stage"], busiest["signature"]
    for name, column in [("channel", "event_source"), ("persona", "session_persona"),
                         ("model", "agent_model"), ("principal", "principal_id")]:  # fmt: skip
        want = dict(
            conn.execute(
                f"SELECT {column}, count(*) FROM nexus_requests WHERE started_at >= ?"
                f" AND started_at < ? AND {FAILED} AND {GROUP} GROUP BY 1",
                (page["since"], page["until"], stage, sig),
            ).fetchall()
        )
        got = page["breakdowns"][name]
        assert {v["value"]: v["count"] for v in got["values"]} == want, name
        for value in got["values"]:
            listed = viewer_client.get(value["url"] + "&format=json").json()
            assert listed["count"] == value["count"], (name, value)


def test_the_newest_requests_of_a_persona_come_from_every_record_of_their_hour(
    viewer_client, ledger
):
    """A persona's failures of one hour are kept per channel: the newest are looked for in all of
    the hour's records, not only in the first one read."""
    hour = (now_ms() - 3 * H) // H * H
    for i in range(12):  # older, written (and summarised) first
        ledger.request(id=f"A{i:02d}", started_at=hour + i * 60_000, status="failed",
                       error_stage="runAgent", error_message=MESSAGES[0],
                       event_source="aaa", session_persona="p")  # fmt: skip
    for i in range(12):
        ledger.request(id=f"Z{i:02d}", started_at=hour + (30 + i) * 60_000, status="failed",
                       error_stage="runAgent", error_message=MESSAGES[0],
                       event_source="zzz", session_persona="p")  # fmt: skip
    build_every_hour(now_ms())
    _, (issue,) = inbox(viewer_client, window="24h", persona="p")
    assert [r["id"] for r in issue["newest_requests"]] == ["Z11", "Z10", "Z09"]
    assert issue["count"] == 24 and issue["touched"]["channels"] == 2


@pytest.mark.django_db(transaction=True, databases="__all__")
def test_what_an_issue_touched_follows_an_hour_summarised_again(viewer_client, ledger):
    """The stored part of what the shown issues touched is kept while the same records answer
    it: a settled row edited in place is found, its hour summarised again, and the page says so."""
    hour = (now_ms() - 3 * H) // H * H
    for i in range(5):
        ledger.request(id=f"E{i}", started_at=hour + i * 60_000, status="failed",
                       error_stage="runAgent", error_message=MESSAGES[0],
                       principal_id="mom")  # fmt: skip
    build_every_hour(now_ms())
    _, (issue,) = inbox(viewer_client, window="24h")
    assert issue["touched"]["principals"] == 1
    ledger.conn.execute("UPDATE nexus_requests SET principal_id = 'dad' WHERE id = 'E3'")
    _, (issue,) = inbox(viewer_client, window="24h")  # its content check finds the edit
    _, (issue,) = inbox(viewer_client, window="24h")  # and its hour was built again
    assert rollups.RollupHour.objects.filter(hour=hour).exists()
    assert issue["touched"]["principals"] == 2


def test_each_row_draws_the_trend_asked_for_with_the_twins_counts(viewer_client, ledger):
    now = now_ms()
    failures_over_time(ledger, now, count=60, seed=9)
    _, issues = inbox(viewer_client, window="30d", status="all")
    for trend, key, bars in (("24h", "hourly", 24), ("30d", "daily", 30)):
        query = {"window": "30d", "status": "all", "trend": trend}
        page = parse_html(viewer_client.get(reverse("issues:inbox"), query).content)
        rows = page.findall(".//tr[@class]")
        assert len(rows) == min(len(issues), 25)
        for row, issue in zip(rows, issues, strict=False):
            titles = row.iter("{http://www.w3.org/2000/svg}title")  # each bar's count
            drawn = [int(t.text.replace(",", "")) for t in titles]
            assert drawn == [b["count"] for b in issue["trend"][key]], (trend, issue["id"])
            assert len(drawn) == bars
        current = page.find(".//nav[@class='trend-choice']/a[@aria-current]")
        assert "".join(current.itertext()) == trend
