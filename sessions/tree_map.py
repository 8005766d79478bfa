"""The map of a whole turn tree (issue 28): its shape at a glance, beside the rows.

The rows show a window of the tree's lines; the map shows every line at once, squeezed into at
most MAX_BUCKETS horizontal bands (a band holds one line of a small tree, a hundred of a
50,000-turn one), each lane a column: where a branch runs, where it leaves its parent, and in
columns of their own the turns worth finding — failures, compactions, forks, bookmarks and the
costliest turns — with the head and the window of rows on screen.

It is drawn from the same lines as the rows (`page.tree_page`'s list of rows and folds, the
whole tree's layout): no query of its own. `TreeMap` is plain data (the JSON twin's `map`, and
what live updates and annotations add their marks to: `tree_map(..., marks={kind: turn ids})`);
`sessions/map_html.py` draws it.
"""

import heapq
from bisect import bisect_right
from collections.abc import Mapping
from dataclasses import dataclass, field

from sessions.tree import Fold, Row

MAX_BUCKETS = 400  # bands of the map: ~1 px each in a tall window
MAX_LANES = 16  # lanes drawn; a wider tree's further lanes are not
COSTLIEST = 10  # the turns marked as the costliest
# The kinds of turns the map marks, each in a column of its own, in this order.
KINDS = ("failed", "compaction", "fork", "bookmark", "costly")


@dataclass(frozen=True, slots=True)
class Mark:
    kind: str  # one of KINDS, or "head"
    turn_id: str
    line: int  # 1-based, among the shown lines
    bucket: int


