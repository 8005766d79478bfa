"""Deliberately broken and huge ledgers, crawled page by page: every page answers (200, or a clear
404), says what is wrong, never lets a payload through as markup, and answers in bounded time.

Each response's server time is recorded; the worst is printed at the end of the module. With
HOSTILE_CRAWL_DOC=1 the timings also replace the "Hostile ledger crawl" section of
docs/benchmarks.md.
"""

import json
import os
import re
import sqlite3
import time
import urllib.error
import urllib.request
from urllib.parse import urljoin, urlsplit

import pytest
from builders import LEDGER_DB, body_of, parse_html, use_ledger
from hostile import (
    BIG,
    BIG_TURN,
    BROKEN_PAGES,
    DEEP,
    DEEP_HEAD,
    DEEP_TURNS,
    HUGE_PAGES,
    ODD_BIG,
    ODD_BIG_BYTES,
    ODD_IDS,
    SLOW_HUGE_PAGES,
    WIDE,
    WIDE_TURNS,
    build_broken_ledger,
    build_huge_ledger,
    build_odd_id_ledger,
)

from sessions import json_twins, views

# Generous on purpose: a hang fails the crawl, a slow machine does not. It is gunicorn's worker
# timeout in `make serve`: a page slower than this never reaches a user at all.
RESPONSE_BOUND_S = 30
# A payload that got through as markup would appear as a real tag (an unescaped "<"); as text
# its "<" is "&lt;" and its quotes may stay, which is harmless.
LIVE_PAYLOAD = re.compile(
    r"<script>alert|<img\s[^>]*\bonerror\s*=|<a\s[^>]*href=[\"']?javascript:", re.I
)

DOCUMENTING = os.environ.get("HOSTILE_CRAWL_DOC") == "1"
# (ledger, url, status, seconds, bytes) of every crawled response in this module.
_timings: list[tuple[str, str, int, float, int]] = []


def crawl(client, ledger_name: str, url: str):
    start = time.perf_counter()
    response = client.get(url)
    elapsed = time.perf_counter() - start
    _timings.append((ledger_name, url, response.status_code, elapsed, len(body_of(response))))
    assert elapsed < RESPONSE_BOUND_S, f"{url} took {elapsed:.1f} s"
    return response


def assert_inert(response, url: str) -> str:
    body = body_of(response).decode()
    if response["Content-Type"].startswith("text/html"):
        match = LIVE_PAYLOAD.search(body)
        assert match is None, (url, body[max(0, match.start() - 200) : match.end() + 50])
    return body


@pytest.fixture(scope="module", autouse=True)
def report_the_worst_response(request):
    yield
    if not _timings:
        return
    worst = max(_timings, key=lambda t: t[3])
    line = f"hostile crawl: {len(_timings)} responses, worst {worst[3]:.2f} s ({worst[1]})"
    plugins = request.config.pluginmanager
    reporter, capture = plugins.get_plugin("terminalreporter"), plugins.get_plugin("capturemanager")
    if reporter and capture:
        with capture.global_and_fixture_disabled():  # shown even when the tests pass
            reporter.write_line("\n" + line)
    if DOCUMENTING:
        write_benchmark_section(_timings)
    _timings.clear()


# -- The broken ledger -------------------------------------------------------------------------


@pytest.fixture
def broken(ledger):
    ledger.leaves_out_sessions = True  # on PostgreSQL, as ledger_ship: see skip_if_left_out
    build_broken_ledger(ledger)
    return ledger


def skip_if_left_out(broken, url: str) -> None:
    """A PostgreSQL ledger holds what ledger_ship stores: not session S1 (a turn's time is the
    text 'yesterday'), nor requests R5 and R6 (a REAL or text time, a flag of 2 or 'true'). Their
    pages are not there to test; every other page is."""
    gone = [i for i in broken.left_out if f"/{i}/" in url]
    if gone:
        pytest.skip(f"a PostgreSQL ledger cannot hold {', '.join(gone)}: ledger_ship leaves it out")


@LEDGER_DB
@pytest.mark.parametrize("url", BROKEN_PAGES)
def test_every_page_of_a_broken_ledger_answers_and_stays_inert(admin_client, broken, url):
    skip_if_left_out(broken, url)
    response = crawl(admin_client, "broken", url)
    assert response.status_code == 200, (url, response.status_code)
    body = assert_inert(response, url)
    if response["Content-Type"].startswith("text/html") and "/charts/" not in url:
        parse_html(body)


