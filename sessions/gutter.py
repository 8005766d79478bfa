"""SVG geometry of the tree's gutter, one small drawing per row, computed here and only drawn by
the template (as django-debug-toolbar does with its waterfall)."""

from dataclasses import dataclass

from sessions.tree import Fold, Row

LANE_WIDTH = 16
ROW_HEIGHT = 30
DOT_RADIUS = 4.5
LANE_COLOURS = 6  # lane-0 … lane-5 in the stylesheet


@dataclass(frozen=True)
class Stroke:
    d: str
    lane: int
    dashed: bool = False

    @property
    def css_class(self) -> str:
        return f"lane-{self.lane % LANE_COLOURS}" + (" dashed" if self.dashed else "")


@dataclass(frozen=True)
class Gutter:
    width: int
    height: int
    strokes: tuple[Stroke, ...]
    dot_x: float | None = None
    dot_lane: int = 0
    hollow: bool = False  # a leaf is drawn as a ring

    @property
    def dot_class(self) -> str:
        return f"lane-{self.dot_lane % LANE_COLOURS}" + (" hollow" if self.hollow else "")

    @property
    def dot_y(self) -> float:
        return self.height / 2

    @property
    def dot_r(self) -> float:
        return DOT_RADIUS


def lane_x(lane: int) -> float:
    return LANE_WIDTH / 2 + lane * LANE_WIDTH


def _vertical(lane: int, y1: float, y2: float, dashed: bool = False) -> Stroke:
    x = lane_x(lane)
    return Stroke(f"M{x:g},{y1:g}V{y2:g}", lane, dashed)


def gutter_for(item: Row | Fold, lane_count: int) -> Gutter:
    return Gutters(lane_count).of(item)


class Gutters:
    """The gutters of one page. Most rows of a big tree have one of a few shapes (a line straight
    through, a branch point...), and a Gutter is immutable: rows of the same shape share one,
    built once. Kept for one page only: a wide tree has as many shapes as it has lanes in use."""

    def __init__(self, lane_count: int):
        self.lane_count = lane_count
        self._built: dict[tuple, Gutter] = {}

    def of(self, item: Row | Fold) -> Gutter:
        if isinstance(item, Fold):
            shape = (item.passing, item.lane, None, False, True)
        else:
            shape = (item.passing, item.lane, item.parent_lane, item.has_children, False)
        gutter = self._built.get(shape)
        if gutter is None:
            gutter = self._built[shape] = _draw(*shape, self.lane_count)
        return gutter


def _draw(
    passing: tuple[int, ...],
    lane: int,
    parent_lane: int | None,
    has_children: bool,
    fold: bool,
    lane_count: int,
) -> Gutter:
    width = max(lane_count, 1) * LANE_WIDTH
    h, mid = ROW_HEIGHT, ROW_HEIGHT / 2
    strokes = [_vertical(passing_lane, 0, h) for passing_lane in passing]
    if fold:
        strokes.append(_vertical(lane, 0, h, dashed=True))
        return Gutter(width, h, tuple(strokes))

    if parent_lane is not None:
        if parent_lane == lane:
            strokes.append(_vertical(lane, 0, mid))
        else:
            # A branch leaves its parent's lane and bends into its own.
            x1, x2 = lane_x(parent_lane), lane_x(lane)
            strokes.append(
                Stroke(f"M{x1:g},0C{x1:g},{h * 0.35:g} {x2:g},{h * 0.15:g} {x2:g},{mid:g}", lane)
            )
    if has_children:
        strokes.append(_vertical(lane, mid, h))
    return Gutter(width, h, tuple(strokes), lane_x(lane), lane, hollow=not has_children)
