import logging
from dataclasses import replace
from urllib.parse import urlencode

from django.contrib import messages as flash
from django.db import DatabaseError
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET, require_POST

from annotations import display as annotation_display
from annotations import store as annotation_store
from ledgerweb import downloads, long_values, sqlite
from ledgerweb.html_parts import IdUrls, css_name
from ledgerweb.http import respond, wants_json
from ledgerweb.params import answers_bad_parameters, choice, cursor, exact, linked, strict
from ledgerweb.roles import RoleRequired
from ledgerweb.text import show_json
from sessions import compare as comparing
from sessions import export as exporting
from sessions import forking, json_twins, preferring
from sessions.branch_point import as_json as branch_point_json
from sessions.branch_point import branch_point
from sessions.detail import FAILED, SessionTree, TurnInfo, load_tree, turn_info
from sessions.failed_turns import failed_walk, first_failed_turn_id
from sessions.kinds import FORK, KINDS
from sessions.listing import SessionFilters, filter_choices, session_page, status_choices
from sessions.map_html import map_svg
from sessions.membership import turn_in_session
from sessions.models import Session
from sessions.page import (
    LayoutPlaces,
    TreeView,
    branch_label,
    hoisted,
    tree_page,
    whole_tree_shape,
)
from sessions.rows_html import list_rows_html, timeline_parts, tree_rows_html
from sessions.thread import load_thread
from sessions.tree_map import KINDS as MAP_KINDS
from sessions.tree_map import tree_map
from sessions.turn_detail import (
    add_payloads,
    load_payload,
    load_tool_call,
    load_turn_detail,
    payload_pieces,
)

logger = logging.getLogger(__name__)

# The thread page shows this many turns, by default the ones nearest the fork point; the others
# are counted and come in earlier pages (a 20,000-turn page was 12 MB of HTML and ten seconds).
THREAD_PAGE_TURNS = 200


def _get_session(session_id: str) -> Session:
    session = Session.objects.filter(id=session_id).first()
    if session is None:
        raise Http404(f"No session {session_id!r} in this ledger")
    return session


def _get_session_and_turn(session_id: str, turn_id: str) -> Session:
    """The session of a turn URL, once the turn is known to be in its tree (see membership):
    /sessions/A/turns/<a turn of B>/ would otherwise show, export or fork B's thread as A's."""
    session = _get_session(session_id)
    if not turn_in_session(session.id, session.current_turn_id, turn_id):
        raise Http404(f"No turn {turn_id!r} in session {session_id!r}")
    return session


@require_GET
@answers_bad_parameters
def session_list(request: HttpRequest) -> HttpResponse:
    filters = SessionFilters.from_query(request.GET)
    # Page links are written by the list itself: a broken one has no sensible page (400).
    filters.after = strict(request.GET, "after", cursor)
    page = session_page(filters)
    return respond(
        request,
        page=lambda: _session_list_page(request, filters, page),
        twin=lambda: json_twins.session_list(filters, page),
    )


def _session_list_page(request: HttpRequest, filters: SessionFilters, page) -> HttpResponse:
    # Each row's marks, their label links keeping the list's other filters (a new label starts
    # from the first page).
    query = request.GET.copy()
    query.pop("after", None)

    def label_url(name: str) -> str:
        query["label"] = long_values.for_link(name)
        return "?" + query.urlencode()

    for row in page.rows:
        row.marks_html = annotation_display.summary_html(row.marks, label_url)
    personas, channels = filter_choices()
    ctx = {
        "filters": filters,
        "page": page,
        "rows_html": list_rows_html(page.rows),
        "personas": personas,
        "channels": channels,
        "statuses": status_choices(filters.status),
        "kinds": KINDS,
        "labels": _label_choices(filters.label),
    }
    template = "sessions/list.html"
    if request.htmx and request.GET.get("after"):
        template += "#rows"  # "load more" appends rows
    elif request.htmx:
        template += "#results"
    return render(request, template, ctx)


def _label_list_url(name: str) -> str:
    """The session list of a label's sessions."""
    return reverse("sessions:list") + "?" + urlencode({"label": long_values.for_link(name)})


def _label_choices(selected: str) -> list[str]:
    """The labels in use, and the one asked for even when no annotation holds it any more."""
    labels = annotation_store.labels_in_use()
    return labels if not selected or selected in labels else [selected, *labels]


