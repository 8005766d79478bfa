"""The tree's figures line up whatever their width (issue 16): "850 ms" and "5 min 33 s",
87 tokens and 1.2M, one tool and 12 tools end at the same place on every row."""

import pytest
from builders import T0

pytestmark = pytest.mark.django_db(transaction=True, databases="__all__")


@pytest.fixture
def uneven(ledger):
    s = ledger.session(id="S1")
    parent = None
    shapes = ((850, 87, 1), (333_000, 1_200_000, 12), (4_200, 5_000, 0), (3_600_000, 0, 3))
    for n, (ms, tokens, calls) in enumerate(shapes):
        parent = ledger.turn(
            s, parent, id=f"T{n}", started_at=T0 + n, completed_at=T0 + n + ms, total_tokens=tokens
        )
        ledger.message(parent, 1, content=f"question {n}")
        for k in range(calls):
            ledger.tool_call(parent, k)
    ledger.set_head(s, {"id": "T0"}, parent)


def test_the_figures_of_every_row_end_at_the_same_place(page, live_server, viewer, uneven, sign_in):
    sign_in("vera", next_url="/sessions/S1/")
    edges = page.evaluate(
        """() => Array.from(document.querySelectorAll('.tree-row[data-turn] .facts')).map(
            (facts) => Array.from(facts.children).map(
                (c) => Math.round(c.getBoundingClientRect().right)))"""
    )
    assert len(edges) == 4
    assert all(row == edges[0] for row in edges), edges


@pytest.fixture
def crowded(ledger):
    """Rows with every badge at once: failed, unknown status, siblings (2/3), a pending head."""
    s = ledger.session(id="S2")
    root = ledger.turn(s, id="R", started_at=T0, completed_at=T0 + 1)
    ledger.message(root, 1, content="a question " * 30)
    for n, status in enumerate(("failed", "weird-status", "pending")):
        t = ledger.turn(s, root, id=f"C{n}", status=status, started_at=T0 + 10 + n,
                        completed_at=T0 + 10 + n + 333_000, total_tokens=1_200_000,
                        model="claude-sonnet-4-20250514")  # fmt: skip
        ledger.message(t, 1, content="a question " * 30)
        ledger.message(t, 2, role="assistant", content=f"answer {n} " * 30)
        for k in range(12):
            ledger.tool_call(t, k, status="failed" if k == 0 else "completed")
    ledger.set_head(s, root, {"id": "C2"})


OVERFLOWING_ROWS = """() => Array.from(document.querySelectorAll('.tree-row[data-turn]')).filter(
    (row) => {
        const edge = row.getBoundingClientRect().right;
        return Array.from(row.querySelectorAll('.facts > *')).some(
            (c) => c.getBoundingClientRect().right > edge + 0.5);
    }).map((row) => row.dataset.turn)"""


@pytest.mark.parametrize("width", [1280, 390])
def test_no_figure_passes_the_edge_of_a_crowded_row(page, live_server, viewer, crowded, sign_in,
                                                   width):  # fmt: skip
    page.set_viewport_size({"width": width, "height": 900})
    sign_in("vera", next_url="/sessions/S2/")
    assert page.evaluate(OVERFLOWING_ROWS) == []


def test_one_row_carries_the_keyboard_cursor_after_clicks(page, live_server, viewer, crowded,
                                                          sign_in):  # fmt: skip
    sign_in("vera", next_url="/sessions/S2/")
    for turn_id in ("C0", "C1", "R"):
        page.locator(f'.tree-row[data-turn="{turn_id}"]').click()
        page.wait_for_timeout(150)
    assert page.locator(".tree-row.cursor").count() == 1


@pytest.fixture
def long_questions(ledger):
    """A root with two answers, every question long: ROOT, "2 answers", 1/2, LEAF, HEAD."""
    s = ledger.session(id="S3")
    root = ledger.turn(s, id="R", started_at=T0, completed_at=T0 + 1)
    ledger.message(root, 1, content="a long question " * 30)
    for n in range(2):
        t = ledger.turn(s, root, id=f"A{n}", started_at=T0 + 10 + n, completed_at=T0 + 20 + n)
        ledger.message(t, 1, content="a long question " * 30)
        ledger.message(t, 2, role="assistant", content=f"answer {n} " * 30)
    ledger.set_head(s, root, {"id": "A1"})


def test_a_wide_row_cuts_its_question_not_its_badges(
    page, live_server, viewer, long_questions, sign_in
):
    """On a desktop a row with a badge or two cuts its long question ("a long question a…"),
    and every badge reads whole (it read "RO", "HEA")."""
    page.set_viewport_size({"width": 1280, "height": 900})
    sign_in("vera", next_url="/sessions/S3/")
    clipped = page.evaluate(
        """() => Array.from(document.querySelectorAll('.tree-row[data-turn] .marks'))
            .filter((marks) => marks.scrollWidth > marks.clientWidth + 3)
            .map((marks) => marks.closest('.tree-row').dataset.turn)"""
    )  # a pixel or two is rounding; a cut letter is ~8 px
    assert page.locator(".tree-row[data-turn] .marks .mark").count() >= 3
    assert clipped == []
