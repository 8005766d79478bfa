"""A chat app's message tree (ChatGPT's and Claude.ai's exports) as a session's turn tree.

Both exports keep every message a conversation ever had, each pointing at its parent: an edited
prompt is a second user message under the same answer, a regenerated answer a second answer
under the same prompt. chatgpt.py and claude_ai.py read their JSON into Nodes; this module
makes the turns, the same way for both:

- a visible user message starts a turn, a child of the turn holding its parent (an edited
  prompt is therefore a sibling turn: a branch);
- an answer (or tool message) continues the turn of its parent when it is that parent's first
  such child; a later one is a regeneration: a sibling turn that repeats the prompt (its
  messages up to the parent) and then gives its own answer, as ledgerweb shows regenerations;
- hidden messages (system prompts, context the app inserts) are walked through but not kept;
- the session's head is the turn holding the message the export marks as current.
"""

from collections import defaultdict
from dataclasses import dataclass, field

from importers.bundle import ImportReport, SessionBundle, derived_id
from importers.jsonl import encode_json
from importers.naming import label_from, main_routing_key


@dataclass
class Node:
    id: str
    parent: str | None
    role: str  # user, assistant, system or tool
    text: str
    ms: int
    order: int  # position in the export, for ties in time
    model: str | None = None
    hidden: bool = False
    calls: list[dict] = field(default_factory=list)  # {id, name, parameters}
    results: list[dict] = field(default_factory=list)  # {call_id or name, content, is_error}
    failed: bool = False  # the app says this answer did not complete


@dataclass
class Conversation:
    id: str
    title: str | None
    nodes: list[Node]
    head: str | None  # the node the app shows as current
    created_ms: int | None
    updated_ms: int | None
    where: str


@dataclass
class _Turn:
    id: str
    parent: str | None
    entries: list[tuple[Node, bool]] = field(default_factory=list)  # (node, repeated copy)


def session_bundle(conv: Conversation, persona: str, report: ImportReport) -> SessionBundle | None:
    """The conversation's session, or None (noted) when it holds no visible message."""
    by_id = {n.id: n for n in conv.nodes}
    children: dict[str | None, list[Node]] = defaultdict(list)
    for node in conv.nodes:
        parent = node.parent if node.parent in by_id and node.parent != node.id else None
        children[parent].append(node)
    for found in children.values():
        found.sort(key=lambda n: (n.ms, n.order))

    turns: list[_Turn] = []
    turn_of: dict[str, _Turn | None] = {}  # node id -> the turn it is an own entry of
    stack = [(node, None) for node in reversed(children[None])]
    reached = set()
    while stack:
        node, parent = stack.pop()
        if node.id in reached:
            continue
        reached.add(node.id)
        turn = _place(node, parent, children, turn_of, turns, conv)
        turn_of[node.id] = turn
        stack.extend((child, node) for child in reversed(children[node.id]))
    if unreached := len(conv.nodes) - len(reached):
        report.skipped(conv.where, f"{unreached} message(s) whose parents form a loop")
    hidden = sum(1 for n in conv.nodes if n.hidden and n.role != "root" and n.id in reached)
    if hidden:
        report.unmapped(f"{persona} hidden messages (system prompts, inserted context)", hidden)
    if not turns:
        report.unmapped(f"{persona} conversations without a visible message")
        return None
    return _bundle(conv, persona, turns, turn_of, by_id, report)


def _place(node, parent, children, turn_of, turns, conv) -> "_Turn | None":
    """The turn `node` is an own entry of (a new one when it starts one)."""
    parent_turn = turn_of.get(parent.id) if parent else None
    if node.hidden:
        return parent_turn  # walked through: its children continue where it stands
    if node.role == "user":
        turn = _Turn(node.id, parent_turn.id if parent_turn else None)
        turns.append(turn)
    elif parent_turn is None:
        turn = _Turn(node.id, None)  # an answer without a prompt above it
        turns.append(turn)
    elif _first_answer(parent, children, turn_of) is node:
        parent_turn.entries.append((node, False))
        return parent_turn
    else:
        # A regeneration: the prompt again (everything of the parent's turn up to the
        # parent), then this answer, as a sibling of the parent's turn.
        turn = _Turn(node.id, parent_turn.parent)
        upto = next(
            (i for i, (n, _) in enumerate(parent_turn.entries) if n.id == parent.id),
            len(parent_turn.entries) - 1,
        )
        turn.entries = [(n, True) for n, _ in parent_turn.entries[: upto + 1]]
        turns.append(turn)
    turn.entries.append((node, False))
    return turn


