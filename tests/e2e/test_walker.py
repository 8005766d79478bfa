"""The walker (issue 13): signed in as an admin (by role, as the README describes one: the
group, no staff flag; every page, the health report and the admin's too, is theirs) on the
demo ledger, open every page of the URL contract in Chromium, follow every link, htmx trigger
and form on it (see walker.py for what is checked), check every chart's click-through lists,
click the controls that change the view, and look at the session and request pages on a phone.

The demo ledger is built once per test session, anchored at the current time (so the dashboard's
preset windows hold data); each test reads its own copy.
"""

import re
import shutil
import sqlite3
from collections import Counter, deque
from io import StringIO
from urllib.parse import quote, urlencode, urlsplit

import pytest
from builders import T0, use_ledger
from django.conf import settings
from django.core.management import call_command
from pg_ledger import PostgresConnection
from playwright.sync_api import expect
from walker import (
    COLLECT_CONTROLS,
    COLLECT_FIGURES,
    Control,
    Walker,
    check_charts,
    pattern_of,
    query_of,
    with_query,
)

from demo.build import build_demo_ledger
from ledgerfacts.timestamps import now_ms
from ledgerweb.db import ledger_name

pytestmark = pytest.mark.django_db(transaction=True, databases="__all__")

HOUR = 3_600_000
MAX_PAGES = 60
# Pages discovered from links are visited once per URL pattern; the admin's many pages at most
# this often (its own links are Django's, the walk samples them).
MAX_ADMIN_PAGES = 5
NARROW = {"width": 390, "height": 844}
# Every HTML page of these areas also answers ?format=json (ARCHITECTURE.md §5).
# The URL contract (ARCHITECTURE.md §5) as URL patterns: the walk must reach each one, opened or
# followed from a page, so a kind of page that is no longer linked from anywhere is noticed.
CONTRACT = {"overview", "sessions:list", "sessions:detail", "sessions:turn", "sessions:thread",
            "sessions:export", "sessions:compare", "sessions:call", "pipeline:dashboard",
            "pipeline:chart", "pipeline:requests", "pipeline:request", "pipeline:similar",
            "admin:index", "login", "health", "healthz", "search:search",
            "bookmarks:list", "issues:inbox", "issues:issue", "issues:of_request",
            "alerts:log", "sessions:branches", "review:index", "review:queue", "review:item",
            "datasets:index", "datasets:run"}  # fmt: skip
TWINNED = {"overview", "sessions:list", "sessions:detail", "sessions:turn", "sessions:thread",
           "pipeline:dashboard", "pipeline:requests", "pipeline:request",
           "search:search", "bookmarks:list", "issues:inbox", "issues:issue",
           "alerts:log", "sessions:branches", "review:index", "review:queue", "review:item",
           "datasets:index", "datasets:run"}  # fmt: skip


@pytest.fixture(scope="session")
def demo_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("walker") / "demo.sqlite3"
    build_demo_ledger(path, seed=1, now_ms=now_ms())
    return path


@pytest.fixture(scope="session")
def shipped_demo(demo_file, postgres_ledgers) -> str:
    """The PostgreSQL pass's demo ledger: demo_file as ledger_ship stores it in a central ledger
    (it fails on any row left out), in a template database each test copies."""

    def ship(url: str) -> None:
        call_command("ledger_ship", str(demo_file), "--to", url, "--host", "demo",
                     stdout=StringIO(), stderr=StringIO())  # fmt: skip

    return postgres_ledgers.template("shipped_demo", ship)


@pytest.fixture
def demo(request, demo_file, tmp_path):
    """This test's copy of the demo ledger (a fork written here stays here), and a reader: a
    SQLite file, or on the PostgreSQL pass (--ledger-backend=postgres) a PostgreSQL database."""
    if request.config.getoption("--ledger-backend") == "postgres":
        url = request.getfixturevalue("postgres_ledgers").fresh(
            request.getfixturevalue("shipped_demo")
        )
        use_ledger(url)
        conn = PostgresConnection(url)
    else:
        copy = tmp_path / "demo.sqlite3"
        shutil.copyfile(demo_file, copy)
        use_ledger(copy)
        conn = sqlite3.connect(f"file:{copy}?mode=ro", uri=True)
    yield conn
    conn.close()


