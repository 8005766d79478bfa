import itertools
import time

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.csp import CSP
from django.views.decorators.csp import csp_override
from django.views.decorators.http import require_GET

from background import lock as background
from background.runner import status_of as background_status
from ledgerweb import downloads
from ledgerweb.http import respond, wants_json
from ledgerweb.params import BadParameter, answers_bad_parameters, choice, cursor, strict
from ledgerweb.sqlite import LedgerQueryTimeout
from pipeline import charts, json_twins
from pipeline.detail import LONG_FIELDS, load_request, similar_query
from pipeline.filters import WINDOWS, RequestFilters, value_query
from pipeline.listing import request_page
from pipeline.models import NexusRequest
from pipeline.rows_html import list_rows_html
from pipeline.stages import STAGES, STATUSES

# Text filters under "More filters": query parameter and label.
FILTER_FIELDS = [
    ("source", "Event source"),
    ("type", "Event type"),
    ("principal", "Principal"),
    ("session_key", "Session key"),
    ("persona", "Persona"),
    ("model", "Model"),
]
# Filters set by links (charts, similar failures) that the form keeps without showing a field.
HIDDEN_FIELDS = {
    "signature",
    "hook",
    "hook_state",
    "delivered",
    "since",
    "until",
    "event",
    "channel",
    "turn",
}


@require_GET
@answers_bad_parameters
def request_list(request: HttpRequest) -> HttpResponse:
    filters = RequestFilters.from_query(request.GET)
    # Page links are written by the list itself: a broken one has no sensible page (400).
    filters.after = strict(request.GET, "after", cursor)
    # Following the list live is on unless live=0 (pausing sets it; live=1, the old switch's
    # address, is the default).
    strict(request.GET, "live", choice("1", "0"))
    page = request_page(filters)
    return respond(
        request,
        page=lambda: _request_list_page(request, filters, page),
        twin=lambda: json_twins.request_list(filters, page),
    )


def _request_list_page(request: HttpRequest, filters: RequestFilters, page):
    ctx = {
        "filters": filters,
        "page": page,
        "rows_html": list_rows_html(page.rows, filters),
        "stages": STAGES,
        "statuses": STATUSES,
        "windows": WINDOWS,
        "filter_fields": FILTER_FIELDS,
        # NULL and empty-string selections ride along as they came (see filters.value_query).
        "hidden_fields": HIDDEN_FIELDS | {k for k in filters.as_query() if "__" in k},
    }
    template = "pipeline/list.html"
    if request.htmx and request.GET.get("after"):
        template += "#rows"
    elif request.htmx:
        template += "#results"
    return render(request, template, ctx)


@require_GET
@answers_bad_parameters
def request_detail(request: HttpRequest, request_id: str) -> HttpResponse:
    long_field = strict(request.GET, "download", choice(*LONG_FIELDS))
    if long_field:
        return _download(request_id, long_field)
    # The page counts similar failures after it loads (see similar_failures); the twin at once.
    detail = load_request(request_id, with_similar=wants_json(request))
    if detail is None:
        raise Http404(f"No request {request_id!r} in this ledger")
    return respond(
        request,
        page=lambda: _request_page(request, detail),
        twin=lambda: json_twins.request_detail(detail),
    )


def _download(request_id: str, name: str) -> HttpResponse:
    if not NexusRequest.objects.filter(id=request_id).exists():
        raise Http404(f"No request {request_id!r} in this ledger")
    content = downloads.pieces("nexus_requests", name, "id = %s", [request_id])
    is_json = name not in ("error_stack", "error_message")
    return downloads.attachment(content, f"{request_id}-{name}", is_json=is_json)


def _request_page(request: HttpRequest, detail) -> HttpResponse:
    ctx = {
        "d": detail,
        "r": detail.request,
        "similar_query": similar_query(detail),
        # The breadcrumb's link to the requests of this status, as stored (filters.value_query).
        "status_query": value_query("status", detail.request.status),
        "related_groups": _related_groups(detail),
    }
    return render(request, "pipeline/request.html", ctx)


def _related_groups(detail) -> list[tuple[str, list]]:
    """The request's neighbours by event, principal and session key: a principal that always
    writes through one session key gave two identical lists, shown once."""
    groups = [("Same event", detail.same_event)]
    principal, session = detail.same_principal, detail.same_session
    if principal and [x.id for x in principal] == [x.id for x in session]:
        return groups + [("Same principal and session key", principal)]
    return groups + [("Same principal", principal), ("Same session key", session)]


# plotly.js injects a stylesheet and sets style attributes, and cannot take a nonce: the pages
# that draw charts allow inline styles. Scripts stay nonce-only everywhere.
CHART_CSP = settings.SECURE_CSP | {"style-src": [CSP.SELF, CSP.UNSAFE_INLINE]}


@csp_override(CHART_CSP)
@require_GET
@answers_bad_parameters
def dashboard(request: HttpRequest) -> HttpResponse:
    # refresh=1: the address of the old 30-second auto-refresh, still read; the charts now
    # follow the ledger by themselves (live/).
    strict(request.GET, "refresh", choice("1"))
    filters = charts.DashboardFilters.from_query(request.GET)
    return respond(
        request,
        page=lambda: _dashboard_page(request, filters),
        twin=lambda: charts.dashboard_data(filters),
    )


