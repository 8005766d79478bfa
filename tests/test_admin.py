"""The admin: archive, restore and mark deleted change a status, never delete; who may do what."""

import html
import re
from urllib.parse import urljoin

import pytest
from builders import T0, parse_html
from django.contrib.admin.models import LogEntry
from psycopg.conninfo import conninfo_to_dict

from ledgerweb.db import is_postgres_url

pytestmark = pytest.mark.django_db(transaction=True, databases="__all__")
CHANGELIST = "/admin/conversations/session/"


@pytest.fixture
def sessions(ledger):
    for i in range(3):
        s = ledger.session(id=f"S{i}", label=f"Chat {i}", updated_at=T0 + i)
        t = ledger.turn(s, id=f"T{i}")
        ledger.set_head(s, t, t)
    return ledger


# Read through the builder's connection (commits at once, like the runtime): the same on a
# SQLite file and on a PostgreSQL ledger (pytest --ledger-backend=postgres).
def statuses(ledger) -> dict[str, str]:
    return dict(ledger.conn.execute("SELECT id, status FROM sessions").fetchall())


def last_activity(ledger) -> dict[str, int]:
    return dict(ledger.conn.execute("SELECT id, updated_at FROM sessions").fetchall())


def rows(ledger, table) -> int:
    return ledger.conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]


def act(client, action, ids, confirmed=True):
    data = {"action": action, "_selected_action": ids}
    if confirmed:
        data["confirmed"] = "yes"
    return client.post(CHANGELIST, data)


def test_archiving_asks_first_then_changes_only_the_status(client, operator, sessions):
    client.force_login(operator)
    page = act(client, "archive", ["S0", "S1"], confirmed=False)
    assert page.status_code == 200 and b"Set 2 sessions to archived?" in page.content
    assert statuses(sessions) == {"S0": "active", "S1": "active", "S2": "active"}

    response = act(client, "archive", ["S0", "S1"])
    assert response.status_code == 302
    assert statuses(sessions) == {"S0": "archived", "S1": "archived", "S2": "active"}
    assert rows(sessions, "turns") == 3  # nothing else touched
    # A status change is not activity: last activity stays (it used to become "now").
    assert last_activity(sessions) == {"S0": T0, "S1": T0 + 1, "S2": T0 + 2}
    log = LogEntry.objects.filter(object_id__in=["S0", "S1"])
    assert log.count() == 2 and {e.user for e in log} == {operator}
    assert {e.change_message for e in log} == {
        "Set status from active to archived; last activity unchanged."
    }


def test_restore_brings_sessions_back_still_idle_since_their_last_activity(
    client, operator, sessions
):
    client.force_login(operator)
    act(client, "archive", ["S0"])
    act(client, "restore", ["S0"])
    assert statuses(sessions)["S0"] == "active"
    assert last_activity(sessions)["S0"] == T0
    row = client.get(CHANGELIST + "?q=Chat+0").content.decode().split('class="idle">')[1]
    assert "year" in row.split("<")[0]  # idle since T0, in 2024, not "0 minutes"
    log = LogEntry.objects.filter(object_id="S0").order_by("action_time")
    assert [e.change_message for e in log] == [
        "Set status from active to archived; last activity unchanged.",
        "Set status from archived to active; last activity unchanged.",
    ]


def test_the_confirmation_tells_sessions_with_the_same_label_apart(client, operator, ledger):
    from ledgerfacts.timestamps import now_ms

    ledger.session(id="TWIN-A", label="Untitled", updated_at=now_ms() - 40 * 86_400_000)
    ledger.session(id="TWIN-B", label="Untitled", updated_at=now_ms() - 3 * 86_400_000)
    client.force_login(operator)
    page = act(client, "archive", ["TWIN-A", "TWIN-B"], confirmed=False).content.decode()
    parse_html(page)
    table = page.split('class="session-preview"')[1].split("</table>")[0]
    rows = table.split("<tr>")[2:]
    assert len(rows) == 2
    assert "<code>TWIN-A</code>" in rows[0] and "1\xa0month" in rows[0]  # longest idle first
    assert "<code>TWIN-B</code>" in rows[1] and "3\xa0days" in rows[1]
    for row, sid in zip(rows, ("TWIN-A", "TWIN-B"), strict=True):
        assert "Untitled" in row and f'href="/sessions/{sid}/"' in row
        href = row.split('href="')[1].split('"')[0]
        assert "Untitled" in client.get(href).content.decode()  # the link opens that session