@dataclass
class MapShape:
    """The map's geometry: where each lane runs (`runs`: lane, first band, last band) and where a
    branch leaves its parent's lane (`branches`: parent lane, lane, band), and where each line's
    turns sit in the layout (to place a mark on its line). Kept with the tree per view."""

    lines: int  # lines shown over the whole tree (a folded stretch is one)
    buckets: int
    lanes: int  # columns drawn (at most MAX_LANES)
    runs: list[tuple[int, int, int]]
    branches: list[tuple[int, int, int]]
    first_index: list[int]  # each line's first turn's place in the layout (rising)
    last_index: list[int]  # and its last turn's (a fold holds many)
    head: Mark | None = None
    # The ledger's marks (failed, compaction, fork, costly) and how many turns of each kind.
    marks: list[Mark] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    costly_by: str = "cost"

    def bucket_of(self, line: int) -> int:
        """The band of a 1-based line."""
        return min(self.buckets - 1, (line - 1) * self.buckets // max(self.lines, 1))

    def line_of(self, layout_index: int | None) -> int | None:
        """The line showing the turn at this place of the layout; None when no line does (a turn
        outside a hoisted subtree, or under a collapsed branch)."""
        if layout_index is None:
            return None
        line = bisect_right(self.first_index, layout_index)
        if line == 0 or layout_index > self.last_index[line - 1]:
            return None
        return line


@dataclass
class TreeMap:
    """The map of one page: the shape, the marks (one per kind and band: the first), how many
    turns of each kind there are, the head, and the window of lines this page's rows show."""

    shape: MapShape
    marks: list[Mark]
    counts: dict[str, int]
    window: tuple[int, int]

    @property
    def lines(self) -> int:
        return self.shape.lines

    @property
    def buckets(self) -> int:
        return self.shape.buckets

    @property
    def head(self) -> Mark | None:
        return self.shape.head

    def first_line(self, bucket: int) -> int:
        """The first line a band holds (1-based)."""
        return -(-bucket * self.lines // self.buckets) + 1

    @property
    def window_buckets(self) -> tuple[int, int]:
        return self.shape.bucket_of(self.window[0]), self.shape.bucket_of(self.window[1])

    def as_json(self) -> dict:
        return {
            "lines": self.lines,
            "buckets": self.buckets,
            "lanes": self.shape.lanes,
            "runs": self.shape.runs,
            "branches": self.shape.branches,
            "marks": [
                {"kind": m.kind, "turn_id": m.turn_id, "line": m.line, "bucket": m.bucket}
                for m in self.marks
            ],
            "counts": self.counts,
            "head": self.head and {"turn_id": self.head.turn_id, "line": self.head.line},
            "window": list(self.window),
            "costly_by": self.shape.costly_by,
        }


def shape(
    shown: list[Row | Fold],
    index_of: Mapping[str, int],
    head_id: str | None,
    marked: Mapping[str, tuple[str, ...]],
    costly_by: str = "cost",
) -> MapShape:
    """The map of these lines. `index_of`: each turn's place in the layout; `marked`: the turns
    worth a mark and their kinds. One pass over the lines, none over the turns folded inside
    them: a 50,000-turn map costs a few hundredths of a second."""
    total = len(shown)
    buckets = max(1, min(MAX_BUCKETS, total))
    occupied: dict[int, bytearray] = {}
    branches: set[tuple[int, int, int]] = set()
    first_index: list[int] = []
    last_index: list[int] = []
    top = MAX_LANES - 1
    for position, entry in enumerate(shown):
        bucket = position * buckets // total
        if isinstance(entry, Fold):
            first_index.append(entry.rows[0].index)
            last_index.append(entry.rows[-1].index)
        else:
            first_index.append(entry.index)
            last_index.append(entry.index)
            if entry.parent_lane is not None and entry.parent_lane != entry.lane:
                branches.add((min(entry.parent_lane, top), min(entry.lane, top), bucket))
        for used in (min(entry.lane, top), *entry.passing):
            if used > top:
                break  # passing lanes are sorted: the rest are not drawn
            column = occupied.get(used)
            if column is None:
                column = occupied[used] = bytearray(buckets)
            column[bucket] = 1
    runs = []
    for lane in sorted(occupied):
        column, start = occupied[lane], None
        for bucket in range(buckets + 1):
            filled = bucket < buckets and column[bucket]
            if filled and start is None:
                start = bucket
            elif not filled and start is not None:
                runs.append((lane, start, bucket - 1))
                start = None
    the_shape = MapShape(
        lines=total,
        buckets=buckets,
        lanes=max(occupied, default=0) + 1,
        runs=runs,
        branches=sorted(branches),
        first_index=first_index,
        last_index=last_index,
        costly_by=costly_by,
    )
    the_shape.marks, the_shape.counts = _marks(the_shape, index_of, marked)
    if head_id is not None:
        line = the_shape.line_of(index_of.get(head_id))
        if line is not None:
            the_shape.head = Mark("head", head_id, line, the_shape.bucket_of(line))
    return the_shape


def _marks(
    the_shape: MapShape, index_of: Mapping[str, int], marked: Mapping[str, tuple[str, ...]]
) -> tuple[list[Mark], dict[str, int]]:
    """The first turn of each kind in each band, and how many turns of each kind are shown."""
    counts = dict.fromkeys(KINDS, 0)
    first: dict[tuple[str, int], Mark] = {}
    for turn_id, kinds in marked.items():
        line = the_shape.line_of(index_of.get(turn_id))
        if line is None:
            continue
        bucket = the_shape.bucket_of(line)
        for kind in kinds:
            counts[kind] += 1
            mark = first.get((kind, bucket))
            if mark is None or line < mark.line:
                first[(kind, bucket)] = Mark(kind, turn_id, line, bucket)
    return sorted(first.values(), key=lambda m: (m.bucket, KINDS.index(m.kind))), counts


def costliest(turns, limit: int = COSTLIEST) -> tuple[set[str], str]:
    """The turns that cost the most (by price; by tokens when no turn has one)."""
    # heapq.nlargest: the first `limit` of the list sorted (ties in the turns' order), without
    # sorting thousands of turns at every redraw of a live page.
    priced = [t for t in turns if t.cost is not None and t.cost.amount is not None]
    if priced:
        top = heapq.nlargest(limit, priced, key=lambda t: t.cost.amount)
        return {t.id for t in top if t.cost.amount > 0}, "cost"
    sized = [t for t in turns if isinstance(t.total_tokens, int) and t.total_tokens > 0]
    return {t.id for t in heapq.nlargest(limit, sized, key=lambda t: t.total_tokens)}, "tokens"


def tree_map(
    the_shape: MapShape,
    window: tuple[int, int],
    index_of: Mapping[str, int],
    marks: Mapping[str, object] | None = None,
) -> TreeMap:
    """The map of a page: the kept shape, the marks that are a person's (`marks`: kind → turn
    ids, e.g. {"bookmark": …}), and the page's window of lines."""
    extra = {}
    for kind, turn_ids in (marks or {}).items():
        for turn_id in turn_ids:
            extra.setdefault(turn_id, []).append(kind)
    own, own_counts = _marks(the_shape, index_of, {k: tuple(v) for k, v in extra.items()})
    counts = {k: the_shape.counts.get(k, 0) + own_counts.get(k, 0) for k in KINDS}
    all_marks = sorted(the_shape.marks + own, key=lambda m: (m.bucket, KINDS.index(m.kind)))
    return TreeMap(the_shape, all_marks, counts, window)
