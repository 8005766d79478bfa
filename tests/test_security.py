"""The security baseline, audited over the whole site: CSRF on every POST, operator actions refused
to viewers however they are sent, scripts only with the request's nonce, a /healthz that tells
nothing. (Anonymous access to every URL is walked in test_login_required.py; the deployment
checks are in test_settings.py.)"""

import re
import sqlite3

import pytest
from builders import LEDGER_DB, T0, use_ledger
from django.test import Client, override_settings
from test_login_required import ALL_URLS

from ledgerweb.db import LEDGER, ledger_path_of

pytestmark = LEDGER_DB


@pytest.fixture
def world(ledger):
    """One session with two turns and an old request: enough for every page and action."""
    s = ledger.session(id="S1", updated_at=T0)
    root = ledger.turn(s, id="T1")
    ledger.turn(s, root, id="T2")
    ledger.set_head(s, root, root)
    ledger.request(id="R1", status="failed", stage="runAgent", error_stage="runAgent",
                   turn_id="T1", request_snapshot="{}")  # fmt: skip
    return ledger


def ledger_rows(ledger) -> list:
    with sqlite3.connect(ledger.path) as conn:
        return [
            conn.execute(f"SELECT * FROM {table} ORDER BY id").fetchall()
            for table in ("sessions", "turns", "nexus_requests")
        ]


# -- CSRF ------------------------------------------------------------------------------------------


def test_every_post_without_a_csrf_token_is_refused(admin_user, world):
    # A superuser, so no refusal comes from a missing permission: only the token is missing.
    client = Client(enforce_csrf_checks=True)
    client.force_login(admin_user)
    before = ledger_rows(world)
    accepted = []
    for url in ALL_URLS:  # one loop, not one test per URL: a test's setup costs more than a POST
        response = client.post(url, {"label": "x", "action": "archive", "confirmed": "yes",
                                     "_selected_action": ["S1"], "days": "1"})  # fmt: skip
        if response.status_code != 403 or b"CSRF" not in response.content:
            accepted.append((url, response.status_code))
    assert accepted == []
    assert len(ALL_URLS) > 20 and ledger_rows(world) == before


def test_a_post_refused_for_its_token_says_why_in_the_sites_layout(admin_user, world):
    """Not Django's bare "403 Forbidden": a form left open past its sign-in is what people meet."""
    client = Client(enforce_csrf_checks=True)
    client.force_login(admin_user)
    response = client.post("/admin/conversations/session/", {"action": "archive"})
    body = response.content.decode()
    assert response.status_code == 403
    assert 'class="topbar"' in body and "<nav" in body, "the site's layout"
    assert "CSRF" in body and "Reload the page" in body and "Forbidden" not in body
    twin = client.post("/search/?format=json", HTTP_ACCEPT="application/json")
    assert twin.status_code == 403 and twin.json()["error"] == "refused"


def test_the_same_post_with_its_token_goes_through(client, operator, world):
    # The counterpart of the test above: the refusal was the missing token, not the request.
    csrf_client = Client(enforce_csrf_checks=True)
    csrf_client.force_login(operator)
    page = csrf_client.get("/sessions/S1/turns/T1/thread/").content.decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    response = csrf_client.post(
        "/sessions/S1/turns/T1/fork/", {"label": "retry", "csrfmiddlewaretoken": token}
    )
    assert response.status_code == 302 and response["Location"] != "/sessions/S1/"


# -- Operator actions ------------------------------------------------------------------------------

CHANGELIST = "/admin/conversations/session/"
# Every action that changes the ledger, sent directly as a POST (no page, no button).
OPERATOR_ACTIONS = {
    "fork": ("/sessions/S1/turns/T1/fork/", {"label": "mine now"}),
    "archive": (CHANGELIST, {"action": "archive", "_selected_action": ["S1"], "confirmed": "yes"}),
    "restore": (CHANGELIST, {"action": "restore", "_selected_action": ["S1"], "confirmed": "yes"}),
    "mark deleted": (
        CHANGELIST,
        {"action": "mark_deleted", "_selected_action": ["S1"], "confirmed": "yes"},
    ),
    "archive idle": (CHANGELIST + "archive-idle/", {"days": "1", "confirmed": "yes"}),
    "retention": ("/admin/pipeline/nexusrequest/retention/", {}),
}


@pytest.fixture
def staff_viewer(django_user_model):
    """A viewer someone gave staff status: the admin lets them in, their role must still hold."""
    from django.contrib.auth.models import Group, Permission

    from ledgerweb.roles import sync_roles

    sync_roles(Group, Permission)
    user = django_user_model.objects.create_user(username="val", password="pw", is_staff=True)
    user.groups.add(Group.objects.get(name="viewer"))
    return user


@pytest.mark.parametrize("action", OPERATOR_ACTIONS)
@pytest.mark.parametrize("persona", ["viewer", "staff_viewer"])
def test_a_viewer_cannot_run_an_operator_action_by_posting(client, world, request, persona, action):
    client.force_login(request.getfixturevalue(persona))
    url, data = OPERATOR_ACTIONS[action]
    before = ledger_rows(world)
    response = client.post(url, data)
    assert ledger_rows(world) == before, f"{persona} ran {action}"
    if url.startswith("/admin/") and persona == "viewer":
        # Not an operator: the admin site refuses them (a page saying which role it needs).
        said = re.sub(r"<[^>]+>", "", response.content.decode())
        assert response.status_code == 403 and "needs the operator role" in said
    elif url == CHANGELIST:
        # The admin offers a staff viewer no such action and changes nothing.
        assert response.status_code in (200, 302)
    else:
        assert response.status_code == 403, (persona, action, response.status_code)


