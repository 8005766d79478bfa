"""The inbox: every issue with failures in the window, its figures and status, filtered and
sorted as the address says; and one issue's figures for its page.

Work per page: one census of the ledger's hours (the charts' plan, kept while the ledger is
unchanged), the stored records of every hour without their hash arrays, those of the window with
them, and the live part (bounded, the left-out hours said). Never a scan of the ledger's rows.
"""

from dataclasses import dataclass, field
from urllib.parse import urlencode

from django.urls import reverse

from issues import figures, lifecycle
from issues.figures import Figures
from issues.lifecycle import Status
from issues.models import Issue
from ledgerfacts.timestamps import now_ms
from ledgerweb.params import choice, moment_ms, read, reject, text, whole_number
from pipeline import failure_window
from pipeline.failure_window import Reader, Scope
from pipeline.filters import WINDOWS, value_query, window_bounds

HOUR = 3_600_000
INBOX_WINDOWS = ("24h", "7d", "30d")
DEFAULT_WINDOW = "24h"
SORTS = {
    "last_seen": "last seen",
    "count": "count",
    "escalation": "escalation",
    "first_seen": "first seen",
}
STATUS_FILTERS = ("unresolved", *lifecycle.STATUSES, "all")
# The trend drawn in each row: hourly over the last 24 hours, or daily over the last 30 days.
TRENDS = {"24h": "last 24 h, hourly", "30d": "last 30 days, daily"}
PAGE_SIZE = 25
MAX_PAGE = 10_000