# At most this many branches collapsed in one address (each is a parameter of it).
MAX_COLLAPSED = 100


def tree_view(request: HttpRequest) -> TreeView:
    """How the address asks the tree to be shown: ?unfold=all, ?hoist=<turn>, ?collapse=<turn>…"""
    unfold = strict(request.GET, "unfold", choice("all")) == "all"
    hoist = linked(request.GET.get("hoist")) or None
    collapsed = [linked(v) for v in request.GET.getlist("collapse")[:MAX_COLLAPSED]]
    return TreeView(unfold, hoist, frozenset(c for c in collapsed if c))


def _session_context(request: HttpRequest, session: Session, selected_id: str | None) -> dict:
    session_tree = load_tree(session)
    view = tree_view(request)
    # Hoisted, the tree card shows a subtree laid out alone; the header stays the session's.
    shown_tree = hoisted(session_tree, view.hoist)
    hoist_error = ""
    if view.hoist and shown_tree is session_tree:
        hoist_error = f"There is no turn {view.hoist!r} in this tree: showing the whole tree."
        view = replace(view, hoist=None)
    selected_id = selected_id or session.current_turn_id
    if selected_id not in shown_tree.layout.by_id:
        selected_id = shown_tree.layout.rows[0].node.id if shown_tree.layout.rows else None
    first_line, page_error = _positive_number(request.GET, "from")
    at = linked(request.GET.get("at"))
    page = tree_page(shown_tree, selected_id, view, first_line, at)
    bookmarks = annotation_store.bookmarked_turns(request.user, session.id)
    on_page = [item.turn.id for item in page.items if item.turn is not None]
    visited = annotation_store.visited_turns(request.user, session.id, on_page)
    annotated = annotation_store.by_turn(on_page)  # everyone's marks: two grouped queries
    for item in page.items:
        if item.turn is not None:
            mark = bookmarks.get(item.turn.id)
            item.bookmark = mark.bookmark_note if mark is not None else None
            item.visited = item.turn.id in visited
            item.annotated = annotated.get(item.turn.id)
    the_map = tree_map(
        page.map_shape,
        (page.first_line, max(page.first_line, page.last_line)),
        LayoutPlaces(shown_tree.layout.by_id),
        {"bookmark": list(bookmarks)},
    )
    return {
        "session": session,
        "tree": session_tree,
        "shown_tree": shown_tree,
        "view": view,
        "hoist": _hoist_context(session_tree, shown_tree, view),
        "hoist_error": hoist_error,
        "child_links": _child_links(session_tree.related.children, session_tree),
        "tree_page": page,
        "items": page.items,
        "tree_map": the_map,
        "map_html": map_svg(
            the_map, request.GET.dict(), {i.line: i.turn.id for i in page.items if i.turn}
        ),
        "map_legend": _map_legend(the_map),
        "bookmarks": _bookmark_list(session_tree, bookmarks),
        "page_error": page_error,
        "selected_id": selected_id,
        "selected": _selected_actions(shown_tree, selected_id, view, bookmarks),
        "unfold": view.unfold,
        "here": request.get_full_path(),  # where the bookmark form brings the person back
        # Where a fork left its origin: the header links to that turn of the origin.
        "fork_point": session_tree.fork_point,
        # The "N failed turns" pill opens the first of them.
        "first_failed_id": (
            first_failed_turn_id(session.id) if session_tree.totals["failed_turns"] else None
        ),
    }


def _hoist_context(session_tree: SessionTree, shown_tree: SessionTree, view: TreeView):
    """What the hoisted tree's bar says: its root, how many turns, and the ways back up."""
    if not view.hoist:
        return None
    root = session_tree.turns[view.hoist]
    parent = session_tree.layout.by_id.get(root.parent_turn_id) if root.parent_turn_id else None
    return {
        "turn": root,
        "turns": len(shown_tree.turns),
        "up": view.query(hoist=parent.node.id, collapsed=frozenset()) if parent else None,
        "whole": view.query(("at", long_values.for_link(view.hoist)), hoist=None),
    }


def _bookmark_list(session_tree: SessionTree, bookmarks: dict) -> list[dict]:
    """This person's bookmarks in the session, as the tree card lists them."""
    return [
        {"turn_id": turn_id, "note": mark.bookmark_note, "turn": session_tree.turns.get(turn_id)}
        for turn_id, mark in bookmarks.items()
    ]


