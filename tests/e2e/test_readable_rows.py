"""Readable rows (issue 28): at 1280 px every row of the turn tree shows at least 60 characters of
its prompt or answer (all of it when shorter), counted as a person sees them after clipping, and
sibling rows whose answers differ never look the same, on the demo ledger and on 100 real
branching conversations (tests/real_branching.py). Before, the tree had half the width, rows
showed 15-20 characters, and "I. Introduction" three times.
"""

import re
from urllib.parse import quote

import pytest
from real_branching import write_conversations
from test_walker import demo, demo_file, most_branched_session, shipped_demo  # noqa: F401
from visible_text import VISIBLE_ROWS

pytestmark = pytest.mark.django_db(transaction=True, databases="__all__")

DESKTOP = {"width": 1280, "height": 900}
AT_LEAST = 60


def words(shown: str) -> str:
    """A row's text without the marks that are not words of it: "↳ " and a leading "…"."""
    return re.sub(r"^(↳ )?…?", "", shown)


def too_short(rows: list[dict]) -> list[dict]:
    return [r for r in rows if r["chars"] < min(AT_LEAST, len(words(r["whole"])))]


def test_every_row_of_the_demos_most_branched_session_shows_60_characters(
    page, live_server, viewer, demo, sign_in  # noqa: F811
):  # fmt: skip
    page.set_viewport_size(DESKTOP)
    sign_in("vera", next_url=f"/sessions/{quote(most_branched_session(demo))}/?unfold=all")
    rows = page.evaluate(VISIBLE_ROWS)
    assert len(rows) > 100
    assert too_short(rows) == []
    long_ones = [r for r in rows if len(words(r["whole"])) > AT_LEAST]
    assert long_ones, "the demo has prompts longer than a row"


@pytest.fixture
def real(ledger):
    ledger.conn.execute("BEGIN")  # 2,000 rows: one commit, not one each
    conversations = write_conversations(ledger)
    ledger.conn.execute("COMMIT")
    return conversations


def test_real_branching_conversations_read_whole_and_siblings_differ_on_screen(
    page, live_server, viewer, real, sign_in
):
    """Every session of the 100 real conversations: each row shows 60 characters or all of its
    text, and in each of their 211 groups of siblings, two siblings whose answers (or prompts)
    differ show different text on screen."""
    page.set_viewport_size(DESKTOP)
    sign_in("vera", next_url="/sessions/")
    groups = short = alike = 0
    problems = []
    for convo in real:
        page.goto(f"{live_server.url}/sessions/{quote(convo.session['id'])}/")
        rows = {r["turn"]: r for r in page.evaluate(VISIBLE_ROWS)}
        assert set(rows) == set(convo.turns), convo.session["id"]
        for row in too_short(list(rows.values())):
            short += 1
            problems.append(f"{row['turn']}: only {row['seen']!r}")
        for siblings in convo.siblings():
            groups += 1
            seen: dict[str, str] = {}
            for turn_id in siblings:
                whole = (convo.prompts[turn_id], convo.answers[turn_id])
                other = seen.get(rows[turn_id]["seen"])
                if other is not None and whole != (convo.prompts[other], convo.answers[other]):
                    alike += 1
                    problems.append(f"{turn_id} and {other} both read {rows[turn_id]['seen']!r}")
                seen[rows[turn_id]["seen"]] = turn_id
    assert groups == 211
    assert (short, alike) == (0, 0), problems[:20]
