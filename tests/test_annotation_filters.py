"""Annotations shown and filtered: the session list's marks and its label / 👍 / 👎 filters (with
and without htmx, in the JSON twin), the thread's marks, and the queries a page makes with
thousands of annotations (issue 31, item 1)."""

import pytest
from builders import LEDGER_DB, T0, parse_fragment, parse_html
from django.db import connections

from annotations.models import Annotation, Label
from annotations.store import Marks, save_marks

pytestmark = LEDGER_DB


@pytest.fixture
def three(ledger):
    """Three sessions: A with a 👎 turn labelled wrong-tool, B with a 👍 session, C unmarked."""
    found = {}
    for n, name in enumerate("ABC"):
        s = ledger.session(id=f"S{name}", label=f"Session {name}", updated_at=T0 + n)
        root = ledger.turn(s, id=f"T{name}1")
        ledger.message(root, 1, content=f"question {name}")
        child = ledger.turn(s, root, id=f"T{name}2")
        ledger.set_head(s, root, child)
        found[name] = s
    return found


@pytest.fixture
def marked(three, viewer, operator):
    save_marks(viewer, "SA", "TA2", Marks(thumb=-1, labels=["wrong-tool"], note="bad call"))
    save_marks(operator, "SA", "TA1", Marks(score=4, labels=["wrong-tool", "slow"]))
    save_marks(operator, "SB", "", Marks(thumb=1))
    return three


def listed(client, **query) -> list[str]:
    twin = client.get("/sessions/", query | {"format": "json"}).json()
    return [s["id"] for s in twin["sessions"]]


def test_the_list_shows_everyone_s_marks_per_session(viewer_client, marked):
    page = viewer_client.get("/sessions/").content.decode()
    parse_html(page)
    row_a = page[page.index("Session A") :].split("</tr>")[0]
    assert "👎1" in row_a and ">wrong-tool</a>" in row_a and ">slow</a>" in row_a and "✎1" in row_a
    row_b = page[page.index("Session B") :].split("</tr>")[0]
    assert "👍1" in row_b
    row_c = page[page.index("Session C") :].split("</tr>")[0]
    assert "👍" not in row_c and "label-chip" not in row_c
    twin = viewer_client.get("/sessions/?format=json").json()
    a = next(s for s in twin["sessions"] if s["id"] == "SA")
    assert a["annotations"] == {
        "up": 0,
        "down": 1,
        "notes": 1,
        "score": 4.0,
        "scores": 1,
        "labels": {"wrong-tool": 2, "slow": 1},
    }


def test_sessions_labelled_or_thumbed_are_filtered(viewer_client, marked):
    assert listed(viewer_client, label="wrong-tool") == ["SA"]
    assert listed(viewer_client, label="slow") == ["SA"]
    assert listed(viewer_client, thumb="down") == ["SA"]
    assert listed(viewer_client, thumb="up") == ["SB"]
    assert listed(viewer_client, label="wrong-tool", thumb="up") == []
    assert listed(viewer_client, label="nobody-uses-this") == []
    assert sorted(listed(viewer_client)) == ["SA", "SB", "SC"]


def test_the_filter_form_offers_labels_and_filters_with_htmx(viewer_client, marked):
    page = viewer_client.get("/sessions/").content.decode()
    select = page.split('id="f-label"')[1].split("</select>")[0]
    assert ">wrong-tool</option>" in select and ">slow</option>" in select
    response = viewer_client.get("/sessions/", {"thumb": "down"}, headers={"HX-Request": "true"})
    parse_fragment(response.content)
    body = response.content.decode()
    assert "Session A" in body and "Session B" not in body and "<html" not in body


def test_a_label_chip_leads_to_the_sessions_so_labelled(viewer_client, marked):
    page = viewer_client.get("/sessions/SA/turns/TA2/").content.decode()
    assert 'href="/sessions/?label=wrong-tool"' in page
    followed = viewer_client.get("/sessions/?label=wrong-tool").content.decode()
    assert "Session A" in followed and "Session B" not in followed
    select = followed.split('id="f-label"')[1].split("</select>")[0]
    assert '<option value="wrong-tool" selected>' in select


def test_a_bad_thumb_is_named_and_not_applied(viewer_client, marked):
    twin = viewer_client.get("/sessions/?thumb=sideways&format=json").json()
    assert "thumb" in twin["errors"]
    assert len(twin["sessions"]) == 3


def test_the_thread_shows_each_turn_s_marks(viewer_client, marked):
    page = viewer_client.get("/sessions/SA/turns/TA2/thread/").content.decode()
    parse_html(page)
    steps = page.split('<li class="step')[1:]
    ta1 = next(s for s in steps if "TA1</code>" in s)
    ta2 = next(s for s in steps if "TA2</code>" in s)
    assert "4.0/5" in ta1 and ">slow</a>" in ta1
    assert "👎1" in ta2 and "✎1" in ta2