def _dashboard_page(request: HttpRequest, filters) -> HttpResponse:
    ctx = {
        "filters": filters,
        "charts": charts.CHARTS,
        "windows": WINDOWS,
        # Said here for the window; a chart that leaves hours out says which in its card.
        "summarising": filters.summarising(),
        "summariser_running": background.running(),
        # Its last step for this ledger, and its failure if the last step failed.
        "summariser": background_status("summarise"),
    }
    return render(request, "pipeline/dashboard.html", ctx)


@require_GET
def chart(request: HttpRequest, chart: str) -> HttpResponse:
    if chart not in charts.CHARTS:
        raise Http404(f"No chart {chart!r}")
    filters = charts.DashboardFilters.from_query(request.GET)
    return respond(
        request,
        page=lambda: _chart_card(request, chart, filters),
        # A twin that runs out of time raises: the middleware answers JSON clients.
        twin=lambda: _chart_data(chart, filters),
    )


# The charts of one answer are drawn within this time; past it, the rest say so and are drawn at
# the next redraw. Each chart's queries are bounded (LEDGER_QUERY_TIMEOUT_MS), but eight charts
# on a ledger that hits the limit at every query would hold a worker past gunicorn's 30 s.
CHARTS_AT_ONCE_BUDGET_S = 10.0
# Which chart of an answer is drawn first: the next one each time, so that on a ledger too slow
# for all of them in the budget, each is drawn in turn rather than the first ones only.
_first_chart = itertools.count()


@require_GET
@answers_bad_parameters
def charts_at_once(request: HttpRequest) -> HttpResponse:
    """Several charts' cards in one answer (?chart=…, repeated), each in a
    <div data-live-chart="slug">: what a live dashboard redraws every few seconds
    (static/js/live.js). One request reads one snapshot of the ledger, so its charts share one
    plan (its census and processing counts, pipeline/rollups.py) where a request per chart, each
    at another version of a ledger being written, made one each."""
    slugs = list(dict.fromkeys(request.GET.getlist("chart")))
    unknown = [slug for slug in slugs if slug not in charts.CHARTS]
    if unknown or not slugs:
        known = ", ".join(charts.CHARTS)
        raise BadParameter("chart", unknown[0] if unknown else "", f"name charts among {known}")
    filters = charts.DashboardFilters.from_query(request.GET)
    return respond(
        request,
        page=lambda: HttpResponse(
            "".join(
                f'<div data-live-chart="{slug}">{card}</div>'
                for slug, card in _cards_in_time(request, slugs, filters).items()
            )
        ),
        twin=lambda: {slug: _chart_data(slug, filters) for slug in slugs},
    )


def _cards_in_time(request: HttpRequest, slugs: list[str], filters) -> dict[str, str]:
    """Each chart's card, in the order asked; past CHARTS_AT_ONCE_BUDGET_S (at least one drawn)
    the rest say they were not drawn this time."""
    start = next(_first_chart) % len(slugs)
    deadline = time.monotonic() + CHARTS_AT_ONCE_BUDGET_S
    late = f"Not drawn this time: the charts before it took over {CHARTS_AT_ONCE_BUDGET_S:g} s."
    cards = {}
    for n, slug in enumerate(slugs[start:] + slugs[:start]):
        if n and time.monotonic() > deadline:
            cards[slug] = _chart_card(request, slug, filters, late=late).content.decode()
        else:
            cards[slug] = _chart_card(request, slug, filters).content.decode()
    return {slug: cards[slug] for slug in slugs}


def _chart_card(request: HttpRequest, chart: str, filters, late: str = "") -> HttpResponse:
    ctx = {"chart": charts.CHARTS[chart], "filters": filters}
    if late:  # the card's title, and why it is not drawn (charts_at_once)
        return render(request, "pipeline/chart.html", ctx | {"error": late}, status=503)
    try:
        result = charts.build_chart(charts.CHARTS[chart], filters)
    except LedgerQueryTimeout as error:
        # Keep the card's title: say which chart could not be drawn, and how to get it.
        return render(request, "pipeline/chart.html", ctx | {"error": str(error)}, status=503)
    return render(request, "pipeline/chart.html", ctx | {"result": result})


def _chart_data(chart: str, filters):
    data = charts.build_chart(charts.CHARTS[chart], filters).data
    return data | {"errors": filters.errors} if isinstance(data, dict) else data


@require_GET
def similar_failures(request: HttpRequest, request_id: str) -> HttpResponse:
    """The request page's similar-failures line, loaded after the page (see load_request)."""
    detail = load_request(request_id)
    if detail is None:
        raise Http404(f"No request {request_id!r} in this ledger")
    ctx = {
        "d": detail,
        "r": detail.request,
        "similar_query": similar_query(detail),
        "counted": True,
    }
    return render(request, "pipeline/request.html#similar", ctx)
