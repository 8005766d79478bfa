"""A session being written is read again at every commit, and its tree is brought up to date
from the one kept for the previous version (sessions/detail.py, "A session being written"): it
must be the very tree a fresh read makes, commit after commit, whatever was written."""

import re

import pytest
from builders import T0
from pg_ledger import PostgresConnection

from ledgerweb import sqlite
from sessions import detail

# The pages must see the builder's commits: no test transaction around them.
pytestmark = pytest.mark.django_db(transaction=True, databases="__all__")

ROW = re.compile(r'<a class="tree-row[^"]*" id="turn-.*?</a>', re.S)
RUNNING_FOR = re.compile(r"<span data-running-for>[^<]*</span>")  # a clock, not a fact


def seen(client, path: str) -> tuple[dict, list[str]]:
    """What the session's page says: its JSON twin (every turn with its counts, prompt, answer
    and cost, the totals) and its tree's rows as drawn."""
    twin = client.get(path + "?format=json&unfold=all").json()
    page = client.get(path + "?unfold=all").content.decode()
    return twin, [RUNNING_FOR.sub("", row) for row in ROW.findall(page)]


def differences(updated, afresh) -> str:
    """Where two looks at a page part, for the failure's message."""
    (twin, rows), (twin_afresh, rows_afresh) = updated, afresh
    found = [k for k in twin if twin[k] != twin_afresh.get(k) and k != "turns"]
    found += [
        f"turn {a['id']}: " + ", ".join(f"{k}={a[k]!r} not {b[k]!r}" for k in a if a[k] != b[k])
        for a, b in zip(twin["turns"], twin_afresh["turns"], strict=False)
        if a != b
    ]
    found += [f"row {a} not {b}" for a, b in zip(rows, rows_afresh, strict=False) if a != b]
    return "; ".join(found) or "the number of turns or rows"


@pytest.fixture
def counted(monkeypatch):
    """The number of turns each read of a tree gathered the aggregates of."""
    sizes = []
    gather = detail.add_aggregates

    def counting(turns, tables=None):
        sizes.append(len(turns))
        return gather(turns, tables)

    monkeypatch.setattr(detail, "add_aggregates", counting)
    return sizes


def fresh_trees(monkeypatch):
    monkeypatch.setattr(detail, "_trees", sqlite.WhileUnchanged(keep=4))


