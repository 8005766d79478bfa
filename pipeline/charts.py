"""The pipeline dashboard's charts: each an aggregate query bounded by a time window on the
started_at index, its data (the JSON twin) and a Plotly figure built here as a plain dict.

Every bar a person can click carries the request-list URL that selects exactly the rows it counts
(the same window, the same filters), so a chart is also a way into the list.
"""

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urlencode

from django.urls import reverse
from django.utils import timezone

from ledgerweb import sqlite
from ledgerweb.timestamps import ms_to_datetime, now_ms
from pipeline.filters import WINDOWS, RequestFilters
from pipeline.signatures import SQL_FUNCTION
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
# A stage timing above this (a year) is junk, not a duration: 1e400 in the JSON reads as inf.
MAX_STAGE_MS = 365 * 86_400_000


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
        request_filters = RequestFilters.from_query(params, default_window="24h")
        now = now_ms()
        f = cls(
            window=request_filters.window or "24h",
            since_ms=request_filters.since_ms or now - WINDOWS["24h"],
            until_ms=request_filters.until_ms or now,
            source=params.get("source", "").strip(),
            persona=params.get("persona", "").strip(),
            errors=request_filters.errors,
        )
        if f.until_ms <= f.since_ms:
            f.errors["until"] = "the window ends before it starts; showing the last 24 hours"
            f.since_ms, f.until_ms, f.window = now - WINDOWS["24h"], now, "24h"
        return f

    def where(self) -> tuple[str, list]:
        clauses, params = ["started_at >= %s", "started_at < %s"], [self.since_ms, self.until_ms]
        if self.source:
            clauses.append("event_source = %s")
            params.append(self.source)
        if self.persona:
            clauses.append("session_persona = %s")
            params.append(self.persona)
        return " AND ".join(clauses), params

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
        """About 24–60 buckets whatever the window, on round sizes."""
        span = self.until_ms - self.since_ms
        for size in (60_000, 120_000, 300_000, 900_000, 1_800_000, 3_600_000, 3 * 3_600_000,
                     6 * 3_600_000, 12 * 3_600_000, 86_400_000, 7 * 86_400_000):  # fmt: skip
            if span / size <= 60:
                return size
        return 30 * 86_400_000


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


def percentile(counts: list[tuple[float, int]], q: float) -> float | None:
    """The q-th percentile (nearest rank) of a distribution given as sorted (value, count)."""
    total = sum(c for _, c in counts)
    if not total:
        return None
    rank = max(1, math.ceil(q * total))
    seen = 0
    for value, count in counts:
        seen += count
        if seen >= rank:
            return value
    return counts[-1][0]


def stage_timings(f: DashboardFilters) -> ChartResult:
    where, params = f.where()
    items = sqlite.json_object_items("stage_timings")
    rows = sqlite.rows(
        f"""SELECT item.key, item.value, count(*) FROM nexus_requests, {items} AS item
            WHERE {where} AND item.type IN ('integer', 'real')
              AND item.value >= 0 AND item.value < %s
            GROUP BY item.key, item.value ORDER BY item.key, item.value""",
        [*params, MAX_STAGE_MS],
    )
    by_stage: dict[str, list[tuple[float, int]]] = {}
    for stage, value, count in rows:
        by_stage.setdefault(stage, []).append((value, count))
    order = sorted(by_stage, key=lambda s: (STAGE_INDEX.get(s, len(STAGES)), s))
    stats = []
    for stage in order:
        counts = by_stage[stage]
        stats.append(
            {
                "stage": stage,
                "known": stage in STAGE_INDEX,
                "count": sum(c for _, c in counts),
                "p25": percentile(counts, 0.25),
                "p50": percentile(counts, 0.50),
                "p75": percentile(counts, 0.75),
                "p95": percentile(counts, 0.95),
                "p99": percentile(counts, 0.99),
                "min": counts[0][0],
                "max": counts[-1][0],
            }
        )
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
    size = f.bucket_ms
    return list(range(f.since_ms, f.until_ms, size))


def _axis_times(starts: list[int]) -> list[str]:
    """Bucket starts as wall-clock times in the site's time zone: Plotly draws date strings as
    given, with no time zone of its own."""
    return [timezone.localtime(ms_to_datetime(ms)).strftime("%Y-%m-%d %H:%M:%S") for ms in starts]


