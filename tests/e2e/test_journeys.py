"""Journeys 1 to 5 of JOURNEYS.md, clicked through as a person would, at 1280 px and at 390 px.

Each test's ledger holds the real Claude Code and Codex samples (tests/fixtures/import/samples/,
copies of /work/shared/samples/) imported with `ledger_import`, beside pipeline requests of the
last day whose failed run ran one of the imported turns. Every number a page shows on the way is
checked against the ledger, read here with SQL (and stage timings and error signatures in
Python), never against another page.
"""

import json
import math
import os
import re
import shutil
import subprocess
import sys
from io import StringIO
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from django.conf import settings
from django.core.management import call_command
from playwright.sync_api import expect

from ledgerfacts.timestamps import now_ms
from pipeline.signatures import signature

pytestmark = pytest.mark.django_db(transaction=True, databases="__all__")
ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "tests" / "fixtures" / "import" / "samples"
CLAUDE_FIXTURES = ROOT / "tests" / "fixtures" / "import" / "claude-code"
H = 3_600_000
MINUTE = 60_000
WIDTHS = [1280, 390]

# The imported Claude Code turn whose Bash calls the user rejected: the turn the alert's request
# ran (its tool calls' error holds the phrase the alert's message repeats).
REJECTED = "The tool use was rejected"


def rows(ledger, sql: str, *params) -> list[tuple]:
    return ledger.conn.execute(sql, params).fetchall()


def one(ledger, sql: str, *params):
    return rows(ledger, sql, *params)[0][0]


def import_samples(*extra: Path) -> str:
    """`ledger_import` of the samples (and `extra` Claude Code inputs) into the test's ledger, as
    the README says; its summary."""
    out = StringIO()
    for fmt, inputs in (("claude-code", [SAMPLES / "claude-code", *extra]),
                        ("codex", [SAMPLES / "codex"])):  # fmt: skip
        call_command("ledger_import", fmt, *map(str, inputs), ledger=str(settings.LEDGER_DB),
                     stdout=out, stderr=StringIO())  # fmt: skip
    return out.getvalue()


@pytest.fixture(params=WIDTHS, ids=lambda w: f"{w}px")
def width(request, page) -> int:
    page.set_viewport_size({"width": request.param, "height": 900 if request.param > 500 else 844})
    return request.param


def assert_fits(page, width: int) -> None:
    """Nothing makes the page scroll sideways."""
    assert page.evaluate("document.documentElement.scrollWidth") <= width, page.url


def settle(page) -> None:
    """Plotly listens on a layer above the bars: act once the responsive layout has settled."""
    page.wait_for_load_state("networkidle")
    page.wait_for_timeout(300)


def click_bar(page, bar) -> None:
    """Every chart drawn first (a card above that draws later moves the bar), then the bar in
    view, then a press at its middle."""
    for card in page.locator(".chart-card").all():
        expect(card.locator(".main-svg, .empty").first).to_be_attached()
    settle(page)
    bar.scroll_into_view_if_needed()
    page.wait_for_timeout(300)
    box = bar.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.down()
    page.mouse.up()


def query_of(url: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}


# -- The ledger: the samples, and a day of pipeline requests --------------------------------------