def test_a_tree_brought_up_to_date_is_the_tree_read_afresh(
    viewer_client, ledger, monkeypatch, counted
):
    # Of the turn rows, the two newest are read again at each commit (and the turns written to):
    # the others are kept as they were.
    monkeypatch.setattr(detail, "RECENT_TURNS", 2)
    s = ledger.session(id="S1")
    turns = [ledger.turn(s, id="T1", started_at=T0)]
    for n in range(2, 12):
        turns.append(ledger.turn(s, parent=turns[-1], id=f"T{n}", started_at=T0 + n * 1000))
        ledger.message(turns[-1], 1, content=f"question {n}")
        ledger.tool_call(turns[-1], 1)
    ledger.set_head(s, turns[0], turns[-1])
    running = {"id": "T12", "started_at": T0 + 20_000}
    writes = [
        ("a new turn begins", lambda: (
            ledger.turn(s, parent=turns[-1], id="T12", status="pending", started_at=T0 + 20_000,
                        completed_at=None, total_tokens=None),
            ledger.message(running, 1, content="Deploy the app"))),
        ("it calls a tool", lambda: ledger.tool_call(running, 1, id="C12", status="pending",
                                                    completed_at=None)),
        ("the call fails in place", lambda: ledger.conn.execute(
            "UPDATE tool_calls SET status = 'failed' WHERE id = 'C12'")),
        ("the turn ends, its tokens a REAL", lambda: ledger.conn.execute(
            "UPDATE turns SET status = 'completed', completed_at = ?, total_tokens = 1337.0"
            " WHERE id = 'T12'", (T0 + 29_000,))),
        ("the head moves", lambda: ledger.conn.execute(
            "UPDATE sessions SET current_turn_id = 'T12' WHERE id = 'S1'")),
        ("an old turn gets an earlier user message", lambda: ledger.message(
            turns[3], 0, content="A prompt written before the first")),
        ("an old turn's call is added", lambda: ledger.tool_call(turns[4], 2, status="failed")),
        ("an old turn becomes a compaction", lambda: ledger.compaction(turns[5], "Summary")),
        ("an old turn's usage is billed", lambda: ledger.usage(turns[6], calls=2, input=900,
                                                            output=40)),
        ("the agent goes on from its head", lambda: (
            ledger.turn(s, parent=running, id="T13", started_at=T0 + 40_000),
            ledger.conn.execute("UPDATE sessions SET current_turn_id = 'T13' WHERE id = 'S1'"))),
        ("a regeneration beside an old turn", lambda: (
            ledger.turn(s, parent=turns[6], id="T7b", started_at=turns[7]["started_at"] + 1),
            ledger.message({"id": "T7b", "started_at": T0}, 1, content="question 8"),
            ledger.message({"id": "T7b", "started_at": T0}, 2, role="assistant",
                           content="Another answer"))),
        # '' beside NULL (a PostgreSQL ledger's bigint holds no text: NULL there).
        ("a finished turn's tokens come in a commit of their own", lambda: ledger.conn.execute(
            "UPDATE turns SET total_tokens = ? WHERE id = 'T7b'",
            (None if isinstance(ledger.conn, PostgresConnection) else "",))),
        ("a turn's model is written as a number", lambda: ledger.conn.execute(
            "UPDATE turns SET model = 5 WHERE id = 'T7b'")),
        ("another regeneration begins, its prompt not yet written", lambda: ledger.turn(
            s, parent=turns[6], id="T7c", status="pending", completed_at=None, total_tokens=None,
            started_at=turns[7]["started_at"] + 2)),
        ("its prompt is written: the same as its siblings'", lambda: ledger.message(
            {"id": "T7c", "started_at": T0}, 1, content="question 8")),
        ("its answer is written", lambda: ledger.message(
            {"id": "T7c", "started_at": T0}, 2, role="assistant", content="A longer answer")),
        ("it moves under another turn: two siblings left where three were", lambda: (
            ledger.conn.execute("UPDATE turns SET parent_turn_id = 'T2' WHERE id = 'T7c'"))),
        ("a turn begins beside an old one, and another after it", lambda: (
            ledger.turn(s, parent=turns[2], id="T3b", status="pending", completed_at=None,
                        total_tokens=500, started_at=T0 + 50_000),
            ledger.turn(s, parent=turns[2], id="T3c", started_at=T0 + 51_000))),
        ("the first of them is deleted while it runs", lambda: ledger.conn.execute(
            "DELETE FROM turns WHERE id = 'T3b'")),
    ]  # fmt: skip
    extended = []
    extend = detail.tree.extended
    monkeypatch.setattr(
        detail.tree, "extended", lambda *a: extended.append(extend(*a)) or extended[-1]
    )
    path = "/sessions/S1/"
    seen(viewer_client, path)
    for what, write in writes:
        counted.clear()
        write()
        updated = seen(viewer_client, path)
        assert counted and max(counted) < len(updated[0]["turns"]), (
            f"{what}: the tree was read whole, not brought up to date"
        )
        fresh_trees(monkeypatch)
        afresh = seen(viewer_client, path)
        assert updated == afresh, f"{what}: not the tree a fresh read makes: " + differences(
            updated, afresh
        )
    assert any(extended), "no layout was worked out from the kept one"


def test_an_old_turn_edited_in_place_shows_once_the_tree_is_read_whole(viewer_client, ledger,
                                                                       monkeypatch):  # fmt: skip
    """What the live poll does not watch either (a finished turn's message rewritten, a turn
    older than the newest RECENT_TURNS changed in place: the ledger appends) shows within
    WHOLE_READ_EVERY_S, not at the next commit."""
    monkeypatch.setattr(detail, "RECENT_TURNS", 1)
    s = ledger.session(id="S1")
    root = ledger.turn(s, id="T1", total_tokens=1337)
    message = ledger.message(root, 1, content="First words")
    head = ledger.turn(s, parent=root, id="T2")
    ledger.set_head(s, root, head)
    assert "First words" in viewer_client.get("/sessions/S1/?unfold=all").content.decode()
    ledger.conn.execute("UPDATE messages SET content = 'Edited words' WHERE id = ?",
                        (message["id"],))  # fmt: skip
    ledger.conn.execute("UPDATE turns SET total_tokens = 4242 WHERE id = 'T1'")
    ledger.turn(s, parent=head, id="T3")  # a commit that brings the tree up to date
    page = viewer_client.get("/sessions/S1/?unfold=all").content.decode()
    assert "First words" in page and 'title="1337 tokens"' in page
    monkeypatch.setattr(detail, "WHOLE_READ_EVERY_S", -1.0)
    ledger.turn(s, parent={"id": "T3"}, id="T4")  # the next commit, the tree's time up
    page = viewer_client.get("/sessions/S1/?unfold=all").content.decode()
    assert "Edited words" in page and 'title="4242 tokens"' in page
