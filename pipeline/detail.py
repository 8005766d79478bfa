"""Everything the failed-request page shows about one nexus_requests row, in a fixed number of
queries."""

from dataclasses import dataclass, field

from ledgerfacts.timestamps import elapsed_ms, now_ms
from ledgerweb import dialect, sqlite
from ledgerweb.downloads import cut_to_heads, with_heads
from ledgerweb.health import STUCK_AFTER_MS
from ledgerweb.paging import capped
from ledgerweb.text import JsonText, parse_json, show_json
from pipeline.costs import request_cost
from pipeline.filters import RequestFilters, value_query
from pipeline.models import NexusRequest
from pipeline.signatures import signature
from pipeline.stage_cards import StageCard, failing_hook, hooks_handled_text, stage_cards
from pipeline.stages import Bar, Timings, parse_timings, stage_problems, waterfall

# "100+ similar failures" says enough, and stops the masking function after ~100 matches.
SIMILAR_CAP = 100
RELATED_LIMIT = 10
# Above this many rows sharing a value, walking the newest rows beats sorting them all.
RELATED_WALK_ABOVE = 2_000
# The free-form fields a runtime may fill with megabytes: the page shows the first
# downloads.PAGE_CHARS characters of each, and offers the whole value as a download.
LONG_FIELDS = ("request_snapshot", "error_stack", "error_message", "hooks_context", "permissions")
RELATED_COLUMNS = (
    "id", "status", "started_at", "event_source", "event_type", "stage", "error_stage",
)  # fmt: skip


@dataclass
class JsonList:
    items: list
    problem: str = ""


def json_list(raw, name: str) -> JsonList:
    if raw is None or raw == "":
        return JsonList([])
    value = parse_json(raw, default=ValueError)
    if value is ValueError:
        return JsonList([], f"{name} is not valid JSON: {str(raw)[:120]!r}")
    if not isinstance(value, list):
        return JsonList([], f"{name} is a JSON {type(value).__name__}, not an array")
    return JsonList([v if isinstance(v, str) else str(v) for v in value])


@dataclass
class Hooks:
    matched: JsonList
    fired: JsonList
    handled: object
    context: JsonText

    @property
    def matched_not_fired(self) -> list[str]:
        fired = set(self.fired.items)
        return [h for h in self.matched.items if h not in fired]


@dataclass
class RequestDetail:
    request: NexusRequest
    timings: Timings
    bars: list[Bar]
    problems: list[str]
    hooks: Hooks
    permissions: JsonText
    tool_names: JsonList
    message_ids: JsonList
    snapshot: JsonText
    signature: str = ""
    similar: sqlite.CappedCount | None = None
    similar_not_searched: str = ""  # hours the similar failures' search left out, in words
    same_event: list[NexusRequest] = field(default_factory=list)
    same_principal: list[NexusRequest] = field(default_factory=list)
    same_session: list[NexusRequest] = field(default_factory=list)
    previous_failure: str | None = None
    next_failure: str | None = None
    turn_session_id: str | None = None
    turn_missing: bool = False
    cards: dict[str, StageCard] = field(default_factory=dict)
    failing_hook: str | None = None
    handled_text: str = ""
    cut: dict[str, int] = field(default_factory=dict)  # long fields shown in part: whole length

    @property
    def cost(self):
        """The ≈ cost of the agent run (pipeline/costs.py); None when it used no tokens."""
        return request_cost(self.request)

    @property
    def running(self) -> bool:
        return self.request.status == "processing"

    @property
    def failing_hook_listed(self) -> bool:
        listed = set(self.hooks.matched.items) | set(self.hooks.fired.items)
        return self.failing_hook in listed

    @property
    def duration_ms(self):
        elapsed = elapsed_ms(self.request.started_at, self.request.completed_at)
        if elapsed is None and self.timings.ms:
            return self.timings.total  # still running, or completed_at never written
        return elapsed


def load_request(request_id: str, with_similar: bool = True) -> RequestDetail | None:
    """A request and what the page shows about it. `with_similar=False` leaves out the similar
    failures' count: for a rare message it reads every failure of the stage (~1 s on a million
    rows), so the page loads it afterwards (similar_failures view) instead of waiting for it."""
    r = with_heads(NexusRequest.objects.filter(id=request_id), LONG_FIELDS).first()
    if r is None:
        return None
    cut = cut_to_heads(r, LONG_FIELDS)
    timings = parse_timings(r.stage_timings)
    hooks = Hooks(
        json_list(r.hooks_matched, "hooks_matched"),
        json_list(r.hooks_fired, "hooks_fired"),
        r.hooks_handled,
        show_json(r.hooks_context, total_chars=cut.get("hooks_context")),
    )
    detail = RequestDetail(
        request=r,
        timings=timings,
        bars=waterfall(timings, stage=r.stage, status=r.status, error_stage=r.error_stage),
        problems=stage_problems(
            stage=r.stage, status=r.status, error_stage=r.error_stage, error_message=r.error_message
        ),
        hooks=hooks,
        permissions=show_json(r.permissions, total_chars=cut.get("permissions")),
        tool_names=json_list(r.agent_tool_calls, "agent_tool_calls"),
        message_ids=json_list(r.delivery_message_ids, "delivery_message_ids"),
        snapshot=show_json(r.request_snapshot, total_chars=cut.get("request_snapshot")),
        cut=cut,
    )
    detail.cards = stage_cards(detail.bars, r)
    detail.handled_text = hooks_handled_text(r.hooks_handled, detail.cards)
    if detail.cards["executeTriggers"].state == "failed here":
        detail.failing_hook = failing_hook(r.error_message, hooks.matched.items + hooks.fired.items)
    detail.problems += timings.problems
    if detail.running and isinstance(r.started_at, int):
        _warn_if_stuck(detail, now_ms() - r.started_at)
    for json_field in (hooks.matched, hooks.fired, detail.tool_names, detail.message_ids):
        if json_field.problem:
            detail.problems.append(json_field.problem)
    _add_context(detail)
    if with_similar:
        count_similar(detail)
    return detail


