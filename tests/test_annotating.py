"""Annotating a turn or a session through its page, as each role, with and without htmx: what is
stored, what everyone then sees, and what is refused (issue 31, item 1)."""

import pytest
from builders import LEDGER_DB, parse_fragment, parse_html
from ledger_fingerprint import ledger_fingerprint

from annotations.models import Annotation, Label

pytestmark = LEDGER_DB

HTMX = {"HX-Request": "true"}


@pytest.fixture
def convo(ledger):
    s = ledger.session(id="S1", label="Mom - General")
    root = ledger.turn(s, id="T1")
    ledger.message(root, 1, content="Find the 2FA code")
    ledger.message(root, 2, role="assistant", content="Searching")
    answer = ledger.turn(s, root, id="T2")
    ledger.message(answer, 1, content="And the one from the bank?")
    ledger.set_head(s, root, answer)
    other = ledger.session(id="S2", label="Work")
    ledger.turn(other, id="T9")
    return s


def annotate(client, url="/sessions/S1/turns/T2/annotations/", htmx=False, **fields):
    data = {"thumb": "", "score": "", "labels": "", "note": ""} | fields
    return client.post(url, data, headers=HTMX if htmx else {})


def test_a_viewer_labels_scores_and_notes_a_turn_without_htmx(viewer_client, viewer, ledger, convo):
    before = ledger_fingerprint(ledger)
    response = annotate(
        viewer_client,
        thumb="down",
        score="2",
        labels="wrong-tool, slow ,wrong-tool",
        note="Called **gmail** for the bank.",
    )
    assert response.status_code == 303
    assert response["Location"] == "/sessions/S1/turns/T2/#turn-annotations"

    stored = Annotation.objects.get(user=viewer, session_id="S1", turn_id="T2")
    assert (stored.thumb, stored.score, stored.note) == (-1, 2, "Called **gmail** for the bank.")
    assert sorted(stored.labels.values_list("name", flat=True)) == ["slow", "wrong-tool"]

    page = viewer_client.get(response["Location"]).content.decode()
    parse_html(page)
    assert "Annotation saved." in page
    block = page[page.index('id="turn-annotations"') :]
    assert "vera" in block and "👎" in block and "2/5" in block
    assert "<strong>gmail</strong>" in block  # the note's Markdown, rendered
    assert ">wrong-tool</a>" in block and ">slow</a>" in block
    assert ledger_fingerprint(ledger) == before  # the ledger is never written


def test_with_htmx_the_post_answers_the_block_it_came_from(viewer_client, convo):
    response = annotate(viewer_client, htmx=True, thumb="up", labels="good-example")
    assert response.status_code == 200
    body = response.content.decode()
    parse_fragment(body)
    assert body.lstrip().startswith('<section class="annotations" id="turn-annotations"')
    assert "👍" in body and "good-example" in body and "<html" not in body


def test_a_session_is_annotated_from_its_header(viewer_client, viewer, convo):
    response = annotate(viewer_client, "/sessions/S1/annotations/", thumb="down", note="spam")
    assert response["Location"] == "/sessions/S1/#session-annotations"
    assert Annotation.objects.get(user=viewer, turn_id="").thumb == -1
    page = viewer_client.get("/sessions/S1/").content.decode()
    header = page[page.index('id="session-annotations"') :]
    assert "👎" in header[: header.index("</section>")]


def test_everyone_sees_everyone_s_and_edits_only_their_own(
    client, viewer, operator, convo, django_user_model
):
    client.force_login(viewer)
    annotate(client, labels="wrong-tool", note="vera's note")
    client.force_login(operator)
    page = client.get("/sessions/S1/turns/T2/").content.decode()
    assert "<p>vera's note</p>" in page  # otto sees vera's annotation
    # otto's post is otto's own annotation: vera's is unchanged.
    annotate(client, thumb="up", note="otto's note")
    assert Annotation.objects.get(user=viewer).note == "vera's note"
    assert Annotation.objects.get(user=operator).note == "otto's note"


def test_a_viewer_cannot_remove_someone_else_s(client, viewer, operator, convo, django_user_model):
    client.force_login(operator)
    annotate(client, note="otto's note")
    theirs = Annotation.objects.get(user=operator)
    client.force_login(viewer)
    page = client.get("/sessions/S1/turns/T2/").content.decode()
    assert f"/annotations/{theirs.pk}/remove/" not in page  # no button for vera
    response = client.post(f"/sessions/S1/annotations/{theirs.pk}/remove/")
    assert response.status_code == 403
    assert Annotation.objects.filter(pk=theirs.pk).exists()


def test_an_operator_removes_anyone_s(client, viewer, operator, convo):
    client.force_login(viewer)
    annotate(client, labels="wrong-tool", note="vera's note")
    hers = Annotation.objects.get(user=viewer)
    client.force_login(operator)
    page = client.get("/sessions/S1/turns/T2/").content.decode()
    assert f"/sessions/S1/annotations/{hers.pk}/remove/" in page
    response = client.post(f"/sessions/S1/annotations/{hers.pk}/remove/")
    assert response.status_code == 303
    assert not Annotation.objects.filter(pk=hers.pk).exists()
    assert not Label.objects.exists()
    page = client.get(response["Location"]).content.decode()
    assert "Removed vera&#x27;s annotation." in page and "vera's note" not in page


