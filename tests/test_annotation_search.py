"""Annotations on the search page (issue 31, item 1): people's notes found by the query's own
rule beside the ledger's results, and the ledger's results narrowed to labelled or rated turns,
with and without htmx, in the JSON twin, in a bounded number of queries."""

import pytest
from builders import LEDGER_DB, parse_fragment, parse_html

from annotations.models import Annotation
from annotations.store import Marks, save_marks

pytestmark = LEDGER_DB


@pytest.fixture(autouse=True)
def pages_index_everything(monkeypatch):
    monkeypatch.setattr("search.views.INDEX_BUDGET_S", 60)
    monkeypatch.setattr("search.views.INDEX_BUDGET_BYTES", 10**9)


@pytest.fixture
def two_turns(ledger, viewer, operator):
    s = ledger.session(id="S1", label="Inbox")
    a = ledger.turn(s, id="TA")
    ledger.message(a, 1, id="MA", content="Please archive the invoices")
    b = ledger.turn(s, a, id="TB")
    ledger.message(b, 1, id="MB", content="Please archive the receipts")
    ledger.set_head(s, a, b)
    save_marks(
        viewer, "S1", "TB", Marks(thumb=-1, labels=["wrong-tool"], note="Used the **café** tool")
    )
    save_marks(operator, "S1", "TA", Marks(thumb=1, note="Right tool, slow answer"))
    return s


def search(client, **params) -> dict:
    response = client.get("/search/", params | {"format": "json"})
    assert response.status_code == 200
    return response.json()


def hit_ids(data) -> list[str]:
    return [h["id"] for g in data["groups"] for h in g["hits"]]


def test_a_note_is_found_by_its_words_folded_as_the_ledger_s_are(viewer_client, two_turns):
    data = search(viewer_client, q="cafe")
    assert [(n["user"], n["turn_id"]) for n in data["notes"]["hits"]] == [("vera", "TB")]
    assert data["notes"]["hits"][0]["url"] == "/sessions/S1/turns/TB/#turn-annotations"
    assert "<mark>café</mark>" in data["notes"]["hits"][0]["snippet"]
    assert [n["turn_id"] for n in search(viewer_client, q='"slow answer"')["notes"]["hits"]] == [
        "TA"
    ]
    assert search(viewer_client, q="tool -slow")["notes"]["hits"][0]["turn_id"] == "TB"
    assert search(viewer_client, q='"answer slow"')["notes"]["hits"] == []


def test_notes_show_on_the_results_page_and_link_to_their_turn(viewer_client, two_turns):
    page = viewer_client.get("/search/", {"q": "tool"}).content.decode()
    parse_html(page)
    notes = page[page.index('id="notes"') :].split("</section>")[0]
    assert "2 matches" in notes
    assert 'href="/sessions/S1/turns/TB/#turn-annotations">note by vera</a>' in notes
    followed = viewer_client.get("/sessions/S1/turns/TB/").content.decode()
    assert "Used the <strong>café</strong> tool" in followed


def test_notes_only_with_the_notes_kind(viewer_client, two_turns):
    data = search(viewer_client, q="archive", kind="notes")
    assert data["notes"]["hits"] == [] and data["groups"] == []
    data = search(viewer_client, q="tool", kind="notes")
    assert len(data["notes"]["hits"]) == 2 and data["groups"] == []


def test_a_removed_note_is_no_longer_found(viewer_client, viewer, two_turns):
    Annotation.objects.filter(user=viewer).delete()
    assert search(viewer_client, q="cafe")["notes"]["hits"] == []


def test_results_narrowed_to_labelled_or_rated_turns(viewer_client, two_turns):
    assert sorted(hit_ids(search(viewer_client, q="archive"))) == ["MA", "MB"]
    assert hit_ids(search(viewer_client, q="archive", label="wrong-tool")) == ["MB"]
    assert hit_ids(search(viewer_client, q="archive", thumb="down")) == ["MB"]
    assert hit_ids(search(viewer_client, q="archive", thumb="up")) == ["MA"]
    assert hit_ids(search(viewer_client, q="archive", label="nobody")) == []
    data = search(viewer_client, q="archive", label="wrong-tool")
    assert data["counted"] is False and data["count"] is None
    assert [n["turn_id"] for n in search(viewer_client, q="tool", thumb="up")["notes"]["hits"]] == [
        "TA"
    ]


def test_the_filters_are_offered_and_work_with_htmx(viewer_client, two_turns):
    page = viewer_client.get("/search/", {"q": "archive"}).content.decode()
    select = page.split('id="s-label"')[1].split("</select>")[0]
    assert ">wrong-tool</option>" in select
    response = viewer_client.get(
        "/search/", {"q": "archive", "thumb": "down"}, headers={"HX-Request": "true"}
    )
    parse_fragment(response.content)
    body = response.content.decode()
    assert "receipts" in body and "invoices" not in body and "<html" not in body
    assert "Matches in turns and sessions with a 👎" in body


def test_a_bad_thumb_is_named(viewer_client, two_turns):
    data = search(viewer_client, q="archive", thumb="sideways")
    assert "thumb" in data["errors"] and sorted(hit_ids(data)) == ["MA", "MB"]


def test_ten_thousand_notes_cost_a_bounded_search(
    viewer_client, viewer, two_turns, django_assert_max_num_queries
):
    Annotation.objects.bulk_create(
        [
            Annotation(
                user=viewer,
                session_id="S9",
                turn_id=f"X{n}",
                note=f"note number {n}",
                created_at=n,
                updated_at=n,
            )  # fmt: skip
            for n in range(10_000)
        ],
        batch_size=1000,
    )
    with django_assert_max_num_queries(40):
        data = search(viewer_client, q="number", kind="notes")
    assert len(data["notes"]["hits"]) == 20 and data["notes"]["more"]
    data = search(viewer_client, q="cafe", kind="notes")
    assert data["notes"]["scan_capped"] and data["notes"]["scanned"] == 5_000
