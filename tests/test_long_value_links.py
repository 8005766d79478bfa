"""Every link the site prints can be followed, whatever the length of the ledger values it
carries: a value too long for a link goes by a short key kept in ledgerweb's database
(ledgerweb/long_values.py), and the page it opens reads the value back (issue 25, item 5)."""

import html
import json
from urllib.parse import urljoin, urlsplit

import pytest
from builders import LEDGER_DB, T0
from links import REQUEST_LINE_LIMIT, get_links_of, links_of, request_line_bytes, unfollowable

from ledgerweb import long_values
from ledgerweb.models import LinkedValue
from pipeline.charts import CHARTS

pytestmark = LEDGER_DB
H = 3_600_000
WINDOW = f"since={T0}&until={T0 + 4 * H}"
# A principal and a persona of 100,000 characters (a 100 kB filter link: gunicorn's 414), in
# every script a ledger holds, a NUL and a quote among them.
PRINCIPAL = "Ωμέγα-한국어-日本語-عربى-\"'; " * 4_000
PERSONA = "π" * 100_000
# A 3,000-character session id: every turn link of its session carried it (and its turn's).
SESSION = "S" + "séance-" * 428 + "!"
TURN = "T" + "ход-" * 750


def follow(client, page_url: str, link: str, **extra):
    """GET a link as a browser would: resolved against its page, refused past the line limit."""
    url = urljoin("http://testserver" + page_url, html.unescape(link))
    assert request_line_bytes(url) <= REQUEST_LINE_LIMIT, url[:120]
    parts = urlsplit(url)
    return client.get(parts.path + (f"?{parts.query}" if parts.query else ""), **extra)


def figures(page: str) -> list[dict]:
    parts = page.split('data-figure="')[1:]
    return [json.loads(html.unescape(part.split('"', 1)[0])) for part in parts]


def bars(figure: dict) -> list[tuple[int, str]]:
    """(count, link) of every bar of a figure that links to its rows."""
    found = []
    for trace in figure["data"]:
        if trace["type"] != "bar" or not trace.get("customdata"):
            continue
        counts = trace["x"] if trace.get("orientation") == "h" else trace["y"]
        found += [(n, url) for n, url in zip(counts, trace["customdata"], strict=True) if url]
    return found


@pytest.fixture
def long_filters(ledger):
    for n in range(3):
        ledger.request(id=f"R{n}", started_at=T0 + n * H, principal_id=PRINCIPAL,
                       session_persona=PERSONA, status="failed", error_stage="runAgent",
                       error_message="x" * 50_000, agent_model="m" * 20_000)  # fmt: skip
    ledger.request(id="other", started_at=T0 + 10, principal_id="mom", session_persona="atlas")
    return ledger


def test_every_chart_bar_of_a_100000_character_principal_can_be_followed_to_its_rows(
    viewer_client, long_filters
):
    links, principal_bars = [], []
    for slug in CHARTS:
        page = viewer_client.get(f"/pipeline/charts/{slug}/?{WINDOW}").content.decode()
        links += links_of(page)
        for figure in figures(page):
            links += [link for _, link in bars(figure)]
            principal_bars += [(n, link) for n, link in bars(figure)
                               if "principal" in link and "~~" in link]  # fmt: skip
    assert not unfollowable(urljoin("http://testserver/", link) for link in links)
    assert sum(n for n, _ in principal_bars) == 3  # the long principal's bars count its rows
    for count, link in principal_bars:
        listed = follow(viewer_client, "/pipeline/", link + "&format=json").json()
        assert listed["errors"] == {}
        assert len(listed["requests"]) == count


def test_a_long_value_goes_by_one_key_and_reads_back_exactly(db):
    assert long_values.for_link("mom") == "mom"  # short values are written as they are
    carried = long_values.for_link(PRINCIPAL)
    assert carried.startswith("~~") and len(carried) < 30
    assert long_values.for_link(PRINCIPAL) == carried  # the same key every time,
    assert LinkedValue.objects.count() == 1  # stored once
    long_values._known.clear()  # another worker: read back from the database
    assert long_values.resolve(carried) == PRINCIPAL


def test_a_long_value_with_a_nul_and_a_lone_surrogate_is_kept_exactly(db):
    # PostgreSQL's text holds neither: the value is kept as JSON (make test runs this file with
    # ledgerweb's database on PostgreSQL too).
    odd = "nul \x00 and a lone \ud800 surrogate " * 20
    carried = long_values.for_link(odd)
    long_values._known.clear()
    assert long_values.resolve(carried) == odd


def test_a_value_that_looks_like_a_key_goes_by_a_key_of_its_own(db):
    """A ledger value may begin with `~~` too: it is never written as it is, so a link's `~~…`
    is always a key and the value comes back exactly."""
    lookalike = "~~" + long_values.key_of("something else")
    carried = long_values.for_link(lookalike)
    assert carried != lookalike and long_values.resolve(carried) == lookalike


def test_a_request_list_filtered_by_a_long_value_pages_and_keeps_its_filter(
    viewer_client, long_filters, monkeypatch
):
    """Page 2 of the long principal's requests: the "older" link carries the filter (by its key)
    and a cursor, and both read back."""
    from pipeline import listing

    monkeypatch.setattr(listing, "PAGE_SIZE", 2)
    first_url = "/pipeline/requests/?" + long_values.query({"principal__exact": PRINCIPAL})
    first = viewer_client.get(first_url)
    body = first.content.decode()
    links = links_of(body)
    assert not unfollowable(urljoin("http://testserver/pipeline/requests/", u) for u in links)
    older = next(link for link in links if "after=" in link)
    second = follow(viewer_client, first_url, older + "&format=json").json()
    shown = viewer_client.get(first_url + "&format=json").json()["requests"]
    assert [r["id"] for r in shown + second["requests"]] == ["R2", "R1", "R0"]


