"""Turn trees laid out like a git graph: pure functions, no Django, no database.

The ledger is written by other programs, so the input may hold cycles, parents that do not exist,
parents in other sessions and heads that are not leaves. The layout never loops and never drops a
turn: a turn it cannot hang under its parent becomes a root of its own, with a problem that says
why.
"""

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any


@dataclass(slots=True)
class Node:
    id: str
    parent_id: str | None
    started_at: Any = None  # used for ordering siblings; may be junk in a hostile ledger
    data: Any = None  # whatever the caller wants to draw with the row


@dataclass(frozen=True)
class Problem:
    turn_id: str
    message: str


# Slots: thousands of rows and nodes per page, each without a __dict__ for the garbage
# collector to walk.
@dataclass(slots=True)
class Row:
    """One turn in the drawn tree, in display order."""

    node: Node
    index: int
    depth: int
    lane: int
    parent_lane: int | None  # None for a root; differs from `lane` where a branch leaves
    passing: tuple[int, ...]  # lanes with a line through this whole row
    has_children: bool
    child_ids: list[str]
    is_root: bool
    is_head: bool
    on_head_path: bool

    @property
    def is_leaf(self) -> bool:
        return not self.has_children

    @property
    def branches_out(self) -> bool:
        return self.parent_lane is not None and self.parent_lane != self.lane


@dataclass
class Fold:
    """A folded straight stretch of turns (each the only child of the one before), or the turns
    below a collapsed branch point (`under`: the collapsed turn's id)."""

    rows: list[Row]
    lane: int
    passing: tuple[int, ...]
    under: str | None = None

    @property
    def leaves(self) -> int:
        return sum(1 for row in self.rows if not row.has_children)

    @property
    def first(self) -> Row:
        return self.rows[0]

    @property
    def last(self) -> Row:
        return self.rows[-1]

    def __len__(self) -> int:
        return len(self.rows)


@dataclass
class Layout:
    rows: list[Row]
    lane_count: int
    problems: list[Problem] = field(default_factory=list)
    by_id: dict[str, Row] = field(default_factory=dict)

    @property
    def leaves(self) -> list[Row]:
        return [r for r in self.rows if r.is_leaf]

    @property
    def branch_count(self) -> int:
        """Distinct paths from a root to a leaf: one per leaf."""
        return len(self.leaves)


def _sort_key(node: Node):
    started = node.started_at if isinstance(node.started_at, int | float) else float("inf")
    return (started, node.id)


def layout(nodes: Iterable[Node], head_id: str | None = None) -> Layout:
    """Order the turns depth-first and give each a lane, as `git log --graph` does.

    Siblings are ordered by start time, except that the branch leading to the head comes last,
    so the head's line runs straight down the left and side branches leave to the right.
    """
    by_id: dict[str, Node] = {}
    problems: list[Problem] = []
    for node in nodes:
        if node.id in by_id:
            problems.append(Problem(node.id, "this turn id appears twice; the second is hidden"))
            continue
        by_id[node.id] = node

    children: dict[str, list[Node]] = {}
    roots: list[Node] = []
    for node in by_id.values():
        if node.parent_id is None:
            roots.append(node)
        elif node.parent_id == node.id:
            problems.append(Problem(node.id, "this turn names itself as its parent"))
            roots.append(node)
        elif node.parent_id not in by_id:
            roots.append(node)  # parent missing, or in another session: the caller explains
        else:
            children.setdefault(node.parent_id, []).append(node)

    head_path = _path_to(head_id, by_id)
    for siblings in children.values():
        if len(siblings) > 1:  # most turns are an only child: nothing to sort
            siblings.sort(key=lambda n: (n.id in head_path, _sort_key(n)))
    roots.sort(key=lambda n: (n.id in head_path, _sort_key(n)))

    rows: list[Row] = []
    lanes: list[str | None] = []  # lane → id of the turn whose line runs down it
    placed: set[str] = set()
    pending = list(roots)
    while len(placed) < len(by_id):
        if not pending:
            # Whatever is left hangs off a cycle: no turn of it is reachable from a root. Break
            # the cycle at its earliest turn and go on.
            loose = min((n for n in by_id.values() if n.id not in placed), key=_sort_key)
            problems.append(Problem(loose.id, "parent chain loops back on itself (a cycle)"))
            pending = [loose]
        _place_subtree(pending.pop(0), children, by_id, head_id, head_path, lanes, rows, placed)

    return Layout(
        rows=rows,
        lane_count=max(len(lanes), 1),
        problems=problems,
        by_id={row.node.id: row for row in rows},
    )


def _path_to(turn_id: str | None, by_id: dict[str, Node]) -> set[str]:
    """The ids from a turn up to its root, stopping at a missing parent or a cycle."""
    path: set[str] = set()
    while turn_id is not None and turn_id in by_id and turn_id not in path:
        path.add(turn_id)
        turn_id = by_id[turn_id].parent_id
    return path


def _place_subtree(root, children, by_id, head_id, head_path, lanes, rows, placed) -> None:
    # Iterative depth-first walk: a 20,000-turn straight thread must not hit the recursion limit.
    # Each entry: the node, its depth, its parent's lane, and whether it is its parent's last
    # child to be placed (every earlier sibling's subtree is placed before it is popped).
    stack: list[tuple[Node, int, int | None, bool]] = [(root, 0, None, False)]
    while stack:
        node, depth, parent_lane, last_child = stack.pop()
        if node.id in placed:
            continue
        placed.add(node.id)
        kids = [k for k in children.get(node.id, ()) if k.id not in placed]

        if parent_lane is None:
            lane = _free_lane(lanes)
        elif last_child:
            lane = parent_lane  # the parent's line carries on into its last child
        else:
            lane = _free_lane(lanes)  # an earlier sibling branches out to a lane of its own
        passing = tuple([i for i, owner in enumerate(lanes) if owner is not None and i != lane])
        lanes[lane] = node.id if kids else None  # a leaf frees its lane below itself

        rows.append(
            Row(
                node=node,
                index=len(rows),
                depth=depth,
                lane=lane,
                parent_lane=parent_lane,
                passing=passing,
                has_children=bool(kids),
                child_ids=[k.id for k in kids],
                is_root=parent_lane is None,
                is_head=node.id == head_id,
                on_head_path=node.id in head_path,
            )
        )
        for position in range(len(kids) - 1, -1, -1):
            stack.append((kids[position], depth + 1, lane, position == len(kids) - 1))