@pytest.fixture
def story(ledger):
    """The samples imported, then the last day's requests: 60 failures in runAgent of one kind
    (one of them the alert, which ran the imported turn whose Bash calls were rejected), 4 in
    executeTriggers naming their hook, and 120 completed requests with stage timings and token
    counts of two models."""
    import_samples()
    turn_id, session_id = rows(
        ledger,
        "SELECT t.id, t.session_id FROM turns t JOIN tool_calls c ON c.turn_id = t.id"
        " WHERE c.status = 'failed' AND c.error LIKE ? ORDER BY t.started_at LIMIT 1",
        f"%{REJECTED}%",
    )[0]
    now = now_ms()
    start = now - 20 * H
    timings = {"receiveEvent": 4, "resolveIdentity": 9, "resolveAccess": 3,
               "executeTriggers": 20, "assembleContext": 80}  # fmt: skip
    for i in range(60):
        seconds = 3 + i % 7
        ledger.request(
            id=f"01JFAIL{i:04d}",
            event_id=f"cli:ai-music/{i}",
            event_source="cli",
            principal_id="chip",
            session_key="cli:ai-music:default",
            started_at=start + i * 11 * MINUTE,
            completed_at=start + i * 11 * MINUTE + seconds * 1000,
            status="failed",
            stage="runAgent",
            error_stage="runAgent",
            error_message=f"Tool crashed: Bash exited after {seconds} s: {REJECTED} by the user",
            error_stack="ToolCrashError: Bash\n  at runAgent (agent.ts:71:9)",
            stage_timings=json.dumps(timings | {"runAgent": seconds * 1000}),
            turn_id=turn_id if i == 45 else None,
            agent_model="claude-sonnet-4-20250514",
            agent_tokens_prompt=9_000,
            agent_tokens_completion=300,
            agent_tokens_total=9_300,
        )
    for i in range(4):
        ledger.request(
            id=f"01JHOOK{i:04d}",
            event_source="gmail",
            started_at=start + i * 3 * H + 7 * MINUTE,
            status="failed",
            stage="executeTriggers",
            error_stage="executeTriggers",
            error_message=f"Hook 'calendar-invite-parser' raised KeyError: 'dtstart{i}'",
            hooks_matched='["calendar-invite-parser", "spam-filter"]',
            hooks_fired='["calendar-invite-parser"]',
            stage_timings=json.dumps({"receiveEvent": 3, "executeTriggers": 40 + i}),
        )
    for i in range(120):
        run = 800 + (i * 7919) % 20_000  # spread out, a slow tail
        model, prompt = ("gpt-5", 6_000) if i % 3 else ("claude-sonnet-4-20250514", 12_000)
        ledger.request(
            id=f"01JDONE{i:04d}",
            event_source="imessage" if i % 2 else "cli",
            started_at=start + i * 9 * MINUTE + 30_000,
            completed_at=start + i * 9 * MINUTE + 30_000 + run + 500,
            delivery_channel="imessage" if i % 2 else None,
            delivery_success=1 if i % 2 else None,
            stage_timings=json.dumps(
                timings | {"runAgent": run, "deliverResponse": 200 + i, "finalize": 2}
            ),  # fmt: skip
            agent_model=model,
            agent_tokens_prompt=prompt,
            agent_tokens_completion=400 + i,
            agent_tokens_total=prompt + 400 + i,
        )
    ledger.alert = "01JFAIL0045"
    ledger.turn_ran = (session_id, turn_id)
    return ledger


# -- Journey 1: debug a failed request ------------------------------------------------------------


def signature_count(ledger, request_id: str) -> tuple[str, list[str]]:
    """The failures with the request's stage and masked message, oldest first, by Python."""
    stage, message = rows(ledger, "SELECT error_stage, error_message FROM nexus_requests"
                                  " WHERE id = ?", request_id)[0]  # fmt: skip
    sig = signature(message)
    found = rows(ledger, "SELECT id, error_message FROM nexus_requests WHERE status = 'failed'"
                         " AND error_stage = ? ORDER BY started_at, id", stage)  # fmt: skip
    return sig, [i for i, m in found if signature(m) == sig]