# -- Content-Security-Policy -----------------------------------------------------------------------

PAGES = ["/", "/sessions/", "/sessions/S1/", "/sessions/S1/turns/T1/",
         "/sessions/S1/turns/T1/thread/", "/pipeline/", "/pipeline/requests/",
         "/pipeline/requests/R1/", "/health/", "/admin/", CHANGELIST]  # fmt: skip
CHART_PAGES = {"/pipeline/"}  # plotly.js needs inline styles (docs/decisions.md)
SCRIPT_TAG = re.compile(r"<script\b([^>]*)>", re.I)


def directives(policy: str) -> dict[str, list[str]]:
    return {d.split()[0]: d.split()[1:] for d in policy.split(";") if d.strip()}


@pytest.mark.parametrize("url", PAGES)
def test_scripts_run_only_from_our_origin_or_with_the_nonce(admin_client, world, url):
    response = admin_client.get(url)
    assert response.status_code == 200
    policy = directives(response["Content-Security-Policy"])
    nonces = [s for s in policy["script-src"] if s.startswith("'nonce-")]
    assert policy["script-src"] == ["'self'", *nonces] and len(nonces) == 1, policy["script-src"]
    assert policy["object-src"] == ["'none'"] and policy["base-uri"] == ["'none'"]
    expected_styles = ["'self'", "'unsafe-inline'"] if url in CHART_PAGES else ["'self'"]
    assert policy["style-src"] == expected_styles
    nonce = nonces[0].removeprefix("'nonce-").removesuffix("'")
    for attributes in SCRIPT_TAG.findall(response.content.decode()):
        src = re.search(r'\bsrc="([^"]*)"', attributes)
        if src:  # a file: from our own origin
            assert src.group(1).startswith("/") and not src.group(1).startswith("//"), url
        else:  # inline: only with this response's nonce
            assert f'nonce="{nonce}"' in attributes, (url, attributes)


# -- /healthz --------------------------------------------------------------------------------------


def test_healthz_tells_a_stranger_nothing_but_ok(client, world):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.content == b"ok\n"
    assert response["Content-Type"].startswith("text/plain")
    assert not response.cookies  # no session, no CSRF cookie: nothing to learn or reuse


def test_healthz_answers_plain_http_even_when_https_is_enforced(client, world):
    # A load balancer probes over plain http; every other URL still goes to https.
    with override_settings(SECURE_SSL_REDIRECT=True):
        assert client.get("/healthz").status_code == 200
        assert client.get("/").status_code == 301


# -- What errors reveal ----------------------------------------------------------------------------


@pytest.fixture
def missing_ledger(tmp_path):
    original = ledger_path_of(LEDGER)
    use_ledger(tmp_path / "secret-dir" / "nowhere.sqlite3")
    yield tmp_path / "secret-dir"
    use_ledger(original)


@pytest.mark.django_db(transaction=True, databases="__all__")
@pytest.mark.parametrize("as_json", [False, True])
def test_the_unreadable_ledger_page_shows_its_path_to_staff_only(
    client, viewer, admin_user, missing_ledger, as_json
):
    url = "/?format=json" if as_json else "/"
    client.force_login(viewer)
    response = client.get(url)
    assert response.status_code == 503
    assert b"nowhere.sqlite3" in response.content  # the name, to recognise it
    assert str(missing_ledger).encode() not in response.content
    client.force_login(admin_user)
    assert str(missing_ledger).encode() in client.get(url).content


def test_the_overview_shows_the_ledger_path_to_staff_only(client, viewer, admin_user, world):
    directory = str(world.path.parent)
    client.force_login(viewer)
    data = client.get("/?format=json").json()["ledger"]
    assert data["name"] == world.path.name and data["path"] is None
    page = client.get("/").content.decode()
    assert world.path.name in page and directory not in page
    client.force_login(admin_user)
    assert client.get("/?format=json").json()["ledger"]["path"] == str(world.path)
    assert directory in client.get("/").content.decode()


# -- The demo admin --------------------------------------------------------------------------------


def test_the_demo_admin_password_is_new_for_every_install(django_user_model):
    from io import StringIO

    from django.core.management import call_command

    passwords = []
    for _ in range(2):  # two installs: create the admin, then start again from an empty database
        out = StringIO()
        call_command("demo_admin", stdout=out)
        passwords.append(out.getvalue().split("with the password ", 1)[1].split()[0])
        django_user_model.objects.filter(username="admin").delete()
    assert passwords[0] != passwords[1]
    assert all(len(p) >= 16 for p in passwords)  # 12 random bytes, not a word to guess


def test_a_sign_in_refused_for_its_token_says_why_without_a_500(db):
    response = Client(enforce_csrf_checks=True).post(
        "/accounts/login/", {"username": "x", "password": "y"}
    )
    assert response.status_code == 403 and "Reload the page" in response.content.decode()
