"""One turn: its messages and tool calls, with big payloads cut to a preview loaded in SQL."""

from collections import Counter
from dataclasses import dataclass, field

from ledgerfacts.timestamps import elapsed_ms
from ledgerweb import dialect, downloads, sqlite
from ledgerweb.text import PREVIEW_CHARS, JsonText, as_text, render_markdown, show_json
from sessions.call_hints import HINT_CHARS, call_hint
from sessions.kinds import children_prefix
from sessions.timeline import in_order


@dataclass
class MessageView:
    id: str
    role: str
    sequence: object
    created_at: object
    content: str  # at most PREVIEW_CHARS characters
    length: int

    @property
    def truncated(self) -> bool:
        return self.length > len(self.content)

    @property
    def html(self) -> str:
        return render_markdown(self.content)


@dataclass
class ToolCallView:
    id: str
    tool_name: str
    status: str
    started_at: object
    completed_at: object
    sequence: object
    error: str | None
    parameters_head: object = None  # its first HINT_CHARS characters, for the hint
    parameters: JsonText | None = None  # None: not loaded yet (the panel loads it when opened)
    result: JsonText | None = None
    child_session_id: str | None = None

    @property
    def duration_ms(self) -> int | None:
        return elapsed_ms(self.started_at, self.completed_at)

    @property
    def hint(self) -> str:
        """What the call was about, in a few words, for its closed line: the command, path,
        pattern or query it was given (sessions.call_hints)."""
        return call_hint(self.parameters_head)

    @property
    def payloads(self) -> list[tuple[str, JsonText]]:
        """Parameters and result, each named by its column (also the "load all" URL's kind)."""
        return [("parameters", self.parameters), ("result", self.result)]


# A linked request's error is shown in the turn's panel up to this size; its page has the rest.
REQUEST_ERROR_CHARS = 2_000


@dataclass
class LinkedRequest:
    """A pipeline request that ran this turn (nexus_requests.turn_id). Read here with plain SQL:
    the sessions app knows the pipeline only by its table and its URLs."""

    id: str
    status: object
    stage: object
    error_stage: object
    error_message: str | None  # at most REQUEST_ERROR_CHARS
    error_length: int | None
    delivery_error: str | None  # at most REQUEST_ERROR_CHARS

    @property
    def failed(self) -> bool:
        return self.status == "failed" or bool(self.error_message or self.delivery_error)

    @property
    def failed_stage(self):
        """The stage that failed: error_stage, else the stage the request stopped at."""
        return self.error_stage or self.stage

    @property
    def error_truncated(self) -> bool:
        return isinstance(self.error_length, int) and self.error_length > REQUEST_ERROR_CHARS


@dataclass
class TurnDetail:
    messages: list[MessageView]
    tool_calls: list[ToolCallView]
    children: list[str]
    requests: list[LinkedRequest]
    problems: list[str] = field(default_factory=list)
    # Children that belong to another session (a fork's turns below its fork point, the
    # origin's branches below an inherited turn), by id: they open under their own session.
    other_session_children: dict[str, str] = field(default_factory=dict)
    # The messages and tool calls in one list, as they happened (sessions/timeline.py).
    timeline: list[MessageView | ToolCallView] = field(default_factory=list)

    @property
    def request_ids(self) -> list[str]:
        return [r.id for r in self.requests]

    @property
    def failed_requests(self) -> list[LinkedRequest]:
        return [r for r in self.requests if r.failed]


def load_turn_detail(session_id: str, turn_id: str, started_at=None) -> TurnDetail:
    """The turn's messages, tool calls (payloads of a short list), children and requests;
    `started_at` (the turn's) places items whose own time is unreadable."""
    content = dialect.whole("content")  # past a NUL too: SQLite's substr() stops at one
    messages = [
        MessageView(*row)
        for row in sqlite.rows(
            f"""SELECT id, role, sequence, created_at, substr({content}, 1, %s), length({content})
               FROM messages WHERE turn_id = %s ORDER BY sequence, created_at, id""",
            [PREVIEW_CHARS, turn_id],
        )
    ]
    calls = [
        ToolCallView(*row)
        for row in sqlite.rows(
            f"SELECT {CALL_COLUMNS} FROM tool_calls WHERE turn_id = %s"
            " ORDER BY sequence, started_at, id",
            [turn_id],
        )
    ]
    add_payloads(calls if len(calls) <= INLINE_CALLS else _first_failed(calls), turn_id)
    _link_subagents(session_id, calls)
    children = sqlite.rows(
        "SELECT id, session_id FROM turns WHERE parent_turn_id = %s ORDER BY started_at, id",
        [turn_id],
    )
    detail = TurnDetail(
        messages,
        calls,
        [child_id for child_id, _ in children],
        _linked_requests(turn_id),
        other_session_children={c: s for c, s in children if s != session_id},
    )
    detail.problems = _sequence_problems(messages, calls)
    detail.timeline = in_order(messages, calls, started_at)
    return detail


