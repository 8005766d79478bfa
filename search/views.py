"""/search/: jump to a pasted id, or search the ledger's text (see docs/decisions.md, "Search")."""

import logging
from dataclasses import dataclass, field

from django.db import OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET
from django_htmx.http import HttpResponseClientRedirect

from annotations import store
from annotations.store import MarkFilter
from ledgerfacts.timestamps import now_ms
from ledgerweb.http import respond
from ledgerweb.params import WINDOWS, Invalid, moment_ms, read, sqlite_number
from ledgerweb.sqlite import LedgerQueryTimeout
from search import engine, ids, indexer, json_twins, marks, notes, results
from search.models import IndexState
from search.query import QueryError, parse

logger = logging.getLogger(__name__)

# What the kind filter offers, and the index's kinds behind each choice.
KINDS = {
    "messages": ["message", "compaction", "session"],
    "tools": ["tool_call"],
    "requests": ["request"],
}
KIND_LABELS = {
    "messages": "messages",
    "tools": "tool calls",
    "requests": "requests",
    "notes": "people's notes",
}
# Notes are people's annotations, searched beside the index (search/notes.py).
NOTES = "notes"
THUMBS = {"up": 1, "down": -1}
# The query parameters the form keeps as text.
TEXT_FIELDS = (
    "q", "kind", "persona", "channel", "status", "window", "since", "until", "session", "label",
    "thumb",
)  # fmt: skip
# The ledger's tables as the index status names them.
BACKLOG_NAMES = {
    "messages": "messages",
    "tool_calls": "tool calls",
    "nexus_requests": "requests",
    "sessions": "sessions",
    "compactions": "compaction summaries",
}
# How long a search page may spend bringing the index up to date before it searches, and how
# much text it may read for that (the background process does the rest: search/apps.py).
INDEX_BUDGET_S = 0.3
INDEX_BUDGET_BYTES = 2_000_000


@dataclass
class SearchForm:
    """The query string, checked: each bad value is an inline message and is left out."""

    q: str = ""
    kind: str = ""
    persona: str = ""
    channel: str = ""
    status: str = ""
    window: str = ""
    since: str = ""
    until: str = ""
    session: str = ""  # only this session's turns (the session page's find box without JS)
    label: str = ""  # only turns (and sessions) labelled so
    thumb: str = ""  # only turns (and sessions) given a 👍 (up) or a 👎 (down)
    before: int | None = None
    count: int | None = None  # the first page's count, carried by its next links
    errors: dict[str, str] = field(default_factory=dict)
    filters: engine.Filters = field(default_factory=lambda: engine.Filters([]))

    @classmethod
    def from_query(cls, params) -> "SearchForm":
        form = cls(**{name: params.get(name, "").strip() for name in TEXT_FIELDS})
        # label:… thumb:… in the words (the session's find box without JavaScript): filters.
        form.q, named = marks.split_marks(form.q)
        if named is not None:
            form.label = form.label or named.label
            form.thumb = form.thumb or {1: "up", -1: "down"}.get(named.thumb, "")
        form.filters = engine.Filters(
            KINDS.get(form.kind, []),
            form.persona,
            form.channel,
            form.status,
            session_id=form.session,
        )
        if form.kind and form.kind not in KINDS and form.kind != NOTES:
            form.errors["kind"] = (
                f"Unknown kind “{form.kind}”: choose messages, tools, requests or notes."
            )
        if form.thumb and form.thumb not in THUMBS:
            form.errors["thumb"] = f"thumb={form.thumb[:20]!r}: choose up (👍) or down (👎)."
            form.thumb = ""
        if form.mark:
            form.filters.marked = store.scope(form.mark)
        if form.window:
            if form.window in WINDOWS:
                form.filters.since_ms = now_ms() - WINDOWS[form.window]
            else:
                choices = ", ".join(WINDOWS)
                form.errors["window"] = f"Unknown time window “{form.window}”: use {choices}."
        for name in ("since", "until"):  # read as every page reads a time (ledgerweb.params)
            moment = read(params, name, moment_ms, form.errors)
            if moment is not None:
                setattr(form.filters, f"{name}_ms", moment)
        form.before = read(params, "before", _page_link, form.errors, "showing the first page")
        form.count = read(params, "count", _page_link, form.errors, "counting again")
        return form

    def as_query(self) -> dict[str, str]:
        return {name: getattr(self, name) for name in TEXT_FIELDS if getattr(self, name)}

    @property
    def mark(self) -> MarkFilter:
        return MarkFilter(label=self.label, thumb=THUMBS.get(self.thumb))