def test_archiving_hundreds_at_once(client, operator, ledger):
    for i in range(300):
        ledger.session(id=f"X{i:03d}")
    client.force_login(operator)
    act(client, "archive", [f"X{i:03d}" for i in range(300)])
    assert set(statuses(ledger).values()) == {"archived"}


def test_archived_sessions_leave_the_default_list_and_say_so(client, operator, sessions):
    client.force_login(operator)
    act(client, "archive", ["S0"])
    listed = [s["id"] for s in client.get("/sessions/?format=json").json()["sessions"]]
    assert "S0" not in listed
    assert b"This session is archived" in client.get("/sessions/S0/").content


def test_only_admins_mark_sessions_deleted(client, operator, admin_user, sessions):
    client.force_login(operator)
    act(client, "mark_deleted", ["S0"])
    assert statuses(sessions)["S0"] == "active"
    client.force_login(admin_user)
    act(client, "mark_deleted", ["S0"])
    assert statuses(sessions)["S0"] == "deleted"
    assert rows(sessions, "sessions") == 3


def test_there_is_no_delete_anywhere(client, admin_user, sessions):
    client.force_login(admin_user)
    page = client.get(CHANGELIST).content.decode()
    assert "delete_selected" not in page
    client.post(
        CHANGELIST, {"action": "delete_selected", "_selected_action": ["S0"], "post": "yes"}
    )
    assert client.post("/admin/conversations/session/S0/delete/", {"post": "yes"}).status_code in (
        403,
        302,
        404,
    )
    assert rows(sessions, "sessions") == 3


def test_viewers_cannot_enter_the_admin_or_post_actions(client, viewer, sessions):
    client.force_login(viewer)
    assert client.get("/admin/").status_code == 403  # a page saying which role it needs
    act(client, "archive", ["S0"])
    assert statuses(sessions)["S0"] == "active"


def test_the_read_only_tables_list_and_link_to_the_dashboard(client, admin_user, sessions):
    sessions.request(id="R1")
    client.force_login(admin_user)
    for url, link in (
        ("/admin/conversations/turn/", "/sessions/S0/turns/T0/"),
        ("/admin/pipeline/nexusrequest/", "/pipeline/requests/R1/"),
    ):
        page = client.get(url).content.decode()
        assert link in page, url
        assert f'href="{url}add/"' not in page  # no "Add" button


def test_the_idle_filter_finds_old_sessions(client, admin_user, sessions):
    client.force_login(admin_user)
    page = client.get(CHANGELIST + "?idle=month").content.decode()
    assert "Chat 0" in page  # T0 is long ago


def test_archive_idle_sessions_previews_then_archives(client, operator, ledger):
    from ledgerfacts.timestamps import now_ms

    ledger.session(id="OLD1", updated_at=now_ms() - 40 * 86_400_000)
    ledger.session(id="OLD2", updated_at=now_ms() - 90 * 86_400_000)
    ledger.session(id="NEW", updated_at=now_ms())
    client.force_login(operator)
    url = "/admin/conversations/session/archive-idle/"
    preview = client.get(url + "?days=30").content.decode()
    assert "<strong>2</strong> active sessions idle for more than 30 days" in preview
    assert preview.index("<code>OLD2</code>") < preview.index("<code>OLD1</code>")
    assert 'href="/sessions/OLD1/"' in preview and "2\xa0months" in preview
    assert statuses(ledger) == {"OLD1": "active", "OLD2": "active", "NEW": "active"}
    before = last_activity(ledger)
    client.post(url, {"days": "60", "confirmed": "yes"})
    assert statuses(ledger) == {"OLD1": "active", "OLD2": "archived", "NEW": "active"}
    assert last_activity(ledger) == before
    # Still idle as long as before: the 30-day preview still counts OLD1 (OLD2 is archived now).
    assert "<strong>1</strong> active session idle" in client.get(url + "?days=30").content.decode()


@pytest.mark.parametrize("days", ["²", "1" * 30, "0", "-5", "abc", "1e9"])
def test_a_bad_idle_days_is_said_and_archives_nothing(client, operator, ledger, days):
    ledger.session(id="OLD", updated_at=T0)
    client.force_login(operator)
    url = "/admin/conversations/session/archive-idle/"
    preview = client.get(url, {"days": days})
    assert preview.status_code == 200
    assert "give a whole number of days" in preview.content.decode()
    answer = client.post(url, {"days": days, "confirmed": "yes"})
    assert answer.status_code == 200 and "give a whole number of days" in answer.content.decode()
    assert statuses(ledger) == {"OLD": "active"}


