"""ChatGPT's data export (conversations.json, or the unzipped export folder holding it).

The file is a JSON array of conversations. Each has a `mapping` of nodes by id, every node with
its `parent`, its `children` and a `message` (null for the root): the message's `author.role`
(user, assistant, system, tool), `content` (`parts` of text for `text` and `multimodal_text`, a
`text` for `code` and `execution_output`), `create_time` in seconds, and `metadata.model_slug`.
`current_node` is the message the app shows last: the head. Regenerated answers and edited
prompts are siblings in the mapping, so every branch comes in (importers/chat_tree.py says how).

An assistant message whose `recipient` is not `all` calls a tool (python, browser, dalle…): a
tool call, answered by the next `tool` message. System messages, and messages the app marks
`is_visually_hidden_from_conversation`, are hidden context: walked through, not kept.
"""

from collections.abc import Iterator
from pathlib import Path

from importers.bundle import ImportReport, SessionBundle
from importers.chat_exports import export_conversations, seconds_ms
from importers.chat_tree import Conversation, Node, session_bundle

FORMAT = "chatgpt"
PERSONA = "chatgpt"
EXPECTED = (
    "a ChatGPT data export: conversations.json, a JSON array of conversations with a `mapping` "
    "of message nodes (or the unzipped export folder holding it)"
)
# Content ChatGPT shows as text; the rest (images, browsing displays, thoughts) is counted.
TEXT_CONTENT = {"text", "multimodal_text", "code", "execution_output"}


def read(paths: list[Path], report: ImportReport) -> Iterator[SessionBundle]:
    for where, raw in export_conversations(
        paths, report, looks_right=lambda c: "mapping" in c, expected=EXPECTED,
        other=("chat_messages", "claude-ai"),
    ):  # fmt: skip
        conversation = _conversation(where, raw, report)
        if conversation and (bundle := session_bundle(conversation, PERSONA, report)):
            yield bundle


def _conversation(where: str, raw: dict, report: ImportReport) -> Conversation | None:
    conversation_id = raw.get("conversation_id") or raw.get("id")
    mapping = raw.get("mapping")
    if not isinstance(conversation_id, str) or not conversation_id or not isinstance(mapping, dict):
        report.skipped(where, "a conversation without an id or a mapping")
        return None
    where = f"{where} (conversation {conversation_id})"
    created = seconds_ms(raw.get("create_time"))
    nodes = []
    for order, (key, item) in enumerate(mapping.items()):
        if not isinstance(item, dict):
            report.skipped(where, f"node {key!r} is not an object")
            continue
        node = _node(str(item.get("id") or key), item, order, created, report)
        if node:
            nodes.append(node)
    _inherit_times(nodes, created)
    head = raw.get("current_node")
    return Conversation(
        id=conversation_id,
        title=raw.get("title") if isinstance(raw.get("title"), str) else None,
        nodes=nodes,
        head=head if isinstance(head, str) else None,
        created_ms=created,
        updated_ms=seconds_ms(raw.get("update_time")),
        where=where,
    )


def _node(node_id: str, item: dict, order: int, created, report: ImportReport) -> Node:
    parent = item.get("parent") if isinstance(item.get("parent"), str) else None
    message = item.get("message")
    if not isinstance(message, dict):
        # The root ("client-created-root") holds no message: a hidden node to walk through.
        return Node(node_id, parent, "root", "", -1, order, hidden=True)
    author = message.get("author") if isinstance(message.get("author"), dict) else {}
    role = (
        author.get("role")
        if author.get("role") in ("user", "assistant", "system", "tool")
        else "system"
    )
    metadata = message.get("metadata") if isinstance(message.get("metadata"), dict) else {}
    content = message.get("content") if isinstance(message.get("content"), dict) else {}
    text = _text(content, report)
    ms = seconds_ms(message.get("create_time"))
    node = Node(
        node_id,
        parent,
        role,
        text,
        ms if ms is not None else -1,
        order,
        model=metadata.get("model_slug") if isinstance(metadata.get("model_slug"), str) else None,
        hidden=role == "system"
        or bool(metadata.get("is_visually_hidden_from_conversation"))
        or content.get("content_type") in ("model_editable_context", "user_editable_context"),
        failed=message.get("status") not in (None, "finished_successfully"),
    )
    recipient = message.get("recipient")
    if role == "assistant" and isinstance(recipient, str) and recipient != "all":
        node.calls.append({"name": recipient, "parameters": text})
        node.text = ""  # the call's arguments, not something said
    if role == "tool":
        name = author.get("name") if isinstance(author.get("name"), str) else None
        node.results.append({"name": name, "content": text})
        node.text = ""
    return node


def _text(content: dict, report: ImportReport) -> str:
    kind = content.get("content_type")
    if kind not in TEXT_CONTENT:
        if kind:
            report.unmapped(f"ChatGPT {kind} content")
        return ""
    if isinstance(content.get("text"), str):
        return content["text"]
    parts = content.get("parts") if isinstance(content.get("parts"), list) else []
    texts = [p for p in parts if isinstance(p, str)]
    if len(texts) < len(parts):
        report.unmapped("ChatGPT images and files in messages", len(parts) - len(texts))
    return "\n\n".join(t for t in texts if t)


def _inherit_times(nodes: list[Node], created) -> None:
    """A node without a time (the root, some system nodes) takes its parent's, else the
    conversation's start, so turns keep the export's order."""
    by_id = {n.id: n for n in nodes}
    for node in sorted(nodes, key=lambda n: n.order):
        seen = set()
        current = node
        while current.ms < 0 and current.parent in by_id and current.parent not in seen:
            seen.add(current.parent)
            current = by_id[current.parent]
        if node.ms < 0:
            node.ms = current.ms if current.ms >= 0 else (created or 0)
