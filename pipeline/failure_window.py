"""The failure groups of a time window (pipeline/failure_groups.py), for the failure inbox and
the alert rules: the records stored with the summarised hours, added up in ledgerweb's database,
and the same computation over the window's live ranges (the current hour, hours not summarised
yet), on the charts' own plan (rollups.plan): the same ledger identity, census and content checks
decide which stored hours are trusted, and the same bound on the rows read live, the older hours
left out and said (notes).

A Reader answers per group: totals over the plan and within ranges of it (a window, the one
before), counts per bucket (the trends), and what the failures of some groups touched with their
newest requests. Stored records are summed in SQL (a month of a big ledger is ~20,000 of them),
the live ones (bounded) in Python, and the two added.
"""

import json
import threading
from collections import defaultdict
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from background import lock as background
from ledgerweb import sqlite, state_db
from pipeline import failure_groups, rollups
from pipeline.charts import LIVE_ROWS, left_out_note
from pipeline.failure_groups import TOUCHED, GroupHour
from pipeline.models import FailureGroupHour
from pipeline.signatures import SQL_FUNCTION

HOUR = rollups.HOUR
Group = tuple[str | None, str]  # (failed stage, signature)


def first_hour() -> int | None:
    """The hour of the ledger's first request (None: no request)."""
    ((oldest,),) = sqlite.rows("SELECT min(started_at) FROM nexus_requests")
    return None if oldest is None else int(oldest) // HOUR * HOUR


def plan(since_ms: int, until_ms: int, build: bool = True) -> rollups.Plan:
    """The window's plan, reading at most LIVE_ROWS rows of hours not summarised yet (the newest
    first). Hours are built here (a second's worth) only when no background process runs, and
    `build` allows it (the overview's card reads only what is there)."""
    budget = 0 if not build or background.running() else None
    return rollups.plan(since_ms, until_ms, budget_s=budget).bounded(LIVE_ROWS)


def notes(the_plan: rollups.Plan) -> list[str]:
    """What the plan left out, in the charts' words ("Summarising: … Not counted yet: …")."""
    return left_out_note(the_plan)


@dataclass(frozen=True)
class Scope:
    """Which failures: of one event source (channel) and one persona, or "" for any."""

    source: str = ""
    persona: str = ""


@dataclass
class Totals:
    """One group's failures over the plan: how many, first and last, and per named range."""

    n: int = 0
    first_at: int | None = None
    last_at: int | None = None
    within: dict[str, int] = field(default_factory=dict)  # range name → failures
    last_within: dict[str, int] = field(default_factory=dict)  # range name → last started_at

    def add(self, n: int, first_at, last_at) -> None:
        self.n += n
        if first_at is not None:
            self.first_at = first_at if self.first_at is None else min(self.first_at, first_at)
        if last_at is not None:
            self.last_at = last_at if self.last_at is None else max(self.last_at, last_at)


@dataclass
class Details:
    """What one group's failures touched (sorted distinct value hashes, by TOUCHED name) and its
    newest requests ((started_at, ref), newest first)."""

    touched: dict[str, list[np.ndarray]] = field(default_factory=lambda: defaultdict(list))
    newest: list[tuple[int, int | str]] = field(default_factory=list)


