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
from functools import cached_property
from urllib.parse import urlencode

import numpy as np
from django.urls import reverse
from django.utils import timezone

from ledgerweb.params import NOT_APPLIED, problem, reject
from ledgerweb.timestamps import ms_to_datetime, now_ms
from pipeline import rollups
from pipeline.filters import WINDOWS, RequestFilters, window_bounds
from pipeline.rollups import HOUR
from pipeline.stages import STAGE_INDEX, STAGES, STATUSES

STATUS_COLOURS = {
    "completed": "#2f9e68",
    "failed": "#d64545",
    "skipped": "#d9a22b",
    "processing": "#7b5cd6",
}
OTHER_COLOUR = "#8a8f98"
HOOK_COLOURS = (("matched", "#8a8f98"), ("fired", "#2b8fd9"), ("handled", "#2f9e68"))
TOP = 10
DEFAULT_WINDOW = "24h"
# The longest window a chart draws: 60 buckets of 30 days (see bucket_ms). Longer ones would
# draw thousands of empty buckets (since=0&until=9999-12-31: 97,000 of them, 10 MB).
MAX_SPAN_DAYS = 60 * 30
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
        if f.until_ms - f.since_ms > MAX_SPAN_DAYS * 24 * HOUR:  # since=0&until=9999-12-31
            days = f"{MAX_SPAN_DAYS:,} days"
            why = f"more than {days} before the window's end"
            reject(params, "since", why, f.errors, f"showing the last {days}")
            f.since_ms = f.until_ms - MAX_SPAN_DAYS * 24 * HOUR
        return f

    @cached_property
    def scope(self) -> rollups.Scope:
        return rollups.Scope(self.since_ms, self.until_ms, self.source, self.persona)

    @cached_property
    def plan(self) -> rollups.Plan:
        return rollups.plan(self.since_ms, self.until_ms)

    def unsummarised_hours(self) -> int:
        """Hours of the window read live because their rollups are missing (not counting the
        window's partial first and last hour)."""
        live_ms = sum(end - start for start, end in self.plan.live)
        return max(0, live_ms // HOUR - 2)

    def facts(self, kind: str, bucket_ms: int | None = None) -> list[tuple]:
        """(bucket, source, key, sub, n, total, last) rows of one kind over the window. Stored
        hours cannot be cut into smaller buckets: such a chart reads its window live."""
        the_plan = self.plan
        if bucket_ms and bucket_ms % HOUR:
            the_plan = rollups.Plan(stored=[], live=[(self.since_ms, self.until_ms)])
        return rollups.facts(self.scope, the_plan, kind, bucket_ms)

    def list_url(self, since_ms: int | None = None, until_ms: int | None = None, **extra) -> str:
        """The request list selecting exactly the rows of a chart's bar."""
        query = {
            "since": since_ms if since_ms is not None else self.since_ms,
            "until": until_ms if until_ms is not None else self.until_ms,
            "source": self.source,
            "persona": self.persona,
        } | extra
        query = {k: v for k, v in query.items() if v not in ("", None)}
        return reverse("pipeline:requests") + "?" + urlencode(query)

    def query(self, **changes) -> str:
        values = {"window": self.window, "source": self.source, "persona": self.persona}
        if self.window == "custom":
            values |= {"since": self.since_ms, "until": self.until_ms}
        values |= changes
        return urlencode({k: v for k, v in values.items() if v not in ("", None)})

    @property
    def bucket_ms(self) -> int:
        """At most 60 buckets on round sizes, whole hours from a 12-hour window up (so stored
        hourly rollups fill them: 24 h → hours, 7 d → 3 h, 30 d → 12 h)."""
        span = self.until_ms - self.since_ms
        for size in (60_000, 120_000, 300_000, 900_000, 1_800_000, HOUR, 3 * HOUR, 6 * HOUR,
                     12 * HOUR, 24 * HOUR, 7 * 24 * HOUR):  # fmt: skip
            if span / size <= 60 and (size >= HOUR or span < 12 * HOUR):
                return size
        return 30 * 24 * HOUR


@dataclass
class ChartResult:
    data: dict
    figures: list[dict]
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Chart:
    slug: str
    title: str
    description: str
    build: Callable[[DashboardFilters], ChartResult]


def _layout(**extra) -> dict:
    return {
        "margin": {"l": 56, "r": 56, "t": 8, "b": 48},
        "height": 300,
        "barmode": "stack",
        "legend": {"orientation": "h", "y": -0.2},
        "hovermode": "closest",
    } | extra


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


def stage_timings(f: DashboardFilters) -> ChartResult:
    distributions = rollups.timing_distributions(f.scope, f.plan)
    order = sorted(distributions, key=lambda s: (STAGE_INDEX.get(s, len(STAGES)), s))
    stats = [
        {"stage": stage, "known": stage in STAGE_INDEX} | distribution_stats(*distributions[stage])
        for stage in order
    ]
    names = [s["stage"] + ("" if s["known"] else " (unknown)") for s in stats]
    bars = [
        {"type": "bar", "name": label, "x": names, "y": [s[key] for s in stats],
         "hovertemplate": f"%{{x}} {label}: %{{y:,.0f}} ms<extra></extra>"}
        for key, label in (("p50", "p50"), ("p95", "p95"), ("p99", "p99"))
    ]  # fmt: skip
    bars.append(
        {"type": "scatter", "mode": "markers", "name": "max", "x": names,
         "y": [s["max"] for s in stats], "marker": {"symbol": "line-ew-open", "size": 14}}
    )  # fmt: skip
    percentiles = {
        "data": bars,
        "layout": _layout(barmode="group", yaxis={"type": "log", "title": "ms (log scale)"}),
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
        "layout": _layout(yaxis={"type": "log", "title": "ms (log scale)"}),
    }
    notes = ["Box: min, quartiles and p99 per stage. Only valid numeric timings are counted."]
    return ChartResult({"stages": stats}, [percentiles, distribution], notes)


# -- 2. Throughput and outcomes -----------------------------------------------------------------


def _buckets(f: DashboardFilters) -> list[int]:
    """Bucket starts, aligned on multiples of the bucket size (round times): the first and last
    bucket may be cut by the window, see _bucket_range."""
    size = f.bucket_ms
    return list(range(f.since_ms // size * size, f.until_ms, size))


def _bucket_range(f: DashboardFilters, start: int) -> tuple[int, int]:
    return max(start, f.since_ms), min(start + f.bucket_ms, f.until_ms)


def _axis_times(starts: list[int]) -> list[str]:
    """Bucket starts as wall-clock times in the site's time zone: Plotly draws date strings as
    given, with no time zone of its own."""
    return [timezone.localtime(ms_to_datetime(ms)).strftime("%Y-%m-%d %H:%M:%S") for ms in starts]


def _series(f: DashboardFilters, kind: str, pick: Callable) -> tuple[list[int], dict]:
    """Bucket starts, and per key (pick(row) → key, amount) the amounts of each bucket."""
    starts = _buckets(f)
    index = {start: i for i, start in enumerate(starts)}
    series: dict[str, list[int]] = {}
    for row in f.facts(kind, f.bucket_ms):
        key, amount = pick(row)
        series.setdefault(key, [0] * len(starts))[index[row[0]]] += amount
    return starts, series


def throughput(f: DashboardFilters) -> ChartResult:
    size = f.bucket_ms
    # Rows (bucket, source, key, sub, n, total, last): "source" facts have the status as sub.
    starts, counts = _series(f, "source", lambda row: (row[3], row[4]))
    statuses = [s for s in STATUSES if s in counts] + sorted(set(counts) - set(STATUSES))
    totals = [sum(counts[s][i] for s in statuses) for i in range(len(starts))]
    failed = counts.get("failed", [0] * len(starts))
    rates = [round(fl / t, 4) if t else None for fl, t in zip(failed, totals, strict=True)]
    x = _axis_times(starts)
    traces = [
        {
            "type": "bar",
            "name": status,
            "x": x,
            "y": counts[status],
            "marker": {"color": STATUS_COLOURS.get(status, OTHER_COLOUR)},
            "customdata": [f.list_url(*_bucket_range(f, start), status=status) for start in starts],
            "hovertemplate": f"{status}: %{{y}}<extra></extra>",
        }
        for status in statuses
    ]
    traces.append(
        {"type": "scatter", "mode": "lines+markers", "name": "failure rate", "x": x, "y": rates,
         "yaxis": "y2", "line": {"color": STATUS_COLOURS["failed"], "dash": "dot"},
         "hovertemplate": "failure rate %{y:.1%}<extra></extra>"}
    )  # fmt: skip
    figure = {
        "data": traces,
        "layout": _layout(
            xaxis={"type": "date"},
            yaxis={"title": "requests"},
            yaxis2={
                "overlaying": "y",
                "side": "right",
                "tickformat": ".0%",
                "rangemode": "tozero",
                "showgrid": False,
            },
        ),  # fmt: skip
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
            | {s: counts[s][i] for s in statuses}
            for i, start in enumerate(starts)
        ],  # fmt: skip
    }
    return ChartResult(data, [figure])


# -- 3. Failures --------------------------------------------------------------------------------


def failures(f: DashboardFilters) -> ChartResult:
    stage_counts: Counter = Counter()
    by_signature: dict[tuple[str, str], list[int]] = {}
    for _, _, stage, sig, n, _, last in f.facts("failure"):
        stage_counts[stage] += n
        seen = by_signature.setdefault((stage, sig), [0, last])
        seen[0], seen[1] = seen[0] + n, max(seen[1], last)
    by_stage = sorted(
        stage_counts.items(), key=lambda r: (STAGE_INDEX.get(r[0], len(STAGES)), r[0])
    )
    top = sorted(by_signature.items(), key=lambda kv: (-kv[1][0], -kv[1][1]))[:TOP]
    signatures = [(stage, sig, count, last) for (stage, sig), (count, last) in top]
    labels = [stage or "(no error_stage)" for stage, _ in by_stage]
    figure = {
        "data": [
            {
                "type": "bar",
                "name": "failures",
                "x": labels,
                "y": [count for _, count in by_stage],
                "marker": {"color": STATUS_COLOURS["failed"]},
                "customdata": [
                    f.list_url(status="failed", error_stage=stage) if stage else None
                    for stage, _ in by_stage
                ],
                "hovertemplate": "%{x}: %{y} failures<extra></extra>",
            }
        ],
        "layout": _layout(yaxis={"title": "failed requests"}, xaxis={"automargin": True}),
    }
    data = {
        "by_stage": [{"error_stage": s or None, "count": c} for s, c in by_stage],
        "signatures": [
            {
                "error_stage": stage or None,
                "signature": sig,
                "count": count,
                "last_seen": last,
                "url": f.list_url(status="failed", error_stage=stage, signature=sig),
            }
            for stage, sig, count, last in signatures
        ],
    }
    return ChartResult(data, [figure])


# -- 4. Hook effectiveness ----------------------------------------------------------------------


def hooks(f: DashboardFilters) -> ChartResult:
    counts: dict[str, dict[str, int]] = {}
    for _, _, hook, state, n, _, _ in f.facts("hooks"):
        counts.setdefault(hook, {"matched": 0, "fired": 0, "handled": 0})[state] += n
    table = []
    for hook, c in sorted(counts.items(), key=lambda kv: -kv[1]["matched"]):
        fire_rate = c["fired"] / c["matched"] if c["matched"] else None
        handle_rate = c["handled"] / c["fired"] if c["fired"] else None
        rarely_fires = c["matched"] >= 5 and (fire_rate or 0) < 0.2
        never_handles = c["fired"] >= 5 and not c["handled"]
        table.append(
            {"hook": hook, **c, "fire_rate": fire_rate, "handle_rate": handle_rate,
             "weak": rarely_fires or never_handles,
             "urls": {"matched": f.list_url(hook=hook),
                      "fired": f.list_url(hook=hook, hook_state="fired"),
                      "handled": f.list_url(hook=hook, hook_state="handled")}}
        )  # fmt: skip
    names = [h["hook"] + (" ⚠" if h["weak"] else "") for h in table]
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
        "layout": _layout(barmode="group", height=max(260, 60 + 42 * len(table)),
                          yaxis={"autorange": "reversed", "automargin": True}),
    }  # fmt: skip
    notes = ["⚠ marks a hook that matches often but rarely fires, or fires but never handles."]
    return ChartResult({"hooks": table}, [figure], notes)


# -- 5. Sources and principals ------------------------------------------------------------------


def _status_splits(f: DashboardFilters) -> dict[str, dict]:
    """Requests by source (all of them) and by principal (the top ones), split by status."""
    by_source: dict[str, Counter] = {}
    for _, _, source, status, count, _, _ in f.facts("source"):
        by_source.setdefault(source, Counter())[status] += count
    by_principal = rollups.top_keys(f.scope, f.plan, "principal", TOP)
    return {
        "event_source": {k: dict(v) for k, v in by_source.items()},
        "principal_id": {k: dict(v) for k, v in by_principal.items()},
    }


def _top(split: dict[str, dict[str, int]], limit: int | None) -> list:
    """Keys by total requests, most first (ties by key), as the old ORDER BY 2 DESC, 1 did."""
    keys = sorted(split, key=lambda k: (-sum(split[k].values()), str(k)))
    return keys[:limit] if limit else keys


def sources(f: DashboardFilters) -> ChartResult:
    figures, data = [], {}
    splits = _status_splits(f)
    for column, param, title, limit in (
        ("event_source", "source", "event source", None),
        ("principal_id", "principal", "principal", TOP),
    ):
        split = splits[column]
        keys = _top(split, limit)
        statuses = [s for s in STATUSES if any(s in split[k] for k in keys)]
        statuses += sorted({s for k in keys for s in split[k]} - set(STATUSES))
        figures.append(
            {
                "data": [
                    {
                        "type": "bar",
                        "name": status,
                        "x": [str(k) for k in keys],
                        "y": [split[k].get(status, 0) for k in keys],
                        "marker": {"color": STATUS_COLOURS.get(status, OTHER_COLOUR)},
                        "customdata": [f.list_url(**{param: k, "status": status}) for k in keys],
                    }
                    for status in statuses
                ],
                "layout": _layout(xaxis={"title": title, "automargin": True}),
            }
        )
        data[column] = [
            {column: k, "total": sum(split[k].values()), "by_status": split[k],
             "failure_rate": split[k].get("failed", 0) / (sum(split[k].values()) or 1)}
            for k in keys
        ]  # fmt: skip
    return ChartResult(data, figures, [f"Principals: the top {TOP} by requests."])


# -- 6. Tokens ----------------------------------------------------------------------------------


def tokens(f: DashboardFilters) -> ChartResult:
    size = f.bucket_ms
    starts, by_model = _series(f, "tokens", lambda row: (row[2], row[5]))  # model, token sum
    models = sorted(by_model, key=lambda m: -sum(by_model[m]))
    figure = {
        "data": [
            {"type": "bar", "name": model, "x": _axis_times(starts), "y": by_model[model],
             "customdata": [f.list_url(*_bucket_range(f, start), model=model)
                            for start in starts],
             "hovertemplate": f"{model}: %{{y:,}} tokens<extra></extra>"}
            for model in models
        ],
        "layout": _layout(xaxis={"type": "date"}, yaxis={"title": "tokens"}),
    }  # fmt: skip
    data = {"bucket_ms": size, "models": {m: by_model[m] for m in models},
            "bucket_starts": starts}  # fmt: skip
    return ChartResult(data, [figure])


# -- 7. Delivery --------------------------------------------------------------------------------


def delivery(f: DashboardFilters) -> ChartResult:
    by_channel: dict[str, Counter] = {}
    for _, _, channel, state, n, _, _ in f.facts("delivery"):
        by_channel.setdefault(channel, Counter())[state] += n
    rows = [
        (channel, c["yes"], c["no"], c["unknown"])
        for channel, c in sorted(by_channel.items(), key=lambda kv: kv[0])
    ]
    channels = [str(r[0]) for r in rows]
    figure = {
        "data": [
            {"type": "bar", "name": "delivered", "x": channels, "y": [r[1] for r in rows],
             "marker": {"color": STATUS_COLOURS["completed"]},
             "customdata": [f.list_url(channel=c, delivered="yes") for c in channels]},
            {"type": "bar", "name": "not delivered", "x": channels, "y": [r[2] for r in rows],
             "marker": {"color": STATUS_COLOURS["failed"]},
             "customdata": [f.list_url(channel=c, delivered="no") for c in channels]},
        ],
        "layout": _layout(yaxis={"title": "responses"}),
    }  # fmt: skip
    data = {
        "channels": [
            {"channel": c, "delivered": ok, "failed": bad, "unknown": unknown,
             "success_rate": ok / (ok + bad) if ok + bad else None}
            for c, (_, ok, bad, unknown) in zip(channels, rows, strict=True)
        ]
    }  # fmt: skip
    return ChartResult(data, [figure])


CHARTS = {
    chart.slug: chart
    for chart in (
        Chart("throughput", "Throughput and outcomes",
              "Requests per bucket by status, with the failure rate.", throughput),
        Chart("failures", "Failures",
              "Failed requests by the stage that failed, and the most common errors.", failures),
        Chart("stage-timings", "Stage timings",
              "How long each stage takes: p50, p95, p99 and max.", stage_timings),
        Chart("hooks", "Hook effectiveness", "Per hook: matched → fired → handled.", hooks),
        Chart("sources", "Sources and principals",
              "Requests by event source and by principal, by status.", sources),
        Chart("tokens", "Tokens", "Agent tokens over time, by model.", tokens),
        Chart("delivery", "Delivery", "Responses delivered or not, by channel.", delivery),
    )
}  # fmt: skip