def _free_lane(lanes: list[str | None]) -> int:
    for i, owner in enumerate(lanes):
        if owner is None:
            lanes[i] = "reserved"
            return i
    lanes.append("reserved")
    return len(lanes) - 1


def extended(previous: Layout, nodes: list[Node], head_id: str | None) -> Layout | None:
    """layout(nodes, head_id), worked out from `previous` when `nodes` are its nodes (the same
    parents and start times, their data maybe new) and, at most, a straight line of new ones
    going on from its head, which is then its last row: an agent at work, whose session is laid
    out again at every commit. None otherwise: the caller lays them out afresh. The rows of
    unchanged nodes are `previous`'s own."""
    rows = previous.rows
    if previous.problems or not rows or not rows[-1].is_head or rows[-1].has_children:
        return None
    by_id, new, renewed, orphaned = previous.by_id, {}, {}, set()
    for node in nodes:
        row = by_id.get(node.id)
        if row is None:
            if node.parent_id in new:
                return None  # two new turns under one: a branch
            new[node.parent_id] = node
            continue
        old = row.node
        if old.parent_id != node.parent_id or (
            old.started_at != node.started_at and _sort_key(old) != _sort_key(node)
        ):
            return None
        if row.is_root and node.parent_id is not None:
            orphaned.add(node.parent_id)  # a root whose parent is not in the tree (yet)
        if old.data is not node.data:
            renewed[row.index] = node
    ids = {node.id for node in nodes}
    if len(ids) != len(nodes) or len(ids) != len(rows) + len(new):
        return None  # a turn gone, or an id twice
    line, tip = [], rows[-1].node.id
    while tip in new:
        line.append(new.pop(tip))
        tip = line[-1].id
    if new or orphaned & {node.id for node in line} or head_id != tip:
        return None  # new turns elsewhere, a turn's missing parent arrived, the head moved away
    out = list(rows)
    for index, node in renewed.items():
        out[index] = replace(out[index], node=node)
    if line:
        out[-1] = replace(out[-1], has_children=True, child_ids=[line[0].id], is_head=False)
    for n, node in enumerate(line):
        parent, last = out[-1], n == len(line) - 1
        # A last child carries its parent's line on: its lane, and the lanes passing it by.
        out.append(Row(node=node, index=len(out), depth=parent.depth + 1, lane=parent.lane,
                       parent_lane=parent.lane, passing=parent.passing, has_children=not last,
                       child_ids=[] if last else [line[n + 1].id], is_root=False, is_head=last,
                       on_head_path=True))  # fmt: skip
    return Layout(out, previous.lane_count, [], {row.node.id: row for row in out})


def fold_straight_runs(layout: Layout, keep: set[str], min_run: int = 8) -> list[Row | Fold]:
    """Fold stretches of plain turns in a straight line, keeping each stretch's ends in view.

    A turn is plain when it has one child, continues its parent's lane and is not in `keep`
    (the caller's turns worth seeing: root, head, failures, compactions, the selection...).
    """
    out: list[Row | Fold] = []
    run: list[Row] = []

    def flush():
        if len(run) >= min_run:
            out.append(run[0])
            middle = run[1:-1]
            out.append(Fold(rows=middle, lane=middle[0].lane, passing=middle[0].passing))
            out.append(run[-1])
        else:
            out.extend(run)
        run.clear()

    for row in layout.rows:
        plain = (
            len(row.child_ids) == 1
            and not row.is_root
            and not row.branches_out
            and row.node.id not in keep
        )
        continues_run = plain and run and run[-1].child_ids == [row.node.id]
        if continues_run or (plain and not run):
            run.append(row)
            continue
        flush()
        if plain:
            run.append(row)
        else:
            out.append(row)
    flush()
    return out


def subtree_end(layout: Layout, row: Row) -> int:
    """The index of the last row of `row`'s subtree: rows are in depth-first order, so a turn's
    descendants are the rows after it down to the next one no deeper than itself."""
    end = row.index
    rows = layout.rows
    while end + 1 < len(rows) and rows[end + 1].depth > row.depth:
        end += 1
    return end


def collapse(layout: Layout, shown: list[Row | Fold], collapsed: set[str]) -> list[Row | Fold]:
    """`shown` with the descendants of each collapsed turn in one Fold after it (`under` its id).
    A branch's lines leave nothing behind below it, so the rows after draw as before."""
    if not collapsed:
        return shown
    out: list[Row | Fold] = []
    skip_to = -1  # the last row index inside the branch being hidden
    for entry in shown:
        first = entry.rows[0] if isinstance(entry, Fold) else entry
        if first.index <= skip_to:
            continue
        out.append(entry)
        if isinstance(entry, Row) and entry.node.id in collapsed and entry.has_children:
            skip_to = subtree_end(layout, entry)
            hidden = layout.rows[entry.index + 1 : skip_to + 1]
            out.append(Fold(hidden, entry.lane, entry.passing, under=entry.node.id))
    return out
