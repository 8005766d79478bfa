from dataclasses import asdict

from django.contrib import messages as flash
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET, require_POST

from ledgerweb import sqlite
from ledgerweb.html_parts import IdUrls, css_name
from ledgerweb.http import wants_json
from ledgerweb.text import show_json
from sessions import compare as comparing
from sessions import export as exporting
from sessions import forking, json_twins
from sessions.calls_html import tool_calls_html
from sessions.detail import TurnInfo, load_tree, turn_info
from sessions.kinds import FORK, KINDS
from sessions.list_rows import session_rows_html
from sessions.listing import SessionFilters, session_page
from sessions.models import Session
from sessions.page import tree_items
from sessions.rows_html import tree_rows_html
from sessions.thread import load_thread
from sessions.turn_detail import add_payloads, load_payload, load_tool_call, load_turn_detail

# The thread page shows this many of the turns nearest the fork point; older ones are counted
# and can be shown with ?all=1 (a 20,000-turn page is 12 MB of HTML and ten seconds of render).
THREAD_PAGE_TURNS = 200


def _get_session(session_id: str) -> Session:
    session = Session.objects.filter(id=session_id).first()
    if session is None:
        raise Http404(f"No session {session_id!r} in this ledger")
    return session


@require_GET
def session_list(request: HttpRequest) -> HttpResponse:
    filters = SessionFilters.from_query(request.GET)
    page = session_page(filters)
    if wants_json(request):
        return JsonResponse(json_twins.session_list(filters, page))
    ctx = {
        "filters": filters,
        "page": page,
        "rows_html": session_rows_html(page.rows),
        "personas": sqlite.distinct_values("sessions", "persona", limit=100),
        "channels": [
            c
            for c in sqlite.distinct_prefixes("sessions", "routing_key", limit=100)
            if c not in ("subagent", "fork")
        ],
        "statuses": ["active", "archived", "deleted", "all"],
        "kinds": KINDS,
    }
    template = "sessions/list.html"
    if request.htmx and request.GET.get("after"):
        template += "#rows"  # "load more" appends rows
    elif request.htmx:
        template += "#results"
    return render(request, template, ctx)


def _session_context(request: HttpRequest, session: Session, selected_id: str | None) -> dict:
    session_tree = load_tree(session)
    selected_id = selected_id or session.current_turn_id
    if selected_id not in session_tree.layout.by_id:
        selected_id = session_tree.layout.rows[0].node.id if session_tree.layout.rows else None
    unfold = request.GET.get("unfold") == "all"
    return {
        "session": session,
        "tree": session_tree,
        "child_links": _child_links(session_tree.related.children),
        "items": tree_items(session_tree, selected_id, unfold=unfold),
        "selected_id": selected_id,
        "unfold": unfold,
    }


