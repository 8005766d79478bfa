"""Id jumps: a pasted id is looked up in the ledger by its indexed columns (no search index
needed), so it works for rows the index has not reached yet."""

from dataclasses import dataclass
from urllib.parse import quote

from django.urls import NoReverseMatch, reverse

from ledgerfacts.ids import looks_like_id
from ledgerweb import sqlite

PER_KIND = 20


@dataclass
class Jump:
    kind: str  # what the id names
    item_id: str
    url: str | None  # None: the row is there but its page cannot be reached (dangling session)
    detail: str = ""
    named: object = None  # the value that matched: the text as given, or in another case


def turn_url(session_id, turn_id, anchor: str = "") -> str | None:
    if session_id in (None, "") or turn_id in (None, ""):
        return None
    try:
        url = reverse("sessions:turn", args=[str(session_id), str(turn_id)])
    except NoReverseMatch:
        return None
    return url + (f"#{quote(anchor, safe='')}" if anchor else "")


def page_url(name: str, *args) -> str | None:
    try:
        return reverse(name, args=[str(a) for a in args])
    except NoReverseMatch:
        return None


def find(text: str) -> list[Jump]:
    """Every ledger row this text is the id (or event id, or routing key) of; when none, those it
    names in capitals or in small letters (a ULID reads the same in any case, and a pasted id
    is often retyped). One lookup by index per kind, the three spellings at once."""
    if not looks_like_id(text):
        return []
    jumps = _rows_named(list(dict.fromkeys((text, text.upper(), text.lower()))))
    exact = [jump for jump in jumps if jump.named == text]
    return exact or jumps


def _rows_named(names: list[str]) -> list[Jump]:
    jumps = []
    tables = sqlite.table_names()
    among = f"({', '.join(['%s'] * len(names))})"
    if "sessions" in tables:
        for (sid,) in sqlite.rows(f"SELECT id FROM sessions WHERE id IN {among}", names):
            jumps.append(Jump("session", sid, page_url("sessions:detail", sid), named=sid))
        for sid, label, key in sqlite.rows(
            f"SELECT id, label, routing_key FROM sessions WHERE routing_key IN {among} LIMIT %s",
            [*names, PER_KIND],
        ):
            url = page_url("sessions:detail", sid)
            jumps.append(Jump("routing key", sid, url, label or "", named=key))
    if "turns" in tables:
        for tid, sid in sqlite.rows(f"SELECT id, session_id FROM turns WHERE id IN {among}", names):
            jumps.append(Jump("turn", tid, turn_url(sid, tid), named=tid))
    if "messages" in tables:
        for mid, tid, sid in sqlite.rows(
            "SELECT m.id, m.turn_id, t.session_id FROM messages m "
            f"LEFT JOIN turns t ON t.id = m.turn_id WHERE m.id IN {among}",
            names,
        ):
            jumps.append(Jump("message", mid, turn_url(sid, tid, f"message-{mid}"), named=mid))
    if "tool_calls" in tables:
        for cid, tid, sid, name in sqlite.rows(
            "SELECT c.id, c.turn_id, t.session_id, c.tool_name FROM tool_calls c "
            f"LEFT JOIN turns t ON t.id = c.turn_id WHERE c.id IN {among}",
            names,
        ):
            url = turn_url(sid, tid, f"call-{cid}")
            jumps.append(Jump("tool call", cid, url, str(name), named=cid))
    if {"tool_call_source_ids", "tool_calls", "turns"} <= tables:
        # A transcript's own id for a call where the ledger's is another (a Codex call_id,
        # ledgerweb/sql/tool_call_source_ids.sql): unique only within its transcript, so it may
        # name calls of several sessions; each is listed with its session.
        for cid, tid, sid, name, source in sqlite.rows(
            "SELECT c.id, c.turn_id, t.session_id, c.tool_name, s.source_id"
            " FROM tool_call_source_ids s JOIN tool_calls c ON c.id = s.tool_call_id"
            f" LEFT JOIN turns t ON t.id = c.turn_id WHERE s.source_id IN {among}"
            " ORDER BY c.started_at DESC, c.id DESC LIMIT %s",
            [*names, PER_KIND],
        ):
            url = turn_url(sid, tid, f"call-{cid}")
            detail = f"{name} · in session {sid}" if sid not in (None, "") else str(name)
            jumps.append(Jump("tool call", cid, url, detail, named=source))
    if "nexus_requests" in tables:
        for (rid,) in sqlite.rows(f"SELECT id FROM nexus_requests WHERE id IN {among}", names):
            jumps.append(Jump("request", rid, page_url("pipeline:request", rid), named=rid))
        for rid, status, event in sqlite.rows(
            f"SELECT id, status, event_id FROM nexus_requests WHERE event_id IN {among} "
            "ORDER BY started_at DESC LIMIT %s",
            [*names, PER_KIND],
        ):
            url = page_url("pipeline:request", rid)
            jumps.append(Jump("event id", rid, url, str(status), named=event))
    return jumps


def one_place(jumps: list[Jump]) -> str | None:
    """The one page an id leads to, if it leads to one: a single row, or rows shown on the same
    page, such as an imported turn and its prompt's message, named alike (then the most precise
    place: the turn at that message)."""
    urls = {jump.url for jump in jumps if jump.url}
    pages = {url.partition("#")[0] for url in urls}
    if len(pages) != 1:
        return None
    (page,) = pages
    anchored = urls - {page}
    return anchored.pop() if len(anchored) == 1 else page if not anchored else None


def failure_turn_ids(session_id: str, limit: int) -> list[tuple[str, str]]:
    """A session's failures, oldest first: (turn id, "turn") for a failed turn, (turn id, "tool
    call") for a turn that did not fail but has a failed tool call."""
    found = sqlite.rows(
        "SELECT id, started_at, 'turn' FROM turns WHERE session_id = %s AND status = 'failed' "
        "UNION SELECT t.id, t.started_at, 'tool call' FROM turns t "
        "JOIN tool_calls c ON c.turn_id = t.id WHERE t.session_id = %s AND c.status = 'failed' "
        "AND COALESCE(t.status, '') <> 'failed' ORDER BY 2, 1 LIMIT %s",
        [session_id, session_id, limit],
    )
    return [(str(row[0]), row[2]) for row in found]
