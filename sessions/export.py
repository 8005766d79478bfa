"""A thread as a replayable transcript: chat messages in the widely used role/content form (the
OpenAI chat format, which most SDKs and replay tools accept), with ledger ids for traceability.

Each turn comes as it happened (sessions/timeline.py): its texts, and its tool calls where they
were made, calls made together as one assistant message with `tool_calls`, their results as
`tool` messages right after it, then the next text.

The answer is streamed (docs/decisions.md, "export.json is streamed"): a thread of 20,000 turns
or a turn holding an 80 MB result is read a batch of turns at a time, each value's first
HEAD_CHARS characters with its row and the rest of a longer one in pieces, and written out as
it is read, so no worker holds the whole transcript.
"""

import codecs
import json
from collections.abc import Iterator
from dataclasses import dataclass

from ledgerweb import dialect, downloads, sqlite
from ledgerweb.text import as_text
from sessions.models import Session
from sessions.thread import Thread
from sessions.timeline import call_batches, in_order

FORMAT = "ledgerweb.thread/1"
# A value's first characters come with its row; a longer one is read in pieces after it.
HEAD_CHARS = 4_000
# Turns whose messages and calls are read in one query each.
TURNS_PER_READ = 100
# The answer is written out in pieces of about this many characters (one write per message
# made a 20,000-turn export ten times slower than the whole answer at once).
WRITE_CHARS = 64_000


@dataclass
class Value:
    """A text column's value, streamed as a JSON string: its head, and the rest read in pieces
    when it is longer (None: SQL NULL).

    The head is the value's first HEAD_CHARS characters, or fewer: SQLite's substr() of a TEXT
    stops at a NUL inside it ("before\x00after" gives "before"). So the length is the whole
    value's in bytes, and what follows the head is read by its bytes (downloads.pieces), NUL
    and all; json.dumps writes a NUL as \u0000."""

    head: object  # str (a number read as text), or bytes for a BLOB; None for NULL
    length: object  # the whole value's UTF-8 bytes (dialect.byte_length); None for NULL
    table: str
    column: str
    row: tuple[str, str]  # (id, turn_id)
    prefix: str = ""

    @property
    def is_null(self) -> bool:
        return self.head is None

    @property
    def is_empty(self) -> bool:
        return self.head is None or (len(self.head) == 0 and self.is_whole)

    @property
    def head_bytes(self) -> int:
        head = self.head
        return len(head) if isinstance(head, bytes) else len(as_text(head).encode())

    @property
    def is_whole(self) -> bool:
        """Its head is all of it (most values): written as plain JSON, not in pieces."""
        return not isinstance(self.length, int) or self.length <= self.head_bytes

    def text(self) -> str | None:
        """The whole value, when its head is all of it (is_whole)."""
        if self.head is None and not self.prefix:
            return None
        if isinstance(self.head, str):
            return self.prefix + self.head
        return "".join(self.texts())

    def texts(self) -> Iterator[str]:
        yield self.prefix
        if self.head is None:
            return
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        if isinstance(self.head, bytes):
            yield decoder.decode(self.head)
        else:
            yield as_text(self.head)
        if not self.is_whole:
            where = "id = %s AND turn_id = %s"
            start = self.head_bytes + 1
            for piece in downloads.pieces(self.table, self.column, where, list(self.row), start):
                yield decoder.decode(piece)
        yield decoder.decode(b"", final=True)


@dataclass
class _Message:
    id: str
    turn_id: str
    role: object
    sequence: object
    created_at: object
    content: Value


@dataclass
class _Call:
    id: str
    turn_id: str
    tool_name: object
    status: object
    sequence: object
    started_at: object
    completed_at: object
    parameters: Value
    result: Value
    error: Value


def transcript(session: Session, thread: Thread) -> Iterator[bytes]:
    """The export of `thread` (its steps; their contents are read here), as pieces of JSON."""
    head = {
        "format": FORMAT,
        "session": {"id": session.id, "persona": session.persona, "label": session.label},
        "turn_id": thread.turn.id,
        "turn_ids": [s.turn.id for s in thread.steps],
        "model": thread.turn.model,
        "tokens": {"context": thread.context_tokens, "cumulative": thread.total_tokens},
        "problems": thread.problems,
    }
    opening = _dumps(head)
    written: list[str] = [opening[:-1] + ', "messages": [']
    size = 0
    separator = "\n"
    for message, streamed in _messages(thread):
        written.append(separator)
        separator = ",\n"
        # Most messages are one json.dumps; one holding a long value is written piece by piece.
        pieces = _encode(message) if streamed else (_dumps(message),)
        for text in pieces:
            written.append(text)
            size += len(text)
            if size > WRITE_CHARS:
                yield "".join(written).encode()
                written, size = [], 0
    written.append("\n]}\n")
    yield "".join(written).encode()


def _messages(thread: Thread) -> Iterator[tuple[dict, bool]]:
    """Each chat message of the export, and whether it holds a value to stream in pieces."""
    for _, messages in chat_messages([s.turn for s in thread.steps]):
        yield from messages