def _child_links(children: list[Session]) -> list[dict]:
    """The session's subagents and forks, ready to draw: a session may spawn hundreds, and a
    {% url %} tag and a filter each made that list cost more than the rest of the header. The
    URLs come from one reverse() for all."""
    urls = IdUrls("sessions:detail")
    return [
        {
            "kind": "Fork" if child.routing_key.startswith(f"{FORK}:") else "Subagent",
            "url": mark_safe(urls.html(child.id)),  # escaped by IdUrls
            "name": str(child),
            "status": child.status,
            "status_class": css_name(str(child.status)),
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
    rows = tree_rows_html(ctx["items"], ctx["session"].id)
    response = render(request, template, ctx | {"rows_html": mark_safe(ROWS_MARKER)})
    head, tail = response.content.split(ROWS_MARKER.encode(), 1)
    response.content = b"".join((head, rows.encode(response.charset), tail))
    return response


@require_GET
def session_detail(request: HttpRequest, session_id: str) -> HttpResponse:
    session = _get_session(session_id)
    ctx = _session_context(request, session, None)
    if wants_json(request):
        return JsonResponse(json_twins.session_detail(ctx["tree"]))
    if request.htmx and request.htmx.target == "tree":
        # (Un)folding: the tree alone.
        return _render_with_rows(request, "sessions/detail.html#tree", ctx)
    if ctx["selected_id"]:
        ctx |= _turn_context(session, ctx["selected_id"], ctx["tree"].turns[ctx["selected_id"]])
        ctx |= _panel_html(ctx)
    return _render_with_rows(request, "sessions/detail.html", ctx)


def _turn_context(session: Session, turn_id: str, info: TurnInfo | None) -> dict:
    detail = load_turn_detail(session.id, turn_id)
    return {"turn": info, "detail": detail, "turn_id": turn_id}


def _panel_html(ctx: dict) -> dict:
    """The turn's tool calls, for the HTML panel (its JSON twin does without)."""
    return {"calls_html": tool_calls_html(ctx["detail"].tool_calls, ctx["session"], ctx["turn_id"])}


@require_GET
def turn_detail(request: HttpRequest, session_id: str, turn_id: str) -> HttpResponse:
    session = _get_session(session_id)
    if request.htmx and request.htmx.target == "tree":
        # (Un)folding on a turn's address: the tree alone, the turn still selected.
        return _render_with_rows(
            request, "sessions/detail.html#tree", _session_context(request, session, turn_id)
        )
    if request.htmx and not request.htmx.history_restore_request:
        # The panel beside the tree: the tree is already on the page.
        info = turn_info(turn_id)
        if info is None:
            raise Http404(f"No turn {turn_id!r}")
        ctx = {"session": session} | _turn_context(session, turn_id, info)
        return render(request, "sessions/detail.html#panel", ctx | _panel_html(ctx))
    ctx = _session_context(request, session, turn_id)
    if turn_id not in ctx["tree"].turns:
        raise Http404(f"No turn {turn_id!r} in session {session_id!r}")
    ctx |= _turn_context(session, turn_id, ctx["tree"].turns[turn_id])
    if wants_json(request):
        if ctx["detail"].tool_calls and ctx["detail"].tool_calls[0].parameters is None:
            add_payloads(ctx["detail"].tool_calls, turn_id)  # scripts get every payload
        return JsonResponse(json_twins.turn(ctx["turn"], ctx["detail"]))
    return _render_with_rows(request, "sessions/detail.html", ctx | _panel_html(ctx))


@require_GET
def tool_call(request: HttpRequest, session_id: str, turn_id: str, call_id: str) -> HttpResponse:
    """The parameters and result of one tool call, loaded when it is opened in a long list."""
    call = load_tool_call(turn_id, call_id)
    if call is None:
        raise Http404(f"No tool call {call_id!r} in turn {turn_id!r}")
    ctx = {"c": call, "session": _get_session(session_id), "turn_id": turn_id}
    return render(request, "sessions/_call_body.html", ctx)


@require_GET
def payload(request: HttpRequest, session_id: str, turn_id: str, kind: str, item_id: str):
    text = load_payload(turn_id, kind, item_id)
    if text is None:
        raise Http404("No such payload")
    ctx = {"kind": kind}
    if kind == "message":
        ctx["text"] = text
    else:
        ctx["json"] = show_json(text)
    return render(request, "sessions/payload.html", ctx)


@require_GET
def thread(request: HttpRequest, session_id: str, turn_id: str) -> HttpResponse:
    session = _get_session(session_id)
    show_all = wants_json(request) or request.GET.get("all") == "1"
    the_thread = load_thread(turn_id, newest=None if show_all else THREAD_PAGE_TURNS)
    if the_thread is None:
        raise Http404(f"No turn {turn_id!r}")
    if wants_json(request):
        return JsonResponse(json_twins.thread(the_thread))
    ctx = {
        "session": session,
        "thread": the_thread,
        "can_fork": request.user.has_perm("conversations.fork_session"),
        "turn_id": turn_id,
    }
    return render(request, "sessions/thread.html", ctx)


@require_POST
def fork(request: HttpRequest, session_id: str, turn_id: str) -> HttpResponse:
    if not request.user.has_perm("conversations.fork_session"):
        raise PermissionDenied("Only operators can fork sessions.")
    origin = _get_session(session_id)
    label = request.POST.get("label", "").strip()
    if not label:
        flash.error(request, "Give the fork a label so you can find it again.")
        return redirect("sessions:thread", session_id=session_id, turn_id=turn_id)
    try:
        new = forking.fork_session(origin, turn_id, label)
    except forking.ForkError as error:
        flash.error(request, str(error))
        return redirect("sessions:thread", session_id=session_id, turn_id=turn_id)
    flash.success(request, f"Forked “{label}” from turn {turn_id}.")
    return redirect("sessions:detail", session_id=new.id)


@require_GET
def export(request: HttpRequest, session_id: str, turn_id: str) -> HttpResponse:
    session = _get_session(session_id)
    the_thread = load_thread(turn_id, full_text=True)
    if the_thread is None:
        raise Http404(f"No turn {turn_id!r}")
    response = JsonResponse(
        exporting.transcript(session, the_thread), json_dumps_params={"indent": 2}
    )
    if request.GET.get("download"):
        response["Content-Disposition"] = f'attachment; filename="thread-{turn_id}.json"'
    return response


@require_GET
def compare(request: HttpRequest, session_id: str) -> HttpResponse:
    session = _get_session(session_id)
    a, b = request.GET.get("a", ""), request.GET.get("b", "")
    result = comparing.compare(a, b) if a and b else None
    if wants_json(request):
        if result is None:
            return JsonResponse({"error": "choose two turns: ?a=<turn id>&b=<turn id>"}, status=400)
        return JsonResponse(asdict(result), safe=False)
    return render(
        request, "sessions/compare.html", {"session": session, "a": a, "b": b, "result": result}
    )