def test_a_key_the_site_does_not_hold_is_said_not_a_500(viewer_client, long_filters):
    page = viewer_client.get("/pipeline/requests/?principal=~~AAAAAAAAAAAAAAAAAAAAAA")
    assert page.status_code == 200
    assert "not a link this site wrote" in page.content.decode()
    data = viewer_client.get("/pipeline/requests/?principal=~~nope&format=json").json()
    assert "principal" in data["errors"]
    assert viewer_client.get("/sessions/~~AAAAAAAAAAAAAAAAAAAAAA/").status_code == 404


@pytest.fixture
def long_session(ledger):
    s = ledger.session(id=SESSION, persona=PERSONA, routing_key="imessage:" + "k" * 5_000)
    root = ledger.turn(s, id=TURN)
    ledger.message(root, 1, content="the first answer")
    ledger.tool_call(root, 1, id="C" + "呼" * 2_000, result="r" * 2_000_000)
    child = ledger.turn(s, root, id="T2")
    other = ledger.turn(s, root, id="T3" + "分" * 1_500)
    ledger.set_head(s, root, child)
    ledger.request(id="Q" + "請" * 2_000, started_at=T0, turn_id=TURN, session_key=s["routing_key"],
                   session_persona=PERSONA, principal_id=PRINCIPAL)  # fmt: skip
    return {"session": s, "turns": [root, child, other]}


def crawl_links(client, start: str, limit: int = 120) -> dict[str, int]:
    """Follow every link of the site from `start`, breadth first (up to `limit` pages): each
    one's status. Fails on the first link a server would refuse as too long."""
    seen, queue, statuses = {start}, [start], {}
    while queue and len(statuses) < limit:
        url = queue.pop(0)
        response = client.get(url)
        statuses[url] = response.status_code
        if not response["Content-Type"].startswith("text/html") or response.streaming:
            continue
        body = response.content.decode()
        assert not unfollowable(urljoin("http://testserver" + url, u) for u in links_of(body))
        for link in get_links_of(body):
            absolute = urljoin("http://testserver" + url, link)
            parts = urlsplit(absolute)
            if parts.netloc != "testserver" or parts.path.startswith(("/static/", "/accounts/")):
                continue
            target = parts.path + (f"?{parts.query}" if parts.query else "")
            if target not in seen and "download=" not in target:
                seen.add(target)
                queue.append(target)
    return statuses


def test_every_link_from_a_session_with_a_3000_character_id_can_be_followed(
    admin_client, long_session
):
    statuses = crawl_links(admin_client, "/sessions/?status=all")
    session_pages = [url for url in statuses if url.startswith("/sessions/~~")]
    assert session_pages, "the session is reached by its key"
    failed = {url: n for url, n in statuses.items() if url.startswith("/sessions/") and n != 200}
    assert failed == {}


def test_a_3000_character_session_id_goes_by_its_key_in_every_turn_link(
    viewer_client, long_session
):
    key = long_values.for_link(SESSION)
    page = viewer_client.get(f"/sessions/{key}/")
    assert page.status_code == 200
    body = page.content.decode()
    turn_links = [link for link in links_of(body) if "/turns/" in link]
    assert turn_links and all(link.startswith(f"/sessions/{key}/turns/") for link in turn_links)
    assert not unfollowable(urljoin("http://testserver/", link) for link in turn_links)
    turn = viewer_client.get(f"/sessions/{key}/turns/{long_values.for_link(TURN)}/?format=json")
    assert turn.status_code == 200 and turn.json()["turn"]["id"] == TURN


def test_the_request_page_of_a_long_principal_links_to_followable_pages(admin_client, long_session):
    request_id = "Q" + "請" * 2_000
    page = admin_client.get(f"/pipeline/requests/{long_values.for_link(request_id)}/")
    assert page.status_code == 200
    links = links_of(page.content.decode())
    assert not unfollowable(urljoin("http://testserver/pipeline/requests/x/", u) for u in links)
    turn_link = next(link for link in links if "/turns/" in link)
    assert follow(admin_client, "/pipeline/requests/x/", turn_link).status_code == 200


def test_the_admin_reaches_a_row_with_a_3000_character_id_and_its_history(
    admin_client, long_session
):
    listing = admin_client.get("/admin/conversations/session/")
    links = links_of(listing.content.decode())
    assert not unfollowable(urljoin("http://testserver/admin/conversations/session/", u)
                            for u in links)  # fmt: skip
    change = next(link for link in links if "/change/" in link and "~~" in link)
    page = follow(admin_client, "/admin/conversations/session/", change)
    assert page.status_code == 200 and SESSION[:100] in page.content.decode()
    history = next(link for link in links_of(page.content.decode()) if "/history/" in link)
    assert follow(admin_client, change, history).status_code == 200
    persona = next(link for link in links if "persona=" in link)  # the 100,000-character one
    filtered = follow(admin_client, "/admin/conversations/session/", persona).content.decode()
    assert SESSION[:100] in filtered and "0 sessions" not in filtered
