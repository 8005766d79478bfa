"""The session list: filters from the query string, keyset pages, capped counts.

Every query here is bounded: a page reads at most PAGE_SIZE sessions through an index, counts
stop at COUNT_CAP, and per-row numbers come from one grouped query per page, not one per row.
"""

from dataclasses import dataclass, field, replace
from datetime import date, datetime, time, timedelta

from django.db.models import BooleanField, Q
from django.db.models.expressions import RawSQL
from django.utils import timezone

from annotations import store as annotation_store
from annotations.store import MarkFilter
from ledgerfacts.commands import as_typed
from ledgerweb import dialect, sqlite
from ledgerweb.costs import CostSum, usd
from ledgerweb.paging import capped, keyset_page, page_cursor
from ledgerweb.params import Cursor, choice, exact, iso_date, read, read_as_is, reject, text
from ledgerweb.sqlite import CappedCount
from ledgerweb.text import first_line
from sessions.kinds import FORK, KINDS, MAIN, SUBAGENT, RoutingKey
from sessions.membership import inherited_turns_sql
from sessions.models import Session
from sessions.usage import grouped_costs, session_costs

PAGE_SIZE = 50
COUNT_CAP = 10_000
# Sort → the time column pages and the date filters use. "cost" prices the most recently active
# COST_SORT_SCOPE matching sessions and sorts those (pricing every match would be unbounded).
SORTS = {"activity": "updated_at", "created": "created_at", "cost": "updated_at"}
COST_SORT_SCOPE = 500
HIDDEN_STATUSES = ("archived", "deleted")
# The Status select beside its default, "not archived" (every status but HIDDEN_STATUSES). No
# "active": in most ledgers it lists the very sessions the default lists. Any status still works
# from the address (?status=active), and the select then shows it.
STATUS_CHOICES = (*HIDDEN_STATUSES, "all")
THUMBS = {"up": 1, "down": -1}


def status_choices(selected: str) -> list[str]:
    if selected in ("", *STATUS_CHOICES):
        return list(STATUS_CHOICES)
    return [selected, *STATUS_CHOICES]


@dataclass
class SessionFilters:
    q: str = ""
    persona: str = ""
    status: str = ""  # "" = everything but archived and deleted; "all" = everything
    channel: str = ""
    kind: str = ""
    since: date | None = None
    until: date | None = None
    sort: str = "activity"
    label: str = ""  # sessions with this label, on the session or one of its turns
    thumb: str = ""  # "up" / "down": sessions with a 👍 / 👎, on the session or a turn
    after: Cursor | None = None  # where the previous page ended (the list view reads it)
    errors: dict[str, str] = field(default_factory=dict)
    _marked: annotation_store.Ids | None = None

    @property
    def mark(self) -> MarkFilter:
        return MarkFilter(label=self.label, thumb=THUMBS.get(self.thumb))

    @property
    def marked(self) -> annotation_store.Ids | None:
        """The sessions the annotation filters keep (read once per page), None without them."""
        if not self.mark:
            return None
        if self._marked is None:
            self._marked = annotation_store.session_ids(self.mark)
        return self._marked

    @classmethod
    def from_query(cls, params) -> "SessionFilters":
        errors: dict[str, str] = {}

        def value(name: str, parse=text) -> str:
            return read(params, name, parse, errors) or ""

        def chosen(name: str) -> str:
            """A value the page offered (a select's option): exactly as stored, spaces and
            all ('archived ' is not 'archived'); only what a person types is trimmed."""
            return read_as_is(params, name, exact, errors) or ""

        f = cls(
            q=value("q"),
            persona=chosen("persona"),
            status=chosen("status"),
            channel=chosen("channel"),
            kind=value("kind", choice(*KINDS)),
            since=read(params, "since", iso_date, errors),
            until=read(params, "until", iso_date, errors),
            sort=read(params, "sort", choice(*SORTS), errors, "sorted by last activity")
            or "activity",
            label=chosen("label"),
            thumb=value("thumb", choice(*THUMBS)),
            errors=errors,
        )
        if f.since and f.until and f.until < f.since:
            reject(params, "until", "before since", errors)
            f.until = None
        return f

    def as_query(self, **changes) -> dict[str, str]:
        """The filters as query-string parameters (blank ones dropped)."""
        values = {
            "q": self.q,
            "persona": self.persona,
            "status": self.status,
            "channel": self.channel,
            "kind": self.kind,
            "since": self.since.isoformat() if self.since else "",
            "until": self.until.isoformat() if self.until else "",
            "sort": "" if self.sort == "activity" else self.sort,
            "label": self.label,
            "thumb": self.thumb,
        } | changes
        return {k: v for k, v in values.items() if v}