def test_journey_1_debug_a_failed_request(page, live_server, viewer, story, sign_in, width):
    alert = story.alert
    sign_in("vera")
    # 1. The alert's id, pasted in small letters into the header's box: its page opens.
    box = page.get_by_role("searchbox", name="Search the ledger or paste an id")
    box.fill(alert.lower())
    box.press("Enter")
    expect(page).to_have_url(re.compile(rf"/pipeline/requests/{alert}/$"))
    assert_fits(page, width)

    # 2. Which stage failed and why, the waterfall and every card agreeing with it.
    stage, message = rows(story, "SELECT error_stage, error_message FROM nexus_requests"
                                 " WHERE id = ?", alert)[0]  # fmt: skip
    failure = page.locator(".failure")
    expect(failure).to_contain_text(f"{stage} failed:")
    expect(failure.locator(".error-message")).to_have_text(message)
    sig, similar = signature_count(story, alert)
    expect(failure).to_contain_text(sig)
    expect(page.locator(".waterfall .bar-failed")).to_contain_text(stage)
    for later in ("deliverResponse", "finalize"):
        expect(page.locator(".waterfall tr.bar-not-reached", has_text=later)).to_have_count(1)
    expect(page.locator(".stage-tag", has_text="deliverResponse · not reached")).to_have_count(1)

    # 3. Similar failures: the count the page promises, and the list holding exactly those.
    link = page.locator("#similar-failures a")
    expect(link).to_have_text(f"{len(similar)} similar failures")
    previous = similar[similar.index(alert) - 1]
    following = similar[similar.index(alert) + 1]
    expect(page.get_by_role("link", name="← previous failure")).to_have_attribute(
        "href", f"/pipeline/requests/{previous}/"
    )
    expect(page.get_by_role("link", name="next failure →")).to_have_attribute(
        "href", f"/pipeline/requests/{following}/"
    )
    link.click()
    expect(page).to_have_url(re.compile(r"/pipeline/requests/\?.*signature="))
    expect(page.get_by_text(f"{len(similar)} requests")).to_be_visible()
    listed = page.locator("table.requests tbody tr[data-started]")
    expect(listed).to_have_count(min(len(similar), 50))
    page.go_back()

    # 4. The turn that ran: the session page with it selected, its failed calls' errors shown.
    session_id, turn_id = story.turn_ran
    page.locator(f"a[href='/sessions/{session_id}/turns/{turn_id}/']").click()
    expect(page).to_have_url(re.compile(rf"/sessions/{session_id}/turns/{turn_id}/$"))
    expect(page.locator(f"#turn-{turn_id}")).to_have_class(re.compile("selected"))
    failed_calls = rows(story, "SELECT id, error FROM tool_calls WHERE turn_id = ?"
                               " AND status = 'failed'", turn_id)  # fmt: skip
    assert failed_calls
    for call_id, error in failed_calls:
        expect(page.locator(f"#call-{call_id}")).to_contain_text(error[:60])
        expect(page.locator(f"#call-{call_id}").get_by_text(error[:40])).to_be_visible()
    assert_fits(page, width)

    # 5. From the dashboard: the failures bar of runAgent lists exactly its failures, on page 2,
    # in a new tab and as JSON.
    page.goto(f"{live_server.url}/pipeline/?window=24h")
    bars = page.locator("#chart-failures .main-svg .point path")
    expect(bars).to_have_count(2)  # executeTriggers, runAgent in pipeline order
    click_bar(page, bars.nth(1))
    expect(page).to_have_url(re.compile(r"/pipeline/requests/\?.*error_stage=runAgent"))
    window = query_of(page.url)
    count = one(story, "SELECT count(*) FROM nexus_requests WHERE status = 'failed'"
                       " AND error_stage = 'runAgent' AND started_at >= ? AND started_at < ?",
                int(window["since"]), int(window["until"]))  # fmt: skip
    assert count == 60
    expect(page.get_by_text(f"{count} requests")).to_be_visible()
    expect(listed).to_have_count(50)
    page.get_by_role("link", name="Older requests ↓").click()
    expect(listed).to_have_count(count)
    other = page.context.new_page()
    other.goto(page.url)
    expect(other.get_by_text(f"{count} requests")).to_be_visible()
    expect(other.locator("table.requests tbody tr[data-started]")).to_have_count(50)
    other.close()
    twin = page.request.get(page.url + "&format=json").json()
    assert twin["count"] == count and {r["error_stage"] for r in twin["requests"]} == {stage}


def test_journey_1_error_text_finds_the_requests_and_turns_holding_it(
    page, live_server, viewer, story, sign_in, width
):
    sign_in("vera")
    box = page.get_by_role("searchbox", name="Search the ledger or paste an id")
    box.fill(f'"{REJECTED}"')
    box.press("Enter")
    expect(page).to_have_url(re.compile(r"/search/\?q="))
    phrase = f"%{REJECTED.lower()}%"
    requests = {
        r for (r,) in rows(story, "SELECT id FROM nexus_requests WHERE lower(error_message) LIKE ?",
                           phrase)
    }  # fmt: skip
    calls = {c for (c,) in rows(story, "SELECT id FROM tool_calls WHERE lower(error) LIKE ?"
                                       " OR lower(result) LIKE ?", phrase, phrase)}  # fmt: skip
    messages = {m for (m,) in rows(story, "SELECT id FROM messages"
                                          " WHERE lower(content) LIKE ?", phrase)}  # fmt: skip
    assert requests and calls
    total = len(requests | calls | messages)
    expect(page.locator("#results")).to_contain_text(f"{total} matches")
    hits = page.locator(".hit")
    expect(hits).to_have_count(min(total, 50))  # newest first: the day's requests
    expect(page.locator(".hit.kind-request")).to_have_count(min(len(requests), 50))
    assert_fits(page, width)
    # The tool calls (older, imported) by the kind filter; one opens its turn at the call.
    page.select_option("#s-kind", "tools")
    expect(page.locator("#results")).to_contain_text(f"{len(calls)} match")
    expect(page.locator(".hit.kind-tool_call")).to_have_count(len(calls))
    expect(page.locator(".hit.kind-request")).to_have_count(0)
    call_id = sorted(calls)[0]
    page.locator(".hit.kind-tool_call a", has_text="tool call").first.click()
    expect(page).to_have_url(re.compile(r"/sessions/.+/turns/.+/#call-"))
    landed = urlsplit(page.url).fragment.removeprefix("call-")
    assert landed in calls and call_id
    expect(page.locator(f"#call-{landed}")).to_contain_text(REJECTED)