def _linked_requests(turn_id: str) -> list[LinkedRequest]:
    if "nexus_requests" not in sqlite.table_names():
        return []  # a ledger without the pipeline's table
    return [
        LinkedRequest(*row)
        for row in sqlite.rows(
            """SELECT id, status, stage, error_stage, substr(error_message, 1, %s),
                      length(error_message), substr(delivery_error, 1, %s)
               FROM nexus_requests WHERE turn_id = %s ORDER BY started_at LIMIT 20""",
            [REQUEST_ERROR_CHARS, REQUEST_ERROR_CHARS, turn_id],
        )
    ]


# A turn with more tool calls than this lists them closed and loads each body when it is opened:
# a 600-call turn would otherwise send and parse 1,200 payloads nobody looks at.
INLINE_CALLS = 5
# Failed calls of a long list come open, with their error and payloads in the panel: a body
# loaded on the <details>' "toggle" event never loads for a call that arrives open in an htmx
# swap (the event fires before htmx has wired the new content). Up to this many: a turn with
# hundreds of failures would otherwise send all their payloads.
OPEN_FAILED_CALLS = 5
CALL_COLUMNS = (
    "id, tool_name, status, started_at, completed_at, sequence, error,"
    f" substr(parameters, 1, {HINT_CHARS})"
)


def _first_failed(calls: list[ToolCallView]) -> list[ToolCallView]:
    return [c for c in calls if c.status == "failed"][:OPEN_FAILED_CALLS]


def add_payloads(calls: list[ToolCallView], turn_id: str) -> None:
    """Load the payload previews of these calls of the turn (all in one query)."""
    if not calls:
        return
    by_id = {c.id: c for c in calls}
    ids_sql, ids = sqlite.in_list(by_id)
    params_sql, result_sql = dialect.whole("parameters"), dialect.whole("result")
    for call_id, params, params_len, result, result_len in sqlite.rows(
        f"""SELECT id, substr({params_sql}, 1, %s), length({params_sql}),
                  substr({result_sql}, 1, %s), length({result_sql})
            FROM tool_calls WHERE turn_id = %s AND id IN {ids_sql}""",
        [PREVIEW_CHARS, PREVIEW_CHARS, turn_id, *ids],
    ):
        if call_id in by_id:
            # A JSON string holding JSON (an MCP result's text) is shown decoded.
            shown = {"decode_strings": True}
            by_id[call_id].parameters = show_json(params, total_chars=params_len, **shown)
            by_id[call_id].result = show_json(result, total_chars=result_len, **shown)


def load_tool_call(turn_id: str, call_id: str) -> ToolCallView | None:
    """One tool call with its payloads, for the body of a call opened in a long list."""
    rows = sqlite.rows(
        f"SELECT {CALL_COLUMNS} FROM tool_calls WHERE turn_id = %s AND id = %s", [turn_id, call_id]
    )
    if not rows:
        return None
    call = ToolCallView(*rows[0])
    add_payloads([call], turn_id)
    return call


def _link_subagents(session_id: str, calls: list[ToolCallView]) -> None:
    """Tool calls that spawned a subagent session: routing key subagent:<session>:<call id>."""
    low, high = children_prefix("subagent", session_id)
    by_call = {c.id: c for c in calls}
    if not by_call:
        return
    for child_id, routing_key in sqlite.rows(
        "SELECT id, routing_key FROM sessions WHERE routing_key >= %s AND routing_key < %s",
        [low, high],
    ):
        call = by_call.get(routing_key[len(low) :])
        if call:
            call.child_session_id = child_id


def _sequence_problems(messages, calls) -> list[str]:
    problems = []
    for kind, items in (("message", messages), ("tool call", calls)):
        # Counted once (not seen.count() per item: a 600-call turn made that 360,000 steps).
        seen = Counter(i.sequence for i in items)
        dupes = sorted((s for s, times in seen.items() if times > 1), key=str)
        if dupes:
            problems.append(f"{kind} sequence numbers repeat: {', '.join(map(str, dupes))}")
    return problems


PAYLOAD_COLUMNS = {
    "message": ("messages", "content"),
    "parameters": ("tool_calls", "parameters"),
    "result": ("tool_calls", "result"),
}
PAYLOAD_ROW = "id = %s AND turn_id = %s"


@dataclass
class Payload:
    text: str  # at most downloads.PAGE_CHARS characters
    total_chars: int

    @property
    def cut(self) -> bool:
        return self.total_chars > len(self.text)


def load_payload(turn_id: str, kind: str, item_id: str) -> Payload | None:
    """One big payload, for "load all": as much as a page shows, and its whole length."""
    if kind not in PAYLOAD_COLUMNS:
        return None
    table, column = PAYLOAD_COLUMNS[kind]
    whole = dialect.whole(column)
    found = sqlite.rows(
        f"SELECT substr({whole}, 1, %s), length({whole}) FROM {table} WHERE {PAYLOAD_ROW}",
        [downloads.PAGE_CHARS, item_id, turn_id],
    )
    if not found:
        return None
    text, total = found[0]
    return Payload(as_text(text), total or 0)


def payload_pieces(turn_id: str, kind: str, item_id: str):
    """The whole payload, for its download."""
    table, column = PAYLOAD_COLUMNS[kind]
    return downloads.pieces(table, column, PAYLOAD_ROW, [item_id, turn_id])
