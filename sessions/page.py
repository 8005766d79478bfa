"""What the template draws for each row of the turn tree: geometry, marks and keyboard links,
one page of rows at a time."""

from dataclasses import dataclass, field, replace
from urllib.parse import urlencode

from ledgerweb import long_values
from sessions import tree
from sessions.alternatives import Alternative, add_answers
from sessions.detail import SessionTree, TurnInfo
from sessions.gutter import Gutter, Gutters
from sessions.tree import Fold, Layout, Row, collapse, fold_straight_runs, subtree_end
from sessions.tree_map import MapShape, costliest, shape

MIN_FOLD = 8
# A page shows a window of at most PAGE_ROWS lines of the tree (a folded stretch is one line),
# fewer in a wide tree, whose every row draws a line per lane in use: a page stays under
# ~PAGE_BYTES of HTML whatever the tree (a 50,000-turn session on one page was 8 MB, 39 MB
# unfolded). 500 lines: ~28 screens at 1280 px, ~0.75 MB; a live page that follows a session
# being written draws its window again at each change (a window of 1,000 was 1.5 MB a second).
PAGE_ROWS = 500
PAGE_BYTES = 1_000_000
ROW_BYTES = 1_500  # a row's HTML without its gutter's lines, about (rows_html): ~600 of text
LANE_BYTES = 50  # one lane's line in a row's gutter, about


@dataclass(frozen=True)
class TreeView:
    """How the tree is shown, as the address says (`?unfold=all`, `?hoist=<turn>`,
    `?collapse=<turn>` repeated): straight stretches unfolded, only a turn's descendants, some
    branches hidden."""

    unfold: bool = False
    hoist: str | None = None
    collapsed: frozenset[str] = field(default_factory=frozenset)

    def params(self, **changes) -> list[tuple[str, str]]:
        """The view's parameters (ids as links write them), with `changes` made."""
        view = replace(self, **changes)
        pairs = [("unfold", "all")] if view.unfold else []
        if view.hoist:
            pairs.append(("hoist", long_values.for_link(view.hoist)))
        pairs += [("collapse", long_values.for_link(c)) for c in sorted(view.collapsed)]
        return pairs

    def query(self, *extra: tuple[str, str], **changes) -> str:
        """'?…' of the view (changed) and `extra` parameters; '' when there are none."""
        pairs = self.params(**changes) + list(extra)
        return "?" + urlencode(pairs) if pairs else ""


@dataclass(slots=True)
class TreeItem:
    """One line of the turn tree as drawn: a turn's row (`turn`, `row`) or a folded stretch or
    collapsed branch (`fold`), with what its row shows and links to. This is the row's data that
    the row writer (`rows_html.tree_rows_html`) turns into HTML, and that live updates and
    annotations extend (issues 29, 31): add a field here, draw it there."""

    gutter: Gutter
    line: int  # 1-based, among all the lines of the tree as shown
    row: Row | None = None
    fold: Fold | None = None
    turn: TurnInfo | None = None
    marks: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()
    parent_id: str = ""
    first_child_id: str = ""
    next_sibling_id: str = ""
    selected: bool = False
    alternative: Alternative | None = None  # its place among its siblings, if it has any
    branch_label: str = ""  # on a branch point: "3 answers" (regenerations) or "2 branches"
    forks_here: int = 0  # forks made at this turn
    bookmark: str | None = None  # this person's bookmark on it: its note ("" without one)
    visited: bool = False  # this person has opened it
    annotated: object | None = None  # everyone's marks on it (annotations.store.Summary)
    collapsed: bool = False  # its branches are hidden (the Fold after it holds them)


def marks_of(
    row: Row, turn: TurnInfo, head_id: str | None, fork_point: str | None = None
) -> tuple[str, ...]:
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
    if row.node.id == fork_point:
        marks.append("fork point")  # where this fork left its origin
    if turn.is_compaction:
        marks.append("compaction")
    if turn.status != "completed":
        marks.append(turn.status if turn.status_known else "unknown status")
    return tuple(marks)


@dataclass
class TreePage:
    """A window of the tree's lines as shown (a folded stretch is one line), and its place."""

    items: list[TreeItem]
    first_line: int  # 1-based
    total: int  # lines shown over the whole tree
    per_page: int
    map_shape: MapShape | None = None  # the whole tree's map (sessions/tree_map.py)

    @property
    def last_line(self) -> int:
        return self.first_line + len(self.items) - 1

    @property
    def earlier(self) -> int | None:
        """The first line of the window before this one."""
        return max(1, self.first_line - self.per_page) if self.first_line > 1 else None

    @property
    def later(self) -> int | None:
        """The first line of the window after this one."""
        return self.last_line + 1 if self.last_line < self.total else None

    @property
    def last_start(self) -> int:
        """The first line of the window that ends with the tree."""
        return max(1, self.total - self.per_page + 1)

    @property
    def anchor_id(self) -> str | None:
        """The window's first turn: folding or unfolding the tree keeps it in view."""
        first = self.items[0] if self.items else None
        if first is None:
            return None
        return first.fold.first.node.id if first.fold else first.turn.id


