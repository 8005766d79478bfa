"""The inbox's small drawings and lines, and the failure inbox's pieces other pages include: a
failed request's issue (templates/pipeline/request.html) and the overview's new and regressed
issues (templates/overview.html)."""

from django import template
from django.utils.html import format_html_join
from django.utils.safestring import SafeString, mark_safe

from issues.detail import bars as bars_of
from issues.detail import issue_id_of
from issues.figures import Figures
from issues.inbox import InboxFilters
from ledgerfacts.timestamps import ms_to_datetime

register = template.Library()

TOUCHED_WORDS = {
    "principals": ("principal", "principals"),
    "sessions": ("session", "sessions"),
    "channels": ("channel", "channels"),
    "personas": ("persona", "personas"),
    "models": ("model", "models"),
}


@register.simple_tag
def sparkline(f: Figures, now: int, trend: str = "24h") -> SafeString:
    """The last 24 hours (a bar an hour) or 30 days (a bar a day), drawn small in the row, each
    bar's count in its title."""
    points = f.daily_trend(now) if trend == "30d" else f.hourly_trend(now)
    bars = bars_of(points)
    total = sum(b.n for b in bars)
    span = "30 days" if trend == "30d" else "24 hours"
    # Numbers only, made here: nothing to escape (format_html per bar was most of a row's time).
    rects = "".join(
        f'<rect x="{b.x}" y="{b.y}" width="{b.width}" height="{b.height}">'
        f"<title>{b.n:,}</title></rect>"
        for b in bars
    )
    return mark_safe(
        f'<svg class="sparkline" viewBox="0 0 120 24" width="120" height="24" role="img"'
        f' aria-label="{total:,} failures in the last {span}">{rects}</svg>'
    )


@register.simple_tag
def touched_line(f: Figures) -> SafeString:
    counts = f.touched()
    parts = [
        (n, TOUCHED_WORDS[name][n != 1]) for name, n in counts.items()
    ]  # every one, zeros too: "0 models" says the failure came before any model ran
    return format_html_join(" · ", "{} {}", ((f"{n:,}", word) for n, word in parts))


@register.filter
def escalation(f: Figures) -> str:
    """The rate now against the window before, in a word: "↑ 1.9×", "↓ 0.5×", "new"."""
    if f.previous == 0:
        return "new" if f.count else "—"
    ratio = f.count / f.previous
    return f"{'↑' if ratio > 1 else '↓' if ratio < 1 else '='} {ratio:.1f}×"


@register.filter
def requests_url(filters: InboxFilters, f: Figures) -> str:
    return filters.requests_url(f.groups[0])


@register.inclusion_tag("issues/_request_issue.html")
def issue_of_failed_request(r) -> dict:
    """A failed request's issue: its link at once (its id is its stage and signature), its
    status loaded after the page (issues:of_request adds up the issue's hours)."""
    return {"r": r, "issue_id": issue_id_of(r.error_stage, r.error_message), "loaded": False}


HOURLY, DAILY = "Last 24 hours", "Last 30 days"


@register.filter
def trend_panels(d) -> list[tuple[str, list]]:
    return [(HOURLY, d.trend.hourly), (DAILY, d.trend.daily)]


@register.filter
def bars_total(bars) -> int:
    return sum(b.n for b in bars)


@register.filter
def bar_label(bar, title: str) -> str:
    """A bar's bucket and count: "14:00 UTC: 3 failures", "2025-11-24: 12 failures"."""
    when = ms_to_datetime(bar.start)
    bucket = f"{when:%H:%M} UTC" if title == HOURLY else f"{when:%Y-%m-%d}"
    return f"{bucket}: {bar.n:,} failure{'s' if bar.n != 1 else ''}"
