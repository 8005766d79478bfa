"""The request list: newest first, keyset pages over (started_at, id), or slowest first by a
stage's duration, keyset pages over (duration, id); capped counts."""

from dataclasses import dataclass

from ledgerfacts.timestamps import elapsed_ms
from ledgerweb.costs import TurnCost
from ledgerweb.paging import capped, keyset_page
from ledgerweb.sqlite import CappedCount
from ledgerweb.text import first_line
from pipeline.costs import request_cost
from pipeline.filters import RequestFilters
from pipeline.models import NexusRequest
from pipeline.stages import parse_timings

PAGE_SIZE = 50
COUNT_CAP = 10_000
# The columns a row of the JSON twin gives as they are.
SUMMARY_FIELDS = (
    "id", "event_id", "event_type", "event_source", "stage", "status", "principal_id",
    "session_key", "session_persona", "started_at", "completed_at", "error_stage",
)  # fmt: skip
# Every column the page and its twin read, loaded with the page: a column left out would be
# loaded again row by row, by the primary key, which a row without an id does not have.
LIST_COLUMNS = (
    *SUMMARY_FIELDS, "error_message", "stage_timings",  # the error line and the duration
    "agent_model", "agent_tokens_prompt", "agent_tokens_completion",  # the row's cost
)  # fmt: skip


@dataclass
class RequestRow:
    request: NexusRequest

    @property
    def duration_ms(self):
        r = self.request
        elapsed = elapsed_ms(r.started_at, r.completed_at)
        if elapsed is None:
            timings = parse_timings(r.stage_timings)  # still running: the stages so far
            return timings.total if timings.ms else None
        return elapsed

    @property
    def stage_ms(self) -> float | None:
        """The filtered stage's duration (with ?timing=), as the filter read it."""
        return getattr(self.request, "stage_ms", None)

    @property
    def error_line(self) -> str:
        return first_line(self.request.error_message, 140)

    @property
    def cost(self) -> TurnCost | None:
        return request_cost(self.request)


@dataclass
class RequestPage:
    rows: list[RequestRow]
    count: CappedCount
    next_cursor: str | None


def request_page(f: RequestFilters) -> RequestPage:
    """A page of requests, after the filters' keyset cursor if they have one."""
    count = _count(f)
    if f.order == "slowest":
        return _slowest_page(f, count)
    # Past the cap the matches are common: walk the newest rows instead of sorting them all.
    # Only the columns a row shows: snapshots and stacks can be large.
    qs = f.queryset(newest_first_walk=count.capped).only(*LIST_COLUMNS)
    found, cursor = keyset_page(qs, "started_at", f.after, PAGE_SIZE)
    return RequestPage([RequestRow(r) for r in found], count, cursor)


def _count(f: RequestFilters) -> CappedCount:
    """The list's count: capped, or for a stage's duration alone in a window the summaries'
    count of such timings plus the rows read live (a chart's figure opens that list: counting it
    in SQL read every row of the window, seconds for a busy day)."""
    if not f.counts_from_summaries():
        return capped(f.queryset(), COUNT_CAP)
    live = capped(f.queryset(live_only=True), COUNT_CAP)
    return CappedCount(f.timing_search.stored_count() + live.value, live.capped)


def _slowest_page(f: RequestFilters, count: CappedCount) -> RequestPage:
    """A page of the slowest requests by the stage's duration, after the cursor's.

    Reads only the summarised hours holding the next page's worth of the slowest timings (and
    the live rows) by bounding the duration from below (TimingSearch.slowest_from): every row
    left out is then faster than every row shown. Other filters may drop some of those rows; a
    page that comes out short is asked again with a lower bound, down to none."""
    below = None if f.after is None else float(f.after[0])
    wanted = PAGE_SIZE + 1
    while True:
        low = f.timing_search.slowest_from(below, wanted)
        qs = f.queryset(timing_from=low).only(*LIST_COLUMNS)
        found, cursor = keyset_page(qs, "stage_ms", f.after, PAGE_SIZE)
        if low is None or cursor is not None:
            return RequestPage([RequestRow(r) for r in found], count, cursor)
        wanted *= 8


def page_of(qs, limit: int) -> RequestPage:
    """At most `limit` rows of a queryset, newest first, as the list draws them (the rows live
    pages insert or redraw: live/views.py)."""
    found = list(qs.order_by("-started_at", "-id").only(*LIST_COLUMNS)[:limit])
    return RequestPage([RequestRow(r) for r in found], CappedCount(len(found), False), None)
