"""Which requests took a stage a given time ("runAgent at or above its p95"), and in what order
(slowest first): the stage-timings chart's way into the request list, bounded on a big ledger.

A stage's duration lives in JSON (stage_timings) that no index covers: reading it costs ~2 us a
row, so finding the few requests of a rare duration, or sorting a month by one stage, read every
row of the window (a month of a 1M-request ledger: seconds, past the query time limit). The
charts' summaries keep, per hour and stage, every timing value with its count (RollupTimings), so
a search reads only the summarised hours that hold a value in the range asked for, and the rows
of hours not summarised yet, newest first up to LIVE_ROWS rows: older ones are not searched, and
the list says so, as "similar failures" do (pipeline/signature_search.py). Slowest first, a page
reads only the hours holding the next page's worth of the slowest values (see
`TimingSearch.slowest_from`).

A timing counts as the chart counts it (rollups.TIMINGS): a JSON number from 0 up to a year, under
its stage's key in a stage_timings object; anything else is no timing. One SQL expression
(`timing_sql`) gives it, so the list, its count, its order and its pages agree with the chart's
nearest-rank percentiles exactly.
"""

from dataclasses import dataclass, field

import numpy as np
from django.db.models import FloatField
from django.db.models.expressions import RawSQL

from ledgerfacts.timestamps import ms_to_datetime
from ledgerweb import sqlite
from ledgerweb.dialect import on_postgres
from pipeline import rollups

HOUR = rollups.HOUR
# Rows of hours not summarised yet that a search reads live (newest hours first).
LIVE_ROWS = 10_000
# A window left open reaches this far: further than any time a ledger holds as a number.
OPEN = 2**62


def timing_sql() -> str:
    """SQL for a request's timing of the stage given as its one parameter, in ms (DOUBLE
    PRECISION), or NULL when it has none the chart would count.

    json_each of anything but an object yields no row keyed by a stage name (an array's keys
    are numbers, a scalar's NULL), so only invalid JSON, which would stop the query on SQLite,
    is left out first: two parses of the row's JSON, not the three of rollups' object check
    (this runs on every row of a window a list reads)."""
    if on_postgres():  # its json_each reads invalid JSON as nothing (ledgerweb/sql/postgres/)
        number, items = "NUMERIC", "json_each(stage_timings)"
    else:
        number = "DOUBLE PRECISION"
        items = "json_each(CASE WHEN json_valid(stage_timings) THEN stage_timings END)"
    value = f"CAST(CASE WHEN item.type IN ('integer', 'real') THEN item.value END AS {number})"
    return (
        f"(SELECT CAST(max({value}) AS DOUBLE PRECISION) FROM {items} AS item"
        f" WHERE item.key = %s AND item.type IN ('integer', 'real') AND {value} >= 0"
        f" AND {value} < {rollups.MAX_STAGE_MS})"
    )


def timing_expression(stage: str) -> RawSQL:
    return RawSQL(timing_sql(), [stage], output_field=FloatField())


def timing_between(stage: str, low: float | None, high: float | None) -> tuple[str, list]:
    """SQL true for a timing of the stage in [low, high] (any timing without them): one
    comparison, so the row's JSON is read once, not once per bound."""
    low = 0 if low is None else low
    high = rollups.MAX_STAGE_MS if high is None else high
    return f"{timing_sql()} BETWEEN %s AND %s", [stage, low, high]