def test_journey_1_a_failing_hook_is_named(page, live_server, viewer, story, sign_in, width):
    sign_in("vera", next_url="/pipeline/requests/01JHOOK0002/")
    expect(page.locator(".failure")).to_contain_text("executeTriggers failed:")
    expect(page.locator(".failing-hook")).to_have_text("calendar-invite-parser")
    for later in ("assembleContext", "runAgent", "deliverResponse", "finalize"):
        expect(page.locator(".waterfall tr.bar-not-reached", has_text=later)).to_have_count(1)
    assert_fits(page, width)


# -- Journey 4: know what it cost and what is slow -------------------------------------------------


def test_journey_4_a_fresh_install_charts_30_days_at_once(
    page, live_server, viewer, story, sign_in, width
):
    """Nothing summarised yet (a fresh ledgerweb database): the charts draw from what they can
    read, say how far the summaries have come, and none fails."""
    sign_in("vera", next_url="/pipeline/?window=30d")
    for card in page.locator(".chart-card").all():
        expect(card.locator(".main-svg, .empty").first).to_be_visible()
        expect(card.locator(".notice.warn")).to_have_count(0)  # no "took too long"
    progress = page.locator("#summarising")
    expect(progress).to_contain_text("Summarising:")
    summarised, total = map(
        int, re.search(r"Summarising: (\d+) of (\d+) hours", progress.inner_text()).groups()
    )
    assert summarised <= total
    settled_end = (now_ms() - 5 * MINUTE) // H * H
    since = (now_ms() - 30 * 24 * H) // H * H
    hours = one(story, "SELECT count(DISTINCT started_at / ?) FROM nexus_requests WHERE"
                       " started_at >= ? AND started_at < ?", H, since, settled_end)  # fmt: skip
    assert total == hours
    assert_fits(page, width)


def test_journey_4_a_cost_bar_lists_the_requests_it_sums(
    page, live_server, viewer, story, sign_in, width
):
    from decimal import Decimal

    sign_in("vera", next_url="/pipeline/?window=24h")
    card = page.locator("#chart-cost")
    expect(card.locator(".main-svg").first).to_be_visible()
    data = page.request.get(
        f"{live_server.url}/pipeline/charts/cost/?window=24h&format=json"
    ).json()
    bars = [(model, i, usd) for model, values in data["models"].items()
            for i, usd in enumerate(values) if usd and Decimal(usd)]  # fmt: skip
    model, bucket, usd = max(bars, key=lambda bar: Decimal(bar[2]))
    traces = card.locator(".main-svg .barlayer .trace")
    names = [
        t["name"] for t in json.loads(card.locator(".chart").get_attribute("data-figure"))["data"]
    ]
    trace = traces.nth(names.index(model))
    points = trace.locator(".point path")
    click_bar(page, points.nth(bucket))
    expect(page).to_have_url(re.compile(r"/pipeline/requests/\?.*model="))
    query = query_of(page.url)
    assert query["model"] == model
    cells = page.locator("table.requests td.cost")
    count = one(story, "SELECT count(*) FROM nexus_requests WHERE agent_model = ?"
                       " AND started_at >= ? AND started_at < ?",
                model, int(query["since"]), int(query["until"]))  # fmt: skip
    expect(cells).to_have_count(count)
    # The rows show their costs rounded; the list's JSON twin has them whole: they sum to the bar.
    listed = page.request.get(page.url + "&format=json").json()["requests"]
    assert len(listed) == count
    assert sum(Decimal(r["cost"]["usd"]) for r in listed) == Decimal(usd)
    assert_fits(page, width)


