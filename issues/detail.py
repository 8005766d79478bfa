"""What an issue's page shows, what the inbox's rows link to, and a failed request's issue."""

from dataclasses import dataclass, field

from django.db.models import Count
from django.urls import reverse

from issues import lifecycle
from issues.figures import Figures, failures_after, issue_id
from issues.figures import read as read_figures
from issues.inbox import InboxFilters, Reading, Row
from issues.lifecycle import Refused, Status
from issues.models import Issue
from ledgerfacts.timestamps import now_ms
from ledgerweb import sqlite
from ledgerweb.sqlite import LedgerQueryTimeout
from pipeline import failure_window
from pipeline.failure_groups import text_value
from pipeline.filters import RequestFilters, value_query
from pipeline.signatures import signature

# Breakdowns of an issue's failures in the window: a name, the column, the request list's filter.
BREAKDOWNS = (
    ("channel", "event_source", "source"),
    ("persona", "session_persona", "persona"),
    ("model", "agent_model", "model"),
    ("principal", "principal_id", "principal"),
)
TOP_VALUES = 8
STACK_CHARS = 100_000  # of the newest request's stack; its page links the whole of it
NEWEST_SHOWN = 10
MERGE_CHOICES = 50  # issues offered as merge targets (the busiest of the window)


# -- Trend bars (geometry here, the templates only draw it) ---------------------------------------


@dataclass
class Bar:
    x: float
    y: float
    width: float
    height: float
    start: int  # the bucket's start, Unix ms
    n: int


def bars(points: list[tuple[int, int]], width: float = 120, height: float = 24) -> list[Bar]:
    """Bars for (bucket start, count) points in a width × height box, tallest reaching the top;
    a bucket with failures is at least one unit tall, so a single failure shows."""
    peak = max((n for _, n in points), default=0) or 1
    step = width / max(len(points), 1)
    out = []
    for i, (start, n) in enumerate(points):
        h = 0.0 if n == 0 else max(1.0, height * n / peak)
        out.append(
            Bar(
                round(i * step, 2),
                round(height - h, 2),
                round(step * 0.8, 2),
                round(h, 2),
                start,
                n,
            )
        )
    return out


@dataclass
class Trend:
    hourly: list[Bar]
    daily: list[Bar]

    @classmethod
    def of(cls, f: Figures, now: int, width: float = 120, height: float = 24) -> "Trend":
        return cls(
            bars(f.hourly_trend(now), width, height), bars(f.daily_trend(now), width, height)
        )


# -- The inbox's rows: their newest requests ------------------------------------------------------


def newest_requests(rows: list[Row], per_issue: int) -> dict[str, list[dict]]:
    """Each row's newest requests (id, start, link), from the refs its records kept: one query."""
    wanted = {row.id: row.figures.newest[:per_issue] for row in rows}
    found = failure_window.requests_by_ref([ref for refs in wanted.values() for _, ref in refs])
    return {
        key: [_request(found[ref]) for _, ref in refs if ref in found]
        for key, refs in wanted.items()
    }


def _request(values: dict) -> dict:
    return values | {"url": reverse("pipeline:request", args=[values["id"]])}


# -- One issue's page ------------------------------------------------------------------------------


@dataclass
class Breakdown:
    name: str  # channel, persona, model, principal
    values: list[tuple[object, int, str]]  # (value, failures, the request list of them)
    more: int = 0  # values not shown
    problem: str = ""  # the ledger took too long


@dataclass
class IssueDetail:
    id: str
    figures: Figures
    status: Status
    state: Issue | None
    now: int
    filters: InboxFilters
    notes: list[str]
    trend: Trend
    touched: dict[str, int]
    breakdowns: list[Breakdown] = field(default_factory=list)
    newest: list[dict] = field(default_factory=list)  # id, started_at, turn, url…
    stack: str = ""  # the newest request's stack (or message), its first STACK_CHARS
    stack_cut: bool = False
    history: list = field(default_factory=list)
    merged: list[tuple[str, tuple]] = field(default_factory=list)  # (issue id, its group)
    merge_choices: list[Figures] = field(default_factory=list)

    @property
    def requests_links(self) -> list[tuple[tuple, str]]:
        """Each group's failures in the window as the request list shows them."""
        return [(group, self.filters.requests_url(group)) for group in self.figures.groups]


