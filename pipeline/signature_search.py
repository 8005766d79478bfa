"""Which failed requests carry an error signature ("similar failures", the failures chart's top
errors), answered from the signatures the summariser stores with each hour it builds.

Masking every failure's message in Python at request time cost ~0.9 s for a month of a 1M-request
ledger. Building an hour now also stores each failed row's signature (FailureSignature: the
row's rowid, under the rollups' ledger key), so a search reads the rowids of its signature for
the window's summarised hours, and masks live only the rows of hours not summarised yet, the
newest first up to LIVE_ROWS rows: the older ones are not searched, and the list says so ("N
hours not searched yet"), never a silently shorter list. The hours come from the charts' plan
(rollups.plan): the same ledger identity, census and content checks decide which stored hours
are trusted, so a replaced or edited ledger never answers with another file's rows.

The search is one SQL condition on nexus_requests, so the list, its count and its pages all
select the very same rows.
"""

from dataclasses import dataclass
from functools import partial

from ledgerfacts.timestamps import ms_to_datetime
from ledgerweb import sqlite
from ledgerweb.dialect import on_postgres, unindexed
from pipeline import rollups
from pipeline.models import FailureSignature
from pipeline.signatures import SQL_FUNCTION

HOUR = rollups.HOUR
# Rows of hours not summarised yet whose messages a search masks live (newest hours first).
LIVE_ROWS = 10_000
# Stored rowids a search passes to the ledger (one JSON parameter, ~8 bytes each): past this,
# the oldest summarised hours are not searched (and said), so that no request grows unbounded.
MAX_STORED_ROWIDS = 100_000
# A window left open reaches this far: further than any time a ledger holds as a number.
OPEN = 2**62


@dataclass
class SignatureSearch:
    signature: str
    stored_rowids: list[int]
    live: list[tuple[int, int]]  # [start, end) read live; OPEN or -OPEN: no bound on that side
    not_searched: list[int]  # hours of the window left out, oldest first

    def condition(self) -> tuple[str, list]:
        """SQL true for the failed rows with this signature: the stored rowids of summarised
        hours, and the rows of the live ranges whose message masks to it.

        One rowid subquery: SQLite reads the stored rowids straight from the parameter and
        the live ranges through the started_at index, then looks each row up by rowid, whatever
        the list's other bounds (as plain terms, a window or a page cursor made it walk every
        row of the window through the started_at index: seconds). CASE: the masking function
        runs on the live ranges' failures only, whatever order SQLite tests terms in."""
        # A PostgreSQL ledger has no rowid (and no unary + on text): its rows are found by id,
        # all of them live (nothing is stored for it, see rollups._build_hour).
        row, parts, sql_params = "id", [], []
        if not on_postgres():
            stored, sql_params = sqlite.in_list(self.stored_rowids)
            row, parts = "rowid", [f"SELECT value FROM {stored}"]
        for start, end in self.live:
            in_range, bounds = _range_sql(start, end), _range_params(start, end)
            parts.append(
                f"SELECT {row} FROM nexus_requests WHERE {in_range} AND CASE WHEN {in_range}"
                f" AND status = 'failed' THEN {SQL_FUNCTION}(error_message) = %s END"
            )
            sql_params += [*bounds, *bounds, self.signature]
        if not parts:
            return "(1 = 0)", []
        return (
            f"({unindexed('status')} = 'failed' AND {row} IN ({' UNION ALL '.join(parts)}))",
            sql_params,
        )

    @property
    def note(self) -> str:
        """What the search left out, in words; "" when it searched the whole window."""
        if not self.not_searched:
            return ""
        first = ms_to_datetime(self.not_searched[0])
        last = ms_to_datetime(self.not_searched[-1] + HOUR)
        hours = len(self.not_searched)
        return (
            f"{hours:,} hour{'s' if hours != 1 else ''} not searched yet (between"
            f" {first:%Y-%m-%d %H:%M} and {last:%Y-%m-%d %H:%M} UTC): they are not summarised"
            " yet, or hold too many of these failures; narrow the time window, or reload once"
            " they are summarised."
        )


def _range_sql(start: int, end: int) -> str:
    parts = (["started_at >= %s"] if start > -OPEN else []) + (
        ["started_at < %s"] if end < OPEN else []
    )
    return f"({' AND '.join(parts) or '1 = 1'})"


def _range_params(start: int, end: int) -> list[int]:
    return ([start] if start > -OPEN else []) + ([end] if end < OPEN else [])


def search(signature: str, since_ms: int | None, until_ms: int | None) -> SignatureSearch:
    """The failed rows of [since, until) (None: open) with this signature, as a bounded search.
    Builds no hour: the summariser (or a chart) does."""
    since = -OPEN if since_ms is None else since_ms
    until = OPEN if until_ms is None else until_ms
    # A PostgreSQL ledger's signatures are not stored (no rowid to key them by): every hour is
    # masked live, newest first, up to the same bound, and the rest said.
    make_plan = rollups.live_plan if on_postgres() else partial(rollups.plan, budget_s=0)
    the_plan = make_plan(since, until).bounded(LIVE_ROWS)
    not_searched = {hour for hour, _ in the_plan.left_out}
    stored, cut_at = _stored_rowids(the_plan, signature)
    if cut_at is not None:  # that hour was read in part: it and the older ones are left out
        not_searched |= {hour for hour in the_plan.stored if hour <= cut_at}
    # An open end stays open in SQL (_range_sql): text times (odd data) sort after every number.
    return SignatureSearch(signature, stored, the_plan.live, sorted(not_searched))


def _stored_rowids(the_plan: rollups.Plan, signature: str) -> tuple[list[int], int | None]:
    """The stored rowids of the signature's failures in the plan's trusted hours, newest hours
    first, up to MAX_STORED_ROWIDS in whole hours, and the hour where they were cut off (None:
    all read)."""
    if not the_plan.stored:
        return [], None
    found = list(
        FailureSignature.objects.filter(
            ledger=the_plan.ledger,
            signature=signature,
            hour__gte=the_plan.stored[0],
            hour__lte=the_plan.stored[-1],
        )
        .order_by("-hour")
        .values_list("hour", "request_rowid")[: MAX_STORED_ROWIDS + 1]
    )
    cut_at = found[-1][0] if len(found) > MAX_STORED_ROWIDS else None
    trusted = set(the_plan.stored) - {cut_at}
    return [rowid for hour, rowid in found if hour in trusted], cut_at
