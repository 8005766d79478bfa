"""Preferences at branch points (issue 31, item 2): marking the better answer (or ranking them)
from the branch point's panel and from compare, with and without htmx; the pairs stored, shown
to everyone, replaced when a person changes their mind, and refused when they are no pairs."""

import pytest
from builders import LEDGER_DB, T0, parse_fragment, parse_html

from annotations.models import Preference

pytestmark = LEDGER_DB
HTMX = {"HX-Request": "true"}


@pytest.fixture
def branches(ledger):
    s = ledger.session(id="S1", label="Poems")
    root = ledger.turn(s, id="R", started_at=T0)
    ledger.message(root, 1, content="Write a poem about the sea")
    for n, text in enumerate(["Waves in blue", "The sea, the sea", "Salt and foam"], start=1):
        kid = ledger.turn(s, root, id=f"A{n}", started_at=T0 + n)
        ledger.message(kid, 1, content="Another one")
        ledger.message(kid, 2, role="assistant", content=text, created_at=T0 + n)
    deep = ledger.turn(s, {"id": "A1"}, id="D1", started_at=T0 + 10)
    ledger.message(deep, 1, content="Shorter")
    ledger.set_head(s, root, deep)
    other = ledger.session(id="S2")
    ledger.turn(other, id="Z1", started_at=T0)
    return s


def pairs(user=None) -> set[tuple[str, str]]:
    found = Preference.objects.all() if user is None else Preference.objects.filter(user=user)
    return {(p.chosen_turn_id, p.rejected_turn_id) for p in found}


def best(client, chosen, rest, htmx=False, **extra):
    data = {"ranked": [chosen], "rest": rest, "next": "/sessions/S1/turns/R/"} | extra
    return client.post("/sessions/S1/turns/R/prefer/", data, headers=HTMX if htmx else {})


def test_the_branch_point_offers_its_answers(viewer_client, branches):
    page = viewer_client.get("/sessions/S1/turns/R/").content.decode()
    parse_html(page)
    block = page[page.index('id="branch-point"') :].split("</section>")[0]
    assert "3 answers here: which is better?" in block
    assert block.index("Waves in blue") < block.index("The sea, the sea") < block.index("Salt")
    leaf = viewer_client.get("/sessions/S1/turns/A2/").content.decode()
    assert 'id="branch-point"' not in leaf  # one child or none: no branch point


def test_marking_the_best_answer_without_htmx(viewer_client, viewer, branches):
    response = best(viewer_client, "A2", ["A1", "A3"])
    assert response.status_code == 303 and response["Location"] == "/sessions/S1/turns/R/"
    assert pairs(viewer) == {("A2", "A1"), ("A2", "A3")}
    page = viewer_client.get(response["Location"]).content.decode()
    assert "Kept: A2 preferred (2 pairs)." in page
    block = page[page.index('id="branch-point"') :].split("</section>")[0]
    assert "preferred 2×" in block
    assert "vera (you): 2/3 <code>A2</code> over 1/3 <code>A1</code>" in block


def test_with_htmx_the_block_comes_back_and_a_change_of_mind_replaces_pairs(
    viewer_client, viewer, branches
):
    best(viewer_client, "A2", ["A1", "A3"], htmx=True)
    response = best(viewer_client, "A1", ["A2", "A3"], htmx=True)
    assert response.status_code == 200
    parse_fragment(response.content)
    assert response.content.decode().lstrip().startswith('<section class="branch-point-prefs"')
    assert pairs(viewer) == {("A1", "A2"), ("A1", "A3")}  # A2 over A1 is gone


def test_ranking_them_keeps_every_pair_of_the_order(viewer_client, viewer, branches):
    viewer_client.post(
        "/sessions/S1/turns/R/prefer/",
        {"ranked": ["A3", "A1", ""], "rest": ["A1", "A2", "A3"]},
    )
    assert pairs(viewer) == {("A3", "A1"), ("A3", "A2"), ("A1", "A2")}


