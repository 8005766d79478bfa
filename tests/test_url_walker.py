"""The walker's cheap twin (no browser): every URL pattern of the project, asked for as a page and
as htmx asks for it (with and without a target), answers what it should, never a server error.

The browser walker (tests/e2e/test_walker.py) follows what the pages link to; this one also
reaches what no page links to on a small ledger (payloads, a fork's GET, every chart), and fails
when a URL pattern is added without being walked here.
"""

import pytest
from builders import T0
from django.urls import URLPattern, URLResolver, get_resolver

from issues.figures import issue_id
from ledgerfacts.timestamps import now_ms
from pipeline.charts import CHARTS
from pipeline.signatures import signature

pytestmark = pytest.mark.django_db(databases="__all__")

# The issue of R1 (below): its failed stage and its message's signature.
R1_ISSUE = issue_id("runAgent", signature("Tool crashed"))
# Every named URL pattern outside the admin (Django's own), with the status a signed-in operator
# gets: GET of a POST-only view is refused, the login page sends a signed-in user on.
URLS = {
    "overview": ("/", 200),
    "healthz": ("/healthz", 200),
    "health": ("/health/", 403),  # an admin's page (tests/test_health.py, test_roles.py)
    "login": ("/accounts/login/", 302),
    "logout": ("/accounts/logout/", 405),
    "sessions:list": ("/sessions/?status=all", 200),
    "sessions:detail": ("/sessions/S1/", 200),
    "sessions:compare": ("/sessions/S1/compare/?a=T2&b=T3", 200),
    "sessions:turn": ("/sessions/S1/turns/T2/", 200),
    "sessions:thread": ("/sessions/S1/turns/T2/thread/", 200),
    "sessions:fork": ("/sessions/S1/turns/T2/fork/", 405),
    "sessions:bookmark": ("/sessions/S1/turns/T2/bookmark/", 405),
    "bookmarks:list": ("/bookmarks/", 200),
    "sessions:branches": ("/sessions/S1/turns/T1/branches/", 200),
    "sessions:first_branches": ("/sessions/S1/branches/", 404),  # one first turn: no branches
    "sessions:export": ("/sessions/S1/turns/T2/export.json", 200),
    "sessions:call": ("/sessions/S1/turns/T2/calls/C1/", 200),
    "sessions:payload": ("/sessions/S1/turns/T2/payload/result/C1/", 200),
    "sessions:annotate": ("/sessions/S1/annotations/", 200),
    "sessions:annotate_turn": ("/sessions/S1/turns/T2/annotations/", 200),
    "sessions:remove_annotation": ("/sessions/S1/annotations/1/remove/", 405),
    "pipeline:dashboard": (f"/pipeline/?since={T0 - 3_600_000}&until={T0 + 3_600_000}", 200),
    "pipeline:chart": ("", 200),  # every chart: see CHART_URLS
    # What a live dashboard redraws: its charts at once (test_live.py).
    "pipeline:charts": (
        f"/pipeline/charts/?since={T0 - 3_600_000}&until={T0 + 3_600_000}&chart=throughput",
        200,
    ),
    "pipeline:requests": ("/pipeline/requests/?status=failed", 200),
    "pipeline:request": ("/pipeline/requests/R1/", 200),
    "pipeline:similar": ("/pipeline/requests/R1/similar/", 200),
    "search:search": ("/search/?q=hello", 200),
    "search:in_session": ("/search/in/S1/?q=hello", 200),
    "datasets:index": ("/datasets/", 200),
    "datasets:export": ("/datasets/export.jsonl?kind=preferences", 200),
    "issues:inbox": ("/pipeline/issues/?window=30d&status=all", 200),
    "issues:issue": (f"/pipeline/issues/{R1_ISSUE}/?window=30d", 200),
    "issues:change": (f"/pipeline/issues/{R1_ISSUE}/change/", 405),
    "issues:of_request": ("/pipeline/issues/of-request/R1/", 200),
    "alerts:log": ("/alerts/", 200),
    # No export nor queue on this ledger: tests/test_datasets.py and test_review_queues.py.
    "datasets:run": ("/datasets/runs/999/", 404),
    "sessions:prefer": ("/sessions/S1/turns/T1/prefer/", 405),
    "review:index": ("/review/", 200),
    "review:new": ("/review/new/", 405),
    "review:queue": ("/review/999/", 404),
    "review:next": ("/review/999/next/", 405),
    "review:reopen": ("/review/999/reopen/", 405),
    "review:item": ("/review/999/items/1/", 404),
    # What live pages poll: without the cursor a page draws, a 400 that says so (test_live.py).
    "live:session": ("/live/sessions/S1/", 400),
    "live:request": ("/live/requests/R1/", 400),
    "live:requests": ("/live/requests/?status=failed", 400),
    "live:pipeline": ("/live/pipeline/", 400),
    "live:ledger": ("/live/ledger/", 400),
    "live:request_rows": ("/live/request-rows/?id=R1", 200),
}
CHART_URLS = [
    (f"/pipeline/charts/{slug}/?since={T0 - 3_600_000}&until={T0 + 3_600_000}", 200)
    for slug in CHARTS
]
PAGES = [entry for entry in URLS.values() if entry[0]] + CHART_URLS
AS = {"page": {}, "htmx": {"HX-Request": "true"}}


def named_patterns(patterns, namespace: str = "") -> set[str]:
    names = set()
    for p in patterns:
        if isinstance(p, URLResolver) and p.namespace != "admin":
            names |= named_patterns(p.url_patterns, f"{p.namespace}:" if p.namespace else "")
        elif isinstance(p, URLPattern) and p.name:
            names.add(namespace + p.name)
    return names


@pytest.fixture
def small_ledger(ledger):
    s = ledger.session(id="S1")
    root = ledger.turn(s, id="T1", started_at=T0)
    ledger.message(root, 1, content="Keep an eye on my inbox")
    a = ledger.turn(s, root, id="T2", started_at=T0 + 1)
    ledger.message(a, 1)
    ledger.tool_call(a, 1, id="C1")
    b = ledger.turn(s, root, id="T3", started_at=T0 + 2, status="failed")
    ledger.set_head(s, root, b)
    ledger.request(id="R1", status="failed", stage="runAgent", error_stage="runAgent",
                   error_message="Tool crashed", turn_id="T2",
                   started_at=now_ms() - 3_600_000)  # in the inbox's last 30 days  # fmt: skip
    ledger.request(id="R2")
    return ledger


def test_every_url_pattern_is_walked():
    assert named_patterns(get_resolver().url_patterns) == set(URLS)


@pytest.mark.parametrize("how", AS)
@pytest.mark.parametrize(("url", "status"), PAGES)
def test_every_url_answers_as_a_page_and_to_htmx(client, operator, small_ledger, url, status, how):
    client.force_login(operator)
    response = client.get(url, headers=AS[how])
    assert response.status_code == status, (url, how, response.status_code)


@pytest.mark.parametrize("address", ["/sessions/S1/", "/sessions/S1/turns/T2/"])
def test_unfolding_answers_the_tree_on_a_session_and_on_a_turn(viewer_client, small_ledger,
                                                               address):  # fmt: skip
    # What "unfold all" asks for: htmx swaps the answer into #tree.
    response = viewer_client.get(
        address + "?unfold=all", headers={"HX-Request": "true", "HX-Target": "tree"}
    )
    body = response.content.decode()
    assert "<html" not in body and body.count('class="tree-row') == 3
