"""The turn tree's facts (model, tokens, tool calls, duration) read as columns in a browser."""

import pytest
from builders import T0

pytestmark = pytest.mark.django_db(transaction=True, databases="__all__")

# Each fact's left edge, per row: equal in every row when the facts line up as columns.
FACT_EDGES = """[...document.querySelectorAll('.tree-row .facts')].map(
  (facts) => [...facts.children].map((fact) => Math.round(fact.getBoundingClientRect().left)))"""


def test_long_durations_and_many_tool_calls_keep_the_tree_columns_aligned(
    page, live_server, viewer, ledger, sign_in
):
    s = ledger.session(id="S1")
    root = parent = ledger.turn(s, id="T0", started_at=T0, completed_at=T0 + 8_000)
    # A turn of 5 min 15 s, one with 12 tool calls and one of 2 h 5 min among short ones.
    slow = ledger.turn(s, parent, id="T1", started_at=T0 + 1, completed_at=T0 + 1 + 315_000)
    busy = ledger.turn(s, slow, id="T2", started_at=T0 + 2, completed_at=T0 + 4_000)
    for sequence in range(1, 13):
        ledger.tool_call(busy, sequence)
    slower = ledger.turn(s, busy, id="T3", started_at=T0 + 3, completed_at=T0 + 3 + 7_500_000)
    head = ledger.turn(s, slower, id="T4", started_at=T0 + 4, completed_at=T0 + 6_000)
    ledger.set_head(s, root, head)
    sign_in("vera", next_url="/sessions/S1/")
    edges = page.evaluate(FACT_EDGES)
    assert len(edges) == 5
    assert all(row == edges[0] for row in edges), edges