def rows_per_page(lane_count: int) -> int:
    return max(1, min(PAGE_ROWS, PAGE_BYTES // (ROW_BYTES + LANE_BYTES * lane_count)))


def tree_page(
    session_tree: SessionTree,
    selected_id: str | None,
    view: TreeView | bool,
    first_line: int | None = None,
    at_id: str | None = None,
) -> TreePage:
    """The window of the tree from line `first_line`, else the window around `at_id`, else
    around the selected turn. The layout (lanes, neighbours) is the whole tree's, so a window's
    rows draw and link exactly as they would on one endless page."""
    layout = session_tree.layout
    head_id = session_tree.session.current_turn_id
    problems_by_turn: dict[str, list[str]] = {}
    for problem in session_tree.problems:
        problems_by_turn.setdefault(problem.turn_id, []).append(problem.message)

    if not isinstance(view, TreeView):
        view = TreeView(unfold=view)
    shown, map_shape = shown_lines(session_tree, selected_id, view, problems_by_turn)

    per_page = rows_per_page(layout.lane_count)
    if first_line is None:
        # The turn in the middle of its window, with what leads to it and what follows.
        found = map_shape.line_of(
            layout.by_id[at_id or selected_id].index
            if (at_id or selected_id) in layout.by_id
            else None
        )
        position = (found or 1) - 1  # not shown (or no such turn): the first line
        start = min(max(0, position - per_page // 2), max(0, len(shown) - per_page))
    else:
        start = min(first_line - 1, max(0, len(shown) - 1))  # past the end: the last line

    if session_tree.next_sibling is None:  # kept with the tree: a pass over every turn
        session_tree.next_sibling = _next_siblings(layout)
    next_sibling = session_tree.next_sibling
    gutters = Gutters(layout.lane_count)
    items = []
    for line, entry in enumerate(shown[start : start + per_page], start=start + 1):
        gutter = gutters.of(entry)
        if isinstance(entry, Fold):
            # The folded line walks as its first turn would: h to the turn above it, l into it,
            # ] to the next branch beside it.
            first = entry.first
            parent = _parent_row(layout, first)
            items.append(
                TreeItem(
                    gutter,
                    line,
                    fold=entry,
                    parent_id=parent.node.id if parent and not first.is_root else "",
                    first_child_id=first.node.id,
                    next_sibling_id=_next_sibling_of(first, parent, next_sibling),
                )
            )
            continue
        row, turn = entry, entry.node.data
        parent = _parent_row(layout, row)
        items.append(
            TreeItem(
                gutter,
                line,
                row=row,
                turn=turn,
                marks=marks_of(row, turn, head_id, session_tree.fork_point),
                problems=tuple(problems_by_turn.get(row.node.id, ())),
                parent_id=parent.node.id if parent and not row.is_root else "",
                first_child_id=row.child_ids[0] if row.child_ids else "",
                next_sibling_id=_next_sibling_of(row, parent, next_sibling),
                selected=row.node.id == selected_id,
                alternative=session_tree.alternatives.get(row.node.id),
                branch_label=branch_label(row, session_tree.alternatives),
                forks_here=len(session_tree.forks_at.get(row.node.id, ())),
                collapsed=row.node.id in view.collapsed and row.has_children,
            )
        )
    # Each row's hover holds its answer: read for the rows of this window only (turns with
    # siblings have theirs already), one query, kept with the tree.
    add_answers({item.turn.id: item.turn for item in items if item.turn is not None})
    return TreePage(items, start + 1, len(shown), per_page, map_shape)


# Views of a tree kept with it (its lines and their map), per fold state and selected turn: the
# same page asked again (paging, back from a thread) costs no fold and no map.
KEPT_VIEWS = 8


def shown_lines(
    session_tree: SessionTree,
    selected_id: str | None,
    view: TreeView | bool,
    problems_by_turn: dict[str, list[str]] | None = None,
) -> tuple[list[Row | Fold], MapShape]:
    """The tree's lines as shown (straight stretches folded unless the view unfolds them, the
    selected turn always a row of its own, collapsed branches one line) and their map, kept with
    the tree."""
    if not isinstance(view, TreeView):
        view = TreeView(unfold=view)
    collapsed = frozenset(c for c in view.collapsed if c in session_tree.layout.by_id)
    key = (view.unfold, None if view.unfold else selected_id, collapsed)
    kept = session_tree.views.get(key)
    if kept is not None:
        return kept
    layout = session_tree.layout
    if view.unfold:
        shown = list(layout.rows)
    else:
        if problems_by_turn is None:
            problems_by_turn = {p.turn_id: [] for p in session_tree.problems}
        keep = {session_tree.session.current_turn_id, selected_id, *problems_by_turn, *collapsed}
        keep |= {
            t.id for t in session_tree.turns.values() if t.status != "completed" or t.is_compaction
        }
        shown = fold_straight_runs(layout, keep={k for k in keep if k}, min_run=MIN_FOLD)
    shown = collapse(layout, shown, set(collapsed))
    if len(session_tree.views) >= KEPT_VIEWS:
        session_tree.views.pop(next(iter(session_tree.views)))
    kept = session_tree.views[key] = (shown, _map_shape(session_tree, shown))
    return kept


# Hoisted subtrees kept with a tree (each is a tree of its own, laid out again).
KEPT_HOISTS = 4


def hoisted(session_tree: SessionTree, hoist_id: str | None) -> SessionTree:
    """The tree as it shows when hoisted at a turn: that turn and its descendants only, laid out
    as a tree of their own (lanes of the rest of the tree no longer pass by). The whole tree
    when `hoist_id` is None or not one of its turns."""
    row = session_tree.layout.by_id.get(hoist_id) if hoist_id else None
    if row is None:
        return session_tree
    kept = session_tree.hoists.get(hoist_id)
    if kept is not None:
        return kept
    rows = session_tree.layout.rows[row.index : subtree_end(session_tree.layout, row) + 1]
    nodes = [
        tree.Node(r.node.id, None if r is row else r.node.parent_id, r.node.started_at, r.node.data)
        for r in rows
    ]
    ids = {r.node.id for r in rows}
    view = replace(
        session_tree,
        layout=tree.layout(nodes, head_id=session_tree.session.current_turn_id),
        turns={r.node.id: r.node.data for r in rows},
        problems=[p for p in session_tree.problems if p.turn_id in ids],
        marked=None,
        views={},
        hoists={},
        next_sibling=None,
    )
    if len(session_tree.hoists) >= KEPT_HOISTS:
        session_tree.hoists.pop(next(iter(session_tree.hoists)))
    session_tree.hoists[hoist_id] = view
    return view


class LayoutPlaces:
    """Each turn's place in the layout (Row.index), as tree_map asks for it."""

    def __init__(self, by_id: dict[str, Row]):
        self.by_id = by_id

    def get(self, turn_id: str, default=None):
        row = self.by_id.get(turn_id)
        return default if row is None else row.index


def whole_tree_shape(session_tree: SessionTree) -> MapShape:
    """The map of every turn of the tree, none folded (the JSON twin's)."""
    return shown_lines(session_tree, None, TreeView(unfold=True))[1]


def _map_shape(session_tree: SessionTree, shown: list[Row | Fold]) -> MapShape:
    """The map of the lines shown, from the same lines as the rows (no query)."""
    if session_tree.marked is None:  # kept with the tree: a pass over every turn
        session_tree.marked = _marked_turns(session_tree)
    return shape(
        shown,
        LayoutPlaces(session_tree.layout.by_id),
        session_tree.session.current_turn_id,
        session_tree.marked,
        session_tree.costly_by,
    )


def _marked_turns(session_tree: SessionTree) -> dict[str, tuple[str, ...]]:
    costly, session_tree.costly_by = costliest(session_tree.turns.values())
    forks = set(session_tree.forks_at)
    if session_tree.fork_point:
        forks.add(session_tree.fork_point)
    marked: dict[str, tuple[str, ...]] = {}
    for turn in session_tree.turns.values():
        # Most turns have no mark: four tests, and a tuple only for those that have one.
        failed, compaction = turn.status == "failed", turn.is_compaction
        fork, costly_turn = turn.id in forks, turn.id in costly
        if failed or compaction or fork or costly_turn:
            marked[turn.id] = tuple(
                kind
                for kind, applies in (
                    ("failed", failed),
                    ("compaction", compaction),
                    ("fork", fork),
                    ("costly", costly_turn),
                )
                if applies
            )
    return marked


def _parent_row(layout: Layout, row: Row) -> Row | None:
    parent_id = row.node.data.parent_turn_id
    return layout.by_id.get(parent_id) if parent_id else None


def branch_label(row: Row, alternatives: dict[str, Alternative]) -> str:
    """What a branch point's children are: answers to one prompt (regenerations, retries), or
    branches (an edited prompt makes a branch of its own)."""
    count = len(row.child_ids)
    if count < 2:
        return ""
    same = all(alternatives[k].same_prompt for k in row.child_ids if k in alternatives)
    return f"{count} answers" if same else f"{count} branches"


def _next_siblings(layout: Layout) -> dict[str, str]:
    """Each turn's next branch: its next sibling, wrapping round to the first; a turn without
    siblings (in a straight stretch, or a folded one) the next branch beside the nearest turn
    above it that has siblings. One pass in tree order (a parent's line comes before its
    children's), not a search of the siblings per row (a root with 5,000 children would make
    that quadratic)."""
    following = {}
    for row in layout.rows:
        kids = row.child_ids
        if len(kids) > 1:
            for kid, after in zip(kids, kids[1:] + kids[:1], strict=True):
                following[kid] = after
        elif kids and row.node.id in following:
            following[kids[0]] = following[row.node.id]
    return following


def _next_sibling_of(row: Row, parent: Row | None, following: dict[str, str]) -> str:
    if parent is None:
        return ""
    if len(parent.child_ids) < 2:
        return following.get(row.node.id, "")  # the next branch beside its stretch
    # A turn cut loose from its parent (a broken cycle) is not among the parent's children:
    # "next branch" then goes to the parent's first child.
    return following.get(row.node.id, parent.child_ids[0])
