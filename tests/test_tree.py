"""The turn tree layout: pure functions, tested without a database."""

from sessions.gutter import Gutters, gutter_for
from sessions.tree import Fold, Node, extended, fold_straight_runs, layout


def tree(*edges, head=None):
    """tree(("r", None), ("a", "r"), ...) in start order."""
    return layout([Node(i, p, n) for n, (i, p) in enumerate(edges)], head_id=head)


def ids(rows):
    return [r.node.id for r in rows]


MOCKUP = [
    ("root", None),
    ("a", "root"),
    ("failed", "a"),
    ("never-mind", "failed"),
    ("c", "a"),
    ("d", "c"),
    ("e", "d"),
    ("f", "c"),
    ("head", "f"),
]


def test_rows_are_depth_first_with_the_heads_branch_last():
    rows = tree(*MOCKUP, head="head").rows
    assert ids(rows) == ["root", "a", "failed", "never-mind", "c", "d", "e", "f", "head"]


def test_the_heads_line_runs_straight_down_lane_zero():
    result = tree(*MOCKUP, head="head")
    path = ["root", "a", "c", "f", "head"]
    assert [result.by_id[i].lane for i in path] == [0, 0, 0, 0, 0]
    assert all(result.by_id[i].on_head_path for i in path)


def test_a_side_branch_leaves_its_parent_for_a_lane_of_its_own():
    result = tree(*MOCKUP, head="head")
    failed = result.by_id["failed"]
    assert (failed.parent_lane, failed.lane) == (0, 1)
    assert failed.branches_out
    # While the side branch is drawn, the parent's line passes by it in lane 0.
    assert failed.passing == (0,)
    assert result.by_id["never-mind"].passing == (0,)


def test_a_lane_freed_by_a_leaf_is_reused():
    result = tree(*MOCKUP, head="head")
    assert result.by_id["d"].lane == 1  # lane 1 again, after never-mind ended there
    assert result.lane_count == 2


def test_three_branches_from_one_parent_each_leave_it():
    result = tree(("r", None), ("x", "r"), ("y", "r"), ("z", "r"), head="z")
    # x ends before y starts, so y reuses x's lane; the parent's line passes both.
    assert [result.by_id[i].lane for i in "xyz"] == [1, 1, 0]
    assert [result.by_id[i].passing for i in "xyz"] == [(0,), (0,), ()]
    assert result.branch_count == 3


def test_nested_side_branches_open_more_lanes():
    result = tree(("r", None), ("a", "r"), ("b", "a"), ("b2", "a"), ("c", "r"), head="c")
    assert [result.by_id[i].lane for i in ("a", "b", "b2", "c")] == [1, 2, 1, 0]
    assert result.by_id["b"].passing == (0, 1)
    assert result.lane_count == 3


def test_roots_leaves_and_head_are_marked():
    result = tree(*MOCKUP, head="head")
    assert [r.node.id for r in result.rows if r.is_root] == ["root"]
    assert ids(result.leaves) == ["never-mind", "e", "head"]
    assert [r.node.id for r in result.rows if r.is_head] == ["head"]


def test_a_cycle_is_broken_and_reported_instead_of_looping():
    result = tree(("x", "y"), ("y", "x"), ("ok", None))
    assert sorted(ids(result.rows)) == ["ok", "x", "y"]
    assert [p.message for p in result.problems] == ["parent chain loops back on itself (a cycle)"]


def test_a_turn_that_is_its_own_parent_is_reported():
    result = tree(("me", "me"))
    assert ids(result.rows) == ["me"]
    assert result.problems[0].message == "this turn names itself as its parent"


def test_a_missing_parent_makes_a_root_without_losing_the_turn():
    result = tree(("r", None), ("orphan", "gone"), ("child", "orphan"))
    assert ids(result.rows) == ["r", "orphan", "child"]
    assert result.by_id["orphan"].is_root


def test_a_duplicated_id_is_shown_once_and_reported():
    result = layout([Node("t", None, 1), Node("t", None, 2)])
    assert ids(result.rows) == ["t"]
    assert "appears twice" in result.problems[0].message


def test_junk_start_times_do_not_break_sibling_order():
    result = layout([Node("r", None, 0), Node("b", "r", "yesterday"), Node("a", "r", 5)])
    assert ids(result.rows) == ["r", "a", "b"]


def test_a_twenty_thousand_deep_thread_is_laid_out_without_recursion():
    nodes = [Node("t0", None, 0)] + [Node(f"t{i}", f"t{i - 1}", i) for i in range(1, 20_000)]
    result = layout(nodes, head_id="t19999")
    assert len(result.rows) == 20_000
    assert result.by_id["t19999"].depth == 19_999


def test_straight_stretches_fold_but_keep_their_ends_and_kept_turns():
    nodes = [Node("t0", None, 0)] + [Node(f"t{i}", f"t{i - 1}", i) for i in range(1, 30)]
    shown = fold_straight_runs(layout(nodes), keep={"t0", "t29", "t15"}, min_run=5)
    folds = [item for item in shown if isinstance(item, Fold)]
    visible = [item.node.id for item in shown if not isinstance(item, Fold)]
    assert "t15" in visible and "t0" in visible and "t29" in visible
    assert [len(f) for f in folds] == [12, 11]
    assert sum(len(f) for f in folds) + len(visible) == 30


