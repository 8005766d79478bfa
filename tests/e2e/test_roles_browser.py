"""Roles in the browser (issue 27, item 2), clicked as a person would at 1280 px and at 390 px: an
admin by role (no staff flag) gives a colleague the operator role in the admin's People and
roles, and the colleague then enters the admin and is told, on the site's own refused page, that
the health report is an admin's and whom to ask."""

import re

import pytest
from playwright.sync_api import expect

from ledgerweb.roles import role_of

pytestmark = pytest.mark.django_db(transaction=True, databases="__all__")


@pytest.fixture(params=[1280, 390], ids=lambda w: f"{w}px")
def width(request, page) -> int:
    page.set_viewport_size({"width": request.param, "height": 900 if request.param > 500 else 844})
    return request.param


def test_an_admin_gives_a_role_and_the_colleague_is_told_what_it_allows(
    page, live_server, admin_by_role, viewer, sign_in, width, django_user_model
):
    sign_in("adele", next_url="/admin/")
    page.get_by_role("link", name="People and roles").click()
    expect(page).to_have_url(re.compile(r"/admin/ledgerweb/person/$"))
    row = page.locator("#result_list tbody tr", has_text="vera")
    expect(row).to_contain_text("viewer")
    # The action menu (its choices say what each role allows) stays within the list, beside the
    # filter on a desktop, and the page does not scroll sideways on a phone.
    menu = page.locator(".actions select[name=action]")
    if width > 500:
        right = menu.bounding_box()["x"] + menu.bounding_box()["width"]
        assert right <= page.locator("#changelist-filter").bounding_box()["x"]
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    row.locator("input.action-select").check()
    menu.select_option("give_operator_role")
    page.get_by_role("button", name=re.compile("^(Run|Go)$")).click()
    expect(page.locator(".messagelist")).to_contain_text("Given the operator role: vera.")
    expect(page.locator("#result_list tbody tr", has_text="vera")).to_contain_text("operator")
    assert role_of(django_user_model.objects.get(username="vera")) == "operator"

    # vera, now an operator (still no staff flag), enters the admin; the health report is not hers.
    page.context.clear_cookies()
    sign_in("vera", next_url="/admin/")
    expect(page.locator("#site-name")).to_be_visible()
    expect(page.locator("a[href='/admin/conversations/session/']").first).to_be_visible()
    refused = page.context.new_page()  # (Chromium logs a refused page's 403 as a console error)
    refused.set_viewport_size(page.viewport_size)
    refused.goto(f"{live_server.url}/health/")
    expect(refused.locator("h1")).to_have_text("The health report is not for your role")
    main = refused.locator("main")
    expect(main).to_contain_text("needs the admin role")
    expect(main).to_contain_text("You are signed in as vera, an operator.")
    expect(main).to_contain_text("Ask an admin to give you the role: adele.")
    assert refused.evaluate("document.documentElement.scrollWidth") <= width
    refused.close()
