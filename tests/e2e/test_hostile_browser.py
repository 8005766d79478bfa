"""The broken ledger's pages in a real browser: no payload runs and none becomes an element.

The payloads (tests/hostile.py) call alert(): a dialog would be a payload that ran. The `page`
fixture also fails the test on any console error or Content-Security-Policy violation, which is
what an injected inline script or event handler would cause even if it never reached alert().
"""

import pytest
from builders import T0
from hostile import build_broken_ledger
from playwright.sync_api import expect

pytestmark = pytest.mark.django_db(transaction=True, databases="__all__")

# Every page where the broken ledger's text is shown, in each area (the crawl in
# test_hostile_ledger.py covers every URL on the server side). The dashboard's window holds the
# requests written in milliseconds (R1, R3, R4: payloads in sources, hooks, models, channels).
PAGES = [
    "/", "/sessions/?status=all", "/sessions/S1/", "/sessions/S1/turns/T1/",
    "/sessions/S1/turns/T2/thread/", "/sessions/S1/compare/?a=T2&b=C1", "/sessions/S4/",
    "/pipeline/requests/", "/pipeline/requests/R1/", "/pipeline/requests/R4/",
    f"/pipeline/?since={T0 - 3_600_000}&until={T0 + 86_400_000}", "/health/",
    "/admin/conversations/session/", "/admin/pipeline/nexusrequest/R4/change/",
]  # fmt: skip

# Elements a payload would have become, had it been parsed as markup.
INJECTED = """() => ({
  img: document.querySelectorAll('img[onerror], img[src="x"]').length,
  link: [...document.querySelectorAll('a[href], [*|href]')].filter(
    (a) => (a.getAttribute('href') || a.getAttribute('xlink:href') || '')
      .trim().toLowerCase().startsWith('javascript:')).length,
  script: [...document.scripts].filter((s) => s.textContent.includes('alert(')).length,
  handler: [...document.querySelectorAll('*')].filter((e) =>
    [...e.attributes].some((a) => a.name.startsWith('on'))).length,
})"""


def test_no_payload_runs_or_becomes_an_element(page, live_server, admin_user, ledger, sign_in):
    build_broken_ledger(ledger)
    dialogs = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    sign_in("ada")
    for url in PAGES:
        page.goto(live_server.url + url)
        if url.startswith("/pipeline/?"):
            # The charts arrive by htmx: wait until they have drawn (labels hold payloads too).
            expect(page.locator("#chart-sources .main-svg").first).to_be_visible()
            expect(page.locator("#chart-hooks .main-svg").first).to_be_visible()
            page.wait_for_load_state("networkidle")  # every chart, not only these two
        assert page.evaluate(INJECTED) == {"img": 0, "link": 0, "script": 0, "handler": 0}, url
    assert dialogs == []


def test_the_payload_is_shown_as_the_text_it_is(page, live_server, admin_user, ledger, sign_in):
    build_broken_ledger(ledger)
    sign_in("ada")
    page.goto(live_server.url + "/pipeline/requests/R4/")
    expect(page.get_by_text("<script>alert('x')</script>", exact=False).first).to_be_visible()


def test_an_id_cannot_choose_the_name_chromium_saves_a_download_under(
    page, live_server, admin_user, ledger, sign_in
):
    """A tool call whose id ends the header's filename and starts another (issue 25): Chromium
    saved its result, which holds a script, as evil.html. Now it saves a .json of a plain name."""
    from django.urls import reverse

    call_id = "x\"; filename*=UTF-8''evil.html; x=\""
    s = ledger.session(id="S-dl")
    t = ledger.turn(s, id="T-dl")
    ledger.set_head(s, t, t)
    result = '{"page": "<script>alert(1)</script>' + "x" * 1_100_000 + '"}'  # past a page: cut
    ledger.tool_call(t, 1, id=call_id, result=result)
    sign_in("ada")
    page.goto(
        live_server.url + reverse("sessions:payload", args=["S-dl", "T-dl", "result", call_id])
    )
    with page.expect_download() as download:
        page.get_by_role("link", name="Download the whole result").click()
    name = download.value.suggested_filename
    assert name.endswith(".json") and name != "evil.html" and '"' not in name, name
    with open(download.value.path(), encoding="utf-8") as saved:
        assert saved.read() == result


def test_the_odd_id_sessions_open_and_their_turns_and_downloads_work_in_chromium(
    page, live_server, admin_user, sign_in, tmp_path, settings
):
    """Sessions whose ids hold a line break, a NUL, a quote-and-semicolon or 3,000 characters:
    each opens from the session list, its turn opens in the panel, and no page fails or logs an
    error (the `page` fixture fails the test on any console error or CSP violation)."""
    from builders import use_ledger
    from django.urls import reverse
    from hostile import ODD_IDS, build_odd_id_ledger

    path = tmp_path / "odd.sqlite3"
    build_odd_id_ledger(path)
    original = settings.LEDGER_DB
    use_ledger(path)
    try:
        sign_in("ada")
        for kind, odd in ODD_IDS.items():
            page.goto(live_server.url + "/sessions/?status=all")
            page.locator(f'a[href="{reverse("sessions:detail", args=[f"S{odd}"])}"]').first.click()
            expect(page.locator("#tree")).to_be_visible()
            page.locator(".tree-row").first.click()
            expect(page.locator("#panel")).to_contain_text("Turn")
            assert len(page.url) < 4094, kind  # the address a person can bookmark and share
    finally:
        use_ledger(original)