def test_short_stretches_and_branch_points_are_not_folded():
    shown = fold_straight_runs(tree(*MOCKUP, head="head"), keep={"head"}, min_run=3)
    assert not any(isinstance(item, Fold) for item in shown)


def test_gutter_draws_the_branch_curve_and_passing_lines():
    result = tree(*MOCKUP, head="head")
    g = gutter_for(result.by_id["failed"], result.lane_count)
    assert g.width == 32
    assert [s.lane for s in g.strokes] == [0, 1, 1]  # passing line, curve in, line down
    assert g.strokes[1].d.startswith("M8,0C")  # leaves lane 0 at the top of the row
    assert g.dot_x == 24 and not g.hollow
    leaf = gutter_for(result.by_id["never-mind"], result.lane_count)
    assert leaf.hollow and all(not s.d.endswith("V30") or s.lane == 0 for s in leaf.strokes)


def test_rows_of_one_shape_share_a_gutter_and_a_fold_keeps_its_dashed_line():
    straight = tree(("t0", None), *[(f"t{i}", f"t{i - 1}") for i in range(1, 30)], head="t29")
    gutters = Gutters(straight.lane_count)
    middle = [gutters.of(row) for row in straight.rows[1:-1]]
    assert all(g is middle[0] for g in middle)  # one line straight through, drawn once
    assert gutters.of(straight.rows[-1]) is not middle[0] and gutters.of(straight.rows[-1]).hollow
    fold = next(i for i in fold_straight_runs(straight, keep=set()) if isinstance(i, Fold))
    assert [s.dashed for s in gutters.of(fold).strokes] == [True]
    assert gutters.of(fold) == gutter_for(fold, straight.lane_count)


# -- Laying out a tree again after a commit (tree.extended) ---------------------------------------


def _row_facts(layout):
    rows = [
        (r.node.id, r.node.parent_id, r.node.started_at, id(r.node.data), r.index, r.depth, r.lane,
         r.parent_lane, r.passing, r.has_children, r.child_ids, r.is_root, r.is_head,
         r.on_head_path)
        for r in layout.rows
    ]  # fmt: skip
    return rows, layout.lane_count, layout.problems, {k: v.index for k, v in layout.by_id.items()}


def test_a_tree_extended_is_the_tree_laid_out_afresh():
    """Random growth of a tree, step by step, as an agent writes it: a line of turns under the
    head (laid out from the previous layout), a regeneration or a branch somewhere, a turn's
    data changing in place, the head moving back. Every layout `extended` makes is the one
    `layout` makes; and it makes one for every step that only goes on from the head."""
    import random

    rng = random.Random(29)
    for _ in range(40):
        nodes = {"R": Node("R", None, 0, object())}
        head, previous, extended_count = "R", layout(nodes.values(), "R"), 0
        for step in range(60):
            kind = rng.choice(["line", "line", "line", "data", "branch", "head", "nothing"])
            if kind == "line":
                for _ in range(rng.randint(1, 3)):
                    new = Node(f"N{step}-{len(nodes)}", head, len(nodes), object())
                    nodes[new.id] = new
                    head = new.id
            elif kind == "data":
                turn_id = rng.choice(list(nodes))
                old = nodes[turn_id]
                nodes[turn_id] = Node(old.id, old.parent_id, old.started_at, object())
            elif kind == "branch":
                parent = rng.choice(list(nodes))
                new = Node(f"B{step}", parent, rng.choice([len(nodes), -1, "x"]), object())
                nodes[new.id] = new
            elif kind == "head":
                head = rng.choice(list(nodes))
            listed = list(nodes.values())
            fresh = layout(listed, head)
            made = extended(previous, listed, head)
            if made is not None:
                extended_count += 1
                assert _row_facts(made) == _row_facts(fresh), f"step {step}: {kind}"
            elif (
                kind in ("line", "data", "nothing")
                and previous.rows[-1].is_head
                and not (previous.problems or previous.rows[-1].has_children)
            ):
                raise AssertionError(f"step {step}: a {kind} step was laid out afresh")
            previous = made or fresh
        assert extended_count > 0


def test_a_tree_is_not_extended_where_its_shape_changed():
    a = Node("A", None, 0, "a")
    b = Node("B", "A", 1, "b")
    previous = layout([a, b], "B")
    c = Node("C", "B", 2, "c")
    assert extended(previous, [a, b, c], "C") is not None
    assert extended(previous, [a, b, c], "B") is None  # the head did not go on
    assert extended(previous, [a, b, Node("C", "A", 2, "c")], "C") is None  # a branch
    assert extended(previous, [a, Node("B", "A", 5, "b")], "B") is None  # started moved
    assert extended(previous, [a], "A") is None  # a turn gone
    orphan = layout([a, Node("O", "P", 3, "o"), b], "B")
    assert orphan.rows[-1].node.id == "B"
    # The orphan's missing parent arrives under the head: the orphan hangs under it now.
    arrived = [a, Node("O", "P", 3, "o"), b, Node("P", "B", 4, "p")]
    assert extended(orphan, arrived, "P") is None