def test_a_viewer_cannot_archive_idle_sessions_even_by_posting(client, viewer, ledger):
    ledger.session(id="OLD", updated_at=T0)
    client.force_login(viewer)
    client.post("/admin/conversations/session/archive-idle/", {"days": "1", "confirmed": "yes"})
    assert statuses(ledger) == {"OLD": "active"}


def test_admins_see_the_retention_dry_run_and_nothing_changes(client, admin_user, operator, ledger):
    from ledgerfacts.timestamps import now_ms

    ledger.request(id="OLD", started_at=now_ms() - 10 * 86_400_000, request_snapshot="{}")
    url = "/admin/pipeline/nexusrequest/retention/"
    client.force_login(operator)
    assert client.get(url).status_code == 403
    client.force_login(admin_user)
    page = client.get(url).content.decode()
    assert "would drop request_snapshot from 1 requests" in page
    if is_postgres_url(ledger.path):  # named as a database, the password never shown
        name = conninfo_to_dict(ledger.path)["dbname"]
        assert re.search(rf"on <code>postgres://[^:<]*@[^<]*/{name}</code>", page)
    else:
        assert f"on <code>{ledger.path}</code>" in page
    found = ledger.conn.execute("SELECT request_snapshot FROM nexus_requests").fetchone()
    assert tuple(found) == ("{}",)


def test_the_dry_run_says_old_requests_would_be_kept_without_an_archive(client, admin_user, ledger):
    """The admin's dry run has no archive: it said "would copy 0 requests to the archive" and
    "kept 1 …", as if nothing were old and something had been done."""
    from ledgerfacts.timestamps import now_ms

    ledger.request(id="OLD", started_at=now_ms() - 40 * 86_400_000)
    client.force_login(admin_user)
    page = client.get("/admin/pipeline/nexusrequest/retention/").content.decode()
    items = [" ".join(li.split()) for li in re.findall(r"<li>(.*?)</li>", page, re.S)]
    assert (
        "would keep 1 requests past the delete age: retention cannot delete without an "
        "archive (pass --archive-to PATH or a postgres:// URL)" in items
    )
    assert not any("would copy" in item or "kept" in item for item in items)


def test_a_dry_run_past_its_time_limit_says_so_instead_of_failing(client, admin_user, monkeypatch):
    from pipeline import admin as pipeline_admin
    from pipeline.retention_db import TookTooLong

    def too_long(*args, **kwargs):
        raise TookTooLong("canceling statement due to statement timeout")

    monkeypatch.setattr(pipeline_admin, "apply_retention", too_long)
    client.force_login(admin_user)
    response = client.get("/admin/pipeline/nexusrequest/retention/")
    assert response.status_code == 200
    assert "took longer than 60 s and was stopped" in response.content.decode()


def test_the_session_list_shows_turn_counts_in_a_bounded_number_of_queries(
    client, admin_user, ledger, django_assert_max_num_queries
):
    from django.db import connections

    for i in range(40):
        s = ledger.session(id=f"S{i:02d}", label=f"Chat {i}")
        for j in range(i % 4):
            ledger.turn(s, id=f"S{i:02d}-T{j}")
    client.force_login(admin_user)
    # 4 reads + the savepoint and release of the request's read transaction
    with django_assert_max_num_queries(6, connection=connections["ledger"]):
        page = client.get(CHANGELIST).content.decode()
    assert '<td class="field-turn_total">3</td>' in page


def test_the_request_list_filters_by_fixed_choices(client, admin_user, ledger):
    ledger.request(id="R-OK")
    ledger.request(id="R-BAD", status="failed", stage="runAgent", error_stage="runAgent")
    client.force_login(admin_user)
    page = client.get("/admin/pipeline/nexusrequest/?status=failed").content.decode()
    assert "/pipeline/requests/R-BAD/" in page and "/pipeline/requests/R-OK/" not in page
    assert "resolveIdentity" in page  # every stage is offered, known without asking the table


