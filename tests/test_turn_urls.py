"""Every turn URL (/sessions/<session>/turns/<turn>/…) answers only for a turn in that session's
tree: the session's own turns and the ones a fork inherits from its origin. Any other turn is a
404, so nobody exports, reads or forks session B's thread under session A's name."""

import json
from urllib.parse import unquote, urljoin, urlsplit

import pytest
from builders import LEDGER_DB, T0, body_of, parse_fragment, parse_html
from django.urls import resolve, reverse

from ledgerweb.html_parts import IdUrls, escape
from sessions.models import Session

pytestmark = LEDGER_DB


@pytest.fixture
def origin_and_fork(ledger):
    """Origin O: root → fork point P → O's own head; P also has a side branch X.
    Fork F (from P) has one own turn. Session B is unrelated."""
    origin = ledger.session(id="O", label="Origin")
    root = ledger.turn(origin, id="O-root", started_at=T0)
    point = ledger.turn(origin, root, id="O-point", started_at=T0 + 1)
    side = ledger.turn(origin, point, id="O-side", started_at=T0 + 2)
    head = ledger.turn(origin, point, id="O-head", started_at=T0 + 3)
    ledger.set_head(origin, root, head)
    fork = ledger.session(id="F", label="Retry", routing_key="fork:O:F")
    own = ledger.turn(fork, point, id="F-own", started_at=T0 + 4)
    ledger.set_head(fork, root, own)
    other = ledger.session(id="B", label="Someone else")
    b_turn = ledger.turn(other, id="B-turn", started_at=T0)
    ledger.set_head(other, b_turn, b_turn)
    for turn in (root, point, side, head, own, b_turn):
        ledger.message(turn, 1, id=f"M-{turn['id']}", content=f"said in {turn['id']}")
        ledger.tool_call(turn, 1, id=f"C-{turn['id']}", result=f'"result of {turn["id"]}"')


# Every GET a turn has, as (name, path under /sessions/<s>/turns/<t>/, extra headers).
TURN_GETS = [
    ("detail", "", {}),
    ("panel", "", {"HX-Request": "true"}),
    ("thread", "thread/", {}),
    ("export", "export.json", {}),
    ("message payload", "payload/message/M-{turn}/", {}),
    ("result payload", "payload/result/C-{turn}/", {}),
    ("tool call", "calls/C-{turn}/", {}),
]
IN_TREE = [
    ("O", "O-side"),  # the origin's own turns
    ("F", "F-own"),  # the fork's own turn
    ("F", "O-root"),  # inherited: an ancestor of the fork's own turns
    ("F", "O-point"),  # inherited: the fork point itself
]
NOT_IN_TREE = [
    ("O", "B-turn"),  # another session's turn
    ("B", "O-root"),
    ("F", "O-side"),  # a branch of the origin the fork does not continue
    ("F", "O-head"),
    ("O", "F-own"),  # the fork's turn is not the origin's
]


def get(client, session_id, turn_id, path, headers):
    url = f"/sessions/{session_id}/turns/{turn_id}/{path.format(turn=turn_id)}"
    return client.get(url, headers=headers)


@pytest.mark.parametrize(("kind", "path", "headers"), TURN_GETS, ids=[g[0] for g in TURN_GETS])
@pytest.mark.parametrize(
    ("session_id", "turn_id", "in_tree"),
    [(*case, True) for case in IN_TREE] + [(*case, False) for case in NOT_IN_TREE],
)
def test_every_turn_url_answers_only_for_a_turn_in_the_sessions_tree(
    viewer_client, origin_and_fork, kind, path, headers, session_id, turn_id, in_tree
):
    response = get(viewer_client, session_id, turn_id, path, headers)
    body = body_of(response).decode()
    if not in_tree:
        assert response.status_code == 404
        assert f"said in {turn_id}" not in body and f"result of {turn_id}" not in body
        return
    assert response.status_code == 200
    if kind != "result payload" and kind != "tool call":
        assert f"said in {turn_id}" in body
    else:
        assert f"result of {turn_id}" in body


@pytest.mark.django_db(transaction=True, databases="__all__")
def test_a_fork_posted_under_the_wrong_session_creates_nothing(client, operator, origin_and_fork):
    client.force_login(operator)
    response = client.post("/sessions/B/turns/O-point/fork/", {"label": "mixed up"})
    assert response.status_code == 404
    assert not Session.objects.filter(label="mixed up").exists()


@pytest.mark.django_db(transaction=True, databases="__all__")
def test_a_fork_of_a_fork_from_an_inherited_turn_is_allowed(client, operator, origin_and_fork):
    client.force_login(operator)
    response = client.post("/sessions/F/turns/O-point/fork/", {"label": "again"})
    new = Session.objects.get(label="again")
    assert response.status_code == 302 and response["Location"] == f"/sessions/{new.id}/"
    assert (new.routing_key, new.current_turn_id) == (f"fork:F:{new.id}", "O-point")