def _day_start_ms(day: date) -> int:
    moment = timezone.make_aware(datetime.combine(day, time.min))
    return int(moment.timestamp() * 1000)


def _day_end_ms(day: date) -> int:
    """Where a day ends: the next one's start (a day with a clock change is 23 or 25 hours)."""
    if day == date.max:
        return _day_start_ms(day) + 86_400_000
    return _day_start_ms(day + timedelta(days=1))


def filtered_sessions(f: SessionFilters, *, newest_first_walk: bool = False):
    qs = Session.objects.all()
    if f.q:
        qs = qs.filter(
            Q(label__icontains=f.q) | Q(routing_key__icontains=f.q) | Q(id__startswith=f.q)
        )
    if f.persona:
        qs = qs.filter(persona=f.persona)
    if f.status == "all":
        pass
    elif f.status:
        qs = qs.filter(status=f.status)
    else:
        qs = qs.exclude(status__in=HIDDEN_STATUSES)
    if f.channel:
        qs = qs.filter(_of_channel(f.channel, newest_first_walk=newest_first_walk))
    if f.kind in (SUBAGENT, FORK):
        qs = qs.filter(routing_key__gte=f"{f.kind}:", routing_key__lt=f"{f.kind};")
    elif f.kind == MAIN:
        for kind in (SUBAGENT, FORK):
            qs = qs.exclude(routing_key__gte=f"{kind}:", routing_key__lt=f"{kind};")
    if f.marked is not None:
        ids_sql, ids = sqlite.in_list(f.marked.ids)
        qs = qs.filter(RawSQL(f'"sessions"."id" IN {ids_sql}', ids, output_field=BooleanField()))
    column = SORTS[f.sort]
    if f.since:
        qs = qs.filter(**{f"{column}__gte": _day_start_ms(f.since)})
    if f.until:
        qs = qs.filter(**{f"{column}__lt": _day_end_ms(f.until)})
    return qs


# How many routing-key links a fork or subagent is followed back to its origin: a subagent of a
# fork of a fork is found; a longer chain, or a cycle of junk keys, ends there.
ORIGIN_LINKS = 3


def _kind_range(key: str, kind: str) -> str:
    return f"{key} >= '{kind}:' AND {key} < '{kind};'"


def _origin_of_channel(key: str, links: int) -> str:
    """SQL: the session a spawned session's routing `key` names is of the channel (the two
    parameters of each link: low and high), or is spawned too and its origin is, up to `links`
    links. Joins by primary key, unrolled: about twice as fast as a recursive CTE per row."""
    origin = f"origin{links}"
    its_key = f"{origin}.routing_key"
    test = f"{its_key} >= %s AND {its_key} < %s"
    if links > 1:
        spawned = " OR ".join(_kind_range(its_key, kind) for kind in (FORK, SUBAGENT))
        test = f"({test} OR ({spawned}) AND {_origin_of_channel(its_key, links - 1)})"
    parent = sqlite.routing_parent(key)
    return f"EXISTS (SELECT 1 FROM sessions {origin} WHERE {origin}.id = {parent} AND {test})"


def _of_channel(channel: str, *, newest_first_walk: bool = False) -> RawSQL:
    """The sessions of a channel, and the forks and subagents of its sessions (their own routing
    key says fork or subagent): filtering by iMessage keeps an iMessage chat's forks.

    Each of the three branches is a range on the routing_key index (LIKE cannot use it here),
    and a spawned session's origin is looked up by primary key. With newest_first_walk the
    ranges do not use the index, so a page of a common channel walks updated_at from the newest
    row instead of sorting every match (as the request list does, see docs/decisions.md)."""
    key = '"sessions"."routing_key"'
    if newest_first_walk:
        key = dialect.unindexed(key)
    channel_range = [f"{channel}:", f"{channel};"]
    branches = [f"({key} >= %s AND {key} < %s)"]
    params = list(channel_range)
    for kind in (FORK, SUBAGENT):
        branches.append(f"({_kind_range(key, kind)} AND {_origin_of_channel(key, ORIGIN_LINKS)})")
        params += channel_range * ORIGIN_LINKS
    return RawSQL(" OR ".join(branches), params, output_field=BooleanField())