def one(conn, sql: str, *params):
    row = conn.execute(sql, params).fetchone()
    return row[0] if row else None


def most_branched_session(conn) -> str:
    return one(conn, """SELECT t.session_id FROM turns t
        WHERE (SELECT count(*) FROM turns c WHERE c.parent_turn_id = t.id) > 1
        GROUP BY t.session_id ORDER BY count(*) DESC, t.session_id LIMIT 1""")  # fmt: skip


def session_pages(conn) -> list[str]:
    """The most branched session, one of each kind (subagent, fork, archived, with compactions),
    and on the most branched one a turn that is not its head, its thread and its JSON export."""
    branched = most_branched_session(conn)
    kinds = [
        branched,
        one(conn, "SELECT id FROM sessions WHERE routing_key LIKE 'subagent:%' ORDER BY id"),
        one(conn, "SELECT id FROM sessions WHERE routing_key LIKE 'fork:%' ORDER BY id"),
        one(conn, "SELECT id FROM sessions WHERE status = 'archived' ORDER BY id"),
        one(conn, "SELECT t.session_id FROM compactions c JOIN turns t ON t.id = c.turn_id"),
    ]
    turn = one(conn, """SELECT t.id FROM turns t JOIN sessions s ON s.id = t.session_id
        WHERE s.id = ? AND t.id != s.current_turn_id
        AND EXISTS (SELECT 1 FROM tool_calls c WHERE c.turn_id = t.id) ORDER BY t.id""",
        branched)  # fmt: skip
    turn_url = f"/sessions/{quote(branched)}/turns/{quote(turn)}/"
    # A branch point of it: its page offers its answers side by side.
    branch_point = one(conn, """SELECT parent_turn_id FROM turns WHERE session_id = ?
        AND parent_turn_id IS NOT NULL GROUP BY parent_turn_id HAVING count(*) > 1
        ORDER BY parent_turn_id""", branched)  # fmt: skip
    persona = one(conn, "SELECT persona FROM sessions ORDER BY id")
    return [
        "/sessions/",
        "/sessions/?" + urlencode({"persona": persona, "status": "all", "sort": "created"}),
        *(f"/sessions/{quote(s)}/" for s in dict.fromkeys(kinds) if s),
        turn_url,
        turn_url + "thread/",
        f"/sessions/{quote(branched)}/turns/{quote(branch_point)}/",
    ]


def pipeline_pages(conn) -> list[str]:
    """Every dashboard window (presets, a custom range, a source filter), the request list plain
    and filtered, and a failed request of each error stage."""
    now = now_ms()
    source = one(conn, "SELECT event_source FROM nexus_requests GROUP BY 1 ORDER BY count(*) DESC")
    custom = {"since": now - 3 * 86_400_000, "until": now - 86_400_000}
    failed = conn.execute("""SELECT error_stage, min(id) FROM nexus_requests
        WHERE status = 'failed' GROUP BY error_stage ORDER BY error_stage""")  # fmt: skip
    return [
        *(f"/pipeline/?window={w}" for w in ("1h", "24h", "7d", "30d")),
        "/pipeline/?" + urlencode(custom),
        "/pipeline/?" + urlencode({"window": "7d", "source": source}),
        "/pipeline/requests/",
        "/pipeline/requests/?" + urlencode({"status": "failed", "window": "7d", "source": source}),
        *(f"/pipeline/requests/{quote(request_id)}/" for _, request_id in failed),
        "/pipeline/issues/",
        "/pipeline/issues/?" + urlencode({"window": "30d", "status": "all", "sort": "count"}),
        "/alerts/",
    ]