@dataclass
class InboxFilters:
    """The inbox's address: window (whole hours), status, stage, channel, persona, text, sort."""

    window: str = DEFAULT_WINDOW  # one of INBOX_WINDOWS, or "custom" (since/until)
    since_ms: int = 0
    until_ms: int = 0
    status: str = "unresolved"
    stage: str | None = None  # None: any stage (see stage_set)
    stage_set: bool = False  # a stage was chosen: None then means NULL
    source: str = ""
    persona: str = ""
    q: str = ""
    sort: str = "last_seen"
    trend: str = "24h"  # one of TRENDS
    page: int = 1
    errors: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_query(cls, params) -> "InboxFilters":
        errors: dict[str, str] = {}
        f = cls(errors=errors)
        f.status = read(params, "status", choice(*STATUS_FILTERS), errors) or f.status
        f.sort = read(params, "sort", choice(*SORTS), errors) or f.sort
        f.trend = read(params, "trend", choice(*TRENDS), errors) or f.trend
        f.page = read(params, "page", whole_number(1, MAX_PAGE), errors) or 1
        f.source = read(params, "source", text, errors) or ""
        f.persona = read(params, "persona", text, errors) or ""
        f.q = read(params, "q", text, errors) or ""
        if params.get("error_stage__isnull"):
            f.stage, f.stage_set = None, True
        elif "error_stage__exact" in params:
            f.stage, f.stage_set = params["error_stage__exact"], True
        elif stage := read(params, "error_stage", text, errors):
            f.stage, f.stage_set = stage, True
        f._read_window(params, errors)
        return f

    def _read_window(self, params, errors: dict[str, str]) -> None:
        """Whole hours: a preset window ends now and starts on the hour; a custom one starts on
        its hour and ends at the end of its last hour (or now)."""
        now = now_ms()
        window = read(params, "window", choice(*INBOX_WINDOWS), errors) or DEFAULT_WINDOW
        since = read(params, "since", moment_ms, errors)
        until = read(params, "until", moment_ms, errors)
        if since is not None and until is not None and until <= since:
            reject(params, "until", "not after since", errors)
            until = None
        if since is None and until is None:
            self.window = window
            self.since_ms, self.until_ms = window_bounds(window, now)
            return
        self.window = "custom"
        self.until_ms = now if until is None else min(now, -(-until // HOUR) * HOUR)
        start = self.until_ms - WINDOWS[DEFAULT_WINDOW] if since is None else since
        self.since_ms = start // HOUR * HOUR
        if self.since_ms >= self.until_ms:  # a window in the future
            reject(params, "since", "in the future", errors, "showing the last 24 hours")
            self.window = DEFAULT_WINDOW
            self.since_ms, self.until_ms = window_bounds(DEFAULT_WINDOW, now)

    @property
    def scope(self) -> Scope:
        return Scope(self.source, self.persona)

    def query(self, **changes) -> dict[str, str]:
        """This address's parameters (changed): for links that keep the filters."""
        values: dict[str, object] = {"status": self.status, "sort": self.sort, "trend": self.trend}
        if self.window == "custom":
            values |= {"since": self.since_ms, "until": self.until_ms}
        else:
            values["window"] = self.window
        values |= {"source": self.source, "persona": self.persona, "q": self.q}
        stage = value_query("error_stage", self.stage) if self.stage_set else {}
        values |= {"page": self.page if self.page > 1 else ""}
        values |= changes
        if "error_stage" in changes:
            stage = {}
        defaults = {"status": "unresolved", "sort": "last_seen", "trend": "24h"}
        kept = {
            k: str(v) for k, v in values.items() if v not in ("", None) and defaults.get(k) != v
        }
        return stage | kept

    def url(self, **changes) -> str:
        return reverse("issues:inbox") + "?" + urlencode(self.query(**changes))

    def requests_query(self, group: tuple[str | None, str], **extra) -> dict[str, str]:
        """The request list's filters selecting exactly the failures this inbox counted for a
        group (and `extra`: a value of a breakdown)."""
        stage, signature = group
        query = {"status": "failed", **value_query("error_stage", stage), "signature": signature}
        query |= {"since": str(self.since_ms), "until": str(self.until_ms)}
        for name in ("source", "persona"):
            if getattr(self, name):
                query[name] = getattr(self, name)
        return query | extra

    def requests_url(self, group: tuple[str | None, str], **extra) -> str:
        return reverse("pipeline:requests") + "?" + urlencode(self.requests_query(group, **extra))


@dataclass
class Row:
    figures: Figures
    status: Status
    state: Issue | None

    @property
    def id(self) -> str:
        return self.figures.id


@dataclass
class Inbox:
    filters: InboxFilters
    rows: list[Row]  # every issue the filters select, in order
    notes: list[str]  # what the summaries left out
    now: int
    statuses: dict[str, int]  # issues per status (before the status filter)

    @property
    def page(self) -> list[Row]:
        start = (self.filters.page - 1) * PAGE_SIZE
        return self.rows[start : start + PAGE_SIZE]

    @property
    def has_next(self) -> bool:
        return self.filters.page * PAGE_SIZE < len(self.rows)


@dataclass
class Reading:
    """Every issue's figures over all hours, with the window's, and the decisions kept."""

    figures: dict[str, Figures]  # as the filters select the failures
    unfiltered: dict[str, Figures]  # every failure of each issue: its status follows these
    states: dict[str, Issue]
    notes: list[str]
    now: int
    reader: Reader  # the filters' failures
    everything: Reader  # every failure

    def status(self, key: str) -> Status:
        f = self.unfiltered.get(key)
        return lifecycle.status_of(self.states.get(key), f, self.now, self.failures_after)

    def failures_after(self, f: Figures, moment: int) -> int:
        return figures.failures_after(self.everything, f, moment)

    def add_details(self, issues: list[Figures], since_ms: int, until_ms: int) -> None:
        figures.add_details(self.reader, [f for f in issues if not f.detailed], since_ms, until_ms)


def read_issues(filters: InboxFilters, build: bool = True) -> Reading:
    now = now_ms()
    states = lifecycle.states()
    issue_of = lifecycle.canonical(states)
    first = failure_window.first_hour()
    since, until = filters.since_ms, filters.until_ms
    # Every hour the ledger holds (first and last seen, in all, the trends), and the window
    # before this one (escalation) even where the ledger starts later.
    since_all = min(first if first is not None else since, figures.previous_window(since, until)[0])
    the_plan = failure_window.plan(since_all, max(until, now), build)
    reader = Reader(the_plan, filters.scope)
    found = figures.read(reader, since, until, now, issue_of)
    # The status is the issue's own, whatever the channel or persona the inbox shows.
    everything, unfiltered = reader, found
    if filters.scope != Scope():
        everything = Reader(the_plan)
        unfiltered = figures.read(everything, since, until, now, issue_of)
    notes = failure_window.notes(the_plan)
    return Reading(found, unfiltered, states, notes, now, reader, everything)


def inbox(filters: InboxFilters) -> Inbox:
    reading = read_issues(filters)
    rows, statuses = [], dict.fromkeys(lifecycle.STATUSES, 0)
    for key, f in reading.figures.items():
        if not f.count or not _matches(filters, f):
            continue
        status = reading.status(key)
        statuses[status.name] += 1
        if _shown(filters.status, status.name):
            rows.append(Row(f, status, reading.states.get(key)))
    rows.sort(key=_order(filters.sort))
    statuses = {
        "unresolved": sum(statuses[s] for s in lifecycle.UNRESOLVED),
        **statuses,
        "all": sum(statuses.values()),
    }
    box = Inbox(filters, rows, reading.notes, reading.now, statuses)
    reading.add_details([row.figures for row in box.page], filters.since_ms, filters.until_ms)
    return box


def _matches(filters: InboxFilters, f: Figures) -> bool:
    if filters.stage_set and all(stage != filters.stage for stage, _ in f.groups):
        return False
    if filters.q:
        needle = filters.q.casefold()
        return any(needle in signature.casefold() for _, signature in f.groups)
    return True


def _shown(wanted: str, status: str) -> bool:
    if wanted == "all":
        return True
    if wanted == "unresolved":
        return status in lifecycle.UNRESOLVED
    return status == wanted


def _order(sort: str):
    """Regressed issues first (they rise to the top), then by the chosen figure, then newest."""

    def key(row: Row):
        f = row.figures
        figure = {
            "last_seen": -(f.last_in_window or 0),
            "count": -f.count,
            "escalation": -f.escalation,
            "first_seen": -(f.first_seen or 0),
        }[sort]
        return (row.status.name != "regressed", figure, -(f.last_in_window or 0), f.id)

    return key


@dataclass
class Attention:
    """What needs someone now: the issues that regressed, then the new ones (first seen in the
    last 24 hours), newest first, and how many of each."""

    rows: list[Row]
    counts: dict[str, int]
    notes: list[str]


ATTENTION = ("regressed", "new")


def attention(limit: int = 6) -> Attention:
    filters = InboxFilters.from_query({"window": DEFAULT_WINDOW})
    reading = read_issues(filters, build=False)  # the overview builds no summary
    rows, counts = [], dict.fromkeys(ATTENTION, 0)
    for key, f in reading.figures.items():
        status = reading.status(key)
        if f.count and status.name in ATTENTION:
            counts[status.name] += 1
            rows.append(Row(f, status, reading.states.get(key)))
    rows.sort(key=_order("last_seen"))
    return Attention(rows[:limit], counts, reading.notes)
