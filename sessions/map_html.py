"""The tree map's drawing (sessions/tree_map.py has its data): one SVG, written in Python like the
tree's rows (a 50,000-turn map has a few thousand strokes).

The SVG is stretched to the height of the tree's scroll box (preserveAspectRatio none; strokes
keep their width), one unit per band and per lane, with a column per kind of mark to the right
of the lanes. Over it (SVG links, drawn last), a link per few bands opens the tree's window at
their first line (?from=N, every other parameter of the page kept): the map works without
JavaScript; tree.js turns a click into a scroll when the line is on the page already, and into an
htmx swap when not.
"""

from bisect import bisect_right
from urllib.parse import urlencode

from django.utils.safestring import SafeString, mark_safe

from ledgerweb.html_parts import escape
from sessions.tree_map import KINDS, TreeMap

MARK_COLUMN = 1.4  # units per kind of mark, right of the lanes
GAP = 0.6
LINK_BANDS = 120  # at most this many links over the map (each a few bands)
TITLES = {
    "failed": "failed turn",
    "compaction": "compaction",
    "fork": "forked here",
    "bookmark": "bookmark",
    "costly": "among the costliest turns",
}


def map_svg(tree_map: TreeMap, query: dict[str, str], on_page: dict[int, str]) -> SafeString:
    """The map of `tree_map`; `query` is the page's address's parameters, kept by its links;
    `on_page`: the line of each turn row on this page, which its links scroll to (#turn-…)."""
    lanes = tree_map.shape.lanes
    width = lanes + GAP + MARK_COLUMN * len(KINDS)
    height = tree_map.buckets
    parts = [
        f'<svg class="tree-map-svg" viewBox="0 0 {width:g} {height}" preserveAspectRatio="none"'
        ' role="img" aria-label="Map of the whole tree" focusable="false">'
    ]
    first, last = tree_map.window_buckets
    parts.append(
        f'<rect class="map-window" x="0" y="{first}" width="{width:g}"'
        f' height="{last - first + 1}"/>'
    )
    for lane, start, end in tree_map.shape.runs:
        x = lane + 0.5
        parts.append(
            f'<path class="map-lane lane-{lane % 6}" d="M{x:g},{start}V{end + 1}"'
            ' vector-effect="non-scaling-stroke"/>'
        )
    for parent_lane, lane, bucket in tree_map.shape.branches:
        parts.append(
            f'<path class="map-lane lane-{lane % 6}" d="M{parent_lane + 0.5:g},{bucket}'
            f'L{lane + 0.5:g},{bucket + 1}" vector-effect="non-scaling-stroke"/>'
        )
    for mark in tree_map.marks:
        column = lanes + GAP + MARK_COLUMN * KINDS.index(mark.kind)
        parts.append(
            f'<path class="map-mark map-{mark.kind}" d="M{column:g},{mark.bucket + 0.5:g}'
            f'h{MARK_COLUMN - 0.3:g}" vector-effect="non-scaling-stroke">'
            f"<title>{TITLES[mark.kind]} {escape(mark.turn_id)} (line {mark.line:,})</title>"
            "</path>"
        )
    if tree_map.head is not None:
        head = tree_map.head
        parts.append(
            f'<path class="map-head" d="M0,{head.bucket + 0.5:g}H{width:g}"'
            f' vector-effect="non-scaling-stroke"><title>the head {escape(head.turn_id)}'
            f" (line {head.line:,})</title></path>"
        )
    parts.append(_links(tree_map, query, width, on_page))
    parts.append("</svg>")
    return mark_safe("".join(parts))  # every ledger value was escaped


def _links(tree_map: TreeMap, query: dict[str, str], width: float, on_page: dict[int, str]) -> str:
    """Links over the map, top to bottom, out of the tab order (the map's keys move through it
    instead). A band whose first line is on this page scrolls to its row (#turn-…, the row at
    or before it); another opens the window from that line (?from=N)."""
    bands = tree_map.buckets
    step = max(1, -(-bands // LINK_BANDS))
    kept = {k: v for k, v in query.items() if k not in ("from", "at", "turn")}
    lines = sorted(on_page)
    first, last = tree_map.window
    links = []
    for bucket in range(0, bands, step):
        line = tree_map.first_line(bucket)
        if first <= line <= last and lines:
            row_line = lines[max(0, bisect_right(lines, line) - 1)]
            href = escape(f"#turn-{on_page[row_line]}")
        else:
            href = escape("?" + urlencode({**kept, "from": line}))
        links.append(
            f'<a class="map-link" href="{href}" data-line="{line}" tabindex="-1">'
            f'<rect x="0" y="{bucket}" width="{width:g}" height="{min(step, bands - bucket)}"/>'
            f"<title>lines from {line:,}</title></a>"
        )
    return "".join(links)
