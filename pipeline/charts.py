"""The pipeline dashboard's charts: each sums one kind of facts over a time window (stored hourly
rollups plus the same query run live on the ledger for the rest, see pipeline/rollups.py), its
data (the JSON twin) and a Plotly figure built here as a plain dict.

Every bar a person can click carries the request-list URL that selects exactly the rows it counts
(the same window, the same filters), so a chart is also a way into the list.
"""

import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from functools import cached_property

import numpy as np
from django.urls import reverse
from django.utils import timezone

from background import lock as background
from ledgerfacts.timestamps import ms_to_datetime, now_ms
from ledgerweb import long_values
from ledgerweb.costs import CostSum, TurnCost, turn_cost, usd
from ledgerweb.formatting import value_label
from ledgerweb.params import NOT_APPLIED, problem, reject
from ledgerweb.prices import TokenUsage
from ledgerweb.sqlite import LedgerQueryTimeout
from pipeline import rollups
from pipeline.filters import (
    AS_STORED,
    EXACT,
    WINDOWS,
    RequestFilters,
    number_text,
    value_query,
    window_bounds,
)
from pipeline.rollups import HOUR, MAX_STAGE_MS
from pipeline.stages import STAGE_INDEX, STAGES, STATUSES

STATUS_COLOURS = {
    "completed": "#2f9e68",
    "failed": "#d64545",
    "skipped": "#d9a22b",
    "processing": "#7b5cd6",
}
OTHER_COLOUR = "#8a8f98"
HOOK_COLOURS = (
    ("matched", "#8a8f98"), ("fired", "#2b8fd9"), ("handled", "#2f9e68"), ("shared", "#9fd4b4"),
)  # fmt: skip
TOP = 10
# However many distinct values a window holds, a chart draws at most this many categories
# (stages, sources, hooks, channels, models) and says how many requests the rest hold.
MAX_CATEGORIES = 20
# Time buckets a chart draws at most: 60 whole ones and the two the window's ends may cut (a
# preset window from 12 hours up starts on the hour: "30d" is up to 59 minutes longer than 30
# days, which takes 61 or 62 buckets of 12 hours, as docs/decisions.md promises).
MAX_BUCKETS = 62
# Rows of hours not summarised yet that a chart reads from the ledger (newest first); older ones
# are left out and said, so that a chart answers within its time limit while a big ledger is
# being summarised (bench/first_look.py: at 20,000 a chart took 0.4-5 s on a loaded machine,
# and two answered 503; the summariser stores the newest hours first, so few are left out long).
LIVE_ROWS = 10_000
# The stage timings read each row's JSON: ~4 times the work of the other facts a row.
LIVE_TIMING_ROWS = 2_500
DAY = 24 * HOUR
YEAR = 365 * DAY
# The dates a time axis can draw (Python's datetime and Plotly both stop at year 9999): a window
# reaching beyond is drawn up to here, and the rows outside are counted in a note.
DRAWABLE = (
    int(datetime(1000, 1, 1, tzinfo=UTC).timestamp() * 1000),
    int(datetime(9999, 1, 1, tzinfo=UTC).timestamp() * 1000),
)


def key_order(value) -> tuple[bool, str]:
    """A sort key for column values that may be None (first) or str."""
    return (value is not None, str(value))


DEFAULT_WINDOW = "24h"
# The list's filters the charts apply (the rollups are kept per source and persona).
CHART_FILTERS = {"window", "since", "until", "source", "persona", "source__exact", "persona__exact"}


