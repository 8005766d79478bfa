"""What the template draws for each row of the turn tree: geometry, marks and keyboard links."""

from dataclasses import dataclass

from sessions.detail import SessionTree, TurnInfo
from sessions.gutter import Gutter, Gutters
from sessions.tree import Fold, Layout, Row, fold_straight_runs

MIN_FOLD = 8


@dataclass(slots=True)
class TreeItem:
    gutter: Gutter
    row: Row | None = None
    fold: Fold | None = None
    turn: TurnInfo | None = None
    marks: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()
    parent_id: str = ""
    first_child_id: str = ""
    next_sibling_id: str = ""
    selected: bool = False


def marks_of(row: Row, turn: TurnInfo, head_id: str | None) -> tuple[str, ...]:
    """The words shown next to a turn; colour only repeats them."""
    marks = []
    if row.is_root:
        marks.append("root")
    if row.node.id == head_id:
        marks.append("head")
    elif row.is_leaf:
        marks.append("leaf")
    if turn.inherited:
        marks.append("inherited")
    if turn.is_compaction:
        marks.append("compaction")
    if turn.status != "completed":
        marks.append(turn.status if turn.status_known else "unknown status")
    return tuple(marks)


def tree_items(session_tree: SessionTree, selected_id: str | None, unfold: bool) -> list[TreeItem]:
    layout = session_tree.layout
    head_id = session_tree.session.current_turn_id
    problems_by_turn: dict[str, list[str]] = {}
    for problem in session_tree.problems:
        problems_by_turn.setdefault(problem.turn_id, []).append(problem.message)

    keep = {head_id, selected_id, *problems_by_turn}
    keep |= {
        t.id for t in session_tree.turns.values() if t.status != "completed" or t.is_compaction
    }
    if unfold:
        shown = list(layout.rows)
    else:
        shown = fold_straight_runs(layout, keep={k for k in keep if k}, min_run=MIN_FOLD)

    next_sibling = _next_siblings(layout)
    gutters = Gutters(layout.lane_count)
    items = []
    for entry in shown:
        gutter = gutters.of(entry)
        if isinstance(entry, Fold):
            items.append(TreeItem(gutter, fold=entry))
            continue
        row, turn = entry, entry.node.data
        parent = layout.by_id.get(turn.parent_turn_id) if turn.parent_turn_id else None
        items.append(
            TreeItem(
                gutter,
                row=row,
                turn=turn,
                marks=marks_of(row, turn, head_id),
                problems=tuple(problems_by_turn.get(row.node.id, ())),
                parent_id=parent.node.id if parent and not row.is_root else "",
                first_child_id=row.child_ids[0] if row.child_ids else "",
                next_sibling_id=_next_sibling_of(row, parent, next_sibling),
                selected=row.node.id == selected_id,
            )
        )
    return items


def _next_siblings(layout: Layout) -> dict[str, str]:
    """Each turn's next sibling branch, wrapping round to the first: one pass over the tree, not
    a search of the siblings per row (a root with 5,000 children would make that quadratic)."""
    following = {}
    for row in layout.rows:
        kids = row.child_ids
        if len(kids) > 1:
            for kid, after in zip(kids, kids[1:] + kids[:1], strict=True):
                following[kid] = after
    return following


def _next_sibling_of(row: Row, parent: Row | None, following: dict[str, str]) -> str:
    if parent is None or len(parent.child_ids) < 2:
        return ""
    # A turn cut loose from its parent (a broken cycle) is not among the parent's children:
    # "next branch" then goes to the parent's first child.
    return following.get(row.node.id, parent.child_ids[0])