def test_no_delete_statement_reaches_the_ledger_from_the_admin(client, admin_user, sessions):
    from django.db import connections
    from django.test.utils import CaptureQueriesContext

    client.force_login(admin_user)
    with CaptureQueriesContext(connections["ledger_write"]) as writes:
        for action in ("archive", "restore", "mark_deleted"):
            act(client, action, ["S0", "S1"])
        client.post("/admin/conversations/session/archive-idle/", {"days": "1", "confirmed": "yes"})
    statements = [q["sql"].lstrip().upper() for q in writes.captured_queries]
    assert any(s.startswith("UPDATE") for s in statements)
    assert not any(s.startswith("DELETE") for s in statements)


# -- Odd rows, big sorts and searches, missing tables ----------------------------------------


@pytest.mark.parametrize("value", [2, "true"])
def test_a_request_whose_boolean_holds_something_else_opens_and_shows_it(
    client, admin_user, ledger, value
):
    ledger.request(id="R-ODD", delivery_success=value, principal_is_user=1)
    client.force_login(admin_user)
    response = client.get("/admin/pipeline/nexusrequest/R-ODD/change/")
    assert response.status_code == 200
    page = response.content.decode()
    assert f"{value} (not a boolean)" in page


def test_sorting_sessions_by_turns_sorts_by_the_count(client, admin_user, ledger):
    for sid, turns in (("FEW", 1), ("MANY", 3), ("NONE", 0)):
        s = ledger.session(id=sid, label=sid)
        for j in range(turns):
            ledger.turn(s, id=f"{sid}-T{j}")
    client.force_login(admin_user)
    page = client.get(CHANGELIST).content.decode()
    href = re.search(r'<a role="button" href="([^"]*)">Turns</a>', page).group(1)  # header
    response = client.get(urljoin(CHANGELIST, html.unescape(href)))
    assert response.status_code == 200
    sorted_page = response.content.decode()
    order = [sorted_page.index(f"<code>{sid}</code>") for sid in ("NONE", "FEW", "MANY")]
    assert order == sorted(order)  # fewest turns first
    assert sorted_page.count("<code>MANY</code>") == 1  # one row per session, not per turn


def test_compactions_say_the_table_is_absent_when_the_ledger_has_none(client, admin_user, ledger):
    ledger.conn.execute("DROP TABLE compactions")
    client.force_login(admin_user)
    for url in ("/admin/conversations/compaction/", "/admin/conversations/compaction/T1/change/"):
        response = client.get(url)
        assert response.status_code == 200, url
        assert "This ledger has no <code>compactions</code> table" in response.content.decode()


def test_a_search_of_thousands_of_terms_is_capped_and_says_so(client, admin_user, ledger):
    ledger.session(id="S-HIT", label="needle")
    client.force_login(admin_user)
    terms = "needle " + " ".join(f"t{i}" for i in range(1_900))
    response = client.get("/admin/conversations/session/", {"q": terms})
    assert response.status_code == 200
    page = response.content.decode()
    assert "Searched for the first 20 of 1,901 terms" in page


@pytest.mark.parametrize(
    "url",
    [
        "/admin/axes/accesslog/?attempt_time__year=9223372036854775808",
        "/admin/axes/accessattempt/?attempt_time__year=-99999999999999999999",
        "/admin/auth/user/?date_joined__year=9223372036854775808",
    ],
)
def test_a_number_no_column_holds_is_named_not_a_500(client, admin_user, url):
    client.force_login(admin_user)
    page = client.get(url)
    assert page.status_code == 400
    body = html.unescape(page.content.decode())
    name = url.split("?")[1].split("=")[0]
    assert f"{name}=" in body and "out of range" in body
    assert f'href="{url.split("?")[0]}"' in page.content.decode()  # the way on: without it


HUGE = 2_500_000  # characters: past a page's 1,000,000


@pytest.fixture
def huge_rows(ledger):
    s = ledger.session(id="S-huge")
    t = ledger.turn(s, id="T-huge")
    ledger.message(t, 1, id="M-huge", content="m" * HUGE)
    ledger.tool_call(t, 1, id="C-huge", parameters='{"p": "' + "p" * HUGE + '"}',
                     result="<script>" + "r" * HUGE)  # fmt: skip
    ledger.request(id="R-huge", request_snapshot='{"s": "' + "s" * HUGE + '"}',
                   error_stack="e" * HUGE)  # fmt: skip
    return ledger