@dataclass
class DashboardFilters:
    window: str = "24h"
    since_ms: int = 0
    until_ms: int = 0
    source: str = ""
    persona: str = ""
    errors: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_query(cls, params) -> "DashboardFilters":
        """The list's filters, read the same way (so a preset window is the same instants on
        both pages, see filters.window_bounds), with the last 24 hours when none is given."""
        request_filters = RequestFilters.from_query(params, default_window=DEFAULT_WINDOW)
        for name, value in request_filters.as_query().items():
            if name not in CHART_FILTERS:  # ?status=failed: said, never silently dropped
                request_filters.errors[name] = problem(
                    name, value, "the charts do not filter by this", NOT_APPLIED
                )
        f = cls(
            window=request_filters.window,
            since_ms=request_filters.since_ms,
            until_ms=request_filters.until_ms,
            source=request_filters.exact.get("source") or "",
            persona=request_filters.exact.get("persona") or "",
            errors=request_filters.errors,
        )
        if f.window == "custom":  # one end may be left out: up to now, or 24 hours long
            f.until_ms = now_ms() if f.until_ms is None else f.until_ms
            if f.since_ms is None:
                f.since_ms = f.until_ms - WINDOWS[DEFAULT_WINDOW]
            elif f.until_ms <= f.since_ms:
                reject(params, "since", "in the future", f.errors, "showing the last 24 hours")
                f.window = ""
        if f.window not in WINDOWS and f.window != "custom":  # all time is too long to chart
            f.window = DEFAULT_WINDOW
            f.since_ms, f.until_ms = window_bounds(DEFAULT_WINDOW, now_ms())
        return f

    @cached_property
    def scope(self) -> rollups.Scope:
        return rollups.Scope(self.since_ms, self.until_ms, self.source, self.persona)

    @cached_property
    def whole_plan(self) -> rollups.Plan:
        """Stored hours and every hour not summarised yet. Hours are built here (a second's
        worth) only when no background summariser runs to build them."""
        budget = 0 if background.running() else None
        return rollups.plan(self.since_ms, self.until_ms, budget_s=budget)

    def plan_for(self, live_rows: int) -> rollups.Plan:
        """The plan reading at most `live_rows` rows of hours not summarised yet (the newest;
        see rollups.Plan.bounded)."""
        return self.whole_plan.bounded(live_rows)

    @property
    def plan(self) -> rollups.Plan:
        return self.plan_for(LIVE_ROWS)

    @cached_property
    def live_plan(self) -> rollups.Plan:
        """The window read live, at most LIVE_ROWS rows of its settled hours (the newest): for
        buckets under an hour, which stored hours cannot fill."""
        return rollups.live_plan(self.since_ms, self.until_ms).bounded(LIVE_ROWS)

    def plan_for_buckets(self, bucket_ms: int | None) -> rollups.Plan:
        """The plan a chart's facts in buckets of `bucket_ms` come from (and its note tells)."""
        return self.live_plan if bucket_ms and bucket_ms % HOUR else self.plan

    def summarising(self, the_plan: rollups.Plan | None = None) -> tuple[int, int]:
        """(hours summarised, hours to summarise) of the window's whole hours that hold rows,
        from `the_plan`, or from a plan that only looks (the page stays quick)."""
        if the_plan is None:
            the_plan = rollups.plan(self.since_ms, self.until_ms, budget_s=0)
        return len(the_plan.stored), len(the_plan.stored) + len(the_plan.pending)

    def facts(self, kind: str, bucket_ms: int | None = None) -> list[tuple]:
        """(bucket, source, key, sub, n, total, last) rows of one kind over the window. Stored
        hours cannot be cut into smaller buckets: such a chart reads its window live, bounded."""
        return rollups.facts(self.scope, self.plan_for_buckets(bucket_ms), kind, bucket_ms)

    def list_url(self, since_ms: int | None = None, until_ms: int | None = None, **extra) -> str:
        """The request list selecting exactly the rows of a chart's bar. A column value of ''
        or None selects the empty string or NULL, and a hook or a signature is selected as
        stored (filters.value_query), never "any"."""
        query = {
            "since": since_ms if since_ms is not None else self.since_ms,
            "until": until_ms if until_ms is not None else self.until_ms,
        }
        columns = {"source": self.source or "", "persona": self.persona or ""}
        columns = {k: v for k, v in columns.items() if v} | extra
        for param, value in columns.items():
            if param in EXACT or param in AS_STORED:
                query |= value_query(param, value if value is None else str(value))
            elif value not in ("", None):
                query[param] = value
        return reverse("pipeline:requests") + "?" + long_values.query(query)

    def query(self, **changes) -> str:
        values = {"window": self.window, "source": self.source, "persona": self.persona}
        if self.window == "custom":
            values |= {"since": self.since_ms, "until": self.until_ms}
        values |= changes
        return long_values.query({k: v for k, v in values.items() if v not in ("", None)})

    @property
    def drawn(self) -> tuple[int, int]:
        """The part of the window a time axis draws: all of it, short of absurd dates."""
        return max(self.since_ms, DRAWABLE[0]), min(self.until_ms, DRAWABLE[1])

    @property
    def bucket_ms(self) -> int:
        """The smallest round size drawing at most MAX_BUCKETS buckets (aligned on multiples of
        it, see _buckets), whole hours from a 12-hour window up (so stored hourly rollups fill
        them: 1 h → minutes, 24 h → hours, 7 d → 3 h, 30 d → 12 h), and years, decades… for a
        window of any length: the work of a chart never grows with the window."""
        since, until = self.drawn

        def buckets(size: int) -> int:
            return -(-(until - since // size * size) // size)  # ceil: the first one aligned

        for size in (60_000, 120_000, 300_000, 900_000, 1_800_000, HOUR, 3 * HOUR, 6 * HOUR,
                     12 * HOUR, DAY, 7 * DAY, 30 * DAY, 90 * DAY):  # fmt: skip
            if buckets(size) <= MAX_BUCKETS and (size >= HOUR or until - since < 12 * HOUR):
                return size
        size = YEAR
        while buckets(size) > MAX_BUCKETS:
            size *= 10
        return size


def left_out_note(the_plan: rollups.Plan) -> list[str]:
    """What a chart did not count because its hours are not summarised yet: never a silently
    smaller total."""
    if not the_plan.left_out:
        return []
    hours = sorted(hour for hour, _ in the_plan.left_out)
    rows = sum(rows for _, rows in the_plan.left_out)
    first, last = ms_to_datetime(hours[0]), ms_to_datetime(hours[-1] + HOUR)
    if the_plan.live_only:
        return [
            f"Read live (stored hours cannot fill buckets under an hour), the newest"
            f" {LIVE_ROWS:,} requests at most. Not counted: {len(hours):,} hours ({rows:,}"
            f" requests) between {first:%Y-%m-%d %H:%M} and {last:%Y-%m-%d %H:%M} UTC: choose a"
            " shorter window to see them."
        ]
    return [
        f"Summarising: {len(the_plan.stored):,} of "
        f"{len(the_plan.stored) + len(the_plan.pending):,} hours. Not counted yet: "
        f"{len(hours):,} hours ({rows:,} requests) between {first:%Y-%m-%d %H:%M} and "
        f"{last:%Y-%m-%d %H:%M} UTC, counted once summarised (reload)."
    ]


@dataclass
class ChartResult:
    data: dict
    figures: list[dict]
    notes: list[str] = field(default_factory=list)
    plan: rollups.Plan | None = None  # when not the filters' plan (what the note says)

    @property
    def is_empty(self) -> bool:
        """Nothing to draw: a window without requests still has its time buckets, each 0, and
        drawn they were bare axes (the tokens chart's spanning 2000-2001)."""
        traces = [trace for figure in self.figures for trace in figure.get("data", [])]
        return not any(_counts_something(trace) for trace in traces)


def _counts_something(trace: dict) -> bool:
    """A trace whose value axis (x for horizontal bars, else y) holds a number other than 0."""
    values = trace.get("x" if trace.get("orientation") == "h" else "y") or []
    return any(isinstance(v, int | float) and not isinstance(v, bool) and v for v in values)


@dataclass(frozen=True)
class Chart:
    slug: str
    title: str
    description: str
    build: Callable[[DashboardFilters], ChartResult]


def _layout(**extra) -> dict:
    return {
        "margin": {"l": 56, "r": 56, "t": 24, "b": 48},
        "height": 300,
        "barmode": "stack",
        # Above the plot: below it, long category names (principals, stages) ran into it.
        "legend": {"orientation": "h", "x": 0, "y": 1.02, "yanchor": "bottom"},
        "hovermode": "closest",
    } | extra


def _count_axis(title: str, peak: float) -> dict:
    """An axis of whole counts starting at 0: no "0.2 requests" ticks on a small chart."""
    axis = {"title": {"text": title}, "rangemode": "tozero", "tickformat": ",d", "automargin": True}
    if peak <= 5:
        axis["dtick"] = 1
    return axis


def _rate_axis(peak: float) -> dict:
    """A failure-rate axis from 0 % to a round top, ticks on round percents (never 102 %)."""
    top = next(t for t in (0.01, 0.02, 0.05, 0.1, 0.2, 0.25, 0.5, 1.0) if peak <= t)
    return {
        "title": {"text": "failure rate"},
        "overlaying": "y",
        "side": "right",
        "range": [0, top],
        "dtick": top / 5,
        "tickformat": ".0%" if top >= 0.05 else ".1%",
        "showgrid": False,
        "zeroline": False,
    }


TIME_AXIS = {"type": "date", "automargin": True}


def _category_axis(title: str | None = None) -> dict:
    # No fixed tick angle: Plotly tilts names 30° or 90° only as far as they need not to overlap.
    axis = {"type": "category", "automargin": True}
    return axis | ({"title": {"text": title}} if title else {})


LABEL_WIDTH = 32


def labels(values) -> list[str]:
    """Category names for column values: short, and distinct (Plotly draws equal names as one
    category, so two values must never share a name)."""
    names: list[str] = []
    for value in values:
        name = value_label(value)
        if len(name) > LABEL_WIDTH:
            name = name[: LABEL_WIDTH - 1] + "…"
        unique, n = name, 1
        while unique in names:
            n += 1
            unique = f"{name} ({n})"
        names.append(unique)
    return names


def _most(totals: dict, limit: int) -> tuple[list, int]:
    """The `limit` keys with the largest totals (ties by key), and what the others add up to."""
    keys = sorted(totals, key=lambda k: (-totals[k], key_order(k)))
    return keys[:limit], sum(totals[k] for k in keys[limit:])


def _rest_note(hidden: int, what: str, holding: str = "") -> list[str]:
    """Say what a bounded chart leaves out: "3 more channels (12 responses) are not drawn"."""
    return [f"{hidden:,} more {what}{holding} are not drawn."] if hidden else []


# -- 1. Stage timings ---------------------------------------------------------------------------


def distribution_stats(values: np.ndarray, counts: np.ndarray) -> dict:
    """Count, min, max and nearest-rank percentiles of values occurring `counts` times each."""
    order = np.argsort(values, kind="stable")
    values, cumulative = values[order], np.cumsum(counts[order])
    total = int(cumulative[-1])

    def at_rank(q: float):
        rank = max(1, math.ceil(q * total))
        return _plain(values[np.searchsorted(cumulative, rank)])

    stats = {"count": total}
    stats |= {f"p{round(q * 100)}": at_rank(q) for q in (0.25, 0.5, 0.75, 0.95, 0.99)}
    return stats | {"min": _plain(values[0]), "max": _plain(values[-1])}


def _plain(value: np.float64) -> int | float:
    """A number as JSON writes it: timings are whole milliseconds, mostly."""
    number = float(value)
    return int(number) if number.is_integer() else number


def _shown_stages(distributions: dict) -> tuple[list[str], int, int]:
    """The pipeline's stages in order, then the most frequent unknown names (a ledger may name
    any number of them), and how many names and timings are left out."""
    known = sorted((s for s in distributions if s in STAGE_INDEX), key=STAGE_INDEX.__getitem__)
    counts = {s: int(distributions[s][1].sum()) for s in distributions if s not in STAGE_INDEX}
    unknown, hidden_timings = _most(counts, MAX_CATEGORIES - len(known))
    return known + unknown, len(counts) - len(unknown), hidden_timings


# The figures of a stage's distribution that lead to its requests: at or above each, slowest
# first ("the slowest stage's p95 → the requests above it"), and those between the quartiles.
LINKED_FIGURES = ("p50", "p95", "p99", "max")


def _timing_links(f: DashboardFilters, stage: str, stats: dict, values, counts) -> dict:
    """Per linked figure (and "all", and "quartiles": p25 to p75), how many of the stage's
    timings lie there and the request list of exactly those requests (the same window and
    filters), slowest first."""

    def link(at_least=None, at_most=None) -> dict:
        inside = np.ones(len(values), dtype=bool)
        if at_least is not None:
            inside &= values >= at_least
        if at_most is not None:
            inside &= values <= at_most
        url = f.list_url(timing=stage, timing_min=number_text(at_least),
                         timing_max=number_text(at_most), order="slowest")  # fmt: skip
        return {"requests": int(counts[inside].sum()), "url": url}

    return {key: link(stats[key]) for key in LINKED_FIGURES} | {
        "all": link(),
        "quartiles": link(stats["p25"], stats["p75"]),
    }


def stage_timings(f: DashboardFilters) -> ChartResult:
    the_plan = f.plan_for(LIVE_TIMING_ROWS)
    distributions = rollups.timing_distributions(f.scope, the_plan)
    order, hidden_names, hidden_timings = _shown_stages(distributions)
    stats = []
    for stage in order:
        figures = distribution_stats(*distributions[stage])
        links = _timing_links(f, stage, figures, *distributions[stage])
        stats.append({"stage": stage, "known": stage in STAGE_INDEX} | figures | {"links": links})
    names = labels(s["stage"] + ("" if s["known"] else " (unknown)") for s in stats)
    for s, name in zip(stats, names, strict=True):
        s["label"] = name
    # A short title: on a phone's short plot a longer one ran past the plot's edge.
    timing_axis = {"type": "log", "title": {"text": "duration (log scale)"},
                   "ticksuffix": " ms", "automargin": True}  # fmt: skip
    bars = [
        {"type": "bar", "name": label, "x": names, "y": [s[key] for s in stats],
         "customdata": [s["links"][key]["url"] for s in stats],
         "hovertemplate": f"%{{x}} {label}: %{{y:,.0f}} ms<extra></extra>"}
        for key, label in (("p50", "p50"), ("p95", "p95"), ("p99", "p99"))
    ]  # fmt: skip
    bars.append(
        {"type": "scatter", "mode": "markers", "name": "max", "x": names,
         "y": [s["max"] for s in stats], "marker": {"symbol": "line-ew-open", "size": 14},
         "customdata": [s["links"]["max"]["url"] for s in stats],
         "hovertemplate": "%{x} max: %{y:,.0f} ms<extra></extra>"}
    )  # fmt: skip
    percentiles = {
        "data": bars,
        "layout": _layout(barmode="group", yaxis=timing_axis, xaxis=_category_axis()),
    }
    distribution = {
        "data": [
            {
                "type": "box",
                "name": name,
                "x": [name],
                "q1": [s["p25"]],
                "median": [s["p50"]],
                "q3": [s["p75"]],
                "lowerfence": [s["min"]],
                "upperfence": [s["p99"]],
                "showlegend": False,
                "hoverinfo": "y",
            }
            for name, s in zip(names, stats, strict=True)
        ],  # fmt: skip
        "layout": _layout(yaxis=timing_axis, xaxis=_category_axis()),
    }
    notes = [
        "Percentiles by nearest rank over every timing of the window (p95: the smallest timing"
        " at least 95 % of them do not exceed). Box: min, quartiles and p99 per stage.",
        f"Counted: numeric timings from 0 ms up to a year ({MAX_STAGE_MS:,} ms); negative,"
        " longer and non-numeric values, and stage_timings that are not a JSON object, are left"
        " out.",
        *_rest_note(hidden_names, "stage names", f" ({hidden_timings:,} timings)"),
    ]
    data = {"stages": stats, "stages_not_shown": hidden_names}
    return ChartResult(data, [percentiles, distribution], notes, the_plan)


# -- 2. Throughput and outcomes -----------------------------------------------------------------


def _buckets(f: DashboardFilters) -> list[int]:
    """Bucket starts, aligned on multiples of the bucket size (round times): the first and last
    bucket may be cut by the window, see _bucket_range."""
    since, until = f.drawn
    size = f.bucket_ms
    return list(range(since // size * size, until, size)) if since < until else []


def _bucket_range(f: DashboardFilters, start: int) -> tuple[int, int]:
    """The instants a bucket counts: the bucket cut by the window, not by the axis (the last
    bucket drawn may reach past 9999-01-01, and counts the requests there)."""
    return max(start, f.since_ms), min(start + f.bucket_ms, f.until_ms)


def _axis_times(starts: list[int]) -> list[str]:
    """Bucket starts as wall-clock times in the site's time zone: Plotly draws date strings as
    given, with no time zone of its own."""
    return [
        timezone.localtime(datetime.fromtimestamp(ms / 1000, tz=UTC)).strftime("%Y-%m-%d %H:%M:%S")
        for ms in starts
    ]


def _series(f: DashboardFilters, kind: str, pick: Callable) -> tuple[list[int], dict, int]:
    """Bucket starts, per key (pick(row) → key, amount) the amounts of each bucket, and how
    many requests lie in the window but off the drawable axis (see DRAWABLE)."""
    starts = _buckets(f)
    index = {start: i for i, start in enumerate(starts)}
    series: dict[object, list[int]] = {}
    off_axis = 0
    for row in f.facts(kind, f.bucket_ms):
        key, amount = pick(row)
        i = index.get(row[0])
        if i is None:
            off_axis += row[4]
        else:
            series.setdefault(key, [0] * len(starts))[i] += amount
    return starts, series, off_axis


def _off_axis_note(off_axis: int) -> list[str]:
    if not off_axis:
        return []
    return [
        f"{off_axis:,} requests of the window are dated where the time axis cannot reach (before"
        " the year 1000, or in buckets from 9999-01-01 on): counted, not drawn."
    ]


def _bounded_series(series: dict, order: list, buckets: int) -> tuple[list, list[int] | None]:
    """The first MAX_CATEGORIES keys of `order`, and the others' amounts summed per bucket
    (None when there are none)."""
    shown, rest = order[:MAX_CATEGORIES], order[MAX_CATEGORIES:]
    if not rest:
        return shown, None
    return shown, [sum(series[k][i] for k in rest) for i in range(buckets)]


def _others_trace(name: str, x: list, y: list[int]) -> dict:
    """The bar of what a bounded chart does not draw one by one: counted, not a way in (it
    is many values at once)."""
    return {"type": "bar", "name": name, "x": x, "y": y, "marker": {"color": OTHER_COLOUR}}


def throughput(f: DashboardFilters) -> ChartResult:
    size = f.bucket_ms
    # Rows (bucket, source, key, sub, n, total, last): "source" facts have the status as sub.
    starts, counts, off_axis = _series(f, "source", lambda row: (row[3], row[4]))
    statuses = [s for s in STATUSES if s in counts]
    statuses += sorted(set(counts) - set(STATUSES), key=key_order)
    statuses, others = _bounded_series(counts, statuses, len(starts))
    totals = [sum(c[i] for c in counts.values()) for i in range(len(starts))]
    failed = counts.get("failed", [0] * len(starts))
    rates = [round(fl / t, 4) if t else None for fl, t in zip(failed, totals, strict=True)]
    x = _axis_times(starts)
    names = labels(statuses)
    # The failure rate is told by each bar's tooltip: its line takes no hover or click, which
    # would otherwise go to the line's nearest marker instead of the bar under the pointer
    # (7 of 25 clicks on bars did nothing).
    rate_text = ["" if r is None else f" · failure rate {r:.1%}" for r in rates]
    traces = [
        {
            "type": "bar",
            "name": name,
            "x": x,
            "y": counts[status],
            "marker": {"color": STATUS_COLOURS.get(status, OTHER_COLOUR)},
            "customdata": [f.list_url(*_bucket_range(f, start), status=status) for start in starts],
            "hovertext": rate_text,
            "hovertemplate": f"{name}: %{{y}}%{{hovertext}}<extra></extra>",
        }
        for status, name in zip(statuses, names, strict=True)
    ]
    if others:
        traces.append(_others_trace("other statuses", x, others))
    traces.append(
        {"type": "scatter", "mode": "lines+markers", "name": "failure rate", "x": x, "y": rates,
         "yaxis": "y2", "line": {"color": STATUS_COLOURS["failed"], "dash": "dot"},
         "hoverinfo": "skip", "cliponaxis": False}  # a marker at 0 % or 100 % drawn whole
    )  # fmt: skip
    figure = {
        "data": traces,
        "layout": _layout(
            xaxis=TIME_AXIS,
            yaxis=_count_axis("requests", max(totals, default=0)),
            yaxis2=_rate_axis(max((r for r in rates if r is not None), default=0)),
        ),
    }
    data = {
        "bucket_ms": size,
        "buckets": [
            {
                "start": _bucket_range(f, start)[0],
                "end": _bucket_range(f, start)[1],
                "total": totals[i],
                "failure_rate": rates[i],
            }
            | {value_label(s): counts[s][i] for s in statuses}  # keys: whole values
            | ({"other statuses": others[i]} if others else {})
            for i, start in enumerate(starts)
        ],  # fmt: skip
        "off_axis": off_axis,
    }
    notes = [
        "Failure rate: failed requests ÷ all requests of the bucket (still processing included).",
        *_off_axis_note(off_axis),
    ]
    return ChartResult(data, [figure], notes, f.plan_for_buckets(size))


# -- 3. Failures --------------------------------------------------------------------------------


def failures(f: DashboardFilters) -> ChartResult:
    stage_counts: Counter = Counter()
    by_signature: dict[tuple, list[int]] = {}
    for _, _, stage, sig, n, _, last in f.facts("failure"):
        stage_counts[stage] += n
        seen = by_signature.setdefault((stage, sig), [0, last])
        seen[0], seen[1] = seen[0] + n, max(seen[1], last)
    kept, hidden = _most(stage_counts, MAX_CATEGORIES)
    by_stage = sorted(
        ((stage, stage_counts[stage]) for stage in kept),
        key=lambda r: (STAGE_INDEX.get(r[0], len(STAGES)), key_order(r[0])),
    )
    top = sorted(  # ties by stage and signature, so stored and live reads list the same
        by_signature.items(),
        key=lambda kv: (-kv[1][0], -kv[1][1], key_order(kv[0][0]), key_order(kv[0][1])),
    )[:TOP]
    signatures = [(stage, sig, count, last) for (stage, sig), (count, last) in top]
    urls = [f.list_url(status="failed", error_stage=stage) for stage, _ in by_stage]
    counts = [count for _, count in by_stage]
    figure = {
        "data": [
            {
                "type": "bar",
                "name": "failures",
                "x": labels(stage for stage, _ in by_stage),
                "y": counts,
                "marker": {"color": STATUS_COLOURS["failed"]},
                "customdata": urls,
                "hovertemplate": "%{x}: %{y} failures<extra></extra>",
            }
        ],
        "layout": _layout(
            yaxis=_count_axis("failed requests", max(counts, default=0)),
            xaxis=_category_axis("error stage"),
        ),
    }
    data = {
        "by_stage": [
            {"error_stage": s, "count": c, "url": url}
            for (s, c), url in zip(by_stage, urls, strict=True)
        ],
        "signatures": [
            {
                "error_stage": stage,
                "error_stage_label": value_label(stage),
                "signature": sig,
                "count": count,
                "last_seen": last,
                "url": f.list_url(status="failed", error_stage=stage, signature=sig),
            }
            for stage, sig, count, last in signatures
        ],
    }
    notes = _rest_note(len(stage_counts) - len(kept), "error stages", f" ({hidden:,} failures)")
    return ChartResult(data, [figure], notes)


# -- 4. Hook effectiveness ----------------------------------------------------------------------


HOOK_STATES = ("matched", "fired", "handled", "shared")


def _hook_notes(unattributed: Counter) -> list[str]:
    notes = [
        "Handled: hooks_handled is a number other than 0 and hooks_context names this hook"
        ' ({"handled_by": …}). Shared: a handled request whose context names none of the hooks'
        " that fired; each of them gets the shared credit, so shared counts add up to more than"
        " the requests. Handle rate: (handled + shared) ÷ fired.",
        "⚠ marks a hook that matches often but rarely fires, or fires but never handles.",
    ]
    if unattributed["handled, none fired"]:
        notes.append(f"{unattributed['handled, none fired']:,} handled requests fired no hook.")
    if unattributed["unreadable flag"]:
        notes.append(
            f"{unattributed['unreadable flag']:,} requests have an unreadable hooks_handled flag"
            " (text, not a number): counted as not handled."
        )
    return notes


def hooks(f: DashboardFilters) -> ChartResult:
    counts: dict[str, Counter] = {}
    unattributed: Counter = Counter()  # rows no hook can take, by why (rollups._hook_facts)
    for _, _, hook, state, n, _, _ in f.facts("hooks"):
        if hook is None:
            unattributed[state] += n
        else:
            counts.setdefault(hook, Counter())[state] += n
    kept, _ = _most({hook: c["matched"] + c["fired"] for hook, c in counts.items()},
                    MAX_CATEGORIES)  # fmt: skip
    table = []
    for hook in kept:
        c = {state: counts[hook][state] for state in HOOK_STATES}
        credited = c["handled"] + c["shared"]
        fire_rate = c["fired"] / c["matched"] if c["matched"] else None
        handle_rate = credited / c["fired"] if c["fired"] else None
        rarely_fires = c["matched"] >= 5 and (fire_rate or 0) < 0.2
        never_handles = c["fired"] >= 5 and not credited
        table.append(
            {"hook": hook, **c, "fire_rate": fire_rate, "handle_rate": handle_rate,
             "weak": rarely_fires or never_handles,
             "urls": {"matched": f.list_url(hook=hook)}
             | {state: f.list_url(hook=hook, hook_state=state) for state in HOOK_STATES[1:]}}
        )  # fmt: skip
    names = [n + (" ⚠" if h["weak"] else "") for n, h in zip(labels(kept), table, strict=True)]
    peak = max((h[state] for h in table for state in HOOK_STATES), default=0)
    figure = {
        "data": [
            {
                "type": "bar",
                "orientation": "h",
                "name": key,
                "y": names,
                "x": [h[key] for h in table],
                "customdata": [h["urls"][key] for h in table],
                "marker": {"color": colour},
                "hovertemplate": f"%{{y}} {key}: %{{x}}<extra></extra>",
            }
            for key, colour in HOOK_COLOURS
        ],
        "layout": _layout(barmode="group", height=max(260, 80 + 56 * len(table)),
                          xaxis=_count_axis("requests", peak),
                          yaxis={"autorange": "reversed", "automargin": True,
                                 "type": "category"}),
    }  # fmt: skip
    notes = _hook_notes(unattributed)
    notes += _rest_note(len(counts) - len(kept), "hooks", ", with fewer requests,")
    data = {"hooks": table, "handled_no_hook_fired": unattributed["handled, none fired"],
            "unreadable_handled_flag": unattributed["unreadable flag"]}  # fmt: skip
    return ChartResult(data, [figure], notes)


# -- 5. Sources and principals ------------------------------------------------------------------


def _status_splits(f: DashboardFilters) -> dict[str, dict]:
    """Requests by source (all of them) and by principal (the top ones), split by status."""
    by_source: dict[object, Counter] = {}
    for _, _, source, status, count, _, _ in f.facts("source"):
        by_source.setdefault(source, Counter())[status] += count
    by_principal = rollups.top_keys(f.scope, f.plan, "principal", TOP)
    return {
        "event_source": {k: dict(v) for k, v in by_source.items()},
        "principal_id": {k: dict(v) for k, v in by_principal.items()},
    }


def _split_figure(f: DashboardFilters, split: dict, keys: list, param: str, title: str) -> dict:
    """Stacked bars of requests per key, by status, each linking to exactly its requests."""
    by_status: Counter = Counter()
    for k in keys:
        by_status.update(split[k])
    odd, _ = _most({s: n for s, n in by_status.items() if s not in STATUSES}, len(by_status))
    statuses = [s for s in STATUSES if s in by_status] + odd
    statuses, rest = statuses[:MAX_CATEGORIES], statuses[MAX_CATEGORIES:]
    x = labels(keys)
    peak = max((sum(split[k].values()) for k in keys), default=0)
    traces = [
        {
            "type": "bar",
            "name": name,
            "x": x,
            "y": [split[k].get(status, 0) for k in keys],
            "marker": {"color": STATUS_COLOURS.get(status, OTHER_COLOUR)},
            "customdata": [f.list_url(**{param: k, "status": status}) for k in keys],
            "hovertemplate": f"%{{x}} {name}: %{{y}}<extra></extra>",
        }
        for status, name in zip(statuses, labels(statuses), strict=True)
    ]
    if rest:
        others = [sum(split[k].get(s, 0) for s in rest) for k in keys]
        traces.append(_others_trace("other statuses", x, others))
    return {
        "data": traces,
        "layout": _layout(xaxis=_category_axis(title), yaxis=_count_axis("requests", peak)),
    }


def sources(f: DashboardFilters) -> ChartResult:
    figures, data = [], {}
    splits = _status_splits(f)
    window_total = sum(sum(v.values()) for v in splits["event_source"].values())
    notes = []
    for column, param, title, limit in (
        ("event_source", "source", "event source", MAX_CATEGORIES),
        ("principal_id", "principal", "principal", TOP),
    ):
        split = splits[column]
        keys, _ = _most({k: sum(v.values()) for k, v in split.items()}, limit)
        figures.append(_split_figure(f, split, keys, param, title))
        data[column] = [
            {column: k, "total": sum(split[k].values()),
             "by_status": {value_label(s): n for s, n in split[k].items()},
             "failure_rate": split[k].get("failed", 0) / (sum(split[k].values()) or 1)}
            for k in keys
        ]  # fmt: skip
        rest = window_total - sum(row["total"] for row in data[column])
        if rest:
            notes.append(f"{rest:,} more requests, from {title}s outside the top {limit},"
                         " are not drawn.")  # fmt: skip
    return ChartResult(data, figures, notes)


# -- 6. Tokens ----------------------------------------------------------------------------------


def tokens(f: DashboardFilters) -> ChartResult:
    size = f.bucket_ms
    unreadable = Counter()

    def model_and_tokens(row):  # and counts the requests whose token count is unreadable
        if row[3] == "unreadable":
            unreadable["requests"] += row[4]
        return row[2], row[5]

    starts, by_model, off_axis = _series(f, "tokens", model_and_tokens)
    # A model whose requests all have unreadable token counts has no tokens to draw.
    totals = {m: sum(v) for m, v in by_model.items() if any(v)}
    models, _ = _most(totals, len(totals))
    models, others = _bounded_series(by_model, models, len(starts))
    x = _axis_times(starts)
    names = labels(models)
    traces = [
        {"type": "bar", "name": name, "x": x, "y": by_model[model],
         "customdata": [f.list_url(*_bucket_range(f, start), model=model) for start in starts],
         "hovertemplate": f"{name}: %{{y:,}} tokens<extra></extra>"}
        for model, name in zip(models, names, strict=True)
    ]  # fmt: skip
    if others:
        traces.append(_others_trace("other models", x, others))
    peak = max((sum(v[i] for v in by_model.values()) for i in range(len(starts))), default=0)
    figure = {
        "data": traces,
        "layout": _layout(xaxis=TIME_AXIS, yaxis=_count_axis("tokens", peak)),
    }
    by_name = {value_label(model): by_model[model] for model in models}  # keys: whole values
    if others:
        by_name["other models"] = others
    data = {"bucket_ms": size, "models": by_name, "bucket_starts": starts, "off_axis": off_axis}
    notes = ["Tokens: agent_tokens_total of each request, where it is a whole number."]
    if unreadable["requests"]:
        notes.append(f"{unreadable['requests']:,} requests have a token count that is not a"
                     " whole number (12.5, text): they add no tokens.")  # fmt: skip
    notes += _off_axis_note(off_axis)
    data["unreadable_token_counts"] = unreadable["requests"]
    return ChartResult(data, [figure], notes, f.plan_for_buckets(size))


# -- 6b. Cost -----------------------------------------------------------------------------------


@dataclass
class ModelCosts:
    starts: list[int]
    by_model: dict  # priced model → USD of each bucket (Decimal)
    window: CostSum  # the whole window, priced and unpriced requests
    unpriced: Counter  # model without a price → requests
    off_axis: int = 0


def _priced_hours(f: DashboardFilters) -> list[tuple[int, object, int, TurnCost]]:
    """(hour, model, requests, cost) of the window: facts are read per hour (or finer) and each
    hour's sums priced at that hour's rates (see pipeline/costs.py for why a long-context band
    is summed apart)."""
    sums: dict[tuple, list[int]] = {}  # (hour, model, band) → [requests, prompt, completion]
    for bucket, _, model, sub, n, total, _ in f.facts("usage", min(f.bucket_ms, HOUR)):
        part, _, band = str(sub).partition(":")
        acc = sums.setdefault((bucket, model, band), [0, 0, 0])
        acc[0] += n if part == "prompt" else 0
        acc[1 if part == "prompt" else 2] += total or 0
    return [
        (hour, model, n, turn_cost(model, hour, TokenUsage(prompt, completion, calls=max(n, 1)),
                                   exact=False))
        for (hour, model, _), (n, prompt, completion) in sums.items()
    ]  # fmt: skip


def _model_costs(f: DashboardFilters) -> ModelCosts:
    size = f.bucket_ms
    starts = _buckets(f)
    index = {start: i for i, start in enumerate(starts)}
    costs = ModelCosts(starts, {}, CostSum("request"), Counter())
    for hour, model, n, cost in _priced_hours(f):
        costs.window.add(cost, n)
        i = index.get(hour // size * size)
        if not cost.priced:
            costs.unpriced[model] += n
        elif i is None:
            costs.off_axis += n
        else:
            costs.by_model.setdefault(model, [Decimal(0)] * len(starts))[i] += cost.amount
    return costs


def window_costs(windows: tuple[str, ...], now: int) -> tuple[dict[str, CostSum], list[str]]:
    """What the agent runs of preset windows ("24h", "30d") ending `now` cost, as the cost chart
    sums them: the longest window's hours are read once, and each window adds those from its
    start (a preset window starts on the hour). With what was left out, as a chart says it."""
    starts = {window: window_bounds(window, now)[0] for window in windows}
    longest = DashboardFilters.from_query({"since": str(min(starts.values())), "until": str(now)})
    hours = _priced_hours(longest)
    totals = {}
    for window, since in starts.items():
        totals[window] = total = CostSum("request")
        for hour, _, n, cost in hours:
            if hour >= since:
                total.add(cost, n)
    return totals, left_out_note(longest.plan)


def cost(f: DashboardFilters) -> ChartResult:
    c = _model_costs(f)
    models, _ = _most({m: sum(v) for m, v in c.by_model.items()}, len(c.by_model))
    models, others = _bounded_series(c.by_model, models, len(c.starts))
    x = _axis_times(c.starts)
    names = labels(models)
    traces = [
        {"type": "bar", "name": name, "x": x, "y": [float(a) for a in c.by_model[model]],
         "customdata": [f.list_url(*_bucket_range(f, start), model=model) for start in c.starts],
         "hovertemplate": "%{fullData.name}: $%{y:,.4f}<extra></extra>"}
        for model, name in zip(models, names, strict=True)
    ]  # fmt: skip
    if others:
        traces.append(_others_trace("other models", x, [float(a) for a in others]))
    figure = {
        "data": traces,
        "layout": _layout(
            xaxis=TIME_AXIS,
            yaxis={"title": {"text": "USD (≈)"}, "rangemode": "tozero", "tickprefix": "$",
                   "automargin": True},
        ),
    }  # fmt: skip
    by_name = {value_label(m): [usd(a) for a in c.by_model[m]] for m in models}  # whole values
    if others:
        by_name["other models"] = [usd(a) for a in others]
    unpriced = sorted(c.unpriced, key=lambda m: (-c.unpriced[m], key_order(m)))
    unpriced, unlisted = unpriced[:MAX_CATEGORIES], unpriced[MAX_CATEGORIES:]
    data = {
        "bucket_ms": f.bucket_ms,
        "bucket_starts": c.starts,
        "total": c.window.as_json(),
        "models": by_name,
        "unpriced": [
            {"model": m, "label": label, "requests": c.unpriced[m], "url": f.list_url(model=m)}
            for m, label in zip(unpriced, labels(unpriced), strict=True)
        ],
        "off_axis": c.off_axis,
    }
    notes = [
        f"Total for the window: {c.window.label}. ≈: the ledger has prompt and completion tokens"
        " per request, not cache tokens; prompts are priced as uncached input, at each model's"
        " prices of the hour (genai-prices, or MODEL_PRICES)."
    ]
    if unpriced:
        requests, models = sum(c.unpriced.values()), len(c.unpriced)
        notes.append(
            f"{requests:,} request{'s' * (requests != 1)} of {models} model{'s' * (models != 1)}"
            f" without a known price are not counted: {', '.join(labels(unpriced[:5]))}"
            + (", …" if models > 5 else "")
            + "."
        )
    hidden = sum(c.unpriced[m] for m in unlisted)
    notes += _rest_note(len(unlisted), "models without a price", f" ({hidden:,} requests)")
    notes += _off_axis_note(c.off_axis)
    return ChartResult(data, [figure], notes, f.plan_for_buckets(min(f.bucket_ms, HOUR)))


# -- 7. Delivery --------------------------------------------------------------------------------

# What a delivery flag says (pipeline.flags.FLAG_STATES): series name, JSON name, colour.
DELIVERY_STATES = (
    ("yes", "delivered", "delivered", STATUS_COLOURS["completed"]),
    ("no", "not delivered", "failed", STATUS_COLOURS["failed"]),
    ("unknown", "no flag", "unknown", OTHER_COLOUR),
    ("unreadable", "unreadable flag", "unreadable", STATUS_COLOURS["skipped"]),
)


def delivery(f: DashboardFilters) -> ChartResult:
    by_channel: dict[object, Counter] = {}
    for _, _, channel, state, n, _, _ in f.facts("delivery"):
        by_channel.setdefault(channel, Counter())[state] += n
    kept, hidden = _most({c: sum(v.values()) for c, v in by_channel.items()}, MAX_CATEGORIES)
    channels = sorted(kept, key=key_order)
    x = labels(channels)
    peak = max((sum(by_channel[c].values()) for c in channels), default=0)
    figure = {
        "data": [
            {"type": "bar", "name": name, "x": x, "y": [by_channel[c][state] for c in channels],
             "marker": {"color": colour},
             "customdata": [f.list_url(channel=c, delivered=state) for c in channels],
             "hovertemplate": f"%{{x}} {name}: %{{y}}<extra></extra>"}
            for state, name, _, colour in DELIVERY_STATES
            if any(by_channel[c][state] for c in channels)
        ],
        "layout": _layout(xaxis=_category_axis("channel"), yaxis=_count_axis("responses", peak)),
    }  # fmt: skip
    rows = []
    for channel in channels:
        c = by_channel[channel]
        rows.append({"channel": channel} | {key: c[state] for state, _, key, _ in DELIVERY_STATES}
                    | {"success_rate": c["yes"] / (c["yes"] + c["no"]) if c["yes"] + c["no"]
                       else None})  # fmt: skip
    notes = [
        "A response: a request with a delivery channel or a delivery flag."
        " Delivered: delivery_success is a number other than 0 (as SQLite reads it); not"
        " delivered: 0; no flag: NULL. Success rate: delivered ÷ (delivered + not delivered).",
    ]
    unreadable = sum(c["unreadable"] for c in by_channel.values())
    if unreadable:
        notes.append(f"{unreadable:,} responses have an unreadable delivery flag (text, not a"
                     " number): shown as “unreadable flag”.")  # fmt: skip
    notes += _rest_note(len(by_channel) - len(kept), "channels", f" ({hidden:,} responses)")
    return ChartResult({"channels": rows}, [figure], notes)


CHARTS = {
    chart.slug: chart
    for chart in (
        Chart("throughput", "Throughput and outcomes",
              "Requests per bucket by status, with the failure rate.", throughput),
        Chart("failures", "Failures",
              "Failed requests by the stage that failed, and the most common errors.", failures),
        Chart("stage-timings", "Stage timings",
              "How long each stage takes: p50, p95, p99 and max. Click a bar or a figure to"
              " list the requests that took at least that long, slowest first.", stage_timings),
        Chart("hooks", "Hook effectiveness", "Per hook: matched → fired → handled.", hooks),
        Chart("sources", "Sources and principals",
              "Requests by event source and by principal, by status.", sources),
        Chart("tokens", "Tokens", "Agent tokens over time, by model.", tokens),
        Chart("cost", "Cost", "What the agent runs cost over time, by model (≈).", cost),
        Chart("delivery", "Delivery", "Responses delivered or not, by channel.", delivery),
    )
}  # fmt: skip


def build_chart(chart: Chart, f: DashboardFilters) -> ChartResult:
    """A chart, with what it left out said first."""
    result = chart.build(f)
    result.notes = left_out_note(result.plan or f.plan) + result.notes
    for figure in result.figures:
        _unlink_empty_bars(figure)
    return result


def _unlink_empty_bars(figure: dict) -> None:
    """A bar of nothing leads nowhere: drawn at zero height beside others of its category, its
    link would select rows the chart does not count (the delivery chart's "(none)" channel
    without a flag: every request that is not a response)."""
    for trace in figure["data"]:
        if trace["type"] == "bar" and "customdata" in trace:
            values = trace["x" if trace.get("orientation") == "h" else "y"]
            links = trace["customdata"]
            trace["customdata"] = [url if n else None for n, url in zip(values, links, strict=True)]


def dashboard_data(f: DashboardFilters) -> dict:
    """The dashboard's JSON twin: every chart's data for the same window and filters (a chart
    that ran out of time says so in its place)."""
    summarised, total = f.summarising(f.whole_plan)  # the charts' own plan: one census
    charts = {}
    for slug, chart in CHARTS.items():
        try:
            result = build_chart(chart, f)
        except LedgerQueryTimeout as error:
            charts[slug] = {"title": chart.title, "error": str(error)}
        else:
            charts[slug] = {"title": chart.title, "data": result.data, "notes": result.notes}
    return {
        "window": f.window,
        "since": f.since_ms,
        "until": f.until_ms,
        "source": f.source or None,
        "persona": f.persona or None,
        "errors": f.errors,
        "summarised_hours": summarised,
        "unsummarised_hours": total - summarised,
        "charts": charts,
    }
