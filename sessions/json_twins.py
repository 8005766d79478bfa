"""The JSON twin of every sessions page: the same data as the HTML, for scripts."""

from collections.abc import Callable
from dataclasses import asdict

from ledgerweb.costs import cost_json
from ledgerweb.paging import list_envelope
from sessions.alternatives import add_answers
from sessions.compare import Comparison, Side
from sessions.detail import SessionTree, TurnInfo
from sessions.kinds import RoutingKey
from sessions.listing import SessionFilters, SessionPage
from sessions.models import Session
from sessions.thread import Thread
from sessions.turn_detail import MessageView, ToolCallView, TurnDetail


def _session(s) -> dict:
    routing = RoutingKey(s.routing_key)
    return {
        "id": s.id,
        "label": s.label,
        "persona": s.persona,
        "routing_key": s.routing_key,
        "kind": routing.kind,
        "channel": routing.channel,
        "status": s.status,
        "root_turn_id": s.root_turn_id,
        "current_turn_id": s.current_turn_id,
        "created_at": s.created_at,
        "updated_at": s.updated_at,
        "source_event_id": s.source_event_id,
    }


def session_list(filters: SessionFilters, page: SessionPage) -> dict:
    return list_envelope(filters, page) | {
        "sessions": [
            _session(r.session)
            | {
                "turns": r.turns,
                "branches": r.leaves,
                "hint": r.hint,
                "cost": r.cost.as_json() if r.cost else None,
                "annotations": r.marks.as_json() if r.marks else None,
                # The channel the channel filter keeps it under (a fork's: its origin's).
                "channel": r.channel or None,
                "inherited_turns": r.inherited,
                "inherited_cost": r.inherited_cost.as_json() if r.inherited_cost else None,
            }
            for r in page.rows
        ],
    }


def _turn(t: TurnInfo) -> dict:
    fields = asdict(t)
    del fields["aggregated"]  # how the tree was read, not a fact of the turn
    return fields | {
        "answer_read": bool(t.answer_read),
        "duration_ms": t.duration_ms,
        "is_compaction": t.is_compaction,
        "billed": asdict(t.billed) if t.billed else None,
        "cost": cost_json(t.cost),
    }


# Turns per page of a session's JSON twin: ~1 MB (50,000 turns in one answer were 28 MB).
JSON_PAGE_TURNS = 2_000


