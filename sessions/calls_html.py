"""A turn's tool calls as HTML, written in Python.

A turn can make hundreds of tool calls. Through the template loop, a 600-call turn's panel took
over 100 ms: a {% url %} tag and a handful of filters for each call. Built here, with the URLs
made by IdUrls, the list costs a few milliseconds. Every value from the ledger goes through
escape().
"""

from functools import lru_cache

from django.template.loader import render_to_string
from django.utils.safestring import SafeString, mark_safe

from ledgerweb.formatting import duration
from ledgerweb.html_parts import IdUrls, css_name, escape
from sessions.models import Session
from sessions.turn_detail import ToolCallView


def tool_calls_html(calls: list[ToolCallView], session: Session, turn_id: str) -> SafeString:
    call_urls = IdUrls("sessions:call", session.id, turn_id)
    session_urls = IdUrls("sessions:detail")
    # A call is open when its body came with the panel: every call of a short list, the first
    # failed calls of a long one (turn_detail.OPEN_FAILED_CALLS). Other bodies load when opened.
    # A turn calls a few tools, with a few statuses, many times over: each pair is written once.
    # For this panel only (they are ledger values, of any size). typed: the number 5 and the
    # text "5" are different values.
    name_and_status = lru_cache(maxsize=None, typed=True)(_name_and_status)
    parts = []
    for call in calls:
        failed = call.status == "failed"
        opened = call.parameters is not None
        if not opened:
            body = _lazy_body(call_urls.html(call.id))
        else:
            body = render_to_string(
                "sessions/_call_body.html", {"c": call, "session": session, "turn_id": turn_id}
            )
        parts.append(
            f'<li id="call-{escape(call.id)}" class="tool-call{" failed" if failed else ""}">'
            f"<details{' open' if opened else ''}>"
            f"{_summary(call, call_urls.html(call.id), session_urls, name_and_status)}{body}"
            "</details></li>"
        )
    return mark_safe("\n".join(parts))  # every ledger value was escaped


def _summary(call: ToolCallView, call_url: str, session_urls: IdUrls, name_and_status) -> str:
    elapsed = call.duration_ms
    timing = f"#{escape(call.sequence)}"
    if elapsed is not None:
        timing += f" · {escape(duration(elapsed))}"
    subagent = (
        f' <a href="{session_urls.html(call.child_session_id)}">subagent session ↗</a>'
        if call.child_session_id
        else ""
    )
    return (
        f"<summary>{name_and_status(call.tool_name, call.status)} "
        f'<span class="muted small">{timing}</span>{subagent}'
        f' <a href="{call_url}" class="small call-link" title="This call on its own page">link</a>'
        "</summary>"
    )


def _name_and_status(tool_name, status) -> str:
    return (
        f'<code class="tool-name">{escape(tool_name)}</code> '
        f'<span class="status status-{css_name(str(status))}">{escape(status)}</span>'
    )


def _lazy_body(url: str) -> str:
    """A closed call's body: fetched the first time its <details> opens; a plain link without
    JavaScript. `url` is already escaped."""
    return (
        f'<div class="call-body" hx-get="{url}" hx-trigger="toggle from:closest details once"'
        f' hx-swap="outerHTML"><a href="{url}" class="small">parameters and result</a></div>'
    )
