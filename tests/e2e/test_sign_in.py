"""A person opens the dashboard in a real browser, signs in and reads the overview."""

import pytest
from builders import T0
from playwright.sync_api import expect

from ledgerweb.db import ledger_name

pytestmark = pytest.mark.django_db(transaction=True, databases="__all__")


def test_an_anonymous_visit_asks_to_sign_in_then_shows_the_overview(
    page, live_server, viewer, ledger, sign_in, tmp_path
):
    ledger.session(label="Mom - General", updated_at=T0)
    ledger.request(status="failed", stage="runAgent", error_stage="runAgent")

    page.goto(live_server.url + "/")
    expect(page.locator("h1")).to_have_text("Sign in")

    sign_in("vera")
    expect(page.locator("h1")).to_have_text("Overview")
    expect(page.get_by_text("Mom - General")).to_be_visible()
    expect(page.get_by_text("failed at runAgent")).to_be_visible()
    expect(page.locator(".topbar")).to_contain_text(ledger_name(ledger.path))  # file or database
    page.screenshot(path=tmp_path / "overview.png", full_page=True)

    page.get_by_role("button", name="log out").click()
    expect(page.locator("h1")).to_have_text("Sign in")


def test_a_wrong_password_shows_the_reason(page, live_server, viewer, sign_in):
    sign_in("vera", password="wrong")
    expect(page.get_by_role("alert")).to_contain_text("correct username and password")


def test_label_html_is_shown_as_text_and_never_runs(page, live_server, viewer, ledger, sign_in):
    ledger.session(label="<img src=x onerror=\"document.title='pwned'\"><script>alert(1)</script>")
    page.on("dialog", lambda dialog: pytest.fail(f"a payload ran: {dialog.message}"))
    sign_in("vera")
    expect(page.get_by_text("<script>alert(1)</script>", exact=False)).to_be_visible()
    assert page.title() != "pwned"
