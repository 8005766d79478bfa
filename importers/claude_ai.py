"""Claude.ai's data export (conversations.json, or the unzipped export folder holding it).

The file is a JSON array of conversations: `uuid`, `name`, `created_at`/`updated_at` (ISO 8601),
and `chat_messages`, each with its `uuid`, `sender` (human or assistant), `text` and `content`
blocks (text, tool_use, tool_result, thinking), `created_at`, and `parent_message_uuid`: an
edited prompt or a retried answer is a second child of the same parent, a branch
(importers/chat_tree.py says how it becomes turns). The first message's parent is the all-zero
uuid. An export without parent_message_uuid (older ones) is one line, in the array's order. The
head is `current_leaf_message_uuid` where the export has it, else the newest leaf.
"""

from collections.abc import Iterator
from pathlib import Path

from importers.bundle import ImportReport, SessionBundle
from importers.chat_exports import export_conversations, iso_ms
from importers.chat_tree import Conversation, Node, session_bundle

FORMAT = "claude-ai"
PERSONA = "claude-ai"
EXPECTED = (
    "a Claude.ai data export: conversations.json, a JSON array of conversations with "
    "chat_messages (or the unzipped export folder holding it)"
)
ROLES = {"human": "user", "user": "user", "assistant": "assistant"}


def read(paths: list[Path], report: ImportReport) -> Iterator[SessionBundle]:
    for where, raw in export_conversations(
        paths, report, looks_right=lambda c: "chat_messages" in c, expected=EXPECTED,
        other=("mapping", "chatgpt"),
    ):  # fmt: skip
        conversation = _conversation(where, raw, report)
        if conversation and (bundle := session_bundle(conversation, PERSONA, report)):
            yield bundle


def _conversation(where: str, raw: dict, report: ImportReport) -> Conversation | None:
    conversation_id = raw.get("uuid")
    messages = raw.get("chat_messages")
    if (
        not isinstance(conversation_id, str)
        or not conversation_id
        or not isinstance(messages, list)
    ):
        report.skipped(where, "a conversation without a uuid or chat_messages")
        return None
    where = f"{where} (conversation {conversation_id})"
    created = iso_ms(raw.get("created_at"))
    model = raw.get("model") if isinstance(raw.get("model"), str) else None
    nodes, previous = [], None
    for order, message in enumerate(messages):
        node = _node(message, order, previous, model, created, where, report)
        if node:
            nodes.append(node)
            previous = node
    head = raw.get("current_leaf_message_uuid")
    return Conversation(
        id=conversation_id,
        title=raw.get("name") if isinstance(raw.get("name"), str) else None,
        nodes=nodes,
        head=head if isinstance(head, str) else None,
        created_ms=created,
        updated_ms=iso_ms(raw.get("updated_at")),
        where=where,
    )


def _node(message, order, previous, model, created, where, report) -> Node | None:
    if not isinstance(message, dict) or not isinstance(message.get("uuid"), str):
        report.skipped(f"{where} message {order + 1}", "a message without a uuid")
        return None
    role = ROLES.get(message.get("sender"))
    if role is None:
        report.skipped(f"{where} message {order + 1}", f"sender {message.get('sender')!r}")
        return None
    if "parent_message_uuid" in message:
        parent = message["parent_message_uuid"]
        parent = parent if isinstance(parent, str) and parent.strip("0-") else None
    else:
        parent = previous.id if previous else None  # an older export: one line
    ms = iso_ms(message.get("created_at"))
    if ms is None:
        ms = previous.ms if previous else (created or 0)
    node = Node(
        message["uuid"], parent, role, "", ms, order, model=model if role == "assistant" else None
    )
    texts = []
    blocks = message.get("content") if isinstance(message.get("content"), list) else []
    for block in blocks:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif kind == "tool_use":
            node.calls.append({
                "id": _str(block.get("id")),
                "name": _str(block.get("name")),
                "parameters": block.get("input", {}),
            })  # fmt: skip
        elif kind == "tool_result":
            node.results.append({
                "call_id": _str(block.get("tool_use_id")),
                "name": _str(block.get("name")),
                "content": _result_text(block.get("content")),
                "is_error": bool(block.get("is_error")),
            })  # fmt: skip
        elif kind:
            report.unmapped(f"Claude.ai {kind} blocks")
    if not blocks and isinstance(message.get("text"), str):
        texts.append(message["text"])  # older exports: the text alone
    node.text = "\n\n".join(t for t in texts if t)
    for key in ("attachments", "files"):
        if isinstance(message.get(key), list) and message[key]:
            report.unmapped(f"Claude.ai {key}", len(message[key]))
    return node


def _result_text(content):
    if isinstance(content, list):
        return "\n".join(
            b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"
        )
    return content


def _str(value) -> str | None:
    return value if isinstance(value, str) and value else None
