"""Review queues (issue 31, item 3): made from a selection (failed turns of a window, a label, a
search, a persona's branch points), walked item by item as each role (label, score, prefer,
skip, next), progress shared, and never the same item to two reviewers at once."""

import pytest
from builders import LEDGER_DB, parse_html

from annotations.models import Annotation, Preference
from annotations.store import Marks, save_marks
from ledgerfacts.timestamps import now_ms
from review import claims
from review.models import Item, Queue

pytestmark = LEDGER_DB
HOUR = 3_600_000


@pytest.fixture
def week(ledger):
    """Failed turns of this week and of last month, and a branch point of atlas's."""
    now = now_ms()
    s = ledger.session(id="S1", persona="atlas", label="Inbox")
    root = ledger.turn(s, id="R", started_at=now - 50 * HOUR)
    ledger.message(root, 1, content="Check my inbox")
    for n in range(1, 4):
        t = ledger.turn(s, root, id=f"F{n}", status="failed", started_at=now - n * HOUR)
        ledger.message(t, 1, content=f"Try again {n}")
        ledger.tool_call(t, 1, status="failed", error="gmail: 401")
    ledger.turn(s, root, id="OLD", status="failed", started_at=now - 40 * 24 * HOUR)
    ledger.set_head(s, root, {"id": "F1"})
    other = ledger.session(id="S2", persona="echo")
    ledger.turn(other, id="E1", status="failed", started_at=now - 90 * 60_000)
    return s


def make(client, **fields) -> Queue:
    response = client.post("/review/new/", {"source": "failed", "window": "7d"} | fields)
    assert response.status_code == 303, response.content[:500]
    return Queue.objects.get(pk=int(response["Location"].split("/")[2]))


def turn_ids(queue: Queue) -> list[str]:
    return list(queue.items.order_by("position").values_list("turn_id", flat=True))


def test_a_queue_of_this_week_s_failed_turns(viewer_client, week):
    queue = make(viewer_client, persona="atlas")
    assert turn_ids(queue) == ["F1", "F2", "F3"]  # newest first, last month's left out
    assert queue.description == "Failed turns of atlas in the last 7d"
    assert turn_ids(make(viewer_client)) == ["F1", "E1", "F2", "F3"]
    page = viewer_client.get(f"/review/{queue.pk}/").content.decode()
    parse_html(page)
    assert "0</strong> of 3 done" in page and "Start reviewing" in page


def test_a_bad_selection_is_named_and_makes_nothing(viewer_client, week):
    response = viewer_client.post("/review/new/", {"source": "label", "label": ""})
    assert response.status_code == 422
    assert "Choose the label whose turns to review." in response.content.decode()
    response = viewer_client.post("/review/new/", {"source": "search", "q": '"unclosed'})
    assert response.status_code == 422 and "quotation mark" in response.content.decode()
    assert not Queue.objects.exists()


def test_walking_a_queue_labels_scores_and_goes_on(viewer_client, viewer, week):
    queue = make(viewer_client, persona="atlas")
    response = viewer_client.post(f"/review/{queue.pk}/next/")
    first = queue.items.get(position=1)
    assert response["Location"] == f"/review/{queue.pk}/items/{first.pk}/"
    page = viewer_client.get(response["Location"]).content.decode()
    parse_html(page)
    assert "Try again 1" in page and '<code class="bad">gog</code>' in page  # its failed call
    assert 'id="review-next" data-key="n">' in page  # hers: its controls act
    response = viewer_client.post(
        response["Location"],
        {"action": "done", "thumb": "down", "score": "2", "labels": "wrong-tool", "note": "401"},
    )
    second = queue.items.get(position=2)
    assert response["Location"] == f"/review/{queue.pk}/items/{second.pk}/"
    marks = Annotation.objects.get(user=viewer, turn_id="F1")
    assert (marks.thumb, marks.score, marks.note) == (-1, 2, "401")
    assert list(marks.labels.values_list("name", flat=True)) == ["wrong-tool"]
    first.refresh_from_db()
    assert (first.state, first.done_by) == ("done", viewer)
    viewer_client.post(response["Location"], {"action": "skip"})
    third = viewer_client.post(f"/review/{queue.pk}/next/")["Location"]
    last = viewer_client.post(third, {"action": "done", "thumb": "up"})
    assert last["Location"] == f"/review/{queue.pk}/"  # nothing left
    page = viewer_client.get(last["Location"]).content.decode()
    assert "2</strong> of 3 done · 1 skipped" in page and "vera (2, 1 skipped)" in page
    assert "Nothing left to review" in page