@LEDGER_DB
def test_the_broken_session_says_what_is_wrong(admin_client, broken):
    skip_if_left_out(broken, "/sessions/S1/")
    page = admin_client.get("/sessions/S1/").content.decode()
    for problem in ("loops back on itself", "does not exist", "the session head is not a leaf",
                    "unknown turn status", "(seconds?)"):  # fmt: skip
        assert problem in page, problem


@LEDGER_DB
def test_a_turn_written_in_seconds_is_flagged_where_its_time_is_shown(admin_client, broken):
    skip_if_left_out(broken, "/sessions/S1/")
    page = admin_client.get("/sessions/S1/turns/T3/").content.decode()
    assert "(seconds?)" in page
    assert "1970" not in page  # not read as milliseconds after the epoch


@LEDGER_DB
def test_the_broken_request_says_what_is_wrong(admin_client, broken):
    page = admin_client.get("/pipeline/requests/R1/").content.decode().replace("&#x27;", "'")
    for problem in (
        "unknown stage 'warpDrive'", "runAgent: -5 ms cannot be a duration",
        "teleport: 'slow' is not a number", "there is no error_message",
        "hooks_matched is not valid JSON", "turn_id missing-turn does not exist",
    ):  # fmt: skip
        assert problem in page, problem


@LEDGER_DB
def test_payloads_in_hook_names_and_snapshot_keys_are_shown_as_text(admin_client, broken):
    page = admin_client.get("/pipeline/requests/R4/").content.decode()
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in page  # a hook name
    assert "&lt;img&gt;" in page  # a snapshot key
    assert "javascript:alert(1)" in page and 'href="javascript:' not in page


@LEDGER_DB
def test_control_characters_are_shown_as_symbols(admin_client, broken):
    skip_if_left_out(broken, "/sessions/S1/")  # its label
    page = admin_client.get("/sessions/").content.decode()
    assert "\x07" not in page and "␇bell" in page
    data = admin_client.get("/sessions/?format=json&status=all").json()
    assert any("\x07" in (s["label"] or "") for s in data["sessions"])  # JSON keeps the data


# -- The huge ledger ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def huge_ledger_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("huge") / "huge.sqlite3"
    build_huge_ledger(path)
    return path


@pytest.fixture
def huge(huge_ledger_file, settings):
    # Built once for the module; each test points the ledger aliases at it (hence
    # transaction=True below: no test transaction is open on the alias being moved).
    use_ledger(huge_ledger_file)
    # Measure each page's whole cost: with the default limit (2 s a query) a slow query on a
    # busy machine would answer "That took too long" instead, a behaviour tested elsewhere.
    settings.LEDGER_QUERY_TIMEOUT_MS = RESPONSE_BOUND_S * 1000
    return huge_ledger_file


class Fetched:
    def __init__(self, status: int, content_type: str, content: bytes):
        self.status_code, self.content = status, content
        self.headers = {"Content-Type": content_type}

    def __getitem__(self, header: str) -> str:
        return self.headers[header]

    def json(self):
        return json.loads(self.content)


@pytest.fixture
def fetch(live_server, admin_client):
    """GET a page over HTTP from the live server, signed in as an admin, and time it.

    Real HTTP rather than the test client: the client copies the template context at every
    {% include %}, which makes a 20,000-step page several times slower than a user sees it."""
    cookie = f"sessionid={admin_client.cookies['sessionid'].value}"

    def fetch(url: str, documented: bool = True) -> Fetched:
        start = time.perf_counter()
        request = urllib.request.Request(live_server.url + url, headers={"Cookie": cookie})
        try:
            with urllib.request.urlopen(request, timeout=RESPONSE_BOUND_S * 2) as response:
                fetched = Fetched(response.status, response.headers["Content-Type"],
                                  response.read())  # fmt: skip
        except urllib.error.HTTPError as error:
            fetched = Fetched(error.code, error.headers["Content-Type"], error.read())
        elapsed = time.perf_counter() - start
        if documented:  # not pages made bigger than users get, to count them whole faster
            _timings.append(("huge", url, fetched.status_code, elapsed, len(fetched.content)))
        assert elapsed < RESPONSE_BOUND_S, f"{url} took {elapsed:.1f} s"
        return fetched

    return fetch


