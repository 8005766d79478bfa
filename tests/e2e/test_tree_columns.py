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