def test_journey_4_the_slowest_stages_p95_leads_to_the_requests_above_it(
    page, live_server, viewer, story, sign_in, width
):
    sign_in("vera", next_url="/pipeline/?window=24h")
    card = page.locator("#chart-stage-timings")
    expect(card.locator("table.timings")).to_be_visible()
    # The stages' timings of the window, read from each request's JSON: the slowest stage by its
    # nearest-rank p95.
    link = card.locator("table.timings a").first.get_attribute("href")
    window = query_of(link)
    per_stage: dict[str, list[float]] = {}
    for (raw,) in rows(story, "SELECT stage_timings FROM nexus_requests"
                              " WHERE started_at >= ? AND started_at < ?",
                       int(window["since"]), int(window["until"])):  # fmt: skip
        for stage, ms in (json.loads(raw) if raw else {}).items():
            per_stage.setdefault(stage, []).append(float(ms))

    def p95(values):
        ordered = sorted(values)
        return ordered[math.ceil(0.95 * len(ordered)) - 1]

    slowest = max(per_stage, key=lambda stage: p95(per_stage[stage]))
    figure = p95(per_stage[slowest])
    above = sorted((ms for ms in per_stage[slowest] if ms >= figure), reverse=True)
    row = card.locator("table.timings tbody tr", has=page.locator(f"code:text-is('{slowest}')"))
    cell = row.locator("td[data-label=p95]")
    expect(cell.locator("a")).to_have_text(f"{figure:,.0f} ms")
    expect(cell).to_contain_text(f"({len(above)})")
    cell.locator("a").click()  # (its bar leads to the same list: test_dashboard_clicks.py)
    expect(page).to_have_url(re.compile(rf"/pipeline/requests/\?.*timing={slowest}"))
    expect(page.get_by_text(f"{len(above)} requests whose {slowest} took at least")).to_be_visible()
    shown = page.locator("table.requests td.stage-ms")
    expect(shown).to_have_count(min(len(above), 50))
    expect(shown.first).to_have_text(f"{above[0]:,.0f} ms")  # slowest first
    assert [
        float(t.replace(",", "").removesuffix(" ms")) for t in shown.all_inner_texts()
    ] == above[:50]
    assert_fits(page, width)


# -- Journey 2: choose a fork point visually ------------------------------------------------------


@pytest.fixture
def branching(ledger):
    """The samples, and Claude Code transcripts of the same project with a rewind (branches) and
    a compaction, imported the same way."""
    import_samples(CLAUDE_FIXTURES / "rewind.jsonl", CLAUDE_FIXTURES / "compaction.jsonl")
    return ledger


def path_to(ledger, turn_id: str) -> list[str]:
    """The turn's thread from its root, by SQL."""
    found = rows(
        ledger,
        """WITH RECURSIVE up(id, depth) AS (SELECT ?, 0 UNION
        SELECT t.parent_turn_id, up.depth + 1 FROM turns t JOIN up ON t.id = up.id
        WHERE t.parent_turn_id IS NOT NULL) SELECT id FROM up ORDER BY depth DESC""",
        turn_id,
    )
    return [turn for (turn,) in found]