HUGE = pytest.mark.django_db(transaction=True, databases="__all__")


@HUGE
@pytest.mark.parametrize("url", HUGE_PAGES + (SLOW_HUGE_PAGES if DOCUMENTING else []))
def test_every_page_of_a_huge_ledger_answers_in_bounded_time(fetch, huge, url):
    response = fetch(url)
    assert response.status_code == 200, (url, response.status_code)
    assert_inert(response, url)


def path_of(url: str) -> str:
    """A link from a JSON twin (absolute) as a path for `fetch`."""
    return urlsplit(url)._replace(scheme="", netloc="").geturl()


@HUGE
def test_the_deep_thread_is_whole(fetch, huge, monkeypatch):
    # Its JSON twin comes in pages, each with the previous one's URL: fewer, bigger pages here.
    monkeypatch.setattr(views, "THREAD_PAGE_TURNS", DEEP_TURNS // 4)
    thread = fetch(f"/sessions/{DEEP}/turns/{DEEP_HEAD}/thread/?format=json", documented=False)
    thread = thread.json()
    assert thread["problems"] == []
    steps = thread["steps"]
    while thread["previous"]:
        thread = fetch(path_of(thread["previous"]), documented=False).json()
        steps += thread["steps"]
    assert len({s["turn"]["id"] for s in steps}) == len(steps) == DEEP_TURNS


@HUGE
def test_the_20000_deep_thread_comes_in_bounded_pages(fetch, huge):
    for url in (f"/sessions/{DEEP}/turns/{DEEP_HEAD}/thread/",
                f"/sessions/{DEEP}/turns/{DEEP_HEAD}/thread/?format=json",
                f"/sessions/{DEEP}/turns/{DEEP_HEAD}/thread/?page=1"):  # fmt: skip
        assert len(fetch(url).content) < PAGE_BOUND_BYTES, url
    # The old "all turns" address (10 s, 12 MB) opens the first page.
    first = fetch(f"/sessions/{DEEP}/turns/{DEEP_HEAD}/thread/?all=1")
    assert len(first.content) < PAGE_BOUND_BYTES
    assert "user says D00000" in first.content.decode()


@HUGE
def test_the_wide_session_draws_every_turn(fetch, huge, monkeypatch):
    # Its JSON twin comes in pages, each with the next one's URL: fewer, bigger pages here.
    monkeypatch.setattr(json_twins, "JSON_PAGE_TURNS", WIDE_TURNS // 4)
    wide = fetch(f"/sessions/{WIDE}/?format=json", documented=False).json()
    assert wide["problems"] == []
    turns = wide["turns"]
    while wide["next"]:
        wide = fetch(path_of(wide["next"]), documented=False).json()
        turns += wide["turns"]
    assert len({t["id"] for t in turns}) == len(turns) == WIDE_TURNS


# A page of the session tree, or of its JSON twin, whatever the session's size (it was 8 MB for
# the 50,000-turn session, 39 MB unfolded, 28 MB as JSON).
PAGE_BOUND_BYTES = 3_000_000


@HUGE
def test_the_50000_turn_session_comes_in_bounded_pages(fetch, huge):
    for url in (f"/sessions/{WIDE}/", f"/sessions/{WIDE}/?unfold=all",
                f"/sessions/{WIDE}/?format=json"):  # fmt: skip
        assert len(fetch(url).content) < PAGE_BOUND_BYTES, url


@HUGE
@pytest.mark.parametrize("number", [0, 12_345, WIDE_TURNS // 2, 37_526, WIDE_TURNS - 1])
def test_a_turn_anywhere_in_the_50000_turn_session_opens_on_a_bounded_page(fetch, huge, number):
    turn = f"W{number:05d}"  # the root, turns on side branches, the middle, the head
    html = fetch(f"/sessions/{WIDE}/turns/{turn}/").content.decode()
    assert len(html) < PAGE_BOUND_BYTES
    assert f'<a class="tree-row selected visited" id="turn-{turn}"' in html
    assert f"Turn <code>{turn}</code>" in html


@HUGE
def test_a_ten_megabyte_message_is_shown_in_part_and_downloaded_whole_on_demand(fetch, huge):
    with sqlite3.connect(huge) as conn:
        (length,) = conn.execute("SELECT length(content) FROM messages WHERE id = 'MB1'").fetchone()
    panel = fetch(f"/sessions/{BIG}/turns/{BIG_TURN}/").content.decode()
    assert len(panel) < 1_000_000  # the page carries neither the message nor the tool result
    assert f"of {length:,} characters" in panel  # and says how much there is
    # "Load all" shows as much as a page holds and offers the rest as a download.
    url = f"/sessions/{BIG}/turns/{BIG_TURN}/payload/message/MB1/"
    more = fetch(url).content.decode()
    assert len(more) < PAGE_BOUND_BYTES and f"of {length:,} characters" in more
    whole = fetch(url + "?download=1", documented=False).content.decode()
    assert len(whole) == length > 10_000_000


# -- The odd-id ledger: ids with a line break, a NUL, a quote-and-semicolon, 3,000 characters, and
# a 60 MB value (issue 25) -------------------------------------------------------------------------

SAFE_DOWNLOAD = re.compile(r'attachment; filename="[A-Za-z0-9_-][A-Za-z0-9._-]{0,119}\.(json|txt)"')


@pytest.fixture(scope="module")
def odd_ledger_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("odd") / "odd.sqlite3"
    build_odd_id_ledger(path)
    return path


@pytest.fixture
def odd(odd_ledger_file, settings):
    use_ledger(odd_ledger_file)
    settings.LEDGER_QUERY_TIMEOUT_MS = RESPONSE_BOUND_S * 1000  # each page's whole cost
    return odd_ledger_file


def odd_start_pages() -> list[str]:
    """Every page of each odd id's rows, and of the 60 MB value's, as the site links them."""
    from django.urls import reverse

    from ledgerweb import long_values

    pages = ["/sessions/?status=all", "/pipeline/requests/", "/search/?q=long+field",
             "/admin/conversations/toolcall/", "/admin/pipeline/nexusrequest/"]  # fmt: skip
    for odd in ODD_IDS.values():
        s, t, t2, m, c, r = (f"{p}{odd}" for p in ("S", "T", "T2", "M", "C", "R"))
        turn = reverse("sessions:turn", args=[s, t])
        pages += [
            reverse("sessions:detail", args=[s]), turn, turn + "?format=json",
            reverse("sessions:turn", args=[s, t2]),
            reverse("sessions:thread", args=[s, t2]),
            reverse("sessions:thread", args=[s, t2]) + "?format=json",
            reverse("sessions:compare", args=[s]) + "?" + long_values.query({"a": t, "b": t2}),
            reverse("sessions:call", args=[s, t, c]),
            *(reverse("sessions:payload", args=[s, t, kind, item])
              for kind, item in (("message", m), ("parameters", c), ("result", c))),
            reverse("pipeline:request", args=[r]),
            reverse("pipeline:request", args=[r]) + "?format=json",
            "/pipeline/requests/?" + long_values.query({"principal": f"principal {odd}"}),
            "/sessions/?" + long_values.query({"persona": f"persona {odd}", "status": "all"}),
            "/search/?" + long_values.query({"q": r}),
            *(f"/admin/{model}/{quote_admin(long_values.for_link(key))}/change/"
              for model, key in (("conversations/session", s), ("conversations/toolcall", c),
                                 ("conversations/message", m), ("pipeline/nexusrequest", r))),
        ]  # fmt: skip
    big_session, big_turn, big_call = ODD_BIG
    pages += [
        reverse("sessions:detail", args=[big_session]),
        reverse("sessions:turn", args=[big_session, big_turn]),
        reverse("sessions:turn", args=[big_session, big_turn]) + "?format=json",
        reverse("sessions:call", args=[big_session, big_turn, big_call]),
        reverse("sessions:payload", args=[big_session, big_turn, "result", big_call]),
        f"/admin/conversations/toolcall/{big_call}/change/",
        "/search/?q=rows",
    ]
    return pages


def quote_admin(pk: str) -> str:
    from django.contrib.admin.utils import quote

    return quote(pk)


@HUGE
def test_the_odd_id_ledger_is_crawled_link_by_link_and_every_download_is_named_safely(
    admin_client, odd
):
    """Every page of every odd id answers and stays inert, every link it prints can be followed
    (under gunicorn's request line) and answers, and every download's header names a plain file
    and its body is the whole value."""
    from links import REQUEST_LINE_LIMIT, get_links_of, links_of, request_line_bytes

    pages, seen, downloads = list(odd_start_pages()), set(), {}
    start_count = len(pages)
    for index, url in enumerate(pages):
        response = crawl(admin_client, "odd ids", url)
        if response.status_code in (301, 302):
            response = crawl(admin_client, "odd ids", response["Location"])
        assert response.status_code == 200, (url[:100], response.status_code)
        if response.streaming or not response["Content-Type"].startswith("text/html"):
            continue
        body = assert_inert(response, url)
        for link in links_of(body):
            target = urljoin("http://testserver" + url, link)
            assert request_line_bytes(target) <= REQUEST_LINE_LIMIT, (url[:80], target[:120])
        if index >= start_count:
            continue  # one level of links past the start pages: every kind of control is met
        for link in get_links_of(body):
            parts = urlsplit(urljoin("http://testserver" + url, link))
            target = parts.path + (f"?{parts.query}" if parts.query else "")
            if parts.netloc != "testserver" or parts.path.startswith(
                ("/static/", "/accounts/", "/admin/logout")
            ):
                continue
            if "download=" in parts.query:
                downloads.setdefault(target, url)
            elif target not in seen:
                seen.add(target)
                pages.append(target)
    assert len(downloads) >= 4 * len(ODD_IDS) + 1  # each odd id's long fields, and the 60 MB one
    for url, page in downloads.items():
        start = time.perf_counter()
        response = admin_client.get(url)
        size = sum(len(piece) for piece in response.streaming_content)
        _timings.append(("odd ids", url, response.status_code, time.perf_counter() - start, size))
        assert response.status_code == 200, (url[:100], page[:100])
        assert SAFE_DOWNLOAD.fullmatch(response["Content-Disposition"]), response[
            "Content-Disposition"
        ]
        if ODD_BIG[2] in url:
            assert size >= ODD_BIG_BYTES  # the whole 60 MB, streamed


# -- docs/benchmarks.md ------------------------------------------------------------------------


def write_benchmark_section(timings) -> None:
    import platform
    import subprocess

    import django

    from tools.docfile import replace_section

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()  # fmt: skip
    rows = sorted(timings, key=lambda t: -t[3])
    lines = [
        "# Benchmarks: the hostile ledger crawl",
        "",
        "```sh",
        "HOSTILE_CRAWL_DOC=1 .venv/bin/pytest tests/test_hostile_ledger.py -q",
        "```",
        "",
        f"- Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; code: commit {commit}",
        f"- Python {platform.python_version()}, Django {django.get_version()}, "
        f"SQLite {sqlite3.sqlite_version}; {os.cpu_count()} cores; load average at the end "
        + " / ".join(f"{x:.2f}" for x in os.getloadavg()),
        "- One request per page, signed in as a superuser, as part of the test run: a smoke "
        "measurement, not a benchmark. Broken ledger: in-process (`django.test.Client`); huge "
        "ledger: over HTTP from pytest-django's live server (the test client's template "
        "instrumentation would triple the big pages' times), with the query time limit raised "
        f"to {RESPONSE_BOUND_S} s so that each page's whole cost shows (with the default 2 s a "
        'query that runs longer answers "That took too long"). The test fails any response '
        f"slower than {RESPONSE_BOUND_S} s.",
        "- Ledgers (`tests/hostile.py`): *broken* (invalid JSON, cycles, orphans, payloads in "
        "every text column, seconds for milliseconds) and *huge* (a 20,000-deep linear thread "
        "`DEEP`, a 50,000-turn session `WIDE` with 1,000 side branches, a 10 MB message and "
        "a 10 MB tool result in `BIG`; two messages per turn).",
        "",
        f"Worst: **{rows[0][3]:.2f} s** for `{rows[0][1]}` ({rows[0][0]} ledger). "
        "Every response over 0.5 s:",
        "",
        "| ledger | page | status | seconds | MB |",
        "|---|---|--:|--:|--:|",
    ]
    lines += [f"| {led} | `{url}` | {status} | {secs:.2f} | {size / 1e6:.1f} |"
              for led, url, status, secs, size in rows if secs >= 0.5]  # fmt: skip
    lines += ["", f"All other {sum(1 for r in rows if r[3] < 0.5)} responses took under 0.5 s."]
    replace_section("# Benchmarks: the hostile ledger crawl", "\n".join(lines))
