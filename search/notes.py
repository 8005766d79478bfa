"""People's notes (annotations, kept in ledgerweb's database) found by the same query as the
ledger's text, searched apart from the index and shown beside its results.

Why apart (docs/decisions.md, "Notes are searched beside the index"): the index is tied to one
ledger and follows it by rowids and high-water marks; notes are edited and removed, and live in
another database. They are few next to messages (10,000 on a big ledger against millions of
rows), so each search reads the newest notes and checks each with the query's own rule
(search/words.py folding, phrases, -words): exact, and bounded by SCAN_CAP notes per search."""

from dataclasses import dataclass

from django.utils.safestring import SafeString

from annotations import store
from annotations.store import MarkFilter
from search.ids import page_url, turn_url
from search.query import Query
from search.results import snippet

SCAN_CAP = 5_000  # notes read per search, newest first
SHOWN = 20  # notes listed


@dataclass
class NoteHit:
    user: str
    session_id: str
    turn_id: str
    updated_at: int
    snippet: SafeString
    url: str | None


@dataclass
class NoteResults:
    hits: list[NoteHit]
    more: bool  # more notes match than are listed
    scanned: int
    scan_capped: bool  # older notes were not searched


def search_notes(query: Query, mark: MarkFilter | None = None, session_id: str = "") -> NoteResults:
    hits: list[NoteHit] = []
    scanned, more = 0, False
    for annotation in store.with_notes(mark, session_id).iterator(chunk_size=500):
        if scanned >= SCAN_CAP:
            return NoteResults(hits, more, scanned, True)
        scanned += 1
        if not query.finds([annotation.note]):
            continue
        if len(hits) >= SHOWN:
            more = True
            break
        hits.append(
            NoteHit(
                annotation.user.get_username(),
                annotation.session_id,
                annotation.turn_id,
                annotation.updated_at,
                snippet(annotation.note, query),
                _url(annotation.session_id, annotation.turn_id),
            )
        )
    return NoteResults(hits, more, scanned, False)


def _url(session_id: str, turn_id: str) -> str | None:
    if turn_id:
        return turn_url(session_id, turn_id, "turn-annotations")
    url = page_url("sessions:detail", session_id)
    return f"{url}#session-annotations" if url else None
