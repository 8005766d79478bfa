"""What every list page shares: capped counts and the envelope of its JSON twin."""

from django.core.exceptions import EmptyResultSet, FullResultSet
from django.db import connections

from ledgerweb.sqlite import CappedCount


def capped(qs, cap: int) -> CappedCount:
    """Count at most `cap` rows of a single-table queryset.

    Selects a constant rather than a column, so a filter an index covers is counted from the
    index alone (Django's own sliced count selects the key, one table lookup per row).
    """
    connection = connections[qs.db]
    compiler = qs.query.get_compiler(connection=connection)
    try:
        where, params = compiler.compile(qs.query.where)
    except FullResultSet:  # no filter at all
        where, params = "", []
    except EmptyResultSet:  # a filter that can match nothing, e.g. id__in=[]
        return CappedCount(0, False)
    table = connection.ops.quote_name(qs.model._meta.db_table)
    sql = f"SELECT count(*) FROM (SELECT 1 FROM {table}"
    sql += f" WHERE {where} LIMIT %s)" if where else " LIMIT %s)"
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, cap + 1])
        (n,) = cursor.fetchone()
    return CappedCount(min(n, cap), n > cap)


def list_envelope(filters, page) -> dict:
    """The part of a list's JSON twin that says what was asked and where the next page is."""
    return {
        "filters": filters.as_query(),
        "errors": filters.errors,  # parameter → what is wrong with it (ledgerweb.params)
        "count": page.count.value,
        "count_capped": page.count.capped,
        "next": page.next_cursor,
    }