def issue_detail(key: str, reading: Reading, filters: InboxFilters) -> IssueDetail | None:
    f = reading.figures.get(key)
    state = reading.states.get(key)
    if f is None and state is None:
        return None
    if f is None:  # triaged once, no failure of it left in the summarised hours
        f = Figures(key, groups=[(state.error_stage, state.signature)])
    else:
        reading.add_details([f], filters.since_ms, filters.until_ms)
    d = IssueDetail(
        id=key,
        figures=f,
        status=reading.status(key),
        state=state,
        now=reading.now,
        filters=filters,
        notes=reading.notes,
        trend=Trend.of(f, reading.now, width=600, height=90),
        touched=f.touched(),
        history=lifecycle.history([key, *_merged_into(key, reading.states)]),
        merged=[
            (other, (s.error_stage, s.signature))
            for other, s in reading.states.items()
            if s.merged_into == key
        ],
    )
    d.merge_choices = sorted(
        (o for o in reading.figures.values() if o.id != key and o.count),
        key=lambda o: (-o.count, o.id),
    )[:MERGE_CHOICES]
    if f.count:
        d.breakdowns = _breakdowns(f, filters)
    _newest(d)
    return d


def _merged_into(key: str, states: dict[str, Issue]) -> list[str]:
    return [other for other, s in states.items() if s.merged_into == key]


def _breakdowns(f: Figures, filters: InboxFilters) -> list[Breakdown]:
    """The issue's failures in the window by channel, persona, model and principal, read from
    the ledger through the request list's own filters, so each value's count is the length of
    the list it links (a merged issue's values add up its groups: no one list holds them)."""
    counts: dict[str, dict[object, int]] = {name: {} for name, _, _ in BREAKDOWNS}
    columns = [column for _, column, _ in BREAKDOWNS]
    try:
        for group in f.groups:
            failures = RequestFilters.from_query(filters.requests_query(group)).queryset()
            # One pass over the failures, by every column at once: each row is read once.
            for row in failures.values(*columns).annotate(n=Count("*")).order_by():
                for name, column, _ in BREAKDOWNS:
                    counts[name][row[column]] = counts[name].get(row[column], 0) + row["n"]
    except LedgerQueryTimeout as error:
        return [Breakdown(name, [], problem=str(error)) for name, _, _ in BREAKDOWNS]
    found = []
    for name, _, param in BREAKDOWNS:
        top = sorted(counts[name].items(), key=lambda kv: (-kv[1], str(kv[0])))[:TOP_VALUES]
        values = [
            (value, n, filters.requests_url(f.groups[0], **value_query(param, value))
             if len(f.groups) == 1 else "")
            for value, n in top
        ]  # fmt: skip
        found.append(Breakdown(name, values, more=len(counts[name]) - len(top)))
    return found


def _newest(d: IssueDetail) -> None:
    """The newest requests of the window, the turns they ran, and the newest one's stack."""
    refs = [ref for _, ref in d.figures.newest[:NEWEST_SHOWN]]
    found = failure_window.requests_by_ref(refs)
    d.newest = [_request(found[ref]) for ref in refs if ref in found]
    turns = [r["turn_id"] for r in d.newest if r["turn_id"]]
    sessions = _sessions_of(turns)
    for r in d.newest:
        session = sessions.get(r["turn_id"])
        r["turn_url"] = reverse("sessions:turn", args=[session, r["turn_id"]]) if session else None
    if d.newest:
        d.stack, d.stack_cut = _stack(d.newest[0]["id"])


