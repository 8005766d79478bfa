"""Bookmarks on turns (issue 28): a person marks a turn with a short note, kept in ledgerweb's
own database (annotations.Annotation, never the ledger); the tree shows them (a star on the row,
a column of the map, a list in the tree card), and /bookmarks/ lists one's bookmarks across
sessions. Every role may bookmark: it changes nothing in the ledger."""

from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_POST

from annotations import store
from annotations.models import Annotation
from ledgerweb import sqlite
from ledgerweb.http import respond
from sessions.detail import TURN_COLUMNS, TurnInfo, add_aggregates
from sessions.membership import turn_in_session
from sessions.models import Session
from sessions.views import tree_partial

NOTE_CHARS = 200  # Annotation.bookmark_note's length
LIST_LIMIT = 500  # bookmarks on one page of the list (newest first)


def _session_and_turn(session_id: str, turn_id: str) -> Session:
    session = Session.objects.filter(id=session_id).first()
    if session is None or not turn_in_session(session.id, session.current_turn_id, turn_id):
        raise Http404(f"No turn {turn_id!r} in session {session_id!r}")
    return session


def _back(request: HttpRequest, session: Session, turn_id: str) -> str:
    """Where the form came from (a page of this site), else the turn's page."""
    back = request.POST.get("next", "")
    if back.startswith("/") and url_has_allowed_host_and_scheme(
        back, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return back
    return reverse("sessions:turn", args=[session.id, turn_id])


@require_POST
def bookmark(request: HttpRequest, session_id: str, turn_id: str) -> HttpResponse:
    """Bookmark a turn (with a note) or remove the bookmark (`remove`). From the tree with htmx:
    the tree again, showing it; otherwise back to the page the form was on."""
    session = _session_and_turn(session_id, turn_id)
    note = " ".join(request.POST.get("note", "").split())[:NOTE_CHARS]
    store.set_bookmark(request.user, session.id, turn_id, "remove" not in request.POST, note)
    back = _back(request, session, turn_id)
    if request.htmx and request.htmx.target == "tree":
        # The tree again, as the address the form was on shows it (hoisted, unfolded…).
        request.GET = QueryDict(back.partition("?")[2])
        return tree_partial(request, session, turn_id, here=back)
    return redirect(back)


@require_GET
def bookmark_list(request: HttpRequest) -> HttpResponse:
    """This person's bookmarks across sessions, newest first, with each turn's prompt."""
    marks = list(store.bookmarks(user=request.user).exclude(turn_id="")[: LIST_LIMIT + 1])
    more = len(marks) > LIST_LIMIT
    marks = marks[:LIST_LIMIT]
    turns = _turns({m.turn_id for m in marks})
    sessions = {s.id: s for s in Session.objects.filter(id__in={m.session_id for m in marks})}
    entries = [_entry(m, sessions.get(m.session_id), turns.get(m.turn_id)) for m in marks]
    return respond(
        request,
        page=lambda: render(request, "sessions/bookmarks.html", {"entries": entries, "more": more}),
        twin=lambda: {
            "bookmarks": [_twin(e) for e in entries],
            "more": more,
            "limit": LIST_LIMIT,
        },
    )


def _turns(turn_ids: set[str]) -> dict[str, TurnInfo]:
    """The bookmarked turns with their prompts: a fixed number of queries for any number."""
    if not turn_ids:
        return {}
    ids_sql, ids = sqlite.in_list(turn_ids)
    rows = sqlite.rows(f"SELECT {TURN_COLUMNS} FROM turns WHERE id IN {ids_sql}", ids)
    turns = {row[0]: TurnInfo(*row) for row in rows}
    add_aggregates(turns)
    return turns


def _entry(mark: Annotation, session: Session | None, turn: TurnInfo | None) -> dict:
    return {"mark": mark, "session": session, "turn": turn}


def _twin(entry: dict) -> dict:
    mark, session, turn = entry["mark"], entry["session"], entry["turn"]
    return {
        "session_id": mark.session_id,
        "turn_id": mark.turn_id,
        "note": mark.bookmark_note,
        "created_at": mark.created_at,
        "updated_at": mark.updated_at,
        "session_label": session.label if session else None,
        "prompt": turn.preview if turn else None,
        "in_ledger": turn is not None,
    }