def seed_pages(conn) -> list[str]:
    return ["/", *session_pages(conn), *pipeline_pages(conn), "/health/", "/admin/",
            "/accounts/login/", "/healthz", "/search/?q=error"]  # fmt: skip


def worth_visiting(url: str, visited: dict, walker: Walker) -> bool:
    """A page of a kind not opened yet (one of each kind), HTML, ours, not logging out."""
    if not url.startswith(walker.base) or "/accounts/logout" in url:
        return False
    if query_of(url).get("format") == "json" or urlsplit(url).path.endswith(".json"):
        return False
    pattern = pattern_of(url)
    if pattern.startswith("admin:"):
        admin_pages = sum(n for p, n in visited.items() if p.startswith("admin:"))
        return (
            pattern not in visited
            and admin_pages < MAX_ADMIN_PAGES
            and (pattern.endswith(("_changelist", "_change")) or pattern == "admin:app_list")
        )
    return pattern not in visited and not pattern.startswith("unresolved")


def open_page(page, walker: Walker, url: str) -> bool:
    """Open a page as a person would and wait for its htmx parts (charts, similar failures)."""
    response = page.goto(url)
    walker.visited.append(url)
    if response is None or not response.ok:
        walker.fail(url, f"answers {response and response.status}")
        return False
    if url.split("?")[0] != page.url.split("?")[0] and "/accounts/login/" in page.url:
        walker.fail(url, "redirects to the login page")
        return False
    if page.locator("[hx-trigger^=load]").count():
        page.wait_for_load_state("networkidle")  # the parts it loads after itself
    return True


def check_json_twin(walker: Walker, url: str) -> None:
    if pattern_of(url) in TWINNED:
        walker.counts["pages' JSON twins"] += 1
        walker.json(with_query(url, format="json"), url)


@pytest.fixture
def review_and_export(demo):
    """A review queue of two of the demo's failed turns, and a dataset export's report: their
    pages are reached from /review/ and /datasets/ (issue 31)."""
    from datasets.models import ExportRun
    from review.models import Item, Queue

    failed = demo.execute(
        "SELECT session_id, id FROM turns WHERE status = 'failed' ORDER BY id LIMIT 2"
    ).fetchall()
    queue = Queue.objects.create(
        name="Failed turns", source="failed", created_at=now_ms(), total=len(failed)
    )
    Item.objects.bulk_create(
        [
            Item(queue=queue, position=n, session_id=s, turn_id=t)
            for n, (s, t) in enumerate(failed, start=1)
        ]  # fmt: skip
    )
    ExportRun.objects.create(kind="chat", started_at=now_ms(), finished_at=now_ms(), records=0,
                             report={"records": 0, "left_out": 0})  # fmt: skip


def test_the_walker_follows_every_control_on_every_page(
    page, live_server, admin_by_role, demo, sign_in, review_and_export
):
    sign_in("adele")
    # The walk is over this test's ledger (on the PostgreSQL pass: its database, by name).
    expect(page.locator(".topbar")).to_contain_text(ledger_name(settings.LEDGER_DB))
    walker = Walker(page.request, live_server.url)
    # Parts a page loads by itself (hx-trigger="load") may replace their trigger: record them.
    loaded_by_htmx = []
    page.on("request", lambda r: r.headers.get("hx-request") and loaded_by_htmx.append(
        Control.loaded_by_htmx(r.url, r.headers.get("hx-target", ""))))  # fmt: skip
    queue = deque(live_server.url + path for path in seed_pages(demo))
    visited = Counter(pattern_of(url) for url in queue)  # kinds opened or queued
    while queue and len(walker.visited) < MAX_PAGES:
        url = queue.popleft()
        pattern = pattern_of(url)
        walker.reached.add(pattern)
        loaded_by_htmx.clear()
        if not open_page(page, walker, url):
            continue
        page_url = page.url  # after an intended redirect
        check_json_twin(walker, page_url)
        controls = [Control(**c) for c in page.evaluate(COLLECT_CONTROLS)]
        controls += loaded_by_htmx
        walker.check_controls(page_url, controls)
        if pattern == "pipeline:dashboard":
            # Every element of the default window; a sample of the others.
            every = query_of(page_url) == {"window": "24h"}
            check_charts(walker, page_url, page.evaluate(COLLECT_FIGURES), every=every)
        for control in controls:
            if (
                control.kind == "link"
                and control.url
                and worth_visiting(control.url, visited, walker)
            ):
                visited[pattern_of(control.url)] += 1  # one of each kind
                queue.append(control.url)
    print("\n" + walker.summary())
    unreached = CONTRACT - walker.reached
    unreached_line = [f"no page or control reaches {sorted(unreached)}"] if unreached else []
    assert walker.failures == [] and not unreached, "\n".join(walker.failures + unreached_line)