def _page_link(raw: str) -> int:
    """?before=: where the previous page ended, an index position our own links write."""
    try:
        value = sqlite_number(raw)
    except Invalid:
        value = None
    if not isinstance(value, int) or value < 0:
        raise Invalid("this page link is damaged")
    return value


@require_GET
def search(request: HttpRequest) -> HttpResponse:
    form = SearchForm.from_query(request.GET)
    jumps = ids.find(form.q) if form.q else []
    # A page (not the twin) with one place to go goes there: nothing is searched.
    only_jump = ids.one_place(jumps) if form.before is None else None
    ctx = {
        "form": form,
        "jumps": jumps,
        "kinds": KIND_LABELS,
        "windows": WINDOWS,
        "labels": store.labels_in_use(),
    }
    return respond(
        request,
        page=lambda: _jump(request, only_jump) if only_jump else _results_page(request, ctx),
        twin=lambda: json_twins.search(_searched(ctx)),
    )


def _searched(ctx: dict) -> dict:
    """The page's context with the index brought on a little, and the results when asked."""
    form = ctx["form"]
    if not form.q and form.mark:  # only label:… or thumb:…: the turns so marked
        return ctx | {"caught_up_at": None, "backlog": {}, "marked": _marked(form)}
    if form.kind == NOTES:  # people's notes only: the ledger's index is not asked
        return ctx | {"caught_up_at": None, "backlog": {}} | _notes(form)
    ctx = ctx | _index_status()
    if form.q and not ctx.get("unindexable"):
        ctx |= _results(form)
        if not form.kind and form.before is None:  # notes on the first page of everything
            ctx |= _notes(form)
    return ctx


# Turns listed for a query of marks alone (label:… thumb:…), newest annotation first.
MARKED_SHOWN = 200


def _marked(form: SearchForm) -> dict:
    found = store.turn_ids(form.mark, session_id=form.session or None, cap=MARKED_SHOWN)
    return {
        "turns": [
            {"session_id": s, "turn_id": t, "url": ids.turn_url(s, t, "turn-annotations")}
            for s, t in found.ids
        ],
        "more": found.capped,
        "describe": form.mark.describe(),
    }


def _notes(form: SearchForm) -> dict:
    """People's notes matching the query (search/notes.py), within the annotation filters and
    the session asked for."""
    if not form.q:
        return {}
    try:
        query = parse(form.q)
    except QueryError as error:
        return {"query_error": str(error)}
    return {"notes": notes.search_notes(query, form.mark if form.mark else None, form.session)}


def _jump(request: HttpRequest, url: str) -> HttpResponse:
    return HttpResponseClientRedirect(url) if request.htmx else redirect(url)


def _results_page(request: HttpRequest, ctx: dict) -> HttpResponse:
    template = "search/results.html"
    if request.htmx and request.GET.get("before"):
        template += "#more"
    elif request.htmx:
        template += "#results"
    return render(request, template, _searched(ctx))