def _selected_actions(
    shown_tree: SessionTree, selected_id: str | None, view: TreeView, bookmarks: dict
) -> dict | None:
    """The selected turn's actions below the tree (hoist, collapse, bookmark, its answers):
    written for it here, moved to the keyboard's row by tree.js."""
    row = shown_tree.layout.by_id.get(selected_id) if selected_id else None
    if row is None:
        return None
    collapsed = selected_id in view.collapsed
    toggled = view.collapsed - {selected_id} if collapsed else view.collapsed | {selected_id}
    mark = bookmarks.get(selected_id)
    return {
        "turn": row.node.data,
        "hoist": view.query(hoist=selected_id, collapsed=frozenset()),
        "has_children": row.has_children,
        "collapsed": collapsed,
        "collapse": view.query(("at", long_values.for_link(selected_id)), collapsed=toggled),
        "branch_point": len(row.child_ids) > 1,
        "branch_label": branch_label(row, shown_tree.alternatives),
        "bookmarked": mark is not None,
        "note": mark.bookmark_note if mark is not None else "",
    }


MAP_LEGEND = {  # symbol, one, more
    "failed": ("✕", "failed", "failed"),
    "compaction": ("◆", "compaction", "compactions"),
    "fork": ("↱", "fork", "forks"),
    "bookmark": ("★", "bookmark", "bookmarks"),
    "costly": ("$", "costliest", "costliest"),
}


def _map_legend(the_map) -> list[dict]:
    """The map's columns in words: each kind's symbol, name and count."""
    legend = []
    for kind in MAP_KINDS:
        symbol, one, more = MAP_LEGEND[kind]
        count = the_map.counts.get(kind, 0)
        name = one if count == 1 else more
        if kind == "costly" and the_map.shape.costly_by == "tokens":
            name = "most tokens"
        legend.append({"kind": kind, "symbol": symbol, "name": name, "count": count})
    return legend


def _page_url(request: HttpRequest, session: Session, number: int) -> str:
    """The session's JSON twin at another page, every other parameter kept."""
    return _with_page(request, reverse("sessions:detail", args=[session.id]), number)


def _thread_page_url(
    request: HttpRequest, session_id: str, turn_id: str, number: int, drop: str = ""
) -> str:
    url = reverse("sessions:thread", args=[session_id, turn_id])
    return _with_page(request, url, number, drop)


def _with_page(request: HttpRequest, url: str, number: int, drop: str = "") -> str:
    """The absolute URL of `url` at page `number`, the request's other parameters kept."""
    query = request.GET.copy()
    query.pop(drop, None)
    query["page"] = str(number)
    return request.build_absolute_uri(f"{url}?{query.urlencode()}")


def _positive_number(query, name: str) -> tuple[int | None, str]:
    """?<name>=N (a page, a line), and what is wrong with it if it is not a positive whole
    number (the page then shows the selected turn's window)."""
    text = query.get(name)
    if text is None:
        return None, ""
    if text.isascii() and text.isdigit() and 0 < int(text) < 10**9:
        return int(text), ""
    return None, f"{name}={text!r} is not a positive whole number: showing the selected turn."


def _child_links(children: list[Session], session_tree: SessionTree | None = None) -> list[dict]:
    """The session's subagents and forks, ready to draw: a session may spawn hundreds, and a
    {% url %} tag and a filter each made that list cost more than the rest of the header. The
    URLs come from one reverse() for all. With the tree, a fork also links to its fork point."""
    urls = IdUrls("sessions:detail")
    made_at = {}
    if session_tree is not None:
        turn_urls = IdUrls("sessions:turn", session_tree.session.id)
        for turn_id, forks in session_tree.forks_at.items():
            made_at |= {f.id: (turn_id, mark_safe(turn_urls.html(turn_id))) for f in forks}
    return [
        {
            "kind": "Fork" if child.routing_key.startswith(f"{FORK}:") else "Subagent",
            "url": mark_safe(urls.html(child.id)),  # escaped by IdUrls
            "name": str(child),
            "status": child.status,
            "status_class": css_name(str(child.status)),
            "made_at": made_at.get(child.id),  # (turn id, its URL) for a fork
        }
        for child in children
    ]


# Where the template puts the tree's rows: see _render_with_rows.
ROWS_MARKER = "<!-- the tree's rows -->"


