"""The turn tree's rows as HTML, written in Python.

A session can have thousands of turns; rendering each row through a template include cost about
0.3 ms, which made a 5,000-turn page take over a second and a half. The same markup built here
costs a few microseconds a row. Every value from the ledger goes through escape().
"""

from functools import cache
from html import escape as _html_escape
from urllib.parse import quote

from django.urls import reverse
from django.utils.safestring import SafeString, mark_safe
from django.utils.text import slugify

from ledgerweb.converters import LedgerIdConverter
from ledgerweb.templatetags.ledger import duration, short_model, tokens
from sessions.gutter import Gutter
from sessions.page import TreeItem

_PLACEHOLDER = "TURN-ID-PLACEHOLDER"


def escape(value) -> str:
    """HTML-escape any value (&, <, >, " and '), as Django's escape does, without its lazy-string
    wrapper: it runs tens of thousands of times on a big tree."""
    return _html_escape(str(value), quote=True)


@cache
def _mark_class(mark: str) -> str:
    return slugify(mark)


_to_url = LedgerIdConverter().to_url


def tree_rows_html(items: list[TreeItem], session_id: str) -> SafeString:
    base = reverse("sessions:turn", args=[session_id, _PLACEHOLDER])
    parts = []
    for item in items:
        if item.fold is not None:
            parts.append(_fold(item))
        else:
            # Same quoting as reverse(): the converter's encoding, then the path's.
            url = base.replace(_PLACEHOLDER, quote(_to_url(item.turn.id), safe=""))
            parts.append(_row(item, url))
    return mark_safe("\n".join(parts))  # every ledger value was escaped above


def _gutter(g: Gutter) -> str:
    strokes = "".join(f'<path d="{s.d}" class="{s.css_class}"/>' for s in g.strokes)
    dot = (
        f'<circle cx="{g.dot_x:g}" cy="{g.dot_y:g}" r="{g.dot_r:g}" class="dot {g.dot_class}"/>'
        if g.dot_x is not None
        else ""
    )
    return (
        f'<svg class="gutter" width="{g.width}" height="{g.height}" '
        f'viewBox="0 0 {g.width} {g.height}" aria-hidden="true" focusable="false">'
        f"{strokes}{dot}</svg>"
    )


def _fold(item: TreeItem) -> str:
    first = escape(item.fold.first.node.id)
    return (
        f'<a class="tree-row fold" href="?unfold=all#turn-{first}" hx-get="?unfold=all" '
        f'hx-target="#tree" hx-select="#tree" hx-swap="outerHTML">{_gutter(item.gutter)}'
        f'<span class="preview muted">··· {len(item.fold):,} turns in a straight line'
        f" — unfold</span></a>"
    )


def _row(item: TreeItem, url: str) -> str:
    t = item.turn
    classes = (
        "tree-row" + (" selected" if item.selected else "") + (" inherited" if t.inherited else "")
    )
    marks = "".join(
        f'<span class="mark mark-{_mark_class(m)}">{escape(m)}</span>' for m in item.marks
    )
    if item.problems:
        marks += (
            f'<span class="mark mark-problem" title="{escape(" · ".join(item.problems))}">'
            f"⚠ {len(item.problems)}</span>"
        )
    preview = t.compaction_summary if t.is_compaction else (t.preview or "(no message)")
    failed_calls = f", {t.failed_tool_calls} failed" if t.failed_tool_calls else ""
    calls_class = "num bad" if t.failed_tool_calls else "num"
    total = "?" if t.total_tokens is None else t.total_tokens
    plural = "" if t.tool_calls == 1 else "s"
    turn_id = escape(t.id)
    return (
        f'<a class="{classes}" id="turn-{turn_id}" href="{escape(url)}" hx-get="{escape(url)}" '
        f'hx-target="#panel" hx-push-url="true" data-turn="{turn_id}" '
        f'data-parent="{escape(item.parent_id)}" data-child="{escape(item.first_child_id)}" '
        f'data-sibling="{escape(item.next_sibling_id)}"'
        f"{' aria-current="true"' if item.selected else ''}>"
        f"{_gutter(item.gutter)}"
        f'<span class="marks">{marks}</span>'
        f'<span class="preview">{escape(preview)}</span>'
        f'<span class="facts">'
        f'<span class="model" title="{escape(t.model or "")}">{escape(short_model(t.model))}</span>'
        f'<span class="num" title="{escape(total)} tokens">{escape(tokens(t.total_tokens))}</span>'
        f'<span class="{calls_class}" title="{t.tool_calls} tool calls{failed_calls}">'
        f"{t.tool_calls} tool{plural}</span>"
        f'<span class="num">{escape(duration(t.duration_ms))}</span>'
        f"</span></a>"
    )