def _index_status() -> dict:
    """Bring the index a little further, and say how far it reaches."""
    pending, caught_up_at = 0, None
    try:
        progress = indexer.step(INDEX_BUDGET_S, budget_bytes=INDEX_BUDGET_BYTES)
        backlog, pending = progress.backlog or {}, progress.pending
        caught_up_at = progress.caught_up_at
    except indexer.RowidsMissing as error:  # nothing to search until an administrator acts
        return {"unindexable": error, "caught_up_at": None, "backlog": {}}
    except (LedgerQueryTimeout, OperationalError) as error:
        # Another worker holds the index for longer than the lock timeout, or a ledger query
        # ran out of time: search what is indexed; the next page goes on.
        logger.warning("search index step skipped: %s", error)
        backlog = {}
        state = IndexState.objects.first()
        caught_up_at = state.caught_up_at if state else None
    return {
        "caught_up_at": caught_up_at,
        "backlog": {BACKLOG_NAMES[table]: n for table, n in backlog.items() if n},
        "backlog_cap": indexer.COUNT_CAP,
        "pending_values": pending,
    }


def _results(form: SearchForm) -> dict:
    try:
        query = parse(form.q)
    except QueryError as error:
        return {"query_error": str(error)}
    try:
        page = results.run(query, form.filters, form.before)
        if form.mark:
            # Annotations live in another database than the index: the walk keeps the
            # annotated rows as it meets them, and nothing counts them ahead.
            return {"page": page, "uncounted": True}
        total = form.count if form.before is not None else None
        upper = query.needs_check
        if total is None:  # the first page counts; its next links carry the count on
            total, upper = results.count(query, form.filters, indexer.COUNT_CAP)
    except engine.QueryNotUnderstood:
        return {"query_error": "The search engine could not read that query; try fewer symbols."}
    except (engine.QueryTooSlow, LedgerQueryTimeout):
        return {"query_error": "That search took too long: add a word or a filter to narrow it."}
    cap = indexer.COUNT_CAP
    if form.before is None and not page.hits and page.next_cursor is None:
        total = 0  # every row with the phrase's words was checked: none holds the phrase
    return {
        "page": page,
        "total": min(total, cap),
        "total_capped": total > cap,
        "count_carried": min(total, cap + 1),
        # The index counts rows with all of a phrase's words: at most that many match (and rows
        # over 64 KB past the count's cap are counted undecided).
        "total_at_most": upper and total > 0,
    }


# Turns a session's find box marks at most: more is not a walk anyone takes key by key.
FIND_LIMIT = 1000


@require_GET
def find_in_session(request: HttpRequest, session_id: str) -> JsonResponse:
    """For the session page's find box: the turns of this session that match `q` (oldest
    first), and with ?failures=1 its failures (failed turns, turns with a failed tool call)."""
    q, mark = marks.split_marks(request.GET.get("q", "").strip())
    answer = {"turn_ids": [], "error": None, "failures": [], "failure_kinds": []}
    if mark is not None:  # label:… thumb:… (search/marks.py), with words: both must hold
        marked = marks.marked_turn_ids(mark, session_id, FIND_LIMIT)
        if not q:
            answer["turn_ids"] = marked
            return JsonResponse(answer)
    if request.GET.get("failures") == "1":
        # What each failure is, so the walk can say what it counts beside the page's "N failed
        # turns" (a turn that completed with a failed tool call is a failure it walks too).
        failures = ids.failure_turn_ids(session_id, FIND_LIMIT)
        answer["failures"] = [turn_id for turn_id, _ in failures]
        answer["failure_kinds"] = [kind for _, kind in failures]
    if q and (unindexable := _index_status().get("unindexable")):
        answer["error"] = str(unindexable)
    elif q:
        try:
            query = parse(q)
            answer["turn_ids"] = results.turn_ids(
                query, engine.Filters([], session_id=session_id), FIND_LIMIT
            )
            if mark is not None:
                keep = set(marked)
                answer["turn_ids"] = [t for t in answer["turn_ids"] if t in keep]
        except QueryError as error:
            answer["error"] = str(error)
        except (engine.QueryNotUnderstood, engine.QueryTooSlow, LedgerQueryTimeout):
            answer["error"] = "That search could not be run here: try fewer words or symbols."
    return JsonResponse(answer)