def test_bad_marks_are_named_and_the_item_stays_open(viewer_client, week):
    queue = make(viewer_client, persona="atlas")
    url = viewer_client.post(f"/review/{queue.pk}/next/")["Location"]
    response = viewer_client.post(url, {"action": "done", "score": "7", "note": "keep"})
    assert response.status_code == 422
    assert "give a whole number from 1 to 5" in response.content.decode()
    assert ">keep</textarea>" in response.content.decode()
    assert queue.items.get(position=1).state == "open"


def test_a_colleague_continues_where_it_stopped_and_never_gets_the_same_item(
    client, viewer, operator, week
):
    client.force_login(viewer)
    queue = make(client, persona="atlas")
    mine = client.post(f"/review/{queue.pk}/next/")["Location"]
    client.force_login(operator)
    theirs = client.post(f"/review/{queue.pk}/next/")["Location"]
    assert theirs != mine  # vera holds item 1: otto gets item 2
    page = client.get(f"/review/{queue.pk}/").content.decode()
    assert "vera is on 1" in page and "otto is on 1" in page
    # otto opens vera's item from the list: it is hers, he cannot act on it.
    page = client.get(mine).content.decode()
    assert (
        "vera is reviewing this item" in page and 'id="review-next" data-key="n" disabled' in page
    )
    client.post(theirs, {"action": "done", "thumb": "up"})
    client.force_login(viewer)
    assert client.post(f"/review/{queue.pk}/next/")["Location"] == mine  # she goes on with hers


def test_two_reviewers_asking_at_once_get_different_items(viewer, operator, week, monkeypatch):
    queue = Queue.objects.create(name="q", source="failed", created_at=0, total=2)
    a = Item.objects.create(queue=queue, position=1, session_id="S1", turn_id="F1")
    Item.objects.create(queue=queue, position=2, session_id="S1", turn_id="F2")
    # Both read item 1 as free before either claims it: only one update finds it so.
    stale = Item.objects.get(pk=a.pk)
    assert claims.take(Item.objects.get(pk=a.pk), viewer, now_ms())
    assert not claims.take(stale, operator, now_ms())
    got = claims.claim_next(queue, operator)
    assert got.turn_id == "F2" and Item.objects.get(pk=a.pk).claimed_by == viewer


def test_an_abandoned_claim_is_handed_on(viewer, operator, week):
    queue = Queue.objects.create(name="q", source="failed", created_at=0, total=1)
    item = Item.objects.create(queue=queue, position=1, session_id="S1", turn_id="F1")
    claims.claim_next(queue, viewer)
    Item.objects.filter(pk=item.pk).update(claimed_at=now_ms() - claims.CLAIM_MS - 1)
    assert claims.claim_next(queue, operator).pk == item.pk


def test_a_queue_of_a_label_and_of_a_search(viewer_client, viewer, ledger, week):
    save_marks(viewer, "S1", "F2", Marks(labels=["wrong-tool"]))
    assert turn_ids(make(viewer_client, source="label", label="wrong-tool")) == ["F2"]
    assert turn_ids(make(viewer_client, source="search", q="again")) == ["F1", "F2", "F3"]


def test_a_queue_of_branch_points_is_walked_by_preferring(viewer_client, viewer, week):
    queue = make(viewer_client, source="branches", persona="atlas")
    assert turn_ids(queue) == ["R"] and queue.items.get().kind == "branch"
    url = viewer_client.post(f"/review/{queue.pk}/next/")["Location"]
    page = viewer_client.get(url).content.decode()
    parse_html(page)
    assert page.count('class="button prefer-best"') == 4  # F1, F2, F3 and OLD
    viewer_client.post(url, {"action": "done", "ranked": "F2"})
    assert {(p.chosen_turn_id, p.rejected_turn_id) for p in Preference.objects.all()} == {
        ("F2", "F1"), ("F2", "F3"), ("F2", "OLD"),
    }  # fmt: skip
    assert queue.items.get().state == "done"


def test_the_queue_list_and_twins(viewer_client, week):
    queue = make(viewer_client, persona="atlas")
    page = viewer_client.get("/review/").content.decode()
    parse_html(page)
    assert f'href="/review/{queue.pk}/"' in page
    twin = viewer_client.get("/review/?format=json").json()
    assert twin["queues"][0]["total"] == 3
    twin = viewer_client.get(f"/review/{queue.pk}/?format=json").json()
    assert [i["turn_id"] for i in twin["items"]] == ["F1", "F2", "F3"]
    assert twin["progress"]["open"] == 3
    item = viewer_client.post(f"/review/{queue.pk}/next/")["Location"]
    page = viewer_client.get(item)
    assert f"<{item}?format=json>" in page["Link"]
    twin = viewer_client.get(item, {"format": "json"}).json()
    assert (twin["turn_id"], twin["yours"], twin["state"]) == ("F1", True, "open")
