"""Browser tests: Playwright drives Debian's Chromium (no browser download) against a live server.

Every page a test opens records console errors and Content-Security-Policy violations; the
`page` fixture fails the test if any happened.
"""

import os
from pathlib import Path
from urllib.parse import urlencode

import pytest

CHROMIUM = Path("/usr/bin/chromium")
# Playwright's sync API runs an event loop in this thread; the ORM calls made by fixtures are
# still plain synchronous code.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

# Collects violations in the page itself (Playwright's init scripts are not subject to the CSP).
RECORD_CSP_VIOLATIONS = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__cspViolations.push(e.violatedDirective + " " + (e.blockedURI || "inline"));
});
"""


def pytest_collection_modifyitems(items):
    for item in items:
        if "/e2e/" in str(item.fspath):
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(scope="session")
def browser():
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: `make test` installs Debian's chromium package")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM),
            headless=True,
            # Flags for a sandboxed root CI machine without network beyond loopback.
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ],
        )
        yield browser
        browser.close()


# What the browser says of a request made while the test holds the network down (a test marked
# drops_connection): expected there, and only there.
OFFLINE = "net::ERR_INTERNET_DISCONNECTED"


@pytest.fixture
def page(browser, request):
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    context.add_init_script(RECORD_CSP_VIOLATIONS)
    page = context.new_page()
    problems = []
    offline_expected = request.node.get_closest_marker("drops_connection") is not None

    def on_console(message) -> None:
        if message.type == "error" and not (offline_expected and OFFLINE in message.text):
            problems.append(f"console: {message.text}")

    page.on("console", on_console)
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    yield page
    try:
        problems += [f"CSP: {v}" for v in page.evaluate("window.__cspViolations || []")]
    finally:
        context.close()
    assert problems == [], problems


@pytest.fixture
def sign_in(page, live_server):
    """Sign a user in through the login form, as a person would."""

    def sign_in(username: str, password: str = "pw", next_url: str = "/") -> None:
        page.goto(f"{live_server.url}/accounts/login/?{urlencode({'next': next_url})}")
        page.fill("#id_username", username)
        page.fill("#id_password", password)
        page.click("button[type=submit]")
        page.wait_for_load_state()

    return sign_in