# -- charts over odd rows ------------------------------------------------------------------------


def write_odd_requests(ledger) -> None:
    """Requests as other programs write them: '' next to NULL, unknown statuses and stages,
    tokens as REAL and text, booleans as 2 and 'true', invalid hook JSON, a REAL start time."""
    odd = [
        {"event_source": ""}, {"event_source": ""}, {"principal_id": ""}, {"status": "weird"},
        {"status": "failed", "error_stage": None}, {"status": "failed", "error_stage": ""},
        {"status": "failed", "error_stage": "warpDrive"},
        {"status": "failed", "error_stage": "runAgent", "principal_id": "p1"},
        {"hooks_matched": '["greet", "greet"]', "hooks_fired": '["greet"]'},
        {"hooks_matched": "{not json", "hooks_fired": "[]"},
        {"agent_model": "m1", "agent_tokens_total": 12.5},
        {"agent_model": "m1", "agent_tokens_total": "34 tokens"},
        {"agent_model": None, "agent_tokens_total": 100},
        {"delivery_channel": None, "delivery_success": 1},
        {"delivery_channel": "", "delivery_success": 2},
        {"delivery_channel": "sms", "delivery_success": "true"},
        {"started_at": T0 + 0.5},
    ]  # fmt: skip
    for i, fields in enumerate(odd):
        ledger.request(**({"started_at": T0 + i * 60_000, "principal_id": "p1"} | fields))
    for i in range(3):
        ledger.request(started_at=T0 + i, principal_id=None, agent_model="m1",
                       agent_tokens_total=100, delivery_channel="sms",
                       delivery_success=1)  # fmt: skip


def test_chart_totals_hold_on_odd_rows(page, live_server, operator, ledger, sign_in):
    write_odd_requests(ledger)
    window = urlencode({"since": T0 - HOUR, "until": T0 + 2 * HOUR})
    sign_in("otto", next_url=f"/pipeline/?{window}")
    walker = Walker(page.request, live_server.url)
    page.wait_for_load_state("networkidle")
    walker.visited.append(page.url)
    walker.check_controls(page.url, [Control(**c) for c in page.evaluate(COLLECT_CONTROLS)])
    check_charts(walker, page.url, page.evaluate(COLLECT_FIGURES), every=True)
    print("\n" + walker.summary())
    assert walker.failures == [], "\n" + "\n".join(walker.failures)


# -- clicking the controls that change the view --------------------------------------------------


def text_of(page, selector: str) -> str:
    return " ".join(page.locator(selector).first.inner_text().split())


def first_page_of_rows(page, sign_in, address: str, table: str):
    """Open a list as the operator: its rows, once the first page of 50 is there."""
    sign_in("otto", next_url=address)
    rows = page.locator(f"{table} tbody tr:not(.more)")
    expect(rows).to_have_count(50)
    return rows