@pytest.mark.parametrize(
    ("table", "row_id", "fields"),
    [
        ("tool_calls", "C-huge", ["parameters", "result"]),
        ("messages", "M-huge", ["content"]),
        ("nexus_requests", "R-huge", ["request_snapshot", "error_stack"]),
    ],
)
def test_a_huge_rows_admin_page_shows_the_first_million_characters_and_a_download(
    client, admin_user, huge_rows, table, row_id, fields
):
    """A tool call's admin page was 60 MB of HTML on the hostile ledger (issue 25, item 4)."""
    model = {"tool_calls": "conversations/toolcall", "messages": "conversations/message",
             "nexus_requests": "pipeline/nexusrequest"}[table]  # fmt: skip
    url = f"/admin/{model}/{row_id}/change/"
    client.force_login(admin_user)
    page = client.get(url)
    assert page.status_code == 200
    body = page.content.decode()
    assert len(body) < len(fields) * 1_000_000 + 200_000  # it was every value whole: 5 MB here
    parse_html(body)
    notes = re.findall(r"Showing the first ([\d,]+) of ([\d,]+) characters", body)
    assert len(notes) == len(fields) and all(shown == "1,000,000" for shown, _ in notes)
    downloads = re.findall(r'<a href="([^"]+)" download>', body)
    assert len(downloads) == len(fields)
    kind = {"content": "message"}  # a message's content downloads as the payload "message"
    for href in downloads:
        field = next(f for f in fields if f"download={f}" in href or
                     f"/payload/{kind.get(f, f)}/" in href)  # fmt: skip
        whole = client.get(urljoin("http://testserver" + url, html.unescape(href)))
        assert whole.status_code == 200
        query = f"SELECT {field} FROM {table} WHERE id = ?"
        (stored,) = huge_rows.conn.execute(query, (row_id,)).fetchone()
        assert b"".join(whole.streaming_content).decode() == stored


def _ids_on(page: str) -> list[str]:
    """The row ids of an admin change list page, in order."""
    return re.findall(r'<th class="field-id"><a href="[^"]+">([^<]+)</a>', page)


def test_an_admin_list_past_10000_rows_says_10000_plus_and_reaches_every_row(
    client, admin_user, ledger, monkeypatch
):
    """The tool-call list said "10000" for 10,401 rows and its last 401 could not be reached
    (issue 27, item 7). Here the cap is 120 rows (the same code), walked to the end."""
    from ledgerweb import admin as ledger_admin

    monkeypatch.setattr(ledger_admin, "PAGINATOR_CAP", 120)
    s = ledger.session(id="S1")
    t = ledger.turn(s, id="T1")
    for n in range(161):  # a REAL and a text started_at, and two calls a time: all reached
        started = T0 + 0.5 if n == 7 else "yesterday" if n == 8 else T0 + (n // 2) * 1000
        ledger.tool_call(t, n, id=f"C{n:03d}", started_at=started)
    client.force_login(admin_user)
    first = client.get("/admin/conversations/toolcall/").content.decode()
    assert "120+ tool calls" in re.sub(r"<[^>]+>|\s+", " ", first).replace("  ", " ")
    seen, url, pages = [], "/admin/conversations/toolcall/", 0
    while url and pages < 20:
        page = client.get(url).content.decode()
        seen += _ids_on(page)
        found = re.search(r'<a href="([^"]+)"[^>]*>(?:next|older rows) →</a>', page)
        url = urljoin("http://testserver/admin/conversations/toolcall/",
                      html.unescape(found[1])) if found else None  # fmt: skip
        pages += 1
    assert sorted(seen) == [f"C{n:03d}" for n in range(161)]  # every row, each once
    assert len(seen) == len(set(seen))


def test_archiving_after_one_day_says_one_day_and_one_session(client, operator, ledger):
    from ledgerfacts.timestamps import now_ms

    ledger.session(id="OLD", updated_at=now_ms() - 3 * 86_400_000)
    client.force_login(operator)
    url = "/admin/conversations/session/archive-idle/"
    preview = client.get(url + "?days=1").content.decode()
    assert "<strong>1</strong> active session idle for more than 1 day would" in preview
    done = client.post(url, {"days": "1", "confirmed": "yes"}, follow=True).content.decode()
    assert "Archived 1 session idle for more than 1 day. Nothing was deleted." in done
    assert statuses(ledger) == {"OLD": "archived"}