def test_an_operator_removes_with_htmx_too(client, viewer, operator, convo):
    client.force_login(viewer)
    annotate(client, note="vera's note")
    hers = Annotation.objects.get(user=viewer)
    client.force_login(operator)
    response = client.post(f"/sessions/S1/annotations/{hers.pk}/remove/", headers=HTMX)
    assert response.status_code == 200
    parse_fragment(response.content)
    assert b"vera&#x27;s note" not in response.content and b"vera's note" not in response.content
    assert b'class="annotation-list"' not in response.content  # none left to list
    assert b"Annotate this turn" in response.content


def test_bad_input_is_named_and_nothing_is_lost(viewer_client, viewer, convo):
    annotate(viewer_client, note="keep me", score="4")
    response = annotate(viewer_client, htmx=True, note="changed", score="9")
    assert response.status_code == 422
    assert "score=&#x27;9&#x27;: give a whole number from 1 to 5" in response.content.decode()
    assert "changed" in response.content.decode()  # what they typed is still in the form
    assert Annotation.objects.get(user=viewer).note == "keep me"
    response = annotate(viewer_client, note="a\x00b")
    assert response.status_code == 303
    page = viewer_client.get(response["Location"]).content.decode()
    assert "Not saved: The note holds a NUL character" in page
    assert Annotation.objects.get(user=viewer).note == "keep me"
    response = annotate(viewer_client, thumb="sideways")
    assert Annotation.objects.get(user=viewer).score == 4


def test_clearing_removes_one_s_own_marks(viewer_client, viewer, convo):
    annotate(viewer_client, labels="x", note="n")
    viewer_client.post("/sessions/S1/turns/T2/annotations/", {"clear": "1"})
    assert not Annotation.objects.filter(user=viewer).exists()


def test_labels_and_notes_are_shown_as_text_not_html(viewer_client, convo):
    annotate(
        viewer_client,
        labels="<script>alert(1)</script>, ok\x00ay, Русский ярлык",
        note="<img src=x onerror=alert(2)> [x](javascript:alert(3))",
    )
    page = viewer_client.get("/sessions/S1/turns/T2/").content.decode()
    parse_html(page)
    assert "<script>alert(1)" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    shown = page.split('id="turn-annotations"')[1].split("<form")[0]
    assert "<img" not in shown and "&lt;img src=x onerror=alert(2)&gt;" in shown  # as text
    assert 'href="javascript' not in page
    assert ">okay</a>" in page and ">Русский ярлык</a>" in page


def test_a_turn_of_another_session_is_not_annotated_under_this_one(viewer_client, convo):
    assert annotate(viewer_client, "/sessions/S1/turns/T9/annotations/").status_code == 404
    assert annotate(viewer_client, "/sessions/nope/annotations/").status_code == 404
    assert not Annotation.objects.exists()


def test_the_block_s_address_is_a_page_of_its_own_or_the_block_for_htmx(viewer_client, convo):
    annotate(viewer_client, labels="wrong-tool")
    page = viewer_client.get("/sessions/S1/turns/T2/annotations/").content.decode()
    parse_html(page)
    assert 'href="/sessions/S1/turns/T2/">turn <code>T2</code></a>' in page  # the way back
    assert ">wrong-tool</a>" in page
    fragment = viewer_client.get("/sessions/S1/turns/T2/annotations/", headers=HTMX)
    parse_fragment(fragment.content)
    assert b"Edit your annotation" in fragment.content


def test_labels_in_use_are_offered(client, viewer, operator, convo):
    client.force_login(viewer)
    annotate(client, labels="wrong-tool, hallucination")
    annotate(client, "/sessions/S1/turns/T1/annotations/", labels="wrong-tool")
    client.force_login(operator)
    page = client.get("/sessions/S1/turns/T2/").content.decode()
    offered = page.split('<datalist id="labels-in-use-turn">')[1].split("</datalist>")[0]
    assert offered.index("wrong-tool") < offered.index("hallucination")  # most used first


@pytest.mark.parametrize("role", ["viewer", "operator", "admin_user"])
@pytest.mark.parametrize("htmx", [False, True])
def test_every_role_annotates_through_the_page(client, request, convo, role, htmx):
    user = request.getfixturevalue(role)
    client.force_login(user)
    response = annotate(client, htmx=htmx, thumb="up", score="5", labels=f"by-{role}")
    assert response.status_code == (200 if htmx else 303)
    stored = Annotation.objects.get(user=user, turn_id="T2")
    assert (stored.thumb, stored.score) == (1, 5)
    page = client.get("/sessions/S1/turns/T2/").content.decode()
    assert f">by-{role}</a>" in page


def test_a_user_without_a_role_cannot_annotate(client, convo, django_user_model):
    nobody = django_user_model.objects.create_user(username="nora", password="pw")
    client.force_login(nobody)
    assert annotate(client, labels="x").status_code == 403
    assert annotate(client, "/sessions/S1/annotations/", labels="x").status_code == 403
    assert not Annotation.objects.exists()
