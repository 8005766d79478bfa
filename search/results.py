"""A page of search results: hits from the index, their rows' current status, time and text read
back from the ledger, grouped by session."""

import re
from dataclasses import dataclass, field

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from ledgerweb import sqlite
from search import engine, indexer
from search.ids import page_url, turn_url
from search.query import WORD, Query

PAGE_SIZE = 50
SNIPPET_BEFORE = 80
SNIPPET_AFTER = 200

# Current time and status of each kind of row, by id, and its turn's status when that is
# another (a tool call's): (id, time, status, turn status).
LIVE = {
    "message": "SELECT m.id, m.created_at, t.status, NULL FROM messages m "
    "LEFT JOIN turns t ON t.id = m.turn_id WHERE m.id IN ({ids})",
    "tool_call": "SELECT c.id, c.started_at, c.status, t.status FROM tool_calls c "
    "LEFT JOIN turns t ON t.id = c.turn_id WHERE c.id IN ({ids})",
    "request": "SELECT id, started_at, status, NULL FROM nexus_requests WHERE id IN ({ids})",
    "session": "SELECT id, updated_at, status, NULL FROM sessions WHERE id IN ({ids})",
    "compaction": "SELECT k.turn_id, k.created_at, t.status, NULL FROM compactions k "
    "LEFT JOIN turns t ON t.id = k.turn_id WHERE k.turn_id IN ({ids})",
}
KIND_NAMES = {
    "message": "message",
    "tool_call": "tool call",
    "request": "request",
    "session": "session label",
    "compaction": "compaction summary",
}


@dataclass
class Hit:
    id: int  # the index's id: the cursor of the next page
    kind: str
    item_id: str
    fields: list[str]
    session_id: str | None
    turn_id: str | None
    status: str | None
    at: object
    snippet: SafeString
    url: str | None
    turn_status: str | None = None  # a tool call's turn's

    @property
    def kind_name(self) -> str:
        return KIND_NAMES.get(self.kind, self.kind)


@dataclass
class Group:
    session_id: str | None
    label: str | None = None
    persona: str | None = None
    url: str | None = None
    hits: list[Hit] = field(default_factory=list)


@dataclass
class Page:
    groups: list[Group]
    hits: int  # on this page
    next_cursor: int | None
    gone: int  # hits whose ledger rows are no longer there


def run(query: Query, filters: engine.Filters, before: int | None) -> Page:
    rows = engine.search(query.match, filters, before, PAGE_SIZE)
    next_cursor = rows[-1][0] if len(rows) == PAGE_SIZE else None
    live = _live_rows(rows)
    texts = _texts(rows)
    hits: dict[tuple, Hit] = {}
    gone = 0
    for hit_id, kind, item_id, field_name, chunk, session_id, turn_id, _ in rows:
        known = hits.get((kind, item_id))
        if known:  # another field or chunk of the same row: one hit, several fields
            if field_name not in known.fields:
                known.fields.append(field_name)
            continue
        row = live.get((kind, item_id))
        text = texts.get((kind, field_name, chunk), {}).get(item_id)
        if row is None or text is None:
            gone += 1
            continue
        hits[(kind, item_id)] = Hit(
            hit_id,
            kind,
            item_id,
            [field_name],
            session_id,
            turn_id,
            row[2],
            row[1],
            snippet(text, query),
            _hit_url(kind, item_id, session_id, turn_id),
            row[3],
        )
    return Page(_grouped(list(hits.values())), len(hits), next_cursor, gone)


def _texts(rows) -> dict[tuple, dict[str, str]]:
    """The text of each hit's piece, read back from the ledger: one query per kind, field and
    offset (a page's hits are mostly the first piece of a few fields)."""
    wanted: dict[tuple, set[str]] = {}
    for _, kind, item_id, field_name, chunk, *_ in rows:
        wanted.setdefault((kind, field_name, chunk), set()).add(item_id)
    tables = sqlite.table_names()
    return {
        key: indexer.read_chunks(*key, sorted(ids))
        for key, ids in wanted.items()
        if indexer.BY_KIND[key[0]].table in tables
    }


def _live_rows(rows) -> dict[tuple, tuple]:
    by_kind: dict[str, set[str]] = {}
    for _, kind, item_id, *_ in rows:
        by_kind.setdefault(kind, set()).add(item_id)
    tables = sqlite.table_names()
    live = {}
    for kind, ids in by_kind.items():
        if indexer.BY_KIND[kind].table not in tables:
            continue
        marks = ", ".join(["%s"] * len(ids))
        for row in sqlite.rows(LIVE[kind].format(ids=marks), list(ids)):
            live[(kind, str(row[0]))] = row
    return live


def _hit_url(kind, item_id, session_id, turn_id) -> str | None:
    if kind == "request":
        return page_url("pipeline:request", item_id)
    if kind == "session":
        return page_url("sessions:detail", item_id)
    anchor = {"message": f"message-{item_id}", "tool_call": f"call-{item_id}"}.get(kind, "")
    return turn_url(session_id, turn_id, anchor)


def _grouped(hits: list[Hit]) -> list[Group]:
    """Hits by session, sessions in the order of their newest hit (hits come newest first)."""
    groups: dict[str | None, Group] = {}
    for hit in hits:
        groups.setdefault(hit.session_id, Group(hit.session_id)).hits.append(hit)
    ids = [sid for sid in groups if sid is not None]
    if ids:
        marks = ", ".join(["%s"] * len(ids))
        for sid, label, persona in sqlite.rows(
            f"SELECT id, label, persona FROM sessions WHERE id IN ({marks})", ids
        ):
            group = groups.get(sid)
            if group:
                group.label, group.persona = label, persona
                group.url = page_url("sessions:detail", sid)
    return list(groups.values())


def snippet(text: str, query: Query) -> SafeString:
    """A window of the text around its first marked word, escaped, with the query's words in
    <mark> (the only markup that is ours)."""
    words = list(WORD.finditer(text))
    first = next((w for w in words if query.marks(w.group())), None)
    start = 0 if first is None else max(0, first.start() - SNIPPET_BEFORE)
    end = (first.end() if first else 0) + SNIPPET_AFTER
    window = text[start:end]
    parts, done = [], 0
    for word in WORD.finditer(window):
        if query.marks(word.group()):
            parts.append(escape(window[done : word.start()]))
            parts.append(f"<mark>{escape(word.group())}</mark>")
            done = word.end()
    parts.append(escape(window[done:]))
    body = re.sub(r"\s+", " ", "".join(parts)).strip()
    return mark_safe(("… " if start else "") + body + (" …" if end < len(text) else ""))