def _render_with_rows(request: HttpRequest, template: str, ctx: dict) -> HttpResponse:
    """Render a page that shows the tree, and put its rows in the finished response.

    A big tree's rows are megabytes of HTML, and each level of a template (partial, block, base)
    joins its parts into a new string: through the template, 2 MB of rows cost ~20 ms of copies
    alone. The template gets a marker instead. Every value the page shows above the tree is
    escaped, so nothing there can spell an HTML comment: the first marker is the template's."""
    rows = tree_rows_html(ctx["items"], ctx["session"].id, ctx["view"])
    response = render(request, template, ctx | {"rows_html": mark_safe(ROWS_MARKER)})
    head, tail = response.content.split(ROWS_MARKER.encode(), 1)
    response.content = b"".join((head, rows.encode(response.charset), tail))
    return response


@require_GET
@answers_bad_parameters
def session_detail(request: HttpRequest, session_id: str) -> HttpResponse:
    session = _get_session(session_id)
    return respond(
        request,
        page=lambda: _session_page(request, session),
        twin=lambda: _session_twin(request, session),
    )


def _session_twin(request: HttpRequest, session: Session) -> dict:
    strict(request.GET, "unfold", choice("all"))  # the twin holds every turn, folded or not
    number, _ = _positive_number(request.GET, "page")
    session_tree = load_tree(session)
    marks = annotation_display.as_json(annotation_store.on_target(session.id))
    bookmarks = annotation_store.bookmarked_turns(request.user, session.id)
    return json_twins.session_detail(
        session_tree, number or 1, lambda n: _page_url(request, session, n)
    ) | {
        "map": _whole_map(session_tree, bookmarks).as_json(),
        "annotations": marks,
        "bookmarks": [
            {"turn_id": turn_id, "note": mark.bookmark_note, "updated_at": mark.updated_at,
             "in_tree": turn_id in session_tree.turns}
            for turn_id, mark in bookmarks.items()
        ],
    }  # fmt: skip


def _whole_map(session_tree: SessionTree, bookmarks: dict):
    """The map of every turn, unfolded: the JSON twin's, whose turns are the whole tree's."""
    rows = session_tree.layout.rows
    places = LayoutPlaces(session_tree.layout.by_id)
    shape = whole_tree_shape(session_tree)
    return tree_map(shape, (1, max(1, len(rows))), places, {"bookmark": list(bookmarks)})


def _session_page(request: HttpRequest, session: Session) -> HttpResponse:
    ctx = _session_context(request, session, None)
    jump_to = (linked(request.GET.get("turn", "")) or "").strip()
    if jump_to in ctx["tree"].turns:
        return redirect("sessions:turn", session_id=session.id, turn_id=jump_to)
    if jump_to:
        ctx["jump_error"] = f"There is no turn {jump_to!r} in this session's tree."
    if request.htmx and request.htmx.target == "tree":
        # (Un)folding or another page: the tree alone.
        return _render_with_rows(request, "sessions/detail.html#tree", ctx)
    if ctx["selected_id"]:
        ctx |= _tree_turn_context(session, ctx, ctx["selected_id"])
        ctx |= _panel_html(ctx)
    return _render_with_rows(request, "sessions/detail.html", ctx)


def _turn_context(
    session: Session,
    turn_id: str,
    info: TurnInfo | None,
    forks: list[Session] | None = None,
    tree_turns: dict | None = None,
) -> dict:
    """The panel's data. `forks`: the forks made at this turn, and `tree_turns` the turns of the
    tree, when the page has them already."""
    detail = load_turn_detail(session.id, turn_id, info.started_at if info else None)
    walk = failed_walk(session.id, turn_id) if info and info.status == FAILED else None
    if forks is None:
        forks = forking.forks_made_at(session, turn_id)
    parent = info.parent_turn_id if info else None
    return {
        "turn": info,
        "detail": detail,
        "turn_id": turn_id,
        "failed_walk": walk,
        "forks_here": _child_links(forks),
        # An orphan's parent is named, not linked: its page would be a 404.
        "parent_missing": bool(parent)
        and parent not in (tree_turns or {})
        and not sqlite.rows("SELECT 1 FROM turns WHERE id = %s", [parent]),
    }


def _tree_turn_context(session: Session, ctx: dict, turn_id: str) -> dict:
    """_turn_context for a page that drew the tree: its turn and forks are read already."""
    session_tree = ctx["tree"]
    return _turn_context(
        session,
        turn_id,
        session_tree.turns[turn_id],
        session_tree.forks_at.get(turn_id, []),
        session_tree.turns,
    )


