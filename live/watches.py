"""What each kind of live page watches, and how it tells that its part of the ledger changed.

A watch answers two questions about a page drawn at cursor `since`, the ledger being at `now`:

- its **digest**: a fingerprint of what the page shows that changes in place (statuses, a
  session's head, a request's stage). Different from the cursor's: something changed.
- its **news** between the two cursors' marks: the rows added since that belong to the page (a
  session's new turns, the requests matching a list's filters), found by range scans of the
  rowid above the page's marks, so their cost is the number of rows added, not the size of the
  ledger. A range too long to scan (a laptop closed for a day on a busy ledger) is not scanned:
  the page is simply told it changed, and redraws.

Each watch reads a bounded number of rows whatever the ledger's size (tests/test_live.py counts
them), and every query goes through sqlite.rows, under the ledger's time limit.
"""

from dataclasses import dataclass, field

from django.db.models import IntegerField
from django.db.models.expressions import RawSQL

from ledgerweb import sqlite
from ledgerweb.paging import capped
from live.cursor import TABLES, Cursor, digest
from pipeline.filters import RequestFilters
from pipeline.models import NexusRequest
from sessions.detail import RECENT_TURNS

# A session's newest turns whose statuses and tokens are watched for changes in place: a turn
# changes while it runs, and the running ones are the newest (by rowid: the order they were
# written, an index walk backwards on (session_id, rowid)).
WATCHED_TURNS = RECENT_TURNS  # those a session's tree reads again at each commit
# A turn's newest messages and tool calls watched in its open panel (a call's status and end).
WATCHED_ITEMS = 500
# New rows listed by name in an answer (a session's new turns); more are counted up to COUNTED.
LISTED = 100
COUNTED = 1000
# Past this many rows added to a table since a page's cursor, the range is not scanned: the page
# is told that it changed and redraws (rows are found again by the page itself).
MAX_SCAN = 50_000
# How often each kind of page asks, in milliseconds (the answer says it, so the server decides).
EVERY_MS = {"session": 1000, "request": 1000, "requests": 1500, "pipeline": 5000, "ledger": 5000}
# At least this long between two redraws of a page (from one's start to the next's): the
# dashboard's charts and the overview are heavier than a poll, and they promise 10 s, not 2.
REDRAW_EVERY_MS = {"session": 0, "request": 0, "requests": 0, "pipeline": 5000, "ledger": 5000}
# The longest a page's back-offs (quiet answers, a costly poll or redraw: static/js/live.js) may
# make it wait before its next poll: the gap that keeps its promise, a change on screen within
# 2 s of its commit (a session, a request), 3 s (the request list's banner, which asks every
# 1.5 s) or 10 s (the dashboard and the overview), with the poll and the redraw after it.
AT_MOST_MS = {"session": 1000, "request": 1000, "requests": 1500, "pipeline": 5000, "ledger": 5000}


@dataclass
class News:
    """What an answer says beside its new cursor."""

    touched: bool = False  # rows were added that belong to this page
    facts: dict = field(default_factory=dict)  # e.g. {"new_turns": [...]}: sent to the page


def _range(since: Cursor, now: Cursor, table: str) -> tuple[int, int] | None:
    """The rowids added to `table` between two cursors; None when none were, or when too many
    were to scan them (then News.touched is set by the caller)."""
    low, high = since.mark(table), now.mark(table)
    return (low, high) if high > low else None


def _too_many(span: tuple[int, int] | None) -> bool:
    return span is not None and span[1] - span[0] > MAX_SCAN


class SessionWatch:
    """A session page: its tree (new turns, their statuses and counts), its header (head,
    status, subagents and forks) and the open turn's panel (its messages and tool calls)."""

    kind = "session"

    def __init__(self, session_id: str, turn_id: str | None):
        self.session_id = session_id
        self.turn_id = turn_id

    @property
    def key(self) -> tuple:
        return (self.kind, self.session_id)

    def digest(self) -> str:
        session = sqlite.rows(
            "SELECT status, current_turn_id, root_turn_id, updated_at, label"
            " FROM sessions WHERE id = %s",
            [self.session_id],
        )
        turns = sqlite.rows(
            "SELECT id, status, completed_at, total_tokens, parent_turn_id, model FROM turns"
            " WHERE session_id = %s ORDER BY rowid DESC LIMIT %s",
            [self.session_id, WATCHED_TURNS],
        )
        return digest(session, turns)

    def news(self, since: Cursor, now: Cursor) -> News:
        news = News()
        turns = _range(since, now, "turns")
        items = [_range(since, now, table) for table in ("messages", "tool_calls")]
        sessions = _range(since, now, "sessions")
        if any(_too_many(span) for span in (turns, *items, sessions)):
            return News(touched=True, facts={"new_turns": [], "more_new_turns": True})
        new_turns: list = []
        if turns:
            new_turns = [
                turn_id
                for (turn_id,) in sqlite.rows(
                    "SELECT id FROM turns WHERE session_id = %s AND rowid > %s AND rowid <= %s"
                    " ORDER BY rowid LIMIT %s",
                    [self.session_id, *turns, COUNTED + 1],
                )
            ]
        written_to = set()
        for table, span in zip(("messages", "tool_calls"), items, strict=True):
            if span:
                # The new rows first (a range of the rowid), each one's turn by its key: CROSS
                # JOIN keeps SQLite from starting at the session's turns instead.
                written_to |= {
                    turn_id
                    for (turn_id,) in sqlite.rows(
                        f"SELECT DISTINCT t.id FROM {table} x CROSS JOIN turns t"
                        " WHERE x.rowid > %s AND x.rowid <= %s AND t.id = x.turn_id"
                        " AND t.session_id = %s LIMIT %s",
                        [*span, self.session_id, LISTED + 1],
                    )
                }
        children = bool(sessions) and self._new_children(sessions)
        news.touched = bool(new_turns or written_to or children)
        news.facts = {
            "new_turns": new_turns[:LISTED],
            "more_new_turns": len(new_turns) > LISTED,
            "written_to": sorted(written_to, key=str)[:LISTED],
        }
        return news

    def _new_children(self, span: tuple[int, int]) -> bool:
        """A subagent or fork of this session begun since (the header lists them)."""
        keys = [f"{kind}:{self.session_id}:" for kind in ("subagent", "fork")]
        found = sqlite.rows(
            "SELECT 1 FROM sessions WHERE rowid > %s AND rowid <= %s"
            " AND (substr(routing_key, 1, %s) = %s OR substr(routing_key, 1, %s) = %s) LIMIT 1",
            [*span, len(keys[0]), keys[0], len(keys[1]), keys[1]],
        )
        return bool(found)