def chat_messages(turns: list) -> Iterator[tuple[object, Iterator[tuple[dict, bool]]]]:
    """Each turn (a TurnInfo) with its chat messages as the export writes them (each with its
    `ledger` ids, and whether it holds a value to stream in pieces: write it with
    encode_json). Read a batch of turns at a time. Datasets (datasets/) build on this."""
    for start in range(0, len(turns), TURNS_PER_READ):
        batch = turns[start : start + TURNS_PER_READ]
        messages, calls = _contents([t.id for t in batch])
        for turn in batch:
            ref = {"turn_id": turn.id, "session_id": turn.session_id}
            timeline = in_order(messages.get(turn.id, []), calls.get(turn.id, []), turn.started_at)
            yield turn, _turn_messages(timeline, ref)


def _inline(value: Value) -> "str | None | Value":
    """A value as plain text when its head is all of it (most are), else itself, to stream."""
    return value.text() if value.is_whole else value


def _turn_messages(timeline: list, ref: dict) -> Iterator[tuple[dict, bool]]:
    run: list[_Call] = []
    for item in [*timeline, None]:
        if isinstance(item, _Call):
            run.append(item)
            continue
        for batch in call_batches(run):
            yield from _call_messages(batch, ref)
        run = []
        if item is not None:
            content = _inline(item.content)
            message = {"role": item.role, "content": content}
            yield message | {"ledger": ref | {"message_id": item.id}}, isinstance(content, Value)


def _call_messages(batch: list[_Call], ref: dict) -> Iterator[tuple[dict, bool]]:
    """Calls made together: one assistant message holding them, then each one's result."""
    arguments = ["{}" if c.parameters.is_empty else _inline(c.parameters) for c in batch]
    calls = [
        {"id": c.id, "type": "function", "function": {"name": c.tool_name, "arguments": a}}
        for c, a in zip(batch, arguments, strict=True)
    ]
    message = {"role": "assistant", "content": "", "tool_calls": calls, "ledger": ref}
    yield message, any(isinstance(a, Value) for a in arguments)
    for c in batch:
        content = _inline(c.result if c.error.is_null else c.error)
        ledger = ref | {"tool_call_id": c.id, "status": c.status}
        message = {"role": "tool", "tool_call_id": c.id, "content": content, "ledger": ledger}
        yield message, isinstance(content, Value)


def _contents(turn_ids: list[str]) -> tuple[dict, dict]:
    """The messages and calls of these turns by turn id, each in its own order, with the heads
    of their values."""
    ids_sql, ids = sqlite.in_list(turn_ids)
    # Each value's length in bytes: its head may stop short at a NUL (Value).
    lengths = {c: dialect.byte_length(c) for c in ("content", "parameters", "result", "error")}
    messages: dict[str, list[_Message]] = {}
    for mid, turn_id, role, sequence, created_at, head, length in sqlite.rows(
        f"""SELECT id, turn_id, role, sequence, created_at, substr(content, 1, %s),
                   {lengths["content"]}
            FROM messages WHERE turn_id IN {ids_sql} ORDER BY sequence, created_at, id""",
        [HEAD_CHARS, *ids],
    ):
        content = Value(head, length, "messages", "content", (mid, turn_id))
        if content.is_null:
            content.head = ""
        messages.setdefault(turn_id, []).append(
            _Message(mid, turn_id, role, sequence, created_at, content)
        )
    calls: dict[str, list[_Call]] = {}
    for row in sqlite.rows(
        f"""SELECT id, turn_id, tool_name, status, sequence, started_at, completed_at,
                   substr(parameters, 1, %s), {lengths["parameters"]},
                   substr(result, 1, %s), {lengths["result"]},
                   substr(error, 1, %s), {lengths["error"]}
            FROM tool_calls WHERE turn_id IN {ids_sql} ORDER BY sequence, started_at, id""",
        [HEAD_CHARS, HEAD_CHARS, HEAD_CHARS, *ids],
    ):
        cid, turn_id = row[0], row[1]
        parameters, result, error = (
            Value(row[7 + 2 * n], row[8 + 2 * n], "tool_calls", column, (cid, turn_id))
            for n, column in enumerate(("parameters", "result", "error"))
        )
        error.prefix = "Error: "  # shown instead of the result when there is one
        calls.setdefault(turn_id, []).append(_Call(*row[:7], parameters, result, error))
    return messages, calls


def _plain(value):
    """What JSON cannot hold as it is: a BLOB read as text."""
    return as_text(value)


def _dumps(value) -> str:
    return json.dumps(value, ensure_ascii=False, default=_plain)


def encode_json(value) -> Iterator[str]:
    """JSON text of a value holding chat messages, long values streamed piece by piece."""
    return _encode(value)


def _encode(value) -> Iterator[str]:
    """JSON text of a message, its Values streamed as strings piece by piece."""
    if isinstance(value, Value):
        if value.is_null and not value.prefix:
            yield "null"
            return
        yield '"'
        for text in value.texts():
            if text:
                yield _dumps(text)[1:-1]
        yield '"'
    elif isinstance(value, dict):
        yield "{"
        for n, (key, item) in enumerate(value.items()):
            yield (", " if n else "") + _dumps(key) + ": "
            yield from _encode(item)
        yield "}"
    elif isinstance(value, list):
        yield "["
        for n, item in enumerate(value):
            if n:
                yield ", "
            yield from _encode(item)
        yield "]"
    else:
        yield _dumps(value)
