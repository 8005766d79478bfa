"""What every list page shares: capped counts and the envelope of its JSON twin."""

from ledgerweb.sqlite import CappedCount


def capped(qs, cap: int) -> CappedCount:
    """Count at most `cap` rows of a queryset (SELECT count(*) FROM (… LIMIT cap + 1))."""
    n = qs.values("pk")[: cap + 1].count()
    return CappedCount(min(n, cap), n > cap)


def list_envelope(filters, page) -> dict:
    """The part of a list's JSON twin that says what was asked and where the next page is."""
    return {
        "filters": filters.as_query(),
        "filter_errors": filters.errors,
        "count": page.count.value,
        "count_capped": page.count.capped,
        "next": page.next_cursor,
    }