@dataclass
class SessionRow:
    session: Session
    turns: int = 0
    leaves: int = 0
    hint: str = ""
    cost: CostSum | None = None  # its own turns' (sessions.usage.session_costs)
    marks: annotation_store.Summary | None = None  # everyone's annotations, its turns' too
    marks_html: str = ""  # the same, drawn (views: its label links keep the list's filters)
    # A fork's: the origin's turns it continues (its page shows them), and what they cost.
    inherited: int = 0
    inherited_cost: CostSum | None = None
    # The channel the channel filter keeps it under: a fork's or a subagent's is its origin's
    # ("" when the chain of origins ends nowhere); None until looked up (_fill_channels).
    origin_channel: str | None = None

    @property
    def routing(self) -> RoutingKey:
        return RoutingKey(self.session.routing_key)

    @property
    def channel(self) -> str:
        if self.routing.kind == MAIN:
            return self.routing.channel
        return self.origin_channel or ""

    @property
    def title(self) -> str:
        s = self.session
        if s.label:
            return str(s)  # a label holding a Claude Code command's tags: the command as typed
        return f"{self.routing.kind if self.routing.kind != MAIN else s.persona} · {s.routing_key}"


@dataclass
class SessionPage:
    rows: list[SessionRow]
    count: CappedCount
    next_cursor: str | None
    note: str = ""  # what the order covers, when it is not every match


# The ledger's part of a page (its sessions, their numbers and costs, the count), kept by each
# worker while the ledger is unchanged (PRAGMA data_version: any commit by anyone drops it): the
# list is the page people open most, again and again, and its count and costs were most of its
# SQL (issue 33). The marks are read every time: they live in ledgerweb's own database.
_ledger_parts = sqlite.WhileUnchanged(keep=32)


def session_page(f: SessionFilters) -> SessionPage:
    if f.marked is None:
        key = (f.q, f.persona, f.status, f.channel, f.kind, f.since, f.until, f.sort, f.after)
        kept = _ledger_parts.get(key, lambda: (_ledger_part(f), True))
    else:  # which sessions the marks keep is read from ledgerweb's database each time
        kept = _ledger_part(f)
    rows = [replace(row) for row in kept.rows]  # a request's own: its marks go on them
    _add_marks(rows)
    return SessionPage(rows, kept.count, kept.next_cursor, _notes(kept.note, _marked_note(f)))


def _ledger_part(f: SessionFilters) -> SessionPage:
    """The page as the ledger alone answers it: no marks yet."""
    column = SORTS[f.sort]
    count = capped(filtered_sessions(f), COUNT_CAP)
    if f.sort == "cost":
        return _page_by_cost(f, count)
    # Past the cap the matches are common: walk the newest rows (updated_at has an index,
    # created_at has none) instead of sorting them all.
    walk = count.capped and column == "updated_at"
    qs = filtered_sessions(f, newest_first_walk=walk)
    sessions, cursor = keyset_page(qs, column, f.after, PAGE_SIZE)
    rows = [SessionRow(s) for s in sessions]
    _fill_row_numbers(rows)
    costs = session_costs(r.session.id for r in rows)
    for row in rows:
        row.cost = costs.get(row.session.id)
    return SessionPage(rows, count, cursor)


_facets = sqlite.WhileUnchanged(keep=1)


def filter_choices() -> tuple[list[str], list[str]]:
    """The personas and the channels the filters offer, kept while the ledger is unchanged."""

    def read():
        # '' is the form's "any": a persona of '' is not offered as a choice of its own.
        personas = [p for p in sqlite.distinct_values("sessions", "persona", limit=100) if p]
        channels = [
            c
            for c in sqlite.distinct_prefixes("sessions", "routing_key", limit=100)
            if c not in (SUBAGENT, FORK)
        ]
        return (personas, channels), True

    return _facets.get("choices", read)


def _notes(*notes: str) -> str:
    return " ".join(filter(None, notes))


def _add_marks(rows: list[SessionRow]) -> None:
    """Everyone's annotations on the page's sessions, counted (two queries on ledgerweb's
    database, whatever their number)."""
    marks = annotation_store.summaries(r.session.id for r in rows)
    for row in rows:
        row.marks = marks.get(row.session.id)


def _marked_note(f: SessionFilters) -> str:
    if f.marked is None or not f.marked.capped:
        return ""
    return (
        f"More than {annotation_store.FILTER_IDS_CAP:,} sessions are {f.mark.describe()}:"
        " this list holds those among the first of them."
    )


def _fill_inherited(rows: list[SessionRow]) -> None:
    """The turns each fork on the page continues, and what they cost: two grouped queries."""
    forks = {r.session.id: r for r in rows if r.routing.kind == FORK}
    if not forks:
        return
    pairs_sql, params = inherited_turns_sql(forks)
    for sid, n in sqlite.rows(f"SELECT sid, count(*) FROM ({pairs_sql}) AS i GROUP BY sid", params):
        forks[sid].inherited = n
    for sid, cost in grouped_costs(forks, pairs_sql, params).items():
        forks[sid].inherited_cost = cost
    for row in forks.values():
        if row.inherited and not row.turns:
            row.leaves = 1  # a fresh fork's thread ends at its head, as its page draws it


