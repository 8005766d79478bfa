"""The tree map's data (issue 28, sessions/tree_map.py): every branch, the marked turns on their
lines, the head and the page's window, in the page and its JSON twin, read with no query of its
own, on trees of 3 to 50,000 turns."""

from builders import LEDGER_DB, T0
from django.db import connections
from django.test.utils import CaptureQueriesContext

from ledgerweb.db import LEDGER
from sessions import tree
from sessions.page import LayoutPlaces
from sessions.tree_map import MAX_BUCKETS, shape, tree_map

pytestmark = LEDGER_DB


class Info:
    status = "completed"
    is_compaction = False


def nodes(spec: dict[str, str | None]) -> list[tree.Node]:
    return [tree.Node(k, v, n, Info()) for n, (k, v) in enumerate(spec.items())]


def test_a_small_trees_map_has_a_band_per_line_and_a_run_per_branch():
    layout = tree.layout(nodes({"R": None, "A": "R", "B": "R", "A2": "A"}), head_id="B")
    the_shape = shape(layout.rows, LayoutPlaces(layout.by_id), "B", {"A2": ("failed",)})
    assert the_shape.buckets == the_shape.lines == 4
    assert the_shape.lanes == 2
    # The side branch (A, A2) leaves the root's lane; the head's branch carries on down lane 0.
    assert the_shape.branches == [(0, 1, 1)]
    assert {run[0] for run in the_shape.runs} == {0, 1}
    assert [(m.kind, m.turn_id, m.line) for m in the_shape.marks] == [("failed", "A2", 3)]
    assert (the_shape.head.turn_id, the_shape.head.line) == ("B", 4)


def test_a_50000_turn_map_has_at_most_400_bands_and_finds_every_mark():
    spec = {"T0": None} | {f"T{n}": f"T{n - 1}" for n in range(1, 50_000)}
    layout = tree.layout(nodes(spec), head_id="T49999")
    marked = {f"T{n}": ("failed",) for n in range(0, 50_000, 1_000)}
    the_shape = shape(layout.rows, LayoutPlaces(layout.by_id), "T49999", marked)
    assert the_shape.buckets == MAX_BUCKETS
    assert the_shape.counts["failed"] == 50
    assert len(the_shape.marks) == 50  # 125 lines a band: one failure in each of 50 bands
    assert the_shape.head.line == 50_000 and the_shape.head.bucket == MAX_BUCKETS - 1
    assert the_shape.runs == [(0, 0, MAX_BUCKETS - 1)]


def test_a_persons_bookmarks_join_the_ledgers_marks_on_their_lines():
    layout = tree.layout(nodes({"R": None, "A": "R", "B": "A"}), head_id="B")
    places = LayoutPlaces(layout.by_id)
    the_map = tree_map(
        shape(layout.rows, places, "B", {}), (1, 3), places, {"bookmark": ["A", "GONE"]}
    )
    assert [(m.kind, m.turn_id, m.line) for m in the_map.marks] == [("bookmark", "A", 2)]
    assert the_map.counts["bookmark"] == 1  # a bookmark on a turn not in the tree is not drawn


def branched(ledger, size: int) -> None:
    s = ledger.session(id=f"S{size}")
    parent = root = ledger.turn(s, id=f"S{size}-0", started_at=T0)
    for n in range(1, size):
        status = "failed" if n == size // 2 else "completed"
        parent = ledger.turn(s, parent if n % 5 else root, id=f"S{size}-{n}", status=status,
                             started_at=T0 + n)  # fmt: skip
        ledger.message(parent, 1, content=f"q{n}")
    ledger.set_head(s, root, parent)


def test_the_map_reads_nothing_of_its_own(viewer_client, ledger):
    """The session page runs as many ledger queries with its map as the tree alone did (the
    count test in test_session_page pins the number); a big tree's map as a small one's."""
    counts = {}
    for size in (6, 600):
        branched(ledger, size)
    for size in (6, 600):
        with CaptureQueriesContext(connections[LEDGER]) as queries:
            page = viewer_client.get(f"/sessions/S{size}/")
        assert page.status_code == 200
        assert 'class="tree-map"' in page.content.decode()
        counts[size] = len(queries)
    assert counts[6] == counts[600]


def test_the_json_twin_holds_the_whole_trees_map(viewer_client, ledger):
    branched(ledger, 40)
    twin = viewer_client.get("/sessions/S40/?format=json").json()
    the_map = twin["map"]
    assert the_map["lines"] == 40  # every turn, unfolded, as the twin's turns
    assert the_map["counts"]["failed"] == 1
    failed = [m for m in the_map["marks"] if m["kind"] == "failed"]
    assert failed[0]["turn_id"] == "S40-20"
    lines = {t["id"]: n for n, t in enumerate(twin["turns"], start=1)}
    assert failed[0]["line"] == lines["S40-20"]  # the map's lines are the twin's order
    assert the_map["head"]["turn_id"] == "S40-39"
    assert the_map["lanes"] >= 2 and the_map["branches"]


def test_the_maps_links_keep_the_pages_address_and_escape_ids(viewer_client, ledger):
    s = ledger.session(id="S'\"<x>")
    parent = root = ledger.turn(s, id="R<'\">")
    for n in range(1, 1_200):
        parent = ledger.turn(s, parent, id=f'T"{n}', started_at=T0 + n)
    ledger.set_head(s, root, parent)
    page = viewer_client.get("/sessions/S'%22%3Cx%3E/?unfold=all&from=1").content.decode()
    assert 'href="?unfold=all&amp;from=' in page  # off-page bands: another window, unfolded
    assert 'href="#turn-R&lt;&#x27;&quot;&gt;"' in page  # on-page bands: the row, escaped
    assert "<x>" not in page
