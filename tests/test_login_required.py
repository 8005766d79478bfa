"""Every URL of the site needs a signed-in user, except the login page and /healthz."""

import re

import pytest
from builders import LEDGER_DB
from django.urls import URLPattern, URLResolver, get_resolver

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
    response = viewer_client.get("/admin/")
    assert response.status_code == 302
    assert response["Location"].startswith("/admin/login/")


@LEDGER_DB
def test_log_out_is_a_post_and_ends_the_session(viewer_client):
    response = viewer_client.post("/accounts/logout/")
    assert response.status_code == 302
    assert viewer_client.get("/").status_code == 302