def _panel_html(ctx: dict) -> dict:
    """The turn's messages and tool calls as the HTML panel draws them (its JSON twin does
    without)."""
    parts = timeline_parts(ctx["detail"].timeline, ctx["session"], ctx["turn_id"])
    return {"timeline": parts}


def tree_partial(
    request: HttpRequest, session: Session, selected_id: str, here: str | None = None
) -> HttpResponse:
    """The tree card alone, as the request's address shows it, with this turn selected."""
    ctx = _session_context(request, session, selected_id)
    if here is not None:
        ctx["here"] = here
    return _render_with_rows(request, "sessions/detail.html#tree", ctx)


def _remember_visit(request: HttpRequest, session_id: str, turn_id: str) -> None:
    """Mark the turn visited for this person (the tree dims what they have opened). A write to
    ledgerweb's database that fails (locked for too long) costs the mark, never the page."""
    try:
        annotation_store.mark_visited(request.user, session_id, turn_id)
    except DatabaseError:
        logger.warning("could not mark turn %r visited", turn_id, exc_info=True)


@require_GET
@answers_bad_parameters
def turn_detail(request: HttpRequest, session_id: str, turn_id: str) -> HttpResponse:
    if request.htmx and request.htmx.target == "tree":
        # Another window of the tree, beside this turn's panel.
        ctx = _session_context(request, _get_session_and_turn(session_id, turn_id), turn_id)
        return _render_with_rows(request, "sessions/detail.html#tree", ctx)
    if request.htmx and not request.htmx.history_restore_request:
        # The panel beside the tree: the tree is already on the page.
        session = _get_session_and_turn(session_id, turn_id)
        info = turn_info(turn_id)
        if info is None:
            raise Http404(f"No turn {turn_id!r}")
        ctx = {"session": session} | _turn_context(session, turn_id, info)
        _remember_visit(request, session.id, turn_id)
        return render(request, "sessions/detail.html#panel", ctx | _panel_html(ctx))
    session = _get_session(session_id)
    ctx = _session_context(request, session, turn_id)
    if turn_id not in ctx["tree"].turns:
        raise Http404(f"No turn {turn_id!r} in session {session_id!r}")
    if not wants_json(request):
        _remember_visit(request, session.id, turn_id)
        for item in ctx["items"]:
            if item.turn is not None and item.turn.id == turn_id:
                item.visited = True
    ctx |= _tree_turn_context(session, ctx, turn_id)
    return respond(
        request,
        page=lambda: _render_with_rows(request, "sessions/detail.html", ctx | _panel_html(ctx)),
        twin=lambda: _turn_twin(ctx, turn_id, request),
    )


def _turn_twin(ctx: dict, turn_id: str, request: HttpRequest) -> dict:
    # Scripts get every payload, also those a long list loads only when a call is opened.
    add_payloads([c for c in ctx["detail"].tool_calls if c.parameters is None], turn_id)
    forks = ctx["tree"].forks_at.get(turn_id, [])
    marks = annotation_display.as_json(annotation_store.on_target(ctx["session"].id, turn_id))
    mark = annotation_store.bookmarked_turns(request.user, ctx["session"].id).get(turn_id)
    bookmark = {"note": mark.bookmark_note, "updated_at": mark.updated_at} if mark else None
    return json_twins.turn(ctx["turn"], ctx["detail"], forks) | {
        "annotations": marks,
        "bookmark": bookmark,
    }


@require_GET
def tool_call(request: HttpRequest, session_id: str, turn_id: str, call_id: str) -> HttpResponse:
    """The parameters and result of one tool call, loaded when it is opened in a long list."""
    session = _get_session_and_turn(session_id, turn_id)
    call = load_tool_call(turn_id, call_id)
    if call is None:
        raise Http404(f"No tool call {call_id!r} in turn {turn_id!r}")
    ctx = {"c": call, "session": session, "turn_id": turn_id}
    # Opened in its list, the body alone; followed as a link (a new tab, a shared URL), a page.
    template = _fragment_or_page(request, "sessions/_call_body.html", "sessions/call.html")
    return respond(
        request,
        page=lambda: render(request, template, ctx),
        twin=lambda: {"session_id": session.id, "turn_id": turn_id} | json_twins.tool_call(call),
    )