def test_journey_2_choose_a_fork_point(page, live_server, operator, branching, sign_in, width):
    story = branching
    sign_in("otto", next_url="/sessions/")
    # 1. The list, by persona and channel, by activity: the sessions SQL finds.
    page.select_option("#f-persona", "claude-code")
    expect(page).to_have_url(re.compile(r"persona=claude-code"))
    page.select_option("#f-channel", "shop")
    expect(page).to_have_url(re.compile(r"channel=shop"))
    page.select_option("#f-sort", "activity")
    expected = [s for (s,) in rows(story, "SELECT id FROM sessions WHERE persona = 'claude-code'"
                                          " AND routing_key LIKE 'shop:%'"
                                          " ORDER BY updated_at DESC, id DESC")]  # fmt: skip
    links = page.locator("table.sessions tbody a.label")
    expect(links).to_have_count(len(expected))
    assert [h.split("/")[2] for h in (a.get_attribute("href") for a in links.all())] == expected
    assert_fits(page, width)
    # The one with branches: a turn with two children.
    session_id, point = rows(
        story,
        """SELECT t.session_id, t.id FROM turns t
        WHERE (SELECT count(*) FROM turns c WHERE c.parent_turn_id = t.id) > 1 LIMIT 1""",
    )[0]
    page.locator(f"table.sessions a.label[href='/sessions/{session_id}/']").click()

    # 2. Every turn a row, the branch point labelled, the siblings told apart, the head marked.
    turns = [t for (t,) in rows(story, "SELECT id FROM turns WHERE session_id = ?", session_id)]
    expect(page.locator(".tree-row[data-turn]")).to_have_count(len(turns))
    children = [c for (c,) in rows(story, "SELECT id FROM turns WHERE parent_turn_id = ?"
                                          " ORDER BY started_at, id", point)]  # fmt: skip
    expect(page.locator(f"#turn-{point} .mark-branch")).to_have_text(
        re.compile(rf"^{len(children)} (answers|branches)$")
    )
    previews = [page.locator(f"#turn-{c} .preview").inner_text() for c in children]
    assert len(set(previews)) == len(children), previews  # told apart by what they say
    head = one(story, "SELECT current_turn_id FROM sessions WHERE id = ?", session_id)
    expect(page.locator(f"#turn-{head} .mark-head")).to_have_count(1)
    # Keys (a desktop's): from the head up to the branch point and across its branches.
    if width > 500:
        page.locator(f"#turn-{head}").click()
        expect(page.locator("#panel [data-panel-turn]")).to_have_attribute("data-panel-turn", head)
        page.wait_for_load_state("networkidle")
        for _ in path_to(story, head)[path_to(story, head).index(point) + 1 :]:
            page.keyboard.press("h")
        expect(page.locator(f"#turn-{point}")).to_have_class(re.compile("cursor"))
        # l: the first child as drawn (the head's branch first), ]: the other branch.
        first = page.locator(f"#turn-{point}").get_attribute("data-child")
        other = page.locator(f"#turn-{first}").get_attribute("data-sibling")
        assert {first, other} == set(children)
        page.keyboard.press("l")
        expect(page.locator(f"#turn-{first}")).to_have_class(re.compile("cursor"))
        page.keyboard.press("]")
        expect(page.locator(f"#turn-{other}")).to_have_class(re.compile("cursor"))

    # 3. Two rows compared: their common ancestor, each side's turns and tokens after it.
    a, b = children[0], children[1]
    page.locator(f"#turn-{a}").click()
    expect(page.locator(f"#turn-{a}")).to_have_class(re.compile("selected"))
    page.locator(f"#turn-{b}").click(modifiers=["Shift"])
    expect(page).to_have_url(re.compile(rf"/sessions/{session_id}/compare/\?a=.*&b="))
    ancestor = page.locator(".compare-ancestor")
    expect(ancestor.locator(f"a[href='/sessions/{session_id}/turns/{point}/']")).to_have_count(1)
    for side, turn in (("A", a), ("B", b)):
        tokens = one(story, "SELECT coalesce(sum(total_tokens), 0) FROM turns WHERE id = ?", turn)
        calls = one(story, "SELECT count(*) FROM tool_calls WHERE turn_id = ?", turn)
        totals = page.locator(".compare-side", has_text=f"{side}: {turn}").locator(
            ".compare-totals"
        )
        expect(totals).to_contain_text(f"1 turn after the common ancestor · {tokens:,} tokens")
        expect(totals).to_contain_text(f"{calls} tool call")
    assert_fits(page, width)

    # 4. The thread at the head: its context, then a fork there; the fork shows the turns it
    # inherits, the origin says it was forked there, and the thread exports as chat messages.
    page.goto(f"{live_server.url}/sessions/{session_id}/turns/{head}/")
    page.get_by_role("link", name="Thread & fork point").click()
    expect(page.locator("h1")).to_have_text("Thread & fork point")
    thread = path_to(story, head)
    expect(page.locator(".page-head")).to_contain_text(f"The {len(thread)} turns from the root")
    page.fill("#fork-label", "Try the other total")
    page.get_by_role("button", name="Fork a new session here").click()
    expect(page.locator("h1")).to_contain_text("Try the other total")
    fork_id = one(story, "SELECT id FROM sessions WHERE label = 'Try the other total'")
    assert one(story, "SELECT current_turn_id FROM sessions WHERE id = ?", fork_id) == head
    expect(page.locator(".tree-row.inherited")).to_have_count(len(thread))
    page.goto(f"{live_server.url}/sessions/{session_id}/turns/{head}/")
    forked = page.locator("#panel .forks-here")
    expect(forked).to_contain_text("forked 1× here")
    expect(forked.locator(f"a[href='/sessions/{fork_id}/']")).to_have_count(1)
    exported = page.request.get(f"{live_server.url}/sessions/{session_id}/turns/{head}/export.json")
    messages = one(story, f"SELECT count(*) FROM messages WHERE turn_id IN"
                          f" ({', '.join('?' for _ in thread)})", *thread)  # fmt: skip
    said = [m for m in exported.json()["messages"] if m.get("role") in ("user", "assistant")]
    assert len(said) >= messages > 0
    assert_fits(page, width)


# -- Journey 3: keep the ledger tidy (admin) ------------------------------------------------------


