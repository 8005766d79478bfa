"""Every URL of the site needs a signed-in user, except the login page and /healthz, and a role:
a signed-in user in no group sees only a page saying to ask an admin for one. Signing in resists
password guessing."""

import re
from datetime import timedelta

import pytest
from builders import LEDGER_DB
from django.conf import settings
from django.urls import URLPattern, URLResolver, get_resolver
from django.utils import timezone

PUBLIC = {"/accounts/login/", "/healthz", "/admin/login/", "/favicon.ico"}


def concrete_urls(patterns=None, prefix="") -> list[str]:
    """Every URL pattern of the project, with sample values in its parameters."""
    urls = []
    for entry in patterns if patterns is not None else get_resolver().url_patterns:
        route = str(entry.pattern)
        # Regex patterns (a few admin ones): drop anchors, fill named groups.
        route = re.sub(r"\(\?P<\w+>[^)]*\)", "x", route).lstrip("^").rstrip("$")
        route = re.sub(r"<(?:\w+:)?\w+>", "x", route)  # path converters
        if isinstance(entry, URLResolver):
            urls += concrete_urls(entry.url_patterns, prefix + route)
        elif isinstance(entry, URLPattern):
            urls.append("/" + prefix + route)
    return sorted(set(urls))


ALL_URLS = concrete_urls()


def test_the_walk_finds_the_site_and_its_admin():
    assert {"/", "/healthz", "/accounts/login/", "/admin/"} <= set(ALL_URLS)
    assert len(ALL_URLS) > 20  # the admin's model pages are in too


@LEDGER_DB
@pytest.mark.parametrize("url", [u for u in ALL_URLS if u not in PUBLIC])
def test_an_anonymous_visitor_is_sent_to_a_login_page(client, url):
    response = client.get(url)
    assert response.status_code == 302, url
    assert re.match(r"^/(accounts|admin)/login/\?next=", response["Location"]), response["Location"]


@LEDGER_DB
@pytest.mark.parametrize("url", [u for u in ALL_URLS if u not in PUBLIC])
def test_an_anonymous_post_is_refused_too(client, url):
    response = client.post(url)
    assert response.status_code in (302, 403), url
    if response.status_code == 302:
        assert "/login/" in response["Location"]


@pytest.fixture
def nobody(django_user_model):
    """Signed up, in no group: even with staff status (the admin's door) there is no role."""
    return django_user_model.objects.create_user(username="nora", password="pw", is_staff=True)


NO_ROLE_OPEN = PUBLIC | {"/accounts/logout/", "/admin/logout/"}


@LEDGER_DB
@pytest.mark.parametrize("url", [u for u in ALL_URLS if u not in NO_ROLE_OPEN])
def test_a_user_in_no_group_sees_only_a_page_asking_for_a_role(client, nobody, url):
    client.force_login(nobody)
    response = client.get(url)
    assert response.status_code == 403, url
    assert b"Ask an admin to give you a role" in response.content
    assert b'aria-label="Main"' not in response.content  # no menu into pages they cannot see
    twin = client.get(url, {"format": "json"}, HTTP_ACCEPT="application/json")
    assert twin.status_code == 403


@LEDGER_DB
def test_a_user_in_no_group_is_told_after_signing_in_and_can_sign_out(client, nobody, admin_user):
    response = client.post(
        "/accounts/login/", {"username": "nora", "password": "pw", "next": "/"}, follow=True
    )
    assert response.status_code == 403 and b"No role yet" in response.content
    assert b"nora" in response.content
    # Whom to ask, and how they give it (issue 27, item 2), as the refused page says.
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", response.content.decode()))
    assert "Ask an admin to give you a role: ada." in text
    assert "manage.py ledger_role USERNAME ROLE" in text
    client.post("/accounts/logout/")
    assert client.get("/").status_code == 302  # signed out: back to the login page


