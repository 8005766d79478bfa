"""A signed-in browser context of a given kind (a phone with touch, a browser without
JavaScript), for tests that need one beside the `page` fixture's desktop."""

from urllib.parse import urlencode

DESKTOP = {"viewport": {"width": 1280, "height": 900}}
PHONE = {"viewport": {"width": 390, "height": 844}, "has_touch": True, "is_mobile": True}
NO_SCRIPT = DESKTOP | {"java_script_enabled": False}


def signed_in(browser, live_server, next_url: str, options: dict, username: str = "vera"):
    """(context, page) signed in through the login form and landed on `next_url`; the caller
    closes the context."""
    context = browser.new_context(**options)
    page = context.new_page()
    page.goto(f"{live_server.url}/accounts/login/?{urlencode({'next': next_url})}")
    page.fill("#id_username", username)
    page.fill("#id_password", "pw")
    page.click("button[type=submit]")
    page.wait_for_load_state()
    return context, page
