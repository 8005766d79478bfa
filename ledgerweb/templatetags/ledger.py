import json

from django import template
from django.utils import timezone
from django.utils.safestring import SafeString, mark_safe

from ledgerfacts.timestamps import ms_to_datetime
from ledgerweb import formatting, long_values
from ledgerweb.costs import UNREADABLE_COUNT, unreadable_count
from ledgerweb.text import as_text, render_markdown

register = template.Library()

# How values read (ledgerweb/formatting.py), as tags and filters.
register.simple_tag(formatting.timestamp)
register.simple_tag(formatting.moment)
for _format in formatting.FILTERS:
    register.filter(_format.__name__, _format)


register.filter("as_text", as_text)


register.filter("unreadable_count", unreadable_count)


@register.simple_tag
def unreadable_rule() -> str:
    """What makes a token count unreadable, in the words every page uses."""
    return UNREADABLE_COUNT


# before |truncatechars, which would show b'…' for a BLOB


@register.filter
def markdown(text) -> SafeString:
    """Ledger text as Markdown, sanitized by render_markdown (no script, no raw HTML)."""
    return mark_safe(render_markdown(text if isinstance(text, str) else ""))


@register.filter
def low_mark(window) -> int:
    """Where a context gauge turns from fine to filling up: half the window."""
    return int(window * 0.5)


@register.filter
def high_mark(window) -> int:
    """Where a context gauge warns: 80 % of the window, when agents usually compact."""
    return int(window * 0.8)


@register.filter
def get_item(mapping, key):
    return mapping.get(key, "") if hasattr(mapping, "get") else ""


@register.filter
def permille(ratio) -> str:
    """A 0–1 fraction as a coordinate on a 0–1000 axis (waterfall SVGs)."""
    return f"{max(0.0, min(1.0, float(ratio or 0))) * 1000:.2f}"


@register.filter
def permille_min(ratio) -> str:
    """Like permille, but at least 2 units wide so a 1 ms stage is still visible."""
    return f"{max(2.0, max(0.0, min(1.0, float(ratio or 0))) * 1000):.2f}"


@register.filter
def urlencode_dict(mapping) -> str:
    """A query string of a dict of ledger values, each as a link carries it (long_values)."""
    return long_values.query(mapping)


@register.filter
def link_text(value) -> str:
    """A ledger value as a link or form carries it, not yet URL-encoded (`{% querystring %}` and
    a form's fields encode it): by its key when too long (ledgerweb/long_values.py)."""
    return long_values.for_link("" if value is None else value)


@register.filter
def link_value(value) -> str:
    """A ledger value in a link's query (`?persona={{ p|link_value }}`): URL-encoded, and by its
    key when too long for a link (ledgerweb/long_values.py)."""
    from urllib.parse import quote

    return quote(long_values.for_link("" if value is None else value), safe="")


@register.filter
def ms_local_input(value) -> str:
    """A ledger time as the value of an <input type="datetime-local"> in the current time zone."""
    when = ms_to_datetime(value)
    return timezone.localtime(when).strftime("%Y-%m-%dT%H:%M") if when else ""


@register.filter
def figure_json(figure) -> str:
    """A Plotly figure as JSON for a data-figure attribute (autoescaping makes it a safe
    attribute value; the browser hands the JSON back unescaped to ledgerweb.js)."""
    return json.dumps(figure, separators=(",", ":"), allow_nan=False, default=str)
