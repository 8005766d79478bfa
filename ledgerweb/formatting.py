"""How ledger values read on a page: times, durations, token counts, model names, booleans.

Plain functions, so the Python row builders and the admin call them directly; the template
filters and tags of ledgerweb/templatetags/ledger.py are these same functions."""

import json

from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe
from django.utils.timesince import timesince

from ledgerfacts.timestamps import looks_like_seconds, ms_to_datetime
from ledgerweb.costs import readable_count


def timestamp(value) -> SafeString:
    """A ledger time shown relative ("3 minutes ago"), with the absolute time at hand.

    Built here rather than in an included template: list pages show one per row, and a template
    include per call was most of a 50-row page's rendering time."""
    when = ms_to_datetime(value)
    if when is None:
        if value is None:
            return mark_safe('<span class="muted">—</span>')
        return format_html(
            '<span class="warn" title="Not a Unix time in milliseconds">{} (not a time)</span>',
            value,
        )
    relative = _relative(when)
    local = timezone.localtime(when)
    # strftime rather than date_format: the same text at a third of the cost, once per row.
    absolute = f"{local:%Y-%m-%d %H:%M:%S} {local.tzname()}"
    # Every part is text made here from a number: nothing from the ledger to escape.
    html = f'<time datetime="{when.isoformat()}" title="{absolute}">{relative}</time>'

    if looks_like_seconds(value):
        html += (
            ' <span class="warn" title="This value looks like seconds, not the ledger\'s'
            ' milliseconds">(seconds?)</span>'
        )
    return mark_safe(html)


def moment(ms) -> SafeString:
    """A window's end as wall-clock time ("2025-11-24 14:00 UTC"), for a line that must say
    exactly where a window starts and ends; the relative time is at hand."""
    when = ms_to_datetime(ms)
    if when is None:
        return timestamp(ms)
    local = timezone.localtime(when)
    shown = f"{local:%Y-%m-%d %H:%M} {local.tzname()}"
    return format_html(
        '<time datetime="{}" title="{}">{}</time>', when.isoformat(), _relative(when), shown
    )


def _relative(when) -> str:
    now = timezone.now()
    if abs((now - when).total_seconds()) < 60:
        return "just now"
    if when <= now:
        return f"{timesince(when, now, depth=1)} ago"
    return f"in {timesince(now, when, depth=1)}"


def filesize(num_bytes) -> str:
    """Binary file size with one decimal: 1.4 GiB, 312.0 KiB."""
    size = float(num_bytes or 0)
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:,.0f} {unit}" if unit == "bytes" else f"{size:,.1f} {unit}"
        size /= 1024
    return f"{size:,.1f} TiB"


def tokens(value) -> str:
    """1,250 → 1.3k; 31,000 → 31k; no count (NULL) → — (unknown, not 0); junk
    (ledgerweb.costs.UNREADABLE_COUNT) → ?"""
    if value is None:
        return "—"
    if not readable_count(value):
        return "?"
    if abs(value) < 1000:
        return f"{value:.0f}"
    if abs(value) < 10_000:
        return f"{value / 1000:.1f}k"
    if abs(value) < 1_000_000:
        return f"{value / 1000:.0f}k"
    return f"{value / 1_000_000:.1f}M"


def duration(ms) -> str:
    """Milliseconds as 850 ms, 4.2 s, 3 min 5 s; blank when unknown."""
    if isinstance(ms, bool) or not isinstance(ms, int | float):
        return ""
    if ms < 0:
        return f"{ms:.0f} ms (clock skew?)"
    if ms < 1000:
        return f"{ms:.0f} ms"
    if ms < 60_000:
        return f"{ms / 1000:.1f} s"
    minutes, seconds = divmod(int(ms // 1000), 60)
    if minutes < 60:
        return f"{minutes} min {seconds} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min"


def milliseconds(ms) -> str:
    """An exact duration: 4,137 ms, 0.25 ms (a stage's timing beside a threshold it is compared
    with: "4.1 s" would hide which side of 4,100 ms it lies); blank when unknown."""
    if isinstance(ms, bool) or not isinstance(ms, int | float) or ms != ms:
        return ""
    if float(ms).is_integer():
        return f"{int(ms):,} ms"
    return f"{ms:,.6g} ms" if abs(ms) < 1000 else f"{ms:,.3f}".rstrip("0").rstrip(".") + " ms"


def elapsed(ms) -> str:
    """How long something has been going on, coarsely: 42 s, 3 min, 2 h 5 min, 3 d (a running
    turn; static/js/live.js writes the same as time passes)."""
    if isinstance(ms, bool) or not isinstance(ms, int | float):
        return ""
    s = max(0, round(ms / 1000))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min"
    if s < 86400:
        return f"{s // 3600} h {s % 3600 // 60} min"
    return f"{s // 86400} d"


def short_model(name) -> str:
    """claude-sonnet-4-20250514 → sonnet-4; gpt-5 → gpt-5: enough to tell models apart in a row."""
    if not isinstance(name, str) or not name:
        return "—"
    short = name.removeprefix("claude-")
    parts = short.split("-")
    if len(parts) > 1 and parts[-1].isdigit() and len(parts[-1]) == 8:
        parts = parts[:-1]  # a release date
    return "-".join(parts)[:24]


def percent(ratio) -> str:
    return f"{ratio:.0%}" if isinstance(ratio, int | float) else "?"


def ledger_bool(value) -> SafeString:
    """A BOOLEAN column as yes / no / —, and any other value (2, 'true') as stored, flagged:
    SQLite keeps whatever the writer put there."""
    if value is True or value is False or value is None:
        return mark_safe({True: "yes", False: "no", None: "—"}[value])
    return format_html('<span class="warn">{} (not a boolean)</span>', value)


NULL_LABEL, EMPTY_LABEL = "(none)", "(empty)"


def value_label(value) -> str:
    """A ledger value as a chart or a filter names it: NULL and '' are values too, shown
    distinctly; a value that would read like one of those labels, hides spaces at its ends or
    starts with a quote is shown quoted (JSON), so no two values share a label."""
    if value is None:
        return NULL_LABEL
    text = str(value)
    if text == "":
        return EMPTY_LABEL
    if text != text.strip() or text in (NULL_LABEL, EMPTY_LABEL) or text.startswith('"'):
        return json.dumps(text, ensure_ascii=False)
    return text


# The filters of the same names in templates: Django's ({% load ledger %}) and Jinja2's
# (ledgerweb/jinja.py).
FILTERS = (
    filesize,
    tokens,
    duration,
    milliseconds,
    elapsed,
    short_model,
    percent,
    ledger_bool,
    value_label,
)