def test_journey_3_archive_idle_sessions_restore_one_and_read_the_health_page(
    page, live_server, operator, admin_user, viewer, ledger, sign_in, width
):
    from django.contrib.admin.models import LogEntry

    import_samples()
    ledger.session(id="TODAY", label="Today's chat", updated_at=now_ms())
    ledger.request(id="01JSTUCK0001", status="processing", stage="runAgent",
                   started_at=now_ms() - 2 * H, completed_at=None)  # fmt: skip
    before = dict(rows(ledger, "SELECT id, updated_at FROM sessions"))
    idle = [s for (s,) in rows(ledger, "SELECT id FROM sessions WHERE status = 'active'"
                                       " AND updated_at < ? ORDER BY updated_at, id",
                               now_ms() - 30 * 24 * H)]  # fmt: skip
    assert len(idle) == len(before) - 1  # every imported session is months old
    sign_in("otto", next_url="/admin/conversations/session/")
    # 1. Archive those idle for more than 30 days, after a preview of each.
    page.get_by_role("link", name="Archive idle sessions…").click()
    page.fill("#days", "30")
    page.get_by_role("button", name="Preview").click()
    preview = page.locator("table.session-preview tbody tr")
    expect(preview).to_have_count(len(idle))
    for row, session_id in zip(preview.all(), idle, strict=True):  # longest idle first
        expect(row).to_contain_text(session_id)
        label = one(ledger, "SELECT label FROM sessions WHERE id = ?", session_id)
        expect(row).to_contain_text((label or "(no label)")[:30])
    assert_fits(page, width)
    page.get_by_role("button", name=f"Archive {len(idle)} sessions").click()
    expect(page.locator(".messagelist")).to_contain_text(f"Archived {len(idle)} sessions")
    statuses = dict(rows(ledger, "SELECT id, status FROM sessions"))
    assert {s for s, status in statuses.items() if status == "archived"} == set(idle)
    assert dict(rows(ledger, "SELECT id, updated_at FROM sessions")) == before
    logged = LogEntry.objects.filter(object_id__in=idle)
    assert {(e.object_id, e.user.username) for e in logged} == {(s, "otto") for s in idle}

    # 2. Restore one: active again, its idle time still said.
    restored = idle[0]
    page.goto(f"{live_server.url}/admin/conversations/session/?status__exact=archived")
    page.locator("#result_list tr", has_text=restored).locator("input.action-select").check()
    page.select_option("select[name=action]", "restore")
    page.get_by_role("button", name=re.compile("Run|Go")).click()
    page.get_by_role("button", name="Yes, set 1 to active").click()
    expect(page.locator(".messagelist")).to_contain_text("1 session set to active")
    assert one(ledger, "SELECT status FROM sessions WHERE id = ?", restored) == "active"
    page.goto(f"{live_server.url}/admin/conversations/session/?status__exact=active")
    row = page.locator("#result_list tr", has_text=restored)
    expect(row.locator("td.field-last_activity .idle")).to_contain_text("year")
    assert dict(rows(ledger, "SELECT id, updated_at FROM sessions")) == before

    # 3. A viewer browses, and every operator action is refused by the server.
    counts = {t: one(ledger, f"SELECT count(*) FROM {t}") for t in ("sessions", "turns")}
    page.context.clear_cookies()
    sign_in("vera", next_url="/sessions/?status=all")
    expect(page.locator("table.sessions tbody a.label")).to_have_count(len(before))
    # (A tab of its own: Chromium logs a refused page's 403 as a console error.)
    refused_page = page.context.new_page()
    refused_page.goto(f"{live_server.url}/admin/conversations/session/archive-idle/?days=30")
    expect(refused_page.locator("h1")).to_contain_text("not for your role")
    expect(refused_page.locator("main")).to_contain_text("operator")
    refused_page.close()
    session_id, head = rows(ledger, "SELECT id, current_turn_id FROM sessions"
                                    " WHERE current_turn_id IS NOT NULL LIMIT 1")[0]  # fmt: skip
    page.goto(f"{live_server.url}/sessions/{session_id}/turns/{head}/thread/")
    token = page.locator("input[name=csrfmiddlewaretoken]").first.get_attribute("value")
    refused = page.request.post(f"{live_server.url}/sessions/{session_id}/turns/{head}/fork/",
                                form={"label": "sneaky", "csrfmiddlewaretoken": token},
                                headers={"Referer": page.url})  # fmt: skip
    assert refused.status == 403
    assert counts == {t: one(ledger, f"SELECT count(*) FROM {t}") for t in counts}

    # 4. The health page: every check with its result, each finding counted with examples.
    page.context.clear_cookies()
    sign_in("ada", next_url="/health/?run=1")
    checks = page.locator("table.health tbody tr")
    expect(checks.first).to_be_visible()
    assert checks.count() >= 10
    stuck = page.locator("table.health tbody tr", has_text="always finalized")
    count = one(ledger, "SELECT count(*) FROM nexus_requests WHERE status = 'processing'"
                        " AND started_at < ?", now_ms() - 30 * MINUTE)  # fmt: skip
    expect(stuck.locator("td.num")).to_have_text(str(count))
    expect(stuck.locator("a[href='/pipeline/requests/01JSTUCK0001/']")).to_have_count(1)
    expect(page.locator(".page-head")).to_contain_text("checked")
    failing = page.locator("table.health tbody tr:not(.passed)")
    expect(page.locator(".health-summary")).to_contain_text(re.compile(r"problems? found"))
    assert failing.count() >= 1
    assert_fits(page, width)