@require_GET
@answers_bad_parameters
def payload(request: HttpRequest, session_id: str, turn_id: str, kind: str, item_id: str):
    session = _get_session_and_turn(session_id, turn_id)
    whole = load_payload(turn_id, kind, item_id)
    if whole is None:
        raise Http404("No such payload")
    if strict(request.GET, "download", choice("1")):
        return _download(turn_id, kind, item_id)
    ctx = {"kind": kind, "item_id": item_id, "session": session, "turn_id": turn_id}
    ctx["payload"] = whole
    if kind == "message":
        ctx["text"] = whole.text
    else:
        ctx["json"] = show_json(whole.text, total_chars=whole.total_chars, decode_strings=True)
    return render(
        request,
        _fragment_or_page(request, "sessions/payload.html", "sessions/payload_page.html"),
        ctx,
    )


def _download(turn_id: str, kind: str, item_id: str) -> HttpResponse:
    content = payload_pieces(turn_id, kind, item_id)
    return downloads.attachment(content, f"{kind}-{item_id}", is_json=kind != "message")


def _fragment_or_page(request: HttpRequest, fragment: str, page: str) -> str:
    """The part htmx swaps into the turn's panel, or a whole page for a plain GET of its link."""
    return fragment if request.htmx and not request.htmx.history_restore_request else page


@require_GET
@answers_bad_parameters
def thread(request: HttpRequest, session_id: str, turn_id: str) -> HttpResponse:
    session = _get_session_and_turn(session_id, turn_id)
    if strict(request.GET, "all", choice("1", "0")) == "1":
        # The old "whole thread" address: the thread now comes in pages, from the root.
        return redirect(_thread_page_url(request, session.id, turn_id, 1, drop="all"))
    # ?folded=all: every turn a compaction folded away on this page, not only the last 50.
    folded_all = strict(request.GET, "folded", choice("all")) == "all"
    number, page_error = _positive_number(request.GET, "page")
    the_thread = load_thread(turn_id, page_size=THREAD_PAGE_TURNS, page=number)
    if the_thread is None:
        raise Http404(f"No turn {turn_id!r}")
    ctx = {
        "session": session,
        "thread": the_thread,
        "folded_all": folded_all,
        "page_error": page_error,
        "turn_id": turn_id,
    }
    return respond(
        request,
        page=lambda: _thread_page(request, ctx),
        twin=lambda: json_twins.thread(
            the_thread, lambda n: _thread_page_url(request, session.id, turn_id, n)
        ),
    )


def _thread_page(request: HttpRequest, ctx: dict) -> HttpResponse:
    marks = annotation_store.by_turn(s.turn.id for s in ctx["thread"].page_steps)
    ctx |= {
        "marks": {
            turn_id: annotation_display.summary_html(summary, _label_list_url)
            for turn_id, summary in marks.items()
        },
        "resume": ctx["thread"].resume_cost(cached=False),
        "resume_cached": ctx["thread"].resume_cost(cached=True),
        "can_fork": request.user.has_perm("conversations.fork_session"),
    }
    return render(request, "sessions/thread.html", ctx)


@require_POST
def fork(request: HttpRequest, session_id: str, turn_id: str) -> HttpResponse:
    if not request.user.has_perm("conversations.fork_session"):
        raise RoleRequired("operator", "Forking a session")
    origin = _get_session_and_turn(session_id, turn_id)
    label = request.POST.get("label", "").strip()
    if not label:
        flash.error(request, "Give the fork a label so you can find it again.")
        return redirect("sessions:thread", session_id=session_id, turn_id=turn_id)
    the_thread = load_thread(turn_id, page_size=1)
    broken = "; ".join(the_thread.problems) if the_thread else ""
    if broken:
        # The page disables its button here; a form posted anyway (an old tab, a script) too.
        flash.error(
            request,
            f"Turn {turn_id}'s context cannot be rebuilt whole ({broken}): nothing was forked.",
        )
        return redirect("sessions:thread", session_id=session_id, turn_id=turn_id)
    try:
        # The fork's root is its thread's (a session may have several roots: a regenerated
        # first answer), not necessarily the origin's root_turn_id.
        root = the_thread.steps[0].turn.id if the_thread else origin.root_turn_id
        new = forking.fork_session(origin, turn_id, label, root_turn_id=root)
    except forking.ForkError as error:
        flash.error(request, str(error))
        return redirect("sessions:thread", session_id=session_id, turn_id=turn_id)
    flash.success(request, f"Forked “{label}” from turn {turn_id}.")
    return redirect("sessions:detail", session_id=new.id)