def _warn_if_stuck(detail: RequestDetail, running_ms: int) -> None:
    """The health page's "always finalized" check, said where a stuck request is looked at."""
    if running_ms >= STUCK_AFTER_MS:
        detail.problems.append(
            f"still processing {running_ms // 60_000:,} minutes after it started: the runtime"
            " may have stopped without finalizing it"
        )


# The page's few fixed queries are plain SQL: as ORM querysets (built, compiled, turned into
# model objects) they cost about as much as the SQL itself (bench/request_page_bench.py).
def _related(column: str, value, exclude_id: str) -> list[NexusRequest]:
    """The newest requests sharing a value; a common value walks started_at (`+column`: its
    own index would read every match and sort them), a rare one uses the column's index."""
    if value in (None, ""):
        return []
    ((matches,),) = sqlite.rows(
        f"SELECT count(*) FROM (SELECT 1 FROM nexus_requests WHERE {column} = %s LIMIT %s) AS c",
        [value, RELATED_WALK_ABOVE + 1],
    )
    match = dialect.unindexed(column) if matches > RELATED_WALK_ABOVE else column
    found = sqlite.rows(
        f"""SELECT {", ".join(RELATED_COLUMNS)} FROM nexus_requests
            WHERE {match} = %s AND id IS DISTINCT FROM %s
            ORDER BY started_at DESC, id DESC LIMIT %s""",
        [value, exclude_id, RELATED_LIMIT],
    )
    return [NexusRequest(**dict(zip(RELATED_COLUMNS, row, strict=True))) for row in found]


def _nearest_failure(at: int, request_id: str, later: bool) -> str | None:
    """The failure just before or after this request, walking started_at outwards from it (the
    status index would read every failure ever and sort them: +status). The plain range bound
    keeps SQLite on the started_at index; the OR breaks ties by id."""
    side, order = (">", "ASC") if later else ("<", "DESC")
    found = sqlite.rows(
        f"""SELECT id FROM nexus_requests
            WHERE {dialect.unindexed("status")} = 'failed' AND started_at {side}= %s
              AND (started_at {side} %s OR id {side} %s)
            ORDER BY started_at {order}, id {order} LIMIT 1""",
        [at, at, request_id],
    )
    return found[0][0] if found else None


def _add_context(detail: RequestDetail) -> None:
    r = detail.request
    detail.same_event = _related("event_id", r.event_id, r.id)
    detail.same_principal = _related("principal_id", r.principal_id, r.id)
    detail.same_session = _related("session_key", r.session_key, r.id)
    if r.status == "failed":
        detail.signature = signature(r.error_message)
    if isinstance(r.started_at, int):
        detail.previous_failure = _nearest_failure(r.started_at, r.id, later=False)
        detail.next_failure = _nearest_failure(r.started_at, r.id, later=True)
    if r.turn_id:
        # The pipeline links to the sessions area by URL only; it needs the turn's session id.
        if "turns" in sqlite.table_names():
            found = sqlite.rows("SELECT session_id FROM turns WHERE id = %s", [r.turn_id])
            detail.turn_session_id = found[0][0] if found else None
        detail.turn_missing = detail.turn_session_id is None
        if detail.turn_missing:
            detail.problems.append(f"turn_id {r.turn_id} does not exist in this ledger")


def count_similar(detail: RequestDetail) -> None:
    if detail.request.status == "failed":
        similar = RequestFilters.from_query(similar_query(detail))
        detail.similar = capped(similar.queryset(), SIMILAR_CAP)
        detail.similar_not_searched = similar.signature_search.note


def similar_query(detail: RequestDetail) -> dict[str, str]:
    """The request-list filters that select exactly the counted similar failures: the same
    signature and the same stage as stored (NULL, '' and spaces included: value_query)."""
    stage = detail.request.error_stage
    return (
        {"status": "failed"}
        | value_query("signature", detail.signature)
        | value_query("error_stage", None if stage is None else str(stage))
    )