def throughput(f: DashboardFilters) -> ChartResult:
    where, params = f.where()
    size = f.bucket_ms
    rows = sqlite.rows(
        f"""SELECT (started_at - %s) / %s AS bucket, status, count(*) FROM nexus_requests
            WHERE {where} GROUP BY bucket, status""",
        [f.since_ms, size, *params],
    )
    starts = _buckets(f)
    counts: dict[str, list[int]] = {}
    for bucket, status, count in rows:
        counts.setdefault(status, [0] * len(starts))[int(bucket)] += count
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
            "customdata": [
                f.list_url(start, min(start + size, f.until_ms), status=status) for start in starts
            ],
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
                "start": start,
                "end": min(start + size, f.until_ms),
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
    where, params = f.where()
    by_stage = sqlite.rows(
        f"""SELECT coalesce(error_stage, ''), count(*) FROM nexus_requests
            WHERE {where} AND status = 'failed' GROUP BY 1""",
        params,
    )
    by_stage.sort(key=lambda r: (STAGE_INDEX.get(r[0], len(STAGES)), r[0]))
    signatures = sqlite.rows(
        f"""SELECT coalesce(error_stage, ''), {SQL_FUNCTION}(error_message) AS sig, count(*),
                   max(started_at)
            FROM nexus_requests WHERE {where} AND status = 'failed'
            GROUP BY 1, 2 ORDER BY 3 DESC, 4 DESC LIMIT %s""",
        [*params, TOP],
    )
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


def hook_names(raw) -> set[str]:
    """The hook names of a hooks_* column: the strings of a valid JSON array, each once. The
    request list's hook filter matches exactly these (sqlite.json_array_has)."""
    if not isinstance(raw, str):
        return set()
    try:
        items = json.loads(raw)
    except (ValueError, RecursionError):
        return set()
    return {item for item in items if isinstance(item, str)} if isinstance(items, list) else set()


def hooks(f: DashboardFilters) -> ChartResult:
    where, params = f.where()
    counts: dict[str, dict[str, int]] = {}
    # One pass: the window holds few distinct (matched, fired, handled) combinations, each
    # parsed once here, instead of three json_each passes over every row.
    for matched, fired, handled, rows in sqlite.rows(
        f"""SELECT hooks_matched, hooks_fired, hooks_handled = 1, count(*) FROM nexus_requests
            WHERE {where} GROUP BY 1, 2, 3""",
        params,
    ):
        fired_names = hook_names(fired)
        for key, names in (
            ("matched", hook_names(matched)),
            ("fired", fired_names),
            ("handled", fired_names if handled else set()),
        ):
            for hook in names:
                counts.setdefault(hook, {"matched": 0, "fired": 0, "handled": 0})[key] += rows
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
    """Requests by source and by principal, each split by status, from ONE pass over the window
    (a grouped count per source × principal × status, summed up here)."""
    where, params = f.where()
    splits: dict[str, dict] = {"event_source": {}, "principal_id": {}}
    for source, principal, status, count in sqlite.rows(
        f"""SELECT event_source, principal_id, status, count(*) FROM nexus_requests
            WHERE {where} GROUP BY 1, 2, 3""",
        params,
    ):
        for column, key in (("event_source", source), ("principal_id", principal)):
            if key is not None:
                by_status = splits[column].setdefault(key, {})
                by_status[status] = by_status.get(status, 0) + count
    return splits


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
    where, params = f.where()
    size = f.bucket_ms
    rows = sqlite.rows(
        f"""SELECT (started_at - %s) / %s AS bucket, coalesce(agent_model, '(none)'),
                   sum(CASE WHEN typeof(agent_tokens_total) = 'integer'
                            THEN agent_tokens_total ELSE 0 END), count(*)
            FROM nexus_requests WHERE {where} AND agent_tokens_total IS NOT NULL
            GROUP BY 1, 2""",
        [f.since_ms, size, *params],
    )
    starts = _buckets(f)
    by_model: dict[str, list[int]] = {}
    for bucket, model, total, _ in rows:
        by_model.setdefault(model, [0] * len(starts))[int(bucket)] += total
    models = sorted(by_model, key=lambda m: -sum(by_model[m]))
    figure = {
        "data": [
            {"type": "bar", "name": model, "x": _axis_times(starts), "y": by_model[model],
             "customdata": [f.list_url(start, min(start + size, f.until_ms), model=model)
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
    where, params = f.where()
    rows = sqlite.rows(
        f"""SELECT delivery_channel,
                   sum(CASE WHEN delivery_success = 1 THEN 1 ELSE 0 END),
                   sum(CASE WHEN delivery_success = 0 THEN 1 ELSE 0 END),
                   sum(CASE WHEN delivery_success IS NULL THEN 1 ELSE 0 END)
            FROM nexus_requests WHERE {where} AND delivery_channel IS NOT NULL
            GROUP BY 1 ORDER BY 1""",
        params,
    )
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