@dataclass
class TimingSearch:
    stage: str
    at_least: float | None
    at_most: float | None
    # Per summarised hour of the window, the stage's timing values and their counts (all sources
    # and personas: a superset of what any other filter keeps).
    stored: dict[int, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    live: tuple[str, list] = ("(1 = 0)", [])  # rows read live: SQL condition and parameters
    not_searched: list[int] = field(default_factory=list)  # hours left out, oldest first

    def stored_count(self) -> int:
        """How many timings in range the summarised hours hold: the count of the rows they
        hold, when no other filter applies (a row naming a stage twice counts twice, as on the
        chart)."""
        total = 0
        for values, counts in self.stored.values():
            total += int(counts[self._inside(values, self.at_least)].sum())
        return total

    def condition(self, at_least: float | None = None) -> tuple[str, list]:
        """SQL true for the rows that may hold a timing in [at_least (default: the search's),
        at_most]: those of the summarised hours holding such a value, and the live rows. The
        timing itself is compared by the caller (timing_expression), on these rows only.

        The hours are one parameter (a JSON array on SQLite, an array on PostgreSQL) joined to
        the started_at index, so the SQL does not grow with a month of hours."""
        low = self.at_least if at_least is None else at_least
        hours = [hour for hour, arrays in self.stored.items() if self._holds(arrays, low)]
        live_sql, live_params = self.live
        if not hours:
            return live_sql, live_params
        listed, params = sqlite.in_list(sorted(hours))
        # By rowid on SQLite: each row is fetched straight, not looked up by id first. (A
        # PostgreSQL ledger's rows are found by their primary key.)
        row = "id" if on_postgres() else "rowid"
        return (
            f"({live_sql} OR {row} IN (SELECT n.{row} FROM {listed} AS h"
            f" JOIN nexus_requests AS n"
            f" ON n.started_at >= h.value AND n.started_at < h.value + {HOUR}))",
            live_params + params,
        )

    def _holds(self, arrays, low: float | None) -> bool:
        return bool(self._inside(arrays[0], low).any())

    def _inside(self, values: np.ndarray, low: float | None) -> np.ndarray:
        inside = np.ones(len(values), dtype=bool)
        if low is not None:
            inside &= values >= low
        if self.at_most is not None:
            inside &= values <= self.at_most
        return inside

    def slowest_from(self, below: float | None, rows: int) -> float | None:
        """A lower bound for a slowest-first page: the largest value t such that the summarised
        hours hold at least `rows` timings in [t, below) besides (the timings equal to `below`,
        the previous page's last, may have been shown already) and within the search's range.
        None: no bound better than the search's own (too few values; the live rows may hold
        the rest)."""
        top = self.at_most if below is None else min(below, self.at_most or below)
        picked_values, picked_counts = [], []
        for values, counts in self.stored.values():
            inside = np.ones(len(values), dtype=bool)
            if top is not None:
                inside &= values <= top
            if self.at_least is not None:
                inside &= values >= self.at_least
            picked_values.append(values[inside])
            picked_counts.append(counts[inside])
        if not picked_values:
            return None
        values, counts = np.concatenate(picked_values), np.concatenate(picked_counts)
        if below is not None:
            rows += int(counts[values == below].sum())
        order = np.argsort(-values, kind="stable")
        reached = np.cumsum(counts[order])
        if not len(reached) or reached[-1] < rows:
            return None
        return float(values[order][np.searchsorted(reached, rows)])

    @property
    def note(self) -> str:
        """What the search left out, in words; "" when it searched the whole window."""
        if not self.not_searched:
            return ""
        first = ms_to_datetime(self.not_searched[0])
        last = ms_to_datetime(self.not_searched[-1] + HOUR)
        hours = len(self.not_searched)
        return (
            f"{hours:,} hour{'s' if hours != 1 else ''} not searched yet for the stage's"
            f" duration (between {first:%Y-%m-%d %H:%M} and {last:%Y-%m-%d %H:%M} UTC): they"
            " are not summarised yet; narrow the time window, or reload once they are."
        )


def search(
    stage: str,
    at_least: float | None,
    at_most: float | None,
    since_ms: int | None,
    until_ms: int | None,
) -> TimingSearch:
    """The rows of [since, until) (None: open) that may have a `stage` timing in [at_least,
    at_most], as a bounded search. Builds no hour: the summariser (or a chart) does."""
    since = -OPEN if since_ms is None else since_ms
    until = OPEN if until_ms is None else until_ms
    the_plan = rollups.plan(since, until, budget_s=0).bounded(LIVE_ROWS)
    live_sql, live_params = rollups.live_condition(the_plan)
    if until_ms is None:  # open: a text time (odd data, after every number in SQLite) too
        live_sql = f"({live_sql} OR started_at >= {OPEN})"
    return TimingSearch(
        stage,
        at_least,
        at_most,
        stored=rollups.stored_timings(the_plan, stage),
        live=(live_sql, live_params),
        not_searched=sorted(hour for hour, _ in the_plan.left_out),
    )