def _first_answer(parent: Node, children, turn_of) -> Node | None:
    """The first child of `parent` that continues its turn (not a prompt, not hidden)."""
    return next((c for c in children[parent.id] if c.role != "user" and not c.hidden), None)


def _bundle(conv, persona, turns, turn_of, by_id, report) -> SessionBundle:
    turn_rows, messages, calls = [], [], []
    for turn in turns:
        sequence, open_calls = 0, []
        for node, copy in turn.entries:
            if node.text and node.role in ("user", "assistant", "system"):
                messages.append({
                    "id": derived_id(node.ms, conv.id, turn.id, node.id) if copy else node.id,
                    "turn_id": turn.id,
                    "role": node.role,
                    "content": node.text,
                    "sequence": sequence,
                    "created_at": node.ms,
                })  # fmt: skip
                sequence += 1
            if copy:
                continue
            for call in node.calls:
                row = _call_row(
                    conv, turn, node, call, len([c for c in calls if c["turn_id"] == turn.id])
                )
                calls.append(row)
                open_calls.append(row)
            for result in node.results:
                _settle(open_calls, result, node, report, persona)
        own = [n for n, copy in turn.entries if not copy]
        answered = [n for n in own if n.role == "assistant"]
        model = next((n.model for n in reversed(own) if n.model), None)
        turn_rows.append({
            "id": turn.id,
            "session_id": conv.id,
            "parent_turn_id": turn.parent,
            "status": "failed" if answered and answered[-1].failed else "completed",
            "started_at": turn.entries[0][0].ms,
            "completed_at": max(n.ms for n, _ in turn.entries),
            "model": model,
        })  # fmt: skip
        for call in open_calls:
            if call["status"] == "pending":
                call["status"] = "failed"
                call["error"] = "no result for this call in the export"
    head_turn = turn_of.get(conv.head) if conv.head else None
    if head_turn is None:
        parents = {t["parent_turn_id"] for t in turn_rows}
        leaves = [t for t in turn_rows if t["id"] not in parents]
        head = max(leaves, key=lambda t: (t["completed_at"], t["started_at"]))["id"]
    else:
        head = head_turn.id
    first_prompt = next((m["content"] for m in messages if m["role"] == "user"), None)
    times = [t["started_at"] for t in turn_rows] + [t["completed_at"] for t in turn_rows]
    created = conv.created_ms if conv.created_ms is not None else min(times)
    session = {
        "id": conv.id,
        "persona": persona,
        "routing_key": main_routing_key(None, conv.id),
        "label": label_from(conv.title) or label_from(first_prompt),
        "root_turn_id": turn_rows[0]["id"],
        "current_turn_id": head,
        "created_at": min(created, *times),
        "updated_at": max(conv.updated_ms or 0, *times),
        "status": "active",
    }
    return SessionBundle(
        where=conv.where, session=session, turns=turn_rows, messages=messages, tool_calls=calls
    )


def _call_row(conv, turn, node, call, sequence) -> dict:
    return {
        "id": call.get("id") or derived_id(node.ms, conv.id, node.id, "call", sequence),
        "turn_id": turn.id,
        "tool_name": call.get("name") or "(unnamed tool)",
        "parameters": encode_json(call.get("parameters") or {}),
        "result": None,
        "error": None,
        "status": "pending",
        "started_at": node.ms,
        "completed_at": None,
        "sequence": sequence,
    }


def _settle(open_calls, result, node, report, persona) -> None:
    """A result answers the call it names by id, else the oldest open call of its tool."""
    pending = [c for c in open_calls if c["status"] == "pending"]
    call = next(
        (c for c in pending if result.get("call_id") and c["id"] == result["call_id"]), None
    )
    if call is None:
        call = next((c for c in pending if c["tool_name"] == result.get("name")), None)
    if call is None:
        call = pending[0] if pending and not result.get("call_id") else None
    if call is None:
        report.unmapped(f"{persona} tool results without their call")
        return
    if result.get("is_error"):
        call["status"], call["error"] = "failed", str(result.get("content") or "(no message)")
    else:
        call["status"], call["result"] = "completed", encode_json(result.get("content"))
    call["completed_at"] = max(node.ms, call["started_at"])