@require_GET
@answers_bad_parameters
def export(request: HttpRequest, session_id: str, turn_id: str) -> HttpResponse:
    session = _get_session_and_turn(session_id, turn_id)
    download = strict(request.GET, "download", choice("1", "0")) == "1"
    # Every step of the thread, with the contents of its last only: the export reads the
    # others' as it streams them out (sessions/export.py).
    the_thread = load_thread(turn_id, page_size=1)
    if the_thread is None:
        raise Http404(f"No turn {turn_id!r}")
    response = StreamingHttpResponse(
        exporting.transcript(session, the_thread), content_type="application/json"
    )
    if download:
        response["Content-Disposition"] = downloads.attachment_disposition(
            f"thread-{turn_id}", "json"
        )
    return response


@require_GET
@answers_bad_parameters
def compare(request: HttpRequest, session_id: str) -> HttpResponse:
    session = _get_session(session_id)
    a, b = strict(request.GET, "a", exact, ""), strict(request.GET, "b", exact, "")
    # A turn against itself is no comparison: the page says so and offers the others.
    result = comparing.compare(session, a, b) if a and b and a != b else None
    return respond(
        request,
        page=lambda: _compare_page(request, session, a, b, result),
        twin=lambda: _compare_twin(request, session, a, b, result),
    )


def _compare_twin(request: HttpRequest, session: Session, a: str, b: str, result) -> dict:
    if result is None:  # the pick list: what the page offers, each with its comparison's URL
        pick = "b" if a else "a"
        url = reverse("sessions:compare", args=[session.id])
        return {
            "a": a or None,
            "b": b or None,
            "same_turn": bool(a) and a == b,  # A against itself: another B is to be chosen
            "choose": pick,
            "candidates": [
                {
                    "id": t.id,
                    "status": t.status,
                    "prompt": t.preview,
                    "answer": t.answer,
                    "url": request.build_absolute_uri(
                        f"{url}?{long_values.query({'a': a, 'b': t.id} if a else {'a': t.id})}"
                    ),
                }
                for t in comparing.candidates(load_tree(session), exclude=a or b)
            ],
        }
    return json_twins.compare(result)


def _compare_page(request: HttpRequest, session: Session, a: str, b: str, result):
    ctx = {"session": session, "a": a, "b": b, "result": result, "same_turn": bool(a) and a == b}
    if result is None:
        # "Compare with…": the session's leaves and branch points, to pick without typing ids.
        ctx["pick"] = "b" if a else "a"
        ctx["candidates"] = comparing.candidates(load_tree(session), exclude=a or b)
    elif result.both_found and result.fork_point and result.a.first_turns and result.b.first_turns:
        # Where the branches part, the two answers there can be preferred (preferring.py).
        ctx["prefer_siblings"] = [result.a.first_turns[0].id, result.b.first_turns[0].id]
    return render(request, "sessions/compare.html", ctx)


@require_GET
@answers_bad_parameters
def branches(request: HttpRequest, session_id: str, turn_id: str | None = None) -> HttpResponse:
    """Every answer at a branch point, side by side (sessions/branch_point.py): the children of
    a turn, or with no turn the session's first turns when it has several."""
    session = _get_session_and_turn(session_id, turn_id) if turn_id else _get_session(session_id)
    session_tree = load_tree(session)
    point = branch_point(session_tree, turn_id)
    if point is None:
        raise Http404("Fewer than two branches start there")
    ctx = {
        "session": session,
        "point": point,
        "can_fork": request.user.has_perm("conversations.fork_session"),
        "bookmarks": annotation_store.bookmarked_turns(request.user, session.id),
    }
    if turn_id:  # the better answer can be marked where a turn branches (preferring.py)
        ids = [b.turn.id for b in point.branches]
        ctx["choices"], ctx["wins"] = preferring.choices_at(turn_id, ids, request.user)
        ctx["positions"] = {b.turn.id: b.position for b in point.branches}
    return respond(
        request,
        page=lambda: render(request, "sessions/branches.html", ctx),
        twin=lambda: (
            branch_point_json(point)
            | {
                "preferences": [
                    {"user": c.who, "chosen": c.chosen, "rejected": c.rejected}
                    for c in ctx.get("choices", [])
                ]
            }
        ),
    )