def test_the_turn_s_json_twin_holds_its_annotations(viewer_client, marked):
    twin = viewer_client.get("/sessions/SA/turns/TA2/?format=json").json()
    assert twin["annotations"] == [
        {
            "user": "vera",
            "thumb": -1,
            "score": None,
            "labels": ["wrong-tool"],
            "note": "bad call",
            "created_at": twin["annotations"][0]["created_at"],
            "updated_at": twin["annotations"][0]["updated_at"],
        }
    ]
    assert viewer_client.get("/sessions/SB/?format=json").json()["annotations"][0]["thumb"] == 1


def many_annotations(users, sessions: list[str], per_session: int) -> None:
    """Annotations written in bulk: every user on every turn id of every session."""
    now = T0
    rows = [
        Annotation(
            user=user,
            session_id=session_id,
            turn_id=f"X{n}",
            thumb=1 if n % 2 else -1,
            note="n" if n % 3 == 0 else "",
            created_at=now,
            updated_at=now,
        )
        for user in users
        for session_id in sessions
        for n in range(per_session)
    ]
    Annotation.objects.bulk_create(rows, batch_size=500)
    Label.objects.bulk_create(
        [
            Label(annotation=a, name=f"l{a.pk % 7}")
            for a in Annotation.objects.filter(turn_id__startswith="X")
        ],
        batch_size=500,
    )


def test_thousands_of_annotations_cost_the_list_a_fixed_number_of_queries(
    viewer_client, viewer, operator, marked, django_assert_max_num_queries
):
    many_annotations([viewer, operator], ["SA", "SB", "SC"], 1_700)  # 10,200 annotations
    # Django's database: session and user (2), the two summaries, the labels offered (1); the
    # ledger's queries are the list's own (its savepoint and version included), none per
    # annotation.
    with (
        django_assert_max_num_queries(8),
        django_assert_max_num_queries(12, connection=connections["ledger"]),
    ):
        page = viewer_client.get("/sessions/").content.decode()
    row_a = page[page.index("Session A") :].split("</tr>")[0]
    assert "👍1700" in row_a and "👎1701" in row_a
    with django_assert_max_num_queries(8):
        assert listed(viewer_client, thumb="down") == ["SC", "SB", "SA"]


def test_a_label_chip_in_the_list_keeps_the_list_s_other_filters(viewer_client, marked):
    page = viewer_client.get("/sessions/?persona=atlas&thumb=down").content.decode()
    assert 'href="?persona=atlas&amp;thumb=down&amp;label=wrong-tool"' in page


def test_tree_rows_show_everyone_s_marks(viewer_client, marked):
    page = viewer_client.get("/sessions/SA/?unfold=all").content.decode()
    parse_html(page)
    row = page[page.index('id="turn-TA2"') :].split("</a>")[0]
    assert '<span class="mark mark-annotated"' in row and "👎1 wrong-tool" in row
    assert "labels wrong-tool" in row  # the hover names them all
    row = page[page.index('id="turn-TA1"') :].split("</a>")[0]
    assert "score 4.0 of 5" in row and "labels slow, wrong-tool" in row


def test_the_find_box_walks_turns_labelled_or_thumbed(viewer_client, marked):
    find = "/search/in/SA/"
    assert viewer_client.get(find, {"q": "label:wrong-tool"}).json()["turn_ids"] == ["TA1", "TA2"]
    assert viewer_client.get(find, {"q": "thumb:down"}).json()["turn_ids"] == ["TA2"]
    assert viewer_client.get(find, {"q": "👎"}).json()["turn_ids"] == ["TA2"]
    assert viewer_client.get(find, {"q": 'label:"slow"'}).json()["turn_ids"] == ["TA1"]
    assert viewer_client.get(find, {"q": "label:nothing"}).json()["turn_ids"] == []
    assert viewer_client.get("/search/in/SB/", {"q": "label:wrong-tool"}).json()["turn_ids"] == []


def test_without_javascript_the_find_box_lists_the_marked_turns(viewer_client, marked):
    # The find box's form, posted as a browser without JavaScript does: to the search page.
    page = viewer_client.get("/search/", {"session": "SA", "q": "label:wrong-tool"})
    body = page.content.decode()
    parse_html(body)
    listed = body[body.index('id="marked"') :].split("</section>")[0]
    assert "Turns labelled “wrong-tool” in this session" in listed
    assert 'href="/sessions/SA/turns/TA2/#turn-annotations"' in listed
    assert 'href="/sessions/SA/turns/TA1/#turn-annotations"' in listed
    twin = viewer_client.get("/search/", {"q": "thumb:down", "format": "json"}).json()
    assert [(t["session_id"], t["turn_id"]) for t in twin["marked"]["turns"]] == [("SA", "TA2")]


def test_a_session_page_with_ten_thousand_annotations_costs_a_few_queries(
    viewer_client, viewer, operator, marked, django_assert_max_num_queries
):
    many_annotations([viewer, operator], ["SA"], 5_000)
    with django_assert_max_num_queries(14):  # ledgerweb's database: the page's own, and marks
        page = viewer_client.get("/sessions/SA/").content.decode()
    assert "👎1 wrong-tool" in page
