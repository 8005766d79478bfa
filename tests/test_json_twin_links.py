"""Every HTML page says where its JSON twin is (`Link: <…?format=json>; rel="alternate"`), and a
script that follows the link gets the twin of that very page: the same filters, the same data.
Pages without a twin (a payload, the liveness probe) say nothing."""

from urllib.parse import parse_qs, urljoin, urlsplit

import pytest
import test_url_walker
from test_url_walker import CHART_URLS, URLS

pytestmark = pytest.mark.django_db(databases="__all__")
small_ledger = test_url_walker.small_ledger  # the walker's ledger, as a fixture of this module

# The pages of the URL contract that have no JSON twin: a fragment or page of one payload, the
# similar-failures line and a failed request's issue line (the request's and the twins
# hold them), the rows the live request list inserts (the list's twin holds them, with the same
# filters: ARCHITECTURE §5 gives lists, details and charts twins, not their fragments), the
# probe, the JSON-only answers, and what is not a page (405, 302).
TWINLESS = {
    "healthz",
    "sessions:payload",
    "sessions:export",
    "pipeline:similar",
    "issues:of_request",
    "search:in_session",
    "datasets:export",
    "live:request_rows",
}
PAGES_WITH_TWINS = [
    url for name, (url, status) in URLS.items() if url and status == 200 and name not in TWINLESS
] + [url for url, _ in CHART_URLS]
PAGES_WITHOUT_TWINS = [URLS[name][0] for name in sorted(TWINLESS)]


def alternate_link(response) -> str | None:
    """The URL of the response's rel="alternate" JSON link, as a browser or script reads it."""
    header = response.headers.get("Link")
    if header is None:
        return None
    target, *params = (part.strip() for part in header.split(";"))
    assert 'rel="alternate"' in params and 'type="application/json"' in params, header
    assert target.startswith("<") and target.endswith(">"), header
    return target[1:-1]


def query_of(url: str) -> dict[str, list[str]]:
    return parse_qs(urlsplit(url).query, keep_blank_values=True)


@pytest.mark.parametrize("url", PAGES_WITH_TWINS)
def test_every_page_links_to_its_twin_and_the_link_answers_json(client, operator, small_ledger,
                                                                url):  # fmt: skip
    client.force_login(operator)
    page = client.get(url)
    assert page["Content-Type"].startswith("text/html")
    twin_url = urljoin("http://testserver" + url, alternate_link(page))
    assert urlsplit(twin_url).path == urlsplit(url).path
    assert query_of(twin_url) == query_of(url) | {"format": ["json"]}
    twin = client.get(twin_url)
    assert twin.status_code == 200, twin_url
    assert twin["Content-Type"] == "application/json"
    twin.json()


@pytest.mark.parametrize("url", PAGES_WITHOUT_TWINS)
def test_a_page_without_a_twin_points_to_none(client, operator, small_ledger, url):
    client.force_login(operator)
    assert "Link" not in client.get(url).headers


@pytest.mark.parametrize(
    ("page", "filter_name", "value"),
    [("/sessions/", "persona", "coach <b>&"), ("/pipeline/requests/", "source", "imessage & co")],
)
def test_a_lists_twin_link_keeps_its_filters(viewer_client, small_ledger, page, filter_name,
                                              value):  # fmt: skip
    response = viewer_client.get(page, {filter_name: value, "status": "all"})
    twin = viewer_client.get(urljoin("http://testserver" + page, alternate_link(response)))
    assert twin.json()["filters"][filter_name] == value


def test_a_pasted_id_that_jumps_has_no_twin_link(viewer_client, small_ledger):
    response = viewer_client.get("/search/", {"q": "R1"})
    assert response.status_code == 302 and "Link" not in response.headers


def test_a_session_id_with_odd_characters_gives_a_twin_link_that_finds_it(viewer_client, ledger):
    ledger.session(id="a b>c")
    response = viewer_client.get("/sessions/a%20b%3Ec/")
    twin = viewer_client.get(urljoin("http://testserver/", alternate_link(response)))
    assert twin.json()["session"]["id"] == "a b>c"