def _sessions_of(turn_ids: list[str]) -> dict[str, str]:
    """Each turn's session (the pipeline links turns by URL, which needs both ids)."""
    if not turn_ids or "turns" not in sqlite.table_names():
        return {}
    wanted, params = sqlite.in_list(turn_ids)
    return dict(sqlite.rows(f"SELECT id, session_id FROM turns WHERE id IN {wanted}", params))


def _stack(request_id: str) -> tuple[str, bool]:
    found = sqlite.rows(
        f"""SELECT substr(coalesce(error_stack, error_message), 1, {STACK_CHARS}),
                   length(coalesce(error_stack, error_message))
            FROM nexus_requests WHERE id = %s""",
        [request_id],
    )
    if not found or found[0][0] is None:
        return "", False
    text, length = found[0]
    return str(text), (length or 0) > STACK_CHARS


# -- Changes ---------------------------------------------------------------------------------------


def change_options(post, action: str, key: str, reading: Reading) -> dict:
    """The options of an operator's change, read from the form and checked against the issues
    this ledger knows; Refused says what is wrong."""
    if action == "ignore":
        hours = _whole(post.get("hours", "0"), "hours", 0, 24 * 365 * 10)
        count = _whole(post.get("count", "0") or "0", "failures", 0, 10**9)
        return {"hours": hours, "count": count}
    if action == "merge":
        into = post.get("into", "").strip()
        if into == key:
            raise Refused("an issue cannot be merged into itself")
        known = set(reading.figures) | set(reading.states)
        if into not in known:
            raise Refused(f"no issue {into!r} to merge into")
        target = lifecycle.canonical(reading.states)
        group = _group_of(into, reading)
        if group is not None and target(group) == key:
            raise Refused("that issue is already merged into this one")
        return {"into": into}
    if action == "unmerge":
        other = post.get("issue", "")
        state = reading.states.get(other)
        if state is None or state.merged_into != key:
            raise Refused("that issue is not merged into this one")
        return {"issue": other}
    return {}


def _group_of(key: str, reading: Reading) -> tuple | None:
    if key in reading.states:
        s = reading.states[key]
        return s.error_stage, s.signature
    f = reading.figures.get(key)
    return next((g for g in f.groups if issue_id(*g) == key), None) if f else None


def _whole(raw: str, what: str, low: int, high: int) -> int:
    raw = raw.strip()
    if not raw.isascii() or not raw.isdigit() or not low <= int(raw) <= high:
        raise Refused(f"{what} must be a whole number from {low} to {high:,}")
    return int(raw)


# -- A failed request's issue ---------------------------------------------------------------------


@dataclass
class RequestIssue:
    id: str
    group: tuple
    status: Status
    merged: bool  # the request's own group was merged into this issue


def issue_id_of(stage, message) -> str:
    """The issue of a failure with this stage and message (as the summaries group it)."""
    return issue_id(text_value(stage), signature(message))


def issue_of_request(request_id: str) -> RequestIssue | None:
    """The issue a failed request belongs to, with its status: the issue's own hours only."""
    found = sqlite.rows(
        "SELECT error_stage, error_message FROM nexus_requests WHERE id = %s AND status = 'failed'",
        [request_id],
    )
    if not found:
        return None
    stage, message = found[0]
    group = (text_value(stage), signature(message))
    states = lifecycle.states()
    key = lifecycle.canonical(states)(group)
    groups = [group] if issue_id(*group) == key else []
    groups += [(s.error_stage, s.signature) for other, s in states.items() if other == key]
    groups += [(s.error_stage, s.signature) for s in states.values() if s.merged_into == key]
    groups = list(dict.fromkeys(groups))
    now = now_ms()
    first = failure_window.first_hour()
    the_plan = failure_window.plan(first if first is not None else now, now)
    reader = failure_window.Reader(the_plan, groups=groups)
    found = read_figures(reader, now, now, now, lifecycle.canonical(states)).get(key)
    status = lifecycle.status_of(
        states.get(key), found, now, lambda f, moment: failures_after(reader, f, moment)
    )
    return RequestIssue(key, group, status, issue_id(*group) != key)
