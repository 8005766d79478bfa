"""Every answer at a branch point (issue 28): the branches below a turn side by side, each with
its answer, where it ended, turns, tokens, cost, failures and time, and the way to compare two,
open a thread or fork; in HTML and its JSON twin."""

from builders import LEDGER_DB, T0, parse_html

pytestmark = LEDGER_DB


def branched(ledger):
    """R has three answers: A (then A1, A2 failed: 3 turns), B (the head's), C (a leaf)."""
    s = ledger.session(id="S1")
    r = ledger.turn(s, id="R", started_at=T0, completed_at=T0 + 1_000, total_tokens=10)
    ledger.message(r, 1, content="what happened at Chernobyl?")
    made = {}
    for n, turn_id in enumerate(("A", "B", "C")):
        t = ledger.turn(s, r, id=turn_id, started_at=T0 + 10 + n, completed_at=T0 + 2_010 + n,
                        total_tokens=100)  # fmt: skip
        ledger.message(t, 1, content="what happened at Chernobyl?")
        ledger.message(
            t, 2, role="assistant", content=f"The accident was in 1986, answer {turn_id}"
        )
        made[turn_id] = t
    a1 = ledger.turn(s, made["A"], id="A1", started_at=T0 + 20, completed_at=T0 + 3_020,
                     total_tokens=50)  # fmt: skip
    ledger.turn(s, a1, id="A2", status="failed", started_at=T0 + 30, completed_at=T0 + 30,
                total_tokens=5)  # fmt: skip
    ledger.set_head(s, r, made["B"])


def test_the_branch_point_shows_every_answer_with_what_it_took(viewer_client, ledger):
    branched(ledger)
    page = viewer_client.get("/sessions/S1/turns/R/branches/").content.decode()
    parse_html(page)
    assert "3 answers at turn" in page
    assert "Each answers “what happened at Chernobyl?”" in page
    for turn_id in ("A", "B", "C"):
        assert f"answer {turn_id}" in page
    twin = viewer_client.get("/sessions/S1/turns/R/branches/?format=json").json()
    by_id = {b["turn_id"]: b for b in twin["branches"]}
    assert [b["turn_id"] for b in twin["branches"]] == ["A", "C", "B"]  # the head's last
    assert (by_id["A"]["turns"], by_id["A"]["tokens"], by_id["A"]["failed_turns"]) == (3, 155, 1)
    assert by_id["A"]["ended_turn_id"] == "A2" and by_id["A"]["ended_status"] == "failed"
    assert by_id["A"]["duration_ms"] == 2_000 + 3_000 + 0
    assert by_id["B"]["holds_head"] and by_id["B"]["ended_turn_id"] == "B"
    assert by_id["C"]["leaves"] == 1 and not by_id["C"]["holds_head"]
    assert twin["label"] == "3 answers" and by_id["A"]["answer"].endswith("answer A")


def test_from_the_branch_point_a_person_compares_two_opens_a_thread_and_forks(
    client, operator, ledger
):
    branched(ledger)
    client.force_login(operator)
    operator_client = client
    page = operator_client.get("/sessions/S1/turns/R/branches/").content.decode()
    assert 'action="/sessions/S1/compare/"' in page
    assert 'name="a" value="A" checked' in page and 'name="b" value="C" checked' in page
    assert 'href="/sessions/S1/turns/A2/thread/"' in page  # where branch A ended
    assert "Thread &amp; fork ↗" in page  # operators fork from the thread page
    compare = operator_client.get("/sessions/S1/compare/?a=A&b=C")
    assert compare.status_code == 200


def test_a_turn_with_one_child_is_no_branch_point(viewer_client, ledger):
    branched(ledger)
    assert viewer_client.get("/sessions/S1/turns/A/branches/").status_code == 404
    assert viewer_client.get("/sessions/S1/turns/NOPE/branches/").status_code == 404


def test_a_sessions_several_first_turns_are_a_branch_point_of_their_own(viewer_client, ledger):
    s = ledger.session(id="S'<2>")
    for n in range(2):
        t = ledger.turn(s, id=f"R{n}<b>", started_at=T0 + n)
        ledger.message(t, 1, content="<script>x</script> same question")
    ledger.set_head(s, {"id": "R0<b>"}, {"id": "R1<b>"})
    page = viewer_client.get("/sessions/S'%3C2%3E/branches/").content.decode()
    parse_html(page)
    assert "2 answers at the start of the session" in page
    assert "<script>x" not in page and "&lt;script&gt;x&lt;/script&gt;" in page


def test_the_tree_leads_to_the_branch_point(viewer_client, ledger):
    branched(ledger)
    page = viewer_client.get("/sessions/S1/turns/R/").content.decode()
    assert 'data-answers href="/sessions/S1/turns/R/branches/"' in page
    assert "3 answers side by side" in page