def test_window_buttons_change_the_dashboard(page, live_server, operator, demo, sign_in):
    sign_in("otto", next_url="/pipeline/?window=24h")
    expect(page.locator("#chart-throughput .main-svg").first).to_be_visible()
    before = text_of(page, ".page-head")
    page.locator(".segmented a", has_text="7d").click()
    expect(page).to_have_url(re.compile(r"/pipeline/\?window=7d$"))
    expect(page.locator("#chart-throughput .main-svg").first).to_be_visible()
    assert text_of(page, ".page-head") != before  # "From … to …" says the new window
    expect(page.locator(".segmented a[aria-current]")).to_have_text("7d")


def test_request_filters_and_older_requests_change_the_list(
    page, live_server, operator, demo, sign_in
):
    rows = first_page_of_rows(page, sign_in, "/pipeline/requests/?window=30d", "table.requests")
    everything = text_of(page, "#results .card-head")
    page.select_option("#f-status", "failed")
    expect(page).to_have_url(re.compile(r"status=failed"))
    expect(page).to_have_url(re.compile(r"window=30d"))
    expect(page.locator("#results .card-head")).not_to_have_text(everything)
    expect(rows.first).to_contain_text("failed")
    page.get_by_role("link", name="Older requests ↓").click()
    expect(rows).to_have_count(100)
    statuses = {s.lower() for s in rows.locator("td:first-child").all_inner_texts()}
    assert statuses == {"failed"}, "older rows keep the status filter"


def test_session_filters_and_next_sessions_change_the_list(
    page, live_server, operator, demo, sign_in
):
    rows = first_page_of_rows(page, sign_in, "/sessions/?status=all", "table.sessions")
    everything = text_of(page, "#results p")
    page.get_by_role("link", name=re.compile(r"Next 50 sessions")).click()
    expect(rows).to_have_count(100)
    persona = page.locator("#f-persona option").nth(1).get_attribute("value")
    page.select_option("#f-persona", persona)
    expect(page).to_have_url(re.compile(rf"persona={persona}"))
    expect(page).to_have_url(re.compile(r"status=all"))
    expect(page.locator("#results p").first).not_to_have_text(everything)
    table = text_of(page, "table.sessions tbody")
    page.select_option("#f-sort", "created")
    expect(page).to_have_url(re.compile(r"sort=created"))
    expect(page.locator("table.sessions tbody")).not_to_have_text(table)
    page.get_by_role("link", name="clear filters").click()
    expect(page).to_have_url(re.compile(r"/sessions/$"))
    expect(page.locator("h1")).to_have_text("Sessions")
    expect(page.locator("#f-persona")).to_have_value("")
    expect(rows).to_have_count(50)


def test_a_tree_row_opens_its_turn_in_the_panel(page, live_server, operator, demo, sign_in):
    session = most_branched_session(demo)
    sign_in("otto", next_url=f"/sessions/{session}/")
    panel = text_of(page, "#panel")
    head = one(demo, "SELECT current_turn_id FROM sessions WHERE id = ?", session)
    other = one(demo, "SELECT id FROM turns WHERE session_id = ? AND id != ? ORDER BY id",
                session, head)  # fmt: skip
    page.locator(f"#turn-{other}").click()
    expect(page).to_have_url(re.compile(rf"/sessions/{session}/turns/{other}/$"))
    expect(page.locator("#panel")).not_to_have_text(panel)
    expect(page.locator(f"#turn-{other}")).to_have_class(re.compile("selected"))


@pytest.mark.parametrize("on", ["session", "turn"])
def test_unfold_all_shows_the_whole_tree_and_folds_back(
    page, live_server, operator, demo, sign_in, on
):
    session = most_branched_session(demo)
    turn = one(demo, "SELECT id FROM turns WHERE session_id = ? ORDER BY id", session)
    address = f"/sessions/{session}/" + (f"turns/{turn}/" if on == "turn" else "")
    sign_in("otto", next_url=address)
    rows = page.locator("#tree .tree-row")
    folded = rows.count()
    page.get_by_role("link", name="unfold all").click()
    expect(page.get_by_role("link", name="fold straight stretches")).to_be_visible()
    assert rows.count() >= folded > 0
    if on == "turn":
        expect(page.locator(f"#turn-{turn}")).to_have_class(re.compile("selected"))
    page.get_by_role("link", name="fold straight stretches").click()
    expect(page.get_by_role("link", name="unfold all")).to_be_visible()
    expect(rows).to_have_count(folded)