# -- Journey 5: bring history in -----------------------------------------------------------------


def manage(*args, env_extra=None) -> subprocess.CompletedProcess:
    """manage.py as a person runs it in a fresh checkout: no SECRET_KEY in the environment."""
    unset = ("SECRET_KEY", "DJANGO_SETTINGS_MODULE")
    env = {k: v for k, v in os.environ.items() if k not in unset} | (env_extra or {})
    command = [sys.executable, "manage.py", *args]
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def test_journey_5_bring_history_in(page, live_server, viewer, ledger, sign_in, width, tmp_path):
    """`ledger_import claude-code ~/.claude/projects` (here a projects folder holding the sample
    transcripts and a transcript with a subagent and a compaction) and Codex's sessions, then
    the sessions, their subagents and compactions are there; a second import adds nothing."""
    projects = tmp_path / "projects"
    shutil.copytree(SAMPLES / "claude-code", projects / "-Users-chip-dev-ai-music",
                    ignore=shutil.ignore_patterns("LICENSE*"))  # fmt: skip
    shop = projects / "-home-ada-shop"
    shop.mkdir()
    shutil.copy(CLAUDE_FIXTURES / "subagent.jsonl", shop)
    shutil.copytree(CLAUDE_FIXTURES / "subagent", shop / "subagent")
    shutil.copy(CLAUDE_FIXTURES / "compaction.jsonl", shop)
    target = str(settings.LEDGER_DB)
    first = manage("ledger_import", "claude-code", str(projects), "--ledger", target)
    assert first.returncode == 0, first.stderr
    codex = manage("ledger_import", "codex", str(SAMPLES / "codex"), "--ledger", target)
    assert codex.returncode == 0, codex.stderr
    sessions = one(ledger, "SELECT count(*) FROM sessions")
    claude = one(ledger, "SELECT count(*) FROM sessions WHERE persona = 'claude-code'")
    assert f"sessions: {claude} added, 0 already there" in first.stdout
    claude_turns = "SELECT t.id FROM turns t JOIN sessions s ON s.id = t.session_id"
    claude_turns += " WHERE s.persona = 'claude-code'"
    for table, where in (("turns", "id"), ("messages", "turn_id"), ("tool_calls", "turn_id")):
        added = one(ledger, f"SELECT count(*) FROM {table} WHERE {where} IN ({claude_turns})")
        assert f"{table}: {added} added, 0 already there" in first.stdout, table

    # The server shows them: every session in the list, a subagent under its parent, compactions.
    sign_in("vera", next_url="/sessions/?status=all")
    expect(page.locator("table.sessions tbody a.label")).to_have_count(sessions)
    assert_fits(page, width)
    parent, subagent = rows(ledger, "SELECT substr(routing_key, 10, instr(substr(routing_key, 10),"
                                    " ':') - 1), id FROM sessions"
                                    " WHERE routing_key LIKE 'subagent:%' LIMIT 1")[0]  # fmt: skip
    page.goto(f"{live_server.url}/sessions/{parent}/")
    expect(page.locator(f"a[href='/sessions/{subagent}/']").first).to_be_attached()
    compacted = rows(ledger, "SELECT t.session_id, c.turn_id FROM compactions c"
                             " JOIN turns t ON t.id = c.turn_id")  # fmt: skip
    assert compacted
    session_id, turn_id = compacted[0]
    page.goto(f"{live_server.url}/sessions/{session_id}/")
    expect(page.locator(f"#turn-{turn_id} .mark-compaction")).to_have_count(1)

    # A second import adds nothing.
    tables = ("sessions", "turns", "messages", "tool_calls")
    counts = {t: one(ledger, f"SELECT count(*) FROM {t}") for t in tables}
    again = manage("ledger_import", "claude-code", str(projects), "--ledger", target)
    assert again.returncode == 0, again.stderr
    assert "sessions: 0 added" in again.stdout and "turns: 0 added" in again.stdout
    assert counts == {t: one(ledger, f"SELECT count(*) FROM {t}") for t in counts}