# -- Ids that a URL can trip on ------------------------------------------------------------------

# "." and ".." are dot segments to a browser; the others need encoding in a path.
ODD_IDS = [".", "..", "a/b", "%2F", "?x", "#", "with space", "ünïcødé ✓"]
URL_NAMES = {
    "sessions:detail": 1,
    "sessions:compare": 1,
    "sessions:turn": 2,
    "sessions:thread": 2,
    "sessions:fork": 2,
    "sessions:export": 2,
    "sessions:call": 3,
}


def follow(href: str, page_url: str = "http://testserver/sessions/S/turns/T/") -> str:
    """The path a browser requests for a link on a page: resolved against the page's URL (which
    drops `.` and `..` segments), then decoded once, as the server's WSGI layer does."""
    return unquote(urlsplit(urljoin(page_url, href)).path)


@pytest.mark.parametrize("ledger_id", ODD_IDS)
@pytest.mark.parametrize("name", URL_NAMES)
def test_every_url_kind_round_trips_an_odd_id_through_a_link(name, ledger_id):
    args = [ledger_id] * URL_NAMES[name]
    href = reverse(name, args=args)
    match = resolve(follow(href))
    assert (match.view_name, list(match.kwargs.values())) == (name, args)
    # The Python-built lists write the same href as reverse().
    assert IdUrls(name, *args[:-1]).html(ledger_id) == escape(href)


@pytest.mark.parametrize("ledger_id", ODD_IDS)
def test_a_payload_url_round_trips_an_odd_id_through_a_link(ledger_id):
    args = [ledger_id, ledger_id, "message", ledger_id]
    match = resolve(follow(reverse("sessions:payload", args=args)))
    assert list(match.kwargs.values()) == args


@pytest.mark.parametrize("session_id", [".", ".."])
def test_a_session_and_turn_named_with_dots_open_from_their_links(
    viewer_client, ledger, session_id
):
    s = ledger.session(id=session_id, label="Dotted")
    root = ledger.turn(s, id=".", started_at=T0)
    ledger.message(root, 1, content="the dot turn")
    child = ledger.turn(s, root, id="..", started_at=T0 + 1)
    ledger.message(child, 1, content="the dot-dot turn")
    ledger.set_head(s, root, child)
    session_url = follow(reverse("sessions:detail", args=[session_id]), "http://testserver/")
    page = viewer_client.get(session_url)
    assert page.status_code == 200 and "Dotted" in page.content.decode()
    rows = {a.get("data-turn"): a for a in parse_html(page.content).iter("a") if a.get("data-turn")}
    root_href = rows["."].get("href")
    assert rows["."].get("hx-get") == root_href
    panel = viewer_client.get(follow(root_href), headers={"HX-Request": "true"}).content.decode()
    assert "the dot turn" in panel and "the dot-dot turn" not in panel
    full = viewer_client.get(follow(root_href)).content.decode()
    links = {a.text: a.get("href") for a in parse_html(full).iter("a")}
    thread = viewer_client.get(follow(links["Thread & fork point"])).content.decode()
    assert "Thread &amp; fork point" in thread and "the dot turn" in thread
    export = json.loads(body_of(viewer_client.get(follow(links["Export thread"]))))
    assert export["turn_ids"] == ["."]


def child_links(client, session_id: str, turn_id: str) -> dict[str, str]:
    """The panel's links to the turn's children, by turn id: each as a browser follows it."""
    body = client.get(f"/sessions/{session_id}/turns/{turn_id}/", headers={"HX-Request": "true"})
    turn_links = parse_fragment(body.content.decode()).find(".//p[@class='turn-links muted small']")
    links = {}
    for a in turn_links.iter("a"):
        if a.get("href") != f"/sessions/{session_id}/turns/{turn_id}/":
            links["".join(a.itertext())] = a
    return links


@pytest.mark.parametrize("session_id", ["F", "O"])
def test_a_turns_children_open_under_the_session_they_belong_to(
    viewer_client, origin_and_fork, session_id
):
    links = child_links(viewer_client, session_id, "O-point")
    assert set(links) == {"O-root", "O-side", "O-head", "F-own"}  # the parent and the children
    for child, a in links.items():
        owner = "F" if child == "F-own" else "O"
        if child != "O-root":
            assert a.get("href") == f"/sessions/{owner}/turns/{child}/"
        page = viewer_client.get(a.get("href"))
        assert page.status_code == 200 and f"said in {child}" in page.content.decode()
        # Only a turn of this session's tree opens in the panel beside it.
        if a.get("hx-get"):
            assert a.get("hx-get") == a.get("href")
            panel = viewer_client.get(a.get("hx-get"), headers={"HX-Request": "true"})
            assert panel.status_code == 200 and f"said in {child}" in panel.content.decode()
        else:
            assert owner != session_id
