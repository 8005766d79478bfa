"""The live bar a page puts where it wants its "Following live · Pause", and the state of an open
turn's panel: drawn in the page's own request, so the cursor is that of the very rows the page
shows (one read transaction per request), and nothing written after it is missed."""

from django import template
from django.conf import settings
from django.urls import reverse

from ledgerfacts.timestamps import now_ms
from ledgerweb import long_values
from ledgerweb.formatting import elapsed
from live import cursor
from live.watches import (
    EVERY_MS,
    REDRAW_EVERY_MS,
    PipelineWatch,
    RequestListWatch,
    RequestWatch,
    SessionWatch,
)
from live.watches import turn_state as read_turn_state

register = template.Library()


@register.inclusion_tag("live/_bar.html", takes_context=True)
def live_bar(context, kind: str, target=None) -> dict:
    """kind: "session" (target: the session's id), "request" (the request's id), "requests"
    (the request list: its filters are the context's), "pipeline" (the dashboard) or "ledger"
    (the overview)."""
    request = context["request"]
    rows_url = ""
    if kind == "session":
        watch, url = SessionWatch(target, None), reverse("live:session", args=[target])
    elif kind == "request":
        watch, url = RequestWatch(target), reverse("live:request", args=[target])
    elif kind == "requests":
        filters = context["filters"]
        query = long_values.query(filters.as_query())
        watch, url = RequestListWatch(filters, []), f"{reverse('live:requests')}?{query}"
        rows_url = f"{reverse('live:request_rows')}?{query}"
    else:
        watch, url = PipelineWatch(kind), reverse(f"live:{kind}")
    try:
        now = cursor.now(watch.digest())
    except cursor.RowidsMissing as error:
        return {"unavailable": str(error)}
    return {
        "kind": kind,
        "url": url,
        "rows_url": rows_url,
        "cursor": str(now),
        "every": EVERY_MS[kind],
        "redraw_every": REDRAW_EVERY_MS[kind],
        "paused": request.GET.get("live") == "0",
        "stalled_after_ms": settings.STALLED_AFTER_S * 1000,
    }


@register.simple_tag
def live_turn_state(turn_id) -> str:
    """The open panel's turn as drawn (see live.watches.turn_state)."""
    return read_turn_state(turn_id)


@register.filter
def running_for(started_at) -> str:
    """How long a running turn has been going (live.js redraws it as time passes)."""
    if isinstance(started_at, bool) or not isinstance(started_at, int | float):
        return ""
    return elapsed(now_ms() - started_at)


@register.simple_tag
def stalled_after() -> str:
    """settings.STALLED_AFTER_S, as a page says it."""
    return elapsed(settings.STALLED_AFTER_S * 1000)