def test_an_operator_forks_the_demo_and_logs_out(page, live_server, operator, demo, sign_in):
    session = most_branched_session(demo)
    head = one(demo, "SELECT current_turn_id FROM sessions WHERE id = ?", session)
    sign_in("otto", next_url=f"/sessions/{session}/turns/{head}/thread/")
    page.fill("#fork-label", "Walker's fork")
    page.get_by_role("button", name="Fork a new session here").click()
    expect(page.locator("h1")).to_contain_text("Walker's fork")
    page.get_by_role("button", name="log out").click()
    page.goto(live_server.url + "/sessions/")
    expect(page).to_have_url(re.compile(r"/accounts/login/"))


# -- a phone's width -----------------------------------------------------------------------------

# Elements of the main content that stick out of the viewport and are not inside a box that
# scrolls sideways on its own (a wide table or stack may scroll inside its card; the page may not).
OVERFLOW = """() => {
  const width = document.documentElement.clientWidth;
  const scrollsOnItsOwn = (el) => {
    for (let p = el.parentElement; p && p.id !== "main"; p = p.parentElement) {
      const style = getComputedStyle(p);
      const scrolls = ["auto", "scroll"].includes(style.overflowX);
      if (scrolls && p.getBoundingClientRect().right <= width + 1) return true;
    }
    return false;
  };
  const wide = [...document.querySelectorAll("#main *")].filter((el) => {
    const box = el.getBoundingClientRect();
    return box.width > 0 && box.right > width + 1 && !scrollsOnItsOwn(el);
  });
  return {pageWidth: document.documentElement.scrollWidth, width,
          wide: wide.slice(0, 5).map((el) => `${el.tagName.toLowerCase()}.${el.className} ` +
                                             `right=${Math.round(el.getBoundingClientRect().right)}`)};
}"""


def narrow_pages(conn) -> list[str]:
    session = most_branched_session(conn)
    turn = one(conn, "SELECT id FROM turns WHERE session_id = ? ORDER BY id", session)
    failed = conn.execute("""SELECT min(id) FROM nexus_requests WHERE status = 'failed'
        GROUP BY error_stage ORDER BY count(*) DESC LIMIT 2""").fetchall()  # fmt: skip
    return [
        "/sessions/",
        f"/sessions/{session}/",
        f"/sessions/{session}/turns/{turn}/",
        f"/sessions/{session}/turns/{turn}/thread/",
        "/pipeline/requests/",
        *(f"/pipeline/requests/{request_id}/" for (request_id,) in failed),
    ]


def overflowing_on_a_phone(page, live_server, paths: list[str]) -> list[str]:
    page.set_viewport_size(NARROW)
    overflowing = []
    for path in paths:
        page.goto(live_server.url + path)
        page.wait_for_load_state("networkidle")
        found = page.evaluate(OVERFLOW)
        print(f"{NARROW['width']} px: {path} is {found['pageWidth']} px wide")
        if found["pageWidth"] > found["width"] or found["wide"]:
            overflowing.append(f"{path}: {found}")
    return overflowing


def test_session_and_request_pages_fit_a_phone(page, live_server, operator, demo, sign_in):
    sign_in("otto")
    overflowing = overflowing_on_a_phone(page, live_server, narrow_pages(demo))
    assert overflowing == [], "\n" + "\n".join(overflowing)


def test_the_overview_and_health_pages_fit_a_phone(page, live_server, admin_user, demo, sign_in):
    # Their cards sat in 22rem grid columns and their tables had ids in unbreakable cells.
    sign_in("ada")
    overflowing = overflowing_on_a_phone(page, live_server, ["/", "/health/"])
    assert overflowing == [], "\n" + "\n".join(overflowing)
