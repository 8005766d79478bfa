"""What every list page shares: capped counts, keyset pages and the envelope of its JSON twin."""

import json

from django.core.exceptions import EmptyResultSet, FullResultSet
from django.db import connections
from django.db.models import Q, Value

from ledgerweb import long_values
from ledgerweb.params import Cursor
from ledgerweb.sqlite import CappedCount, rows


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
    sql += f" WHERE {where} LIMIT %s) AS c" if where else " LIMIT %s) AS c"
    ((n,),) = rows(sql, [*params, cap + 1], qs.db)
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


def keyset_page(qs, column: str, after: Cursor | None, size: int) -> tuple[list, str | None]:
    """A newest-first page of `qs` by (column, id) after the cursor `after` (the last row's
    (time, id)), and the next page's cursor.

    Ledger times may be REAL or text (the columns are NOT NULL), and SQLite sorts numbers before
    text: text times come first, and a text cursor continues into the numbers by the very same
    comparison."""
    newest_first = qs.order_by(f"-{column}", "-id")
    if after is not None:
        # Value(): the cursor's time as written; the field would round a REAL time.
        stamp, last_id = Value(after[0]), after[1]
        newest_first = newest_first.filter(
            Q(**{f"{column}__lt": stamp}) | Q(**{column: stamp, "id__lt": last_id})
        )
    rows = list(newest_first[: size + 1])
    if len(rows) <= size:
        return rows, None
    last = rows[size - 1]
    return rows[:size], page_cursor(getattr(last, column), last.id)


def page_cursor(stamp, row_id) -> str:
    """A cursor as ledgerweb.params.cursor reads it: "<time>:<id>" for a whole-number time (the
    usual case, short), else a JSON pair (a REAL or text time, kept exactly); by its key when
    the row's id makes it too long for a link (ledgerweb/long_values.py)."""
    if isinstance(stamp, int) and not isinstance(stamp, bool):
        return long_values.for_link(f"{stamp}:{row_id}")
    return long_values.for_link(json.dumps([stamp, row_id]))