def session_detail(session_tree: SessionTree, number: int, page_url: Callable[[int], str]) -> dict:
    """The session and one page of its turns, in the tree's order; `next` is the following
    page's URL (None on the last), `previous` the one before."""
    related = session_tree.related
    rows = session_tree.layout.rows
    pages = max(1, -(-len(rows) // JSON_PAGE_TURNS))
    number = min(number, pages)
    start = (number - 1) * JSON_PAGE_TURNS
    # Each turn's answer, as its row's hover has it (one query for the page's turns): read here
    # too, so that the twin says the same whichever pages were drawn before it.
    add_answers({row.node.id: row.node.data for row in rows[start : start + JSON_PAGE_TURNS]})
    return {
        "session": _session(session_tree.session),
        "totals": session_tree.totals,
        "cost": session_tree.cost.as_json(),
        "problems": [asdict(p) for p in session_tree.problems],
        "parent_session": _session(related.parent) if related.parent else None,
        "spawning_tool_call": related.tool_call,
        "children": [_session(c) for c in related.children],
        "lanes": session_tree.layout.lane_count,
        "page": number,
        "pages": pages,
        "next": page_url(number + 1) if number < pages else None,
        "previous": page_url(number - 1) if number > 1 else None,
        "turns": [
            _turn(row.node.data)
            | {
                "lane": row.lane,
                "depth": row.depth,
                "children": row.child_ids,
                "is_root": row.is_root,
                "is_head": row.is_head,
                "is_leaf": row.is_leaf,
                **_alternatives(session_tree, row.node.id),
            }
            for row in rows[start : start + JSON_PAGE_TURNS]
        ],
    }


def _alternatives(session_tree: SessionTree, turn_id: str) -> dict:
    """A turn's place among its siblings (with its answer) and the forks made at it."""
    alt = session_tree.alternatives.get(turn_id)
    return {
        "alternative": asdict(alt) if alt else None,
        "answer": session_tree.turns[turn_id].answer if alt else None,
        "forks_here": [f.id for f in session_tree.forks_at.get(turn_id, ())],
    }


def turn(info: TurnInfo, detail: TurnDetail, forks_here: list[Session]) -> dict:
    return {
        "turn": _turn(info),
        # The forks made at this turn, as its panel lists them (the session twin's rows too).
        "forks_here": [f.id for f in forks_here],
        "children": detail.children,
        "pipeline_requests": detail.request_ids,
        "failed_pipeline_requests": [asdict(r) for r in detail.failed_requests],
        "problems": detail.problems,
        "messages": [
            {
                "id": m.id,
                "role": m.role,
                "sequence": m.sequence,
                "created_at": m.created_at,
                "content": m.content,
                "length": m.length,
                "truncated": m.truncated,
            }
            for m in detail.messages
        ],
        "tool_calls": [tool_call(c) for c in detail.tool_calls],
        # Both lists in one, as the turn happened (sessions/timeline.py): what the panel shows.
        "timeline": [
            {"kind": "message" if isinstance(item, MessageView) else "tool_call", "id": item.id}
            for item in detail.timeline
        ],
    }


def tool_call(c: ToolCallView) -> dict:
    """One tool call with its payloads: an entry of the turn's twin, and the call page's twin."""
    return {
        "id": c.id,
        "tool_name": c.tool_name,
        "status": c.status,
        "sequence": c.sequence,
        "started_at": c.started_at,
        "completed_at": c.completed_at,
        "duration_ms": c.duration_ms,
        "error": c.error,
        "parameters": asdict(c.parameters),
        "result": asdict(c.result),
        "child_session_id": c.child_session_id,
    }


def compare(result: Comparison) -> dict:
    """Both sides from their common ancestor, turns and costs in the shapes every twin uses
    (_turn, CostSum.as_json), and each answer with its prompt, saying where either was cut."""

    def side(s: Side) -> dict:
        return {
            "turn_id": s.turn_id,
            "problems": s.problems,
            "first_turns": [_turn(t) for t in s.first_turns],
            "hidden_turns": s.hidden_turns,
            "last_turns": [_turn(t) for t in s.last_turns],
            "totals": s.totals,
            "cost": s.cost.as_json(),
            "response": asdict(s.response) if s.response else None,
        }

    a, b = side(result.a), side(result.b)
    return {
        "fork_point": _turn(result.fork_point) if result.fork_point else None,
        "shared_turns": result.shared_turns,
        "a": a,
        "b": b,
        "cost": {"a": a["cost"], "b": b["cost"]},  # where earlier twins gave the sides' costs
    }


def thread(the_thread: Thread, page_url: Callable[[int], str]) -> dict:
    """The thread's totals (over the whole path) and one page of its steps, as on the page:
    `previous` goes toward the root, `next` toward the turn."""
    page, pages = the_thread.page, the_thread.pages
    return {
        "turn_id": the_thread.turn.id,
        "page": page,
        "pages": pages,
        "next": page_url(page + 1) if page < pages else None,
        "previous": page_url(page - 1) if page > 1 else None,
        "problems": the_thread.problems,
        "context_tokens": the_thread.context_tokens,
        "context_window": the_thread.context_window,
        "cumulative_tokens": the_thread.total_tokens,
        "unreadable_token_counts": the_thread.unreadable_token_counts,  # not in the sum
        # What cost.spent is priced from (billed input and output): see Thread.spent_tokens.
        "spent_tokens": the_thread.spent_tokens,
        "cost": {
            "spent": the_thread.spent.as_json(),
            "resume": cost_json(the_thread.resume_cost(cached=False)),
            "resume_cached": cost_json(the_thread.resume_cost(cached=True)),
        },
        "compaction": asdict(the_thread.compaction) if the_thread.compaction else None,
        "steps": [
            {
                "turn": _turn(step.turn),
                "cumulative_tokens": step.cumulative_tokens,
                "in_context": step.in_context,
                "messages": [asdict(m) for m in step.messages],
                "tool_calls": [
                    {"id": c.id, "tool_name": c.tool_name, "status": c.status, "error": c.error}
                    for c in step.tool_calls
                ],
            }
            for step in the_thread.page_steps
        ],
    }