def _fill_channels(rows: list[SessionRow]) -> None:
    """A fork's or a subagent's channel: its origin's, followed up to ORIGIN_LINKS links as the
    channel filter follows them; "" when the chain ends nowhere. One query for the page."""
    spawned = {r.session.id: r for r in rows if r.routing.kind != MAIN}
    if not spawned:
        return
    joins, keys = [], []
    for link in range(1, ORIGIN_LINKS + 1):
        before = f"o{link - 1}.routing_key" if link > 1 else "s.routing_key"
        # Only a key of two colons or more names a parent: PostgreSQL refuses the negative
        # substring length routing_parent() makes of any other ('imported:x', a main chat's).
        rest = f"substr({before}, instr({before}, ':') + 1)"
        parent = f"CASE WHEN instr({rest}, ':') > 0 THEN {sqlite.routing_parent(before)} END"
        joins.append(f"LEFT JOIN sessions o{link} ON o{link}.id = {parent}")
        keys.append(f"o{link}.routing_key")
    marks, ids = sqlite.in_list(spawned)
    for session_id, *origins in sqlite.rows(
        f"SELECT s.id, {', '.join(keys)} FROM sessions s {' '.join(joins)} WHERE s.id IN {marks}",
        ids,
    ):
        row, channel = spawned[session_id], ""
        for key in origins:
            if key is None:
                break
            if RoutingKey(key).kind == MAIN:
                channel = RoutingKey(key).channel
                break
        row.origin_channel = channel


def _page_by_cost(f: SessionFilters, count: CappedCount) -> SessionPage:
    """The most expensive first among the COST_SORT_SCOPE most recently active matches (equal
    costs by last activity); the cursor names the last row shown, found again in that order."""
    newest = filtered_sessions(f, newest_first_walk=count.capped).order_by("-updated_at", "-id")
    candidates = list(newest[:COST_SORT_SCOPE])
    costs = session_costs(s.id for s in candidates)
    ranked = sorted(candidates, key=lambda s: (-costs[s.id].amount, -costs[s.id].unpriced))
    start = 0
    if f.after is not None:
        ids = [s.id for s in ranked]
        start = ids.index(f.after[1]) + 1 if f.after[1] in ids else len(ids)
    shown = ranked[start : start + PAGE_SIZE]
    rows = [SessionRow(s, cost=costs[s.id]) for s in shown]
    _fill_row_numbers(rows)
    more = start + PAGE_SIZE < len(ranked)
    cursor = page_cursor(usd(costs[shown[-1].id].amount), shown[-1].id) if more else None
    note = ""
    if count.capped or count.value > COST_SORT_SCOPE:
        note = f"Sorted by cost among the {COST_SORT_SCOPE:,} most recently active of them."
    return SessionPage(rows, count, cursor, note)


def _fill_row_numbers(rows: list[SessionRow]) -> None:
    """Turns, leaves and the head's question for a page of sessions, in two grouped queries; a
    fork's inherited turns and a spawned session's channel when the page has some."""
    if not rows:
        return
    _fill_inherited(rows)
    _fill_channels(rows)
    ids = [r.session.id for r in rows]
    marks = ", ".join(["%s"] * len(ids))
    by_id = {r.session.id: r for r in rows}
    counts = sqlite.rows(
        f"""SELECT t.session_id, count(*),
                   sum(CASE WHEN NOT EXISTS (SELECT 1 FROM turns c
                                             WHERE c.parent_turn_id = t.id
                                               AND c.session_id = t.session_id)
                       THEN 1 ELSE 0 END)
            FROM turns t WHERE t.session_id IN ({marks}) GROUP BY t.session_id""",
        ids,
    )
    for session_id, turns, leaves in counts:
        by_id[session_id].turns, by_id[session_id].leaves = turns, leaves or 0

    heads = {r.session.current_turn_id: r for r in rows if r.session.current_turn_id}
    if heads:
        marks = ", ".join(["%s"] * len(heads))
        questions = sqlite.rows(
            f"""SELECT turn_id, substr(content, 1, 400) FROM (
                    SELECT turn_id, content, row_number() OVER (
                        PARTITION BY turn_id ORDER BY sequence) AS n
                    FROM messages WHERE turn_id IN ({marks}) AND role = 'user') AS m
                WHERE n = 1""",
            list(heads),
        )
        for turn_id, content in questions:
            heads[turn_id].hint = first_line(as_typed(content) or content, 120)
