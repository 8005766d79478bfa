from django import template
from django.utils import timezone
from django.utils.formats import date_format
from django.utils.timesince import timesince

from ledgerweb.timestamps import looks_like_seconds, ms_to_datetime

register = template.Library()


@register.inclusion_tag("includes/timestamp.html")
def timestamp(value):
    """A ledger time shown relative ("3 minutes ago"), with the absolute time at hand."""
    when = ms_to_datetime(value)
    if when is None:
        return {"raw": value, "when": None}
    local = timezone.localtime(when)
    now = timezone.now()
    if abs((now - when).total_seconds()) < 60:
        relative = "just now"
    elif when <= now:
        relative = f"{timesince(when, now, depth=1)} ago"
    else:
        relative = f"in {timesince(now, when, depth=1)}"
    return {
        "when": when,
        "iso": when.isoformat(),
        "absolute": date_format(local, "Y-m-d H:i:s T"),
        "relative": relative,
        "seconds": looks_like_seconds(value),
    }


@register.filter
def filesize(num_bytes) -> str:
    """Binary file size with one decimal: 1.4 GiB, 312.0 KiB."""
    size = float(num_bytes or 0)
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:,.0f} {unit}" if unit == "bytes" else f"{size:,.1f} {unit}"
        size /= 1024
    return f"{size:,.1f} TiB"
