"""What the template draws for each row of the turn tree: geometry, marks and keyboard links,
one page of rows at a time."""

from dataclasses import dataclass

from sessions.detail import SessionTree, TurnInfo
from sessions.gutter import Gutter, Gutters
from sessions.tree import Fold, Layout, Row, fold_straight_runs

MIN_FOLD = 8
# A page of the tree shows at most PAGE_ROWS rows (a folded stretch counts as one), and fewer in
# a wide tree, whose every row draws a line per lane in use: a page stays under ~PAGE_BYTES of
# HTML whatever the tree (a 50,000-turn session on one page was 8 MB, 39 MB unfolded).
PAGE_ROWS = 1_000
PAGE_BYTES = 2_000_000
ROW_BYTES = 800  # a row's HTML without its gutter's lines, about (rows_html)
LANE_BYTES = 50  # one lane's line in a row's gutter, about


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


@dataclass
class TreePage:
    """One page of the tree's rows as shown (folded or not), with its place among the pages."""

    items: list[TreeItem]
    number: int  # 1-based
    count: int
    first_position: int  # 1-based position of the page's first row among all shown rows
    total: int  # rows shown over all pages (a folded stretch counts as one)

    @property
    def last_position(self) -> int:
        return self.first_position + len(self.items) - 1

    @property
    def earlier(self) -> int | None:
        return self.number - 1 if self.number > 1 else None

    @property
    def later(self) -> int | None:
        return self.number + 1 if self.number < self.count else None

    @property
    def anchor_id(self) -> str | None:
        """The page's first turn: folding or unfolding the tree keeps it in view."""
        first = self.items[0] if self.items else None
        if first is None:
            return None
        return first.fold.first.node.id if first.fold else first.turn.id


def rows_per_page(lane_count: int) -> int:
    return max(1, min(PAGE_ROWS, PAGE_BYTES // (ROW_BYTES + LANE_BYTES * lane_count)))


def tree_page(
    session_tree: SessionTree,
    selected_id: str | None,
    unfold: bool,
    number: int | None = None,
    at_id: str | None = None,
) -> TreePage:
    """The page `number` of the tree, else the page holding `at_id`, else the selected turn's.
    A number past the end gives the last page. The layout (lanes, neighbours) is the whole
    tree's, so a page's rows draw and link exactly as they would on one endless page."""
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

    per_page = rows_per_page(layout.lane_count)
    count = max(1, -(-len(shown) // per_page))
    if number is None:
        number = _position_of(shown, at_id or selected_id) // per_page + 1
    number = min(max(number, 1), count)
    start = (number - 1) * per_page

    next_sibling = _next_siblings(layout)
    gutters = Gutters(layout.lane_count)
    items = []
    for entry in shown[start : start + per_page]:
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
    return TreePage(items, number, count, start + 1, len(shown))


def _position_of(shown: list[Row | Fold], turn_id: str | None) -> int:
    """Where a turn is among the shown rows, in a row or inside a fold (0 when it is not)."""
    for position, entry in enumerate(shown):
        if isinstance(entry, Fold):
            if any(row.node.id == turn_id for row in entry.rows):
                return position
        elif entry.node.id == turn_id:
            return position
    return 0


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