class Reader:
    """The failure groups of one plan (and scope): stored hours summed in SQL, live ranges read
    once from the ledger."""

    def __init__(
        self, the_plan: rollups.Plan, scope: Scope = Scope(), groups: list[Group] | None = None
    ):
        self.plan = the_plan
        self.scope = scope
        self.groups = groups  # only these groups' failures (None: every group)

    @cached_property
    def live(self) -> list[GroupHour]:
        """The live ranges' records, computed from the ledger's rows as a stored hour's are (the
        plan's 'processing' ranges hold no failure)."""
        return self._live_records(self.groups)

    def _live_records(self, groups: list[Group] | None = None) -> list[GroupHour]:
        if not self.plan.live or groups == []:
            return []
        where, params = rollups.live_condition(rollups.Plan([], self.plan.live))
        scope = rollups.Scope(0, 0, self.scope.source, self.scope.persona)
        filters, filter_params = scope.ledger_filters()
        if groups is not None:
            matches, match_params = _live_groups(groups)
            filters, filter_params = f"{filters} AND {matches}", filter_params + match_params
        rows = sqlite.rows(failure_groups.rows_sql(where + filters), params + filter_params)
        return failure_groups.group_hours(rows, per_scope=False)

    # -- Stored records, in SQL ---------------------------------------------------------------

    def _stored_where(self, groups: list[Group] | None = None) -> tuple[str, list]:
        """The stored records of the plan's trusted hours for this scope (and groups)."""
        if groups is None:
            groups = self.groups
        hours, hour_params = state_db.in_list(self.plan.stored)
        where = f"ledger = %s AND combined = %s AND hour IN {hours}"
        params = [self.plan.ledger, not (self.scope.source or self.scope.persona), *hour_params]
        for column, value in (("source", self.scope.source), ("persona", self.scope.persona)):
            if value:
                where += f" AND {column} = %s"
                params.append(value)
        if groups is not None:
            matches = " OR ".join(
                "(error_stage IS NULL AND signature = %s)"
                if stage is None
                else "(error_stage = %s AND signature = %s)"
                for stage, _ in groups
            )
            where += f" AND ({matches or '1 = 0'})"
            params += [
                v for stage, sig in groups for v in ((sig,) if stage is None else (stage, sig))
            ]
        return where, params

    def _stored(self, select: str, *, where: str = "", where_params=(), tail: str = "",
                select_params=(), groups: list[Group] | None = None) -> list[tuple]:  # fmt: skip
        """SELECT `select` over the stored records (`where`: more conditions), as rows."""
        if not self.plan.stored:
            return []
        condition, params = self._stored_where(groups)
        table = FailureGroupHour._meta.db_table
        return sqlite.rows(
            f"SELECT {select} FROM {table} WHERE {condition} {where} {tail}",
            [*select_params, *params, *where_params],
            "default",
        )

    # -- What the inbox and the rules ask --------------------------------------------------------

    def totals(self, ranges: dict[str, tuple[int, int]]) -> dict[Group, Totals]:
        """Per group: failures, first and last over the plan, and failures and last within each
        named [start, end) range of whole hours (a window, the one before it)."""
        sums = "".join(
            ", CAST(sum(CASE WHEN hour >= %s AND hour < %s THEN n ELSE 0 END) AS BIGINT),"
            " max(CASE WHEN hour >= %s AND hour < %s THEN last_at END)"
            for _ in ranges
        )
        bounds = [b for start, end in ranges.values() for b in (start, end, start, end)]
        found: dict[Group, Totals] = defaultdict(Totals)
        rows = self._stored(
            f"error_stage, signature, CAST(sum(n) AS BIGINT), min(first_at), max(last_at){sums}",
            tail="GROUP BY error_stage, signature",
            select_params=bounds,
        )
        for stage, sig, n, first_at, last_at, *within in rows:
            t = found[(stage, sig)]
            t.add(n, first_at, last_at)
            for i, name in enumerate(ranges):
                _add_within(t, name, within[2 * i], within[2 * i + 1])
        for r in self.live:
            t = found[r.group]
            t.add(r.n, r.first_at, r.last_at)
            for name, (start, end) in ranges.items():
                inside = start <= r.hour < end
                _add_within(t, name, r.n if inside else 0, r.last_at if inside else None)
        return dict(found)

    def counts(self, since_ms: int, until_ms: int, size: int) -> dict[Group, dict[int, int]]:
        """Per group, failures per bucket of `size` (whole hours, aligned on multiples of it)
        of the hours in [since, until)."""
        found: dict[Group, dict[int, int]] = defaultdict(lambda: defaultdict(int))
        size = int(size)
        for stage, sig, bucket, n in self._stored(
            f"error_stage, signature, (hour / {size}) * {size}, CAST(sum(n) AS BIGINT)",
            where="AND hour >= %s AND hour < %s",
            where_params=[since_ms, until_ms],
            tail="GROUP BY 1, 2, 3",
        ):
            found[(stage, sig)][bucket] += n
        for r in self.live:
            if since_ms <= r.hour < until_ms:
                found[r.group][r.hour // size * size] += r.n
        return {group: dict(buckets) for group, buckets in found.items()}

    def count_from(self, groups: list[Group], hour: int) -> int:
        """How many failures of these groups the hours from `hour` on hold."""
        ((stored,),) = self._stored(
            "CAST(coalesce(sum(n), 0) AS BIGINT)",
            where="AND hour >= %s",
            where_params=[hour],
            groups=groups,
        ) or [(0,)]
        wanted = set(groups)
        return stored + sum(r.n for r in self.live if r.group in wanted and r.hour >= hour)

    def details(self, since_ms: int, until_ms: int, groups: list[Group]) -> dict[Group, Details]:
        """What these groups' failures in the hours of [since, until) touched, and their newest
        requests (NEWEST of each group at most)."""
        if not groups:
            return {}
        found: dict[Group, Details] = defaultdict(Details)
        for group, stored in self._stored_details(since_ms, until_ms, groups).items():
            d = found[group]
            for name, arrays in stored.touched.items():
                d.touched[name].extend(arrays)
            d.newest.extend(stored.newest)
        wanted = set(groups)
        for r in self.live:
            if r.group in wanted and since_ms <= r.hour < until_ms:
                d = found[r.group]
                for name in TOUCHED:
                    d.touched[name].append(r.touched[name])
                d.newest.extend(r.newest)
        return dict(found)

    def _stored_details(self, since_ms: int, until_ms: int, groups: list[Group]) -> dict:
        """The stored part of details(), kept (per worker) while the same stored records answer
        it: a stored hour never changes, and a rebuilt one has new rows (a new max id)."""
        if not self.plan.stored:
            return {}
        hours = tuple(hour for hour in self.plan.stored if since_ms <= hour < until_ms)
        ((rows, newest_id),) = self._stored(
            "count(*), max(id)", where="AND hour >= %s AND hour < %s",
            where_params=[since_ms, until_ms],
        )  # fmt: skip
        key = (self.plan.ledger, self.scope, hours, frozenset(groups), rows, newest_id)
        found = _details_kept.get(key)
        if found is None:
            found = self._read_stored_details(since_ms, until_ms, groups)
            with _details_lock:  # the test server answers from threads
                _details_kept[key] = found
                while len(_details_kept) > KEEP_DETAILS:
                    _details_kept.pop(next(iter(_details_kept)))
        return found

    def _read_stored_details(self, since_ms: int, until_ms: int, groups: list[Group]) -> dict:
        # A month is ~10,000 records of five arrays each: their bytes are joined per group and
        # read as one array (a numpy array per record cost more than the query), and the newest
        # requests are read from a group's newest hours only, the records coming newest first.
        found: dict[Group, Details] = defaultdict(Details)
        blobs: dict[Group, list[list]] = {}  # per group, per TOUCHED name, the records' bytes
        stored_newest: dict[Group, int] = defaultdict(int)
        filled_at: dict[Group, int] = {}  # the hour a group's newest were all found in
        columns = ", ".join(f"touched_{name}" for name in TOUCHED)
        for stage, sig, hour, newest, *arrays in self._stored(
            f"error_stage, signature, hour, newest, {columns}",
            where="AND hour >= %s AND hour < %s",
            where_params=[since_ms, until_ms],
            tail="ORDER BY hour DESC",
            groups=groups,
        ):
            group = (stage, sig)
            parts = blobs.get(group)
            if parts is None:
                parts = blobs[group] = [[] for _ in TOUCHED]
            for kept, blob in zip(parts, arrays, strict=True):
                kept.append(blob)  # bytes (or a memoryview): joined below
            # (Several records share an hour when a channel or persona is asked for.)
            if filled_at.get(group, hour) == hour:
                items = json.loads(newest)
                found[group].newest.extend(tuple(item) for item in items)
                stored_newest[group] += len(items)
                if stored_newest[group] >= failure_groups.NEWEST:
                    filled_at.setdefault(group, hour)
        for group, parts in blobs.items():
            for name, kept in zip(TOUCHED, parts, strict=True):
                joined = np.frombuffer(b"".join(kept), dtype=np.int64)
                found[group].touched[name].append(np.unique(joined))
        return dict(found)


# What details() read from the stored records, kept while they are the same (a few windows of
# the page's issues: each a few MB at most for a month of a big ledger).
KEEP_DETAILS = 8
_details_kept: dict[tuple, dict] = {}
_details_lock = threading.Lock()


def _add_within(t: Totals, name: str, n, last) -> None:
    t.within[name] = t.within.get(name, 0) + (n or 0)
    if last is not None:
        t.last_within[name] = max(t.last_within.get(name, last), last)


def _live_groups(groups: list[Group]) -> tuple[str, list]:
    """SQL true for a ledger row of one of these groups (its message masked: live rows only)."""
    matches = " OR ".join(
        f"(error_stage IS NOT DISTINCT FROM %s AND {SQL_FUNCTION}(error_message) = %s)"
        for _ in groups
    )
    return f"({matches})", [value for group in groups for value in group]


def failures_between(groups: list[Group], start_ms: int, end_ms: int) -> int:
    """How many failures of these groups started in [start, end): the ledger's rows of that
    range, masked live (a part of one hour: the lifecycle's "N more failures since it was
    ignored" counts the whole hours from the records)."""
    if start_ms >= end_ms or not groups:
        return 0
    matches, match_params = _live_groups(groups)
    ((found,),) = sqlite.rows(
        f"""SELECT count(*) FROM nexus_requests
            WHERE started_at >= %s AND started_at < %s AND status || '' = 'failed' AND {matches}""",
        [start_ms, end_ms, *match_params],
    )
    return found


REQUEST_COLUMNS = ("id", "started_at", "turn_id", "event_source", "session_persona", "principal_id")


def requests_by_ref(refs: list[int | str]) -> dict[int | str, dict]:
    """The requests a group's `newest` names (rowids on SQLite, ids on PostgreSQL), by ref; a
    request retention has moved away since is absent."""
    if not refs:
        return {}
    column = failure_groups.ref_column()
    wanted, params = sqlite.in_list(list(dict.fromkeys(refs)))
    found = sqlite.rows(
        f"SELECT {column}, {', '.join(REQUEST_COLUMNS)} FROM nexus_requests"
        f" WHERE {column} IN {wanted}",
        params,
    )
    return {ref: dict(zip(REQUEST_COLUMNS, values, strict=True)) for ref, *values in found}