def test_everyone_sees_everyone_s_choices(client, viewer, operator, branches):
    client.force_login(viewer)
    best(client, "A2", ["A1", "A3"])
    client.force_login(operator)
    best(client, "A3", ["A1", "A2"])
    page = client.get("/sessions/S1/turns/R/").content.decode()
    assert "vera: 2/3 <code>A2</code> over" in page and "otto (you): 3/3 <code>A3</code>" in page
    assert pairs() == {("A2", "A1"), ("A2", "A3"), ("A3", "A1"), ("A3", "A2")}


def test_a_turn_that_is_no_answer_here_is_refused(viewer_client, branches):
    response = best(viewer_client, "D1", ["A1"])
    page = viewer_client.get(response["Location"]).content.decode()
    assert "Turn D1 is not an answer at this branch point: nothing was kept." in page
    response = best(viewer_client, "A1", [], htmx=True)
    assert response.status_code == 422
    assert b"Choose the better of at least two answers." in response.content
    assert not Preference.objects.exists()
    assert best(viewer_client, "A1", ["A2"], next="https://evil.example/")["Location"] == (
        "/sessions/S1/turns/R/#branch-point"
    )  # only this site's pages are gone back to
    response = viewer_client.post(
        "/sessions/S2/turns/R/prefer/", {"ranked": ["A1"], "rest": ["A2"]}
    )
    assert response.status_code == 404


def test_clearing_forgets_one_s_choices_here(viewer_client, viewer, branches):
    best(viewer_client, "A2", ["A1", "A3"])
    viewer_client.post("/sessions/S1/turns/R/prefer/", {"clear": "1"})
    assert not Preference.objects.exists()


def test_compare_offers_the_two_branches_where_they_part(viewer_client, viewer, branches):
    url = "/sessions/S1/compare/?a=D1&b=A3"
    page = viewer_client.get(url).content.decode()
    parse_html(page)
    block = page[page.index('id="branch-point"') :].split("</section>")[0]
    assert "Which is better?" in block
    assert block.index("A's branch") < block.index("<code>A1</code>")  # D1's branch: A1
    assert "B's branch" in block and "<code>A2</code>" not in block
    response = viewer_client.post(
        "/sessions/S1/turns/R/prefer/",
        {"ranked": ["A3"], "rest": ["A1"], "only": "these", "sibling": ["A1", "A3"], "next": url},
    )
    assert response["Location"] == url
    assert pairs(viewer) == {("A3", "A1")}
    again = viewer_client.get(url).content.decode()
    assert "vera (you): 2/2 <code>A3</code> over 1/2 <code>A1</code>" in again
    fragment = viewer_client.post(
        "/sessions/S1/turns/R/prefer/",
        {"ranked": ["A1"], "rest": ["A3"], "only": "these", "sibling": ["A1", "A3"]},
        headers=HTMX,
    ).content.decode()
    assert "A's branch" in fragment and "<code>A2</code>" not in fragment
    assert pairs(viewer) == {("A1", "A3")}


def test_the_branch_point_page_marks_the_better_answer_on_its_cards(
    viewer_client, viewer, branches
):
    url = "/sessions/S1/turns/R/branches/"
    page = viewer_client.get(url).content.decode()
    parse_html(page)
    assert page.count('form="prefer-form" name="ranked"') == 3
    form = page[page.index('<form id="prefer-form"') :].split("</form>")[0]
    assert 'action="/sessions/S1/turns/R/prefer/"' in form
    # The card's button submits the prefer form with its own turn as the best.
    response = viewer_client.post(
        "/sessions/S1/turns/R/prefer/", {"ranked": "A3", "rest": ["A1", "A2", "A3"], "next": url}
    )
    assert response["Location"] == url
    assert pairs(viewer) == {("A3", "A1"), ("A3", "A2")}
    page = viewer_client.get(url).content.decode()
    card = page[page.index('data-turn="A3"') :].split("</article>")[0]
    assert "preferred 2×" in card
    choices = page[page.index('class="prefer-choices') :].split("</ul>")[0]
    # The cards' order is the tree's: the head's branch (A1, below it D1) last.
    assert "vera (you): 2/3 <code>A3</code> over 3/3 <code>A1</code>" in choices
    assert "vera (you): 2/3 <code>A3</code> over 1/3 <code>A2</code>" in choices
    twin = viewer_client.get(url, {"format": "json"}).json()
    assert {(p["chosen"], p["rejected"]) for p in twin["preferences"]} == pairs(viewer)