@LEDGER_DB
def test_once_in_the_viewer_group_the_same_user_browses(client, nobody):
    from django.contrib.auth.models import Group, Permission

    from ledgerweb.roles import sync_roles

    sync_roles(Group, Permission)
    nobody.groups.add(Group.objects.get(name="viewer"))
    client.force_login(nobody)
    assert client.get("/").status_code == 200
    assert client.get("/sessions/?format=json").status_code == 200


@LEDGER_DB
def test_the_login_page_and_healthz_are_public(client):
    assert client.get("/accounts/login/").status_code == 200
    assert client.get("/healthz").status_code == 200


@LEDGER_DB
def test_a_viewer_signs_in_and_reaches_the_overview(client, viewer):
    response = client.post(
        "/accounts/login/", {"username": "vera", "password": "pw", "next": "/"}, follow=True
    )
    assert response.redirect_chain[-1][0] == "/"
    assert b"Overview" in response.content
    assert b"vera" in response.content


@LEDGER_DB
def test_a_wrong_password_is_refused_with_a_message(client, viewer):
    response = client.post("/accounts/login/", {"username": "vera", "password": "nope"})
    assert response.status_code == 200
    assert b"Please enter a correct username and password" in response.content


@LEDGER_DB
def test_a_viewer_cannot_enter_the_admin(viewer_client):
    # Refused in the site's layout, saying which role the admin needs (tests/test_roles.py).
    response = viewer_client.get("/admin/")
    assert response.status_code == 403
    said = re.sub(r"<[^>]+>", "", response.content.decode())
    assert "The admin site needs the operator role" in said


@LEDGER_DB
def test_log_out_is_a_post_and_ends_the_session(viewer_client):
    response = viewer_client.post("/accounts/logout/")
    assert response.status_code == 302
    assert viewer_client.get("/").status_code == 302


# -- Password guessing ---------------------------------------------------------------------------


def sign_in(client, username="vera", password="pw", address="198.51.100.7"):
    return client.post(
        "/accounts/login/", {"username": username, "password": password}, REMOTE_ADDR=address
    )


def guess_until_paused(client, username="vera", address="198.51.100.7"):
    for _ in range(settings.AXES_FAILURE_LIMIT):
        sign_in(client, username, "guess", address)


@LEDGER_DB
def test_after_repeated_failures_even_the_right_password_is_refused(client, viewer):
    for attempt in range(1, settings.AXES_FAILURE_LIMIT):
        response = sign_in(client, password=f"guess{attempt}")
        assert b"Please enter a correct username and password" in response.content
    guess_until_paused(client)

    response = sign_in(client)  # the right password
    assert response.status_code == 429
    page = response.content.decode()
    assert "Too many failed sign-ins for <strong>vera</strong>" in page
    assert f"paused for {settings.AXES_COOLOFF_TIME.seconds // 60} minutes" in page
    assert client.get("/").status_code == 302  # still signed out


@LEDGER_DB
def test_the_pause_ends_after_the_cool_off(client, viewer):
    from axes.models import AccessAttempt

    guess_until_paused(client)
    assert sign_in(client).status_code == 429
    AccessAttempt.objects.update(  # as if the cool-off had passed since the last guess
        attempt_time=timezone.now() - settings.AXES_COOLOFF_TIME - timedelta(seconds=1)
    )
    assert sign_in(client).status_code == 302
    assert client.get("/").status_code == 200


@LEDGER_DB
def test_a_pause_holds_only_that_user_from_that_address(client, viewer, operator):
    guess_until_paused(client, "vera", "198.51.100.7")
    assert sign_in(client, "otto", address="198.51.100.7").status_code == 302  # another user
    client.post("/accounts/logout/")
    assert sign_in(client, "vera", address="203.0.113.9").status_code == 302  # another address


@LEDGER_DB
def test_the_admin_login_is_paused_too(client, admin_user):
    for _ in range(settings.AXES_FAILURE_LIMIT):
        client.post("/admin/login/", {"username": "ada", "password": "guess"})
    response = client.post("/admin/login/", {"username": "ada", "password": "pw"})
    assert response.status_code == 429