def turn_state(turn_id: str) -> str:
    """A digest of one turn as its open panel shows it: its row, and its newest messages and tool
    calls (a call changes in place as it ends). Drawn into the panel (the `live_turn_state` tag)
    and sent back by the page, so opening another turn's panel never reads as a change."""
    turn = sqlite.rows(
        "SELECT status, completed_at, total_tokens, prompt_tokens, completion_tokens, model"
        " FROM turns WHERE id = %s",
        [turn_id],
    )
    messages = sqlite.rows(
        "SELECT rowid FROM messages WHERE turn_id = %s ORDER BY sequence DESC LIMIT %s",
        [turn_id, WATCHED_ITEMS],
    )
    calls = sqlite.rows(
        "SELECT rowid, status, completed_at FROM tool_calls WHERE turn_id = %s"
        " ORDER BY sequence DESC LIMIT %s",
        [turn_id, WATCHED_ITEMS],
    )
    return digest(turn, sorted(messages), sorted(calls, key=lambda call: call[0]))


class RequestListWatch:
    """The request list's first page: requests added that match its filters (counted for the
    "N new requests" banner), and the rows it shows still processing (their stage and status)."""

    kind = "requests"

    def __init__(self, filters: RequestFilters, open_ids: list[str]):
        self.filters = filters
        self.open_ids = open_ids

    @property
    def key(self) -> tuple:
        return (self.kind, tuple(sorted(self.filters.as_query().items())), tuple(self.open_ids))

    def digest(self) -> str:
        return digest(sorted(self.states().items()))

    def states(self) -> dict[str, str]:
        """Each open row's stage and status, as the page compares them with what it shows."""
        if not self.open_ids:
            return {}
        rows = NexusRequest.objects.filter(id__in=self.open_ids).values_list(
            "id", "stage", "status"
        )
        return {request_id: f"{stage}/{status}" for request_id, stage, status in rows}

    def news(self, since: Cursor, now: Cursor) -> News:
        span = _range(since, now, "nexus_requests")
        if span is None:
            return News()
        if _too_many(span):
            return News(touched=True, facts={"new_requests": COUNTED, "more_new_requests": True})
        count = capped(arrived(self.filters, *span), COUNTED)
        return News(
            touched=bool(count.value),
            facts={"new_requests": count.value, "more_new_requests": count.capped},
        )


def arrived(filters: RequestFilters, after: int, upto: int):
    """The requests matching `filters` written between two marks (rowid in (after, upto])."""
    rowid = RawSQL('"nexus_requests"."rowid"', (), output_field=IntegerField())
    return filters.queryset().alias(live_rowid=rowid).filter(live_rowid__gt=after,
                                                             live_rowid__lte=upto)  # fmt: skip


class RequestWatch:
    """A request page: the request's row as it goes through the stages."""

    kind = "request"
    # Cut: a hostile ledger's stage_timings may be megabytes; its start is what a stage changes.
    SQL = (
        "SELECT stage, status, completed_at, substr(stage_timings, 1, 4000), error_stage,"
        " delivery_success, turn_id, agent_tokens_total, substr(error_message, 1, 200)"
        " FROM nexus_requests WHERE id = %s"
    )

    def __init__(self, request_id: str):
        self.request_id = request_id

    @property
    def key(self) -> tuple:
        return (self.kind, self.request_id)

    def digest(self) -> str:
        return digest(sqlite.rows(self.SQL, [self.request_id]))

    def news(self, since: Cursor, now: Cursor) -> News:
        return News()


class PipelineWatch:
    """The dashboard's charts (kind "pipeline") or the overview's counts (kind "ledger"): any row
    added to the tables they count, or a request ending (the processing ones, counted)."""

    def __init__(self, kind: str):
        self.kind = kind
        self.tables = ("nexus_requests",) if kind == "pipeline" else TABLES

    @property
    def key(self) -> tuple:
        return (self.kind,)

    def digest(self) -> str:
        if "nexus_requests" not in sqlite.table_names():
            return digest(None)
        ((processing,),) = sqlite.rows(
            "SELECT count(*) FROM (SELECT 1 FROM nexus_requests WHERE status = 'processing'"
            " LIMIT %s) AS p",
            [COUNTED + 1],
        )
        return digest(processing)

    def news(self, since: Cursor, now: Cursor) -> News:
        return News(touched=now.moved(since, *self.tables))
