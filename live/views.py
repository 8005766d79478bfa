"""The endpoints live pages poll, and the request rows the request list inserts.

Each poll is one short request (no worker waits for anything): it reads the ledger's change
counter, and only when that moved the few rows its watch needs. docs/decisions.md, "Live pages
poll a cursor", says why.
"""

from collections import OrderedDict

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from ledgerweb import sqlite
from ledgerweb.params import answers_bad_parameters, linked
from live import cursor
from live.watches import (
    AT_MOST_MS,
    EVERY_MS,
    PipelineWatch,
    RequestListWatch,
    RequestWatch,
    SessionWatch,
    arrived,
    turn_state,
)
from pipeline.filters import RequestFilters
from pipeline.listing import page_of
from pipeline.models import NexusRequest
from pipeline.rows_html import list_rows_html

# At most this many processing rows of a list are followed (their ids travel in the poll's
# address, which must stay far below a server's request-line limit).
OPEN_IDS_CHARS = 1500
# Rows the request list inserts at once when its banner is clicked; past that it reloads.
INSERTED = 200

# What each watch answered last in this worker, and at which ledger version: a poll whose
# cursor is that answer, at the same version of the same connection, is answered without
# reading the ledger's tables (nothing was committed since). Bounded: the oldest go first.
_answered: OrderedDict = OrderedDict()
ANSWERS_KEPT = 2000


@never_cache
@require_GET
def session_updates(request: HttpRequest, session_id: str) -> HttpResponse:
    turn_id = linked(request.GET.get("turn") or None)
    watch = SessionWatch(session_id, turn_id)
    # The open panel's turn, as the panel was drawn (see watches.turn_state).
    if not turn_id:
        return _answer(request, watch)
    echoed = {"turn_state": request.GET.get("turn_state", "")}
    return _answer(request, watch, echoed, lambda: {"turn_state": turn_state(turn_id)})


@never_cache
@require_GET
@answers_bad_parameters
def request_list_updates(request: HttpRequest) -> HttpResponse:
    filters = RequestFilters.from_query(request.GET)
    watch = RequestListWatch(filters, _open_ids(request.GET.getlist("open")))
    return _answer(request, watch, extras={"states": watch.states} if watch.open_ids else None)


@never_cache
@require_GET
def request_updates(request: HttpRequest, request_id: str) -> HttpResponse:
    return _answer(request, RequestWatch(request_id))


@never_cache
@require_GET
def pipeline_updates(request: HttpRequest) -> HttpResponse:
    return _answer(request, PipelineWatch("pipeline"))


@never_cache
@require_GET
def ledger_updates(request: HttpRequest) -> HttpResponse:
    return _answer(request, PipelineWatch("ledger"))


def _open_ids(raw: list[str]) -> list[str]:
    ids, used = [], 0
    for value in raw:
        used += len(value)
        if used > OPEN_IDS_CHARS:
            break
        if (found := linked(value)) is not None:
            ids.append(found)
    return ids


def _answer(request, watch, echoed: dict | None = None, compute=None, extras=None):
    """The answer to one poll: whether the page's part of the ledger changed since its cursor,
    and the cursor of the ledger now.

    `echoed`: values the page drew and sends back besides its cursor (the open panel's state),
    compared with `compute()`'s; `extras`: callables whose values go into the answer when the
    ledger was read (a list's processing rows)."""
    raw = request.GET.get("cursor", "")
    since = cursor.parse(raw)
    if since is None:
        return JsonResponse(
            {"error": f"cursor={raw[:40]!r}: not a live cursor ledgerweb wrote; reload the page"},
            status=400,
        )
    echoed = echoed or {}
    every = EVERY_MS[watch.kind]
    pace = {"every_ms": every, "at_most_ms": AT_MOST_MS[watch.kind]}
    try:
        connection, version = sqlite.ledger_version()
        key = (*watch.key, *sorted(echoed.items()))
        known = _answered.get(key)
        if known and known[0] is connection and known[1] == version and known[2] == raw:
            # Nothing committed since this worker answered it: nothing to read.
            return JsonResponse({"cursor": raw, "changed": False, **pace})
        now = cursor.now(watch.digest())
        if now.is_behind(since):
            return JsonResponse({"cursor": str(now), "reload": True, **pace})
        news = watch.news(since, now)
        current = compute() if compute else {}
        answer = {
            "cursor": str(now),
            "changed": news.touched
            or now.digest != since.digest
            or any(echoed.get(name) != value for name, value in current.items()),
            **pace,
            **news.facts,
            **current,
            **{name: make() for name, make in (extras or {}).items()},
        }
    except cursor.RowidsMissing as error:
        return JsonResponse({"error": str(error), "stop": True}, status=503)
    except sqlite.LedgerQueryTimeout as error:
        # Busy: the page says so and asks again later, from the same cursor (nothing is lost).
        return JsonResponse({"error": str(error), "every_ms": every * 5}, status=503)
    _remember(key, (connection, version, answer["cursor"]))
    return JsonResponse(answer)


def _remember(key, value) -> None:
    _answered[key] = value
    _answered.move_to_end(key)
    while len(_answered) > ANSWERS_KEPT:
        _answered.popitem(last=False)


@never_cache
@require_GET
@answers_bad_parameters
def request_rows(request: HttpRequest) -> HttpResponse:
    """Rows of the request list, as its table draws them: the requests that arrived between two
    of the list's cursors (`after`, `upto`: its banner's "N new requests", newest first), or the
    processing rows it follows (`id`, repeated) once they moved on."""
    filters = RequestFilters.from_query(request.GET)
    ids = _open_ids(request.GET.getlist("id"))
    if ids:
        # Whether or not they still match the filters: the rows are on the page already.
        page = page_of(NexusRequest.objects.filter(id__in=ids), len(ids))
    else:
        after, upto = (cursor.parse(request.GET.get(name, "")) for name in ("after", "upto"))
        if after is None or upto is None:
            return JsonResponse({"error": "after= and upto= must be live cursors"}, status=400)
        span = after.mark("nexus_requests"), upto.mark("nexus_requests")
        page = page_of(arrived(filters, *span), INSERTED)
    rows_html = list_rows_html(page.rows, filters)
    return render(
        request,
        "pipeline/list.html#rows",
        {"filters": filters, "page": page, "rows_html": rows_html},
    )
