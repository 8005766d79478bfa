"""Exact hourly rollups of nexus_requests, kept in Django's own database, so that a chart over 30
days sums a few thousand stored rows instead of re-reading a million ledger rows.

Exact by construction: each kind of fact is ONE SQL query (FACTS below). A chart's window is
split into settled hours whose stored facts are still valid, and live ranges (the current hour,
hours not built yet, and the window's cut first and last hours when they hold rows outside the
window) over which the same query runs on the ledger. Stored and live facts therefore cannot
disagree, and a chart equals the query run over the whole window.

Rows change in place only while 'processing' (each stage updates its row), so an hour's stored
facts cover its other rows, and its 'processing' rows are always read live.

Invalidation: stored hours belong to one ledger (ledger_key: a random key, recognised by one of
the ledger's requests, so a file replaced at the same path starts afresh), and each is stored
with fingerprints of its rows. Every plan compares, per hour, the count of settled rows and the
sum of all rows' rowids (the started_at index alone: cheap) with the ledger's, and re-reads the
content (a checksum of the columns the facts read) of the stored hours verified longest ago, up
to VERIFY_ROWS rows. An hour whose fingerprint moved (a request finished, retention took rows
out, a late writer added some, a row was deleted and another inserted, a settled row was
edited) is rebuilt or read live. See docs/decisions.md.
"""

import functools
import json
import math
import time
import uuid
import zlib
from collections import Counter, defaultdict
from contextlib import contextmanager
from dataclasses import dataclass, field, replace

import numpy as np
from django.db import connections, models, transaction

from ledgerfacts.timestamps import now_ms
from ledgerweb import dialect, sqlite, state_db
from ledgerweb.costs import tier_band_sql, token_count_sql
from ledgerweb.db import LEDGER, ledger_identity
from pipeline import failure_groups
from pipeline.flags import HANDLED_BY, flag_state
from pipeline.models import (
    FailureGroupHour,
    FailureSignature,
    RollupFact,
    RollupHour,
    RollupLedger,
    RollupTimings,
)
from pipeline.signatures import SQL_FUNCTION

HOUR = 3_600_000
# An hour is settled this long after it ended: requests are written as they arrive, so nothing
# new lands in an hour minutes after it closed (a late one moves the count and is caught anyway).
SETTLE_MS = 5 * 60_000
# How long one chart request may spend building missing hours before reading the rest live.
BUILD_BUDGET_S = 1.0
# Complete plans a worker keeps while the ledger is unchanged (sqlite.ledger_version): the seven
# charts of a dashboard share one window, whose census costs ~100 ms for 30 days of 1M requests.
_plans = sqlite.WhileUnchanged(keep=64)
UNFINISHED_PLAN_S = 5.0
# A stage timing above this (a year) is junk, not a duration: 1e400 in the JSON reads as inf.
MAX_STAGE_MS = 365 * 86_400_000
# Settled rows a plan re-reads to check the content of the stored hours verified longest ago
# (at least one hour), at most every VERIFY_EVERY_S per worker (a dashboard's seven charts after
# a commit pay for it once): reading rows costs ~10-30 us each on a 1M-request ledger, where the
# index-only census costs ~0.1 us a row. `ledger_rollup` re-reads every stored hour.
VERIFY_ROWS = 2_000
VERIFY_EVERY_S = 10.0
_content_checked_at = -math.inf  # time.monotonic() of this worker's last re-read
# A ledger's anchor moves to its newest request at most this often (so that retention, which
# removes the oldest requests, never takes it), and a key not recognised for FORGET_MS (a
# replaced ledger's) is forgotten with its hours.
REFRESH_MS = HOUR
FORGET_MS = 24 * HOUR
FORGET_ROWS = 50_000

# Every query returns (bucket, source, persona, key, sub, n, total, last), grouped. {bucket} is
# the start of the row's time bucket, {where} selects the rows (time ranges and filters).
_COLUMNS = "{bucket}, event_source, session_persona"
_PROMPT = token_count_sql("agent_tokens_prompt")
_COMPLETION = token_count_sql("agent_tokens_completion")
_TOTAL = token_count_sql("agent_tokens_total")
FACTS = {
    # Requests by status; the source is also the key, so combined rows keep it (by source).
    "source": f"""SELECT {_COLUMNS}, event_source, status, count(*), NULL, NULL
        FROM nexus_requests WHERE {{where}} GROUP BY 1, 2, 3, 4, 5""",
    "principal": f"""SELECT {_COLUMNS}, principal_id, status, count(*), NULL, NULL
        FROM nexus_requests WHERE {{where}} GROUP BY 1, 2, 3, 4, 5""",
    # Token counts that are not usable whole numbers (12.5, 'lots', negative, 2^62: two of those
    # would overflow the sum and stop every chart) add nothing, and say so (sub).
    "tokens": f"""SELECT {_COLUMNS}, agent_model,
            CASE WHEN {_TOTAL} = 0 AND agent_tokens_total IS DISTINCT FROM 0 THEN 'unreadable' END,
            count(*),
            sum({_TOTAL}), NULL
        FROM nexus_requests WHERE {{where}} AND agent_tokens_total IS NOT NULL
        GROUP BY 1, 2, 3, 4, 5""",
    # Prompt and completion token sums by model and long-context band, for the cost chart:
    # split into two rows (sub "prompt:<band>" and "completion:<band>") by _usage_facts.
    "usage": f"""SELECT {_COLUMNS}, agent_model, {tier_band_sql(_PROMPT)}, count(*),
            sum({_PROMPT}), sum({_COMPLETION})
        FROM nexus_requests WHERE {{where}} AND {_PROMPT} + {_COMPLETION} > 0
        GROUP BY 1, 2, 3, 4, 5""",
    # A response: a request with a delivery channel or a delivery flag (a channel may be NULL).
    "delivery": f"""SELECT {_COLUMNS}, delivery_channel, {flag_state("delivery_success")},
            count(*), NULL, NULL
        FROM nexus_requests
        WHERE {{where}} AND (delivery_channel IS NOT NULL OR delivery_success IS NOT NULL)
        GROUP BY 1, 2, 3, 4, 5""",
    # status || '': the time range is the selective condition, not the status index (all
    # failures); SQLite uses no index on an expression (nor on +status, which PostgreSQL lacks).
    "failure": f"""SELECT {_COLUMNS}, error_stage, {SQL_FUNCTION}(error_message),
            count(*), NULL, max(started_at)
        FROM nexus_requests WHERE {{where}} AND status || '' = 'failed' GROUP BY 1, 2, 3, 4, 5""",
    # Hook columns are JSON arrays; _hook_facts turns these combinations (with the handled flag
    # and the hook hooks_context names as the handler) into per-hook rows before they are
    # stored or summed.
    "hooks": f"""SELECT {_COLUMNS}, hooks_matched, hooks_fired, count(*),
            {flag_state("hooks_handled")}, {HANDLED_BY}
        FROM nexus_requests WHERE {{where}} GROUP BY 1, 2, 3, 4, 5, 7, 8""",
}
# The value as a number on both engines (PostgreSQL's json_each gives text, see
# ledgerweb/sql/postgres/functions.sql); only numbers are cast, whatever order conditions run in.
# {number} is DOUBLE PRECISION on SQLite (1e400 reads as Infinity, out of range) and NUMERIC on
# PostgreSQL, whose DOUBLE PRECISION refuses 1e400 and would fail the whole query.
_TIMING = "CAST(CASE WHEN item.type IN ('integer', 'real') THEN item.value END AS {number})"
TIMINGS = f"""SELECT {_COLUMNS}, item.key, {_TIMING}, count(*)
    FROM nexus_requests, {{items}} AS item
    WHERE {{where}} AND item.type IN ('integer', 'real') AND {_TIMING} >= 0
      AND {_TIMING} < {MAX_STAGE_MS}
    GROUP BY 1, 2, 3, 4, 5"""
# Every column FACTS and TIMINGS read (and hooks_context, where the runtime names the hook that
# handled a request): an hour's content checksum covers these, each with its type (quote() tells
# 12 from 12.0, '12' and NULL), so any edit that can move a figure moves it. (tests/test_rollups.py
# checks the list against the queries.)
FACT_COLUMNS = (
    "started_at", "status", "event_source", "session_persona", "principal_id", "agent_model",
    "agent_tokens_total", "delivery_channel", "delivery_success", "error_stage", "error_message",
    "hooks_matched", "hooks_fired", "hooks_handled", "hooks_context", "stage_timings",
    "agent_tokens_prompt", "agent_tokens_completion",  # the cost chart's "usage" fact
    "session_key",  # the sessions a failure group touched (failure_groups.ROWS)
)  # fmt: skip
CHECKSUM_FUNCTION = "ledger_row_checksum"


def _row_checksum() -> str:
    """SQL for one row's content checksum. PostgreSQL: a hash of the quoted columns (its typed
    columns need no type tag); a checksum is only compared with one from the same engine."""
    if dialect.on_postgres():
        quoted = ", ".join(f"quote_nullable({c})" for c in FACT_COLUMNS)
        return f"hashtext(concat_ws(',', {quoted}))"
    quoted = " || ',' || ".join(f"quote({c})" for c in FACT_COLUMNS)
    return f"{CHECKSUM_FUNCTION}(CAST({quoted} AS BLOB))"


def row_checksum(row: bytes) -> int:
    """The checksum of one row's fact columns (registered on SQLite connections as
    CHECKSUM_FUNCTION); an hour's is their sum, which does not depend on the rows' order."""
    return zlib.crc32(row)


def _bucket(size: int) -> str:
    # CAST: a REAL started_at (1795676400000.5: SQLite stores it in an INTEGER column) still
    # falls in the whole-numbered bucket that holds it.
    return f"(CAST(started_at AS BIGINT) / {int(size)}) * {int(size)}"


@functools.lru_cache(maxsize=4096)
def hook_names(raw) -> frozenset[str]:
    """The hook names of a hooks_* column: the strings of a valid JSON array, each once. The
    request list's hook filter matches exactly these (sqlite.json_array_has).

    Kept for the few thousand texts seen last: a ledger's requests repeat a handful of hook
    lists, and parsing each combination again was a third of the hooks chart's time."""
    if not isinstance(raw, str):
        return frozenset()
    try:
        items = json.loads(raw)
    except (ValueError, RecursionError):
        return frozenset()
    if not isinstance(items, list):
        return frozenset()
    return frozenset(item for item in items if isinstance(item, str))


def _hook_facts(rows) -> list[tuple]:
    """(matched, fired, handled flag, handler) combinations → per-hook rows with sub matched /
    fired / handled (hooks_context names it, and it fired) / shared (a handled request naming
    no fired handler: each fired hook shares the credit). Rows no hook can take (handled but
    nothing fired, an unreadable flag) are kept under the key None, so the chart can say so.
    A window holds few distinct combinations, each parsed once here."""
    counts: Counter = Counter()
    for bucket, source, persona, matched, fired, rows_n, handled, handler in rows:
        fired_names = hook_names(fired)
        credit: list[tuple[str | None, str]] = [(hook, "matched") for hook in hook_names(matched)]
        credit += [(hook, "fired") for hook in fired_names]
        if handled == "yes" and handler in fired_names:
            credit.append((handler, "handled"))
        elif handled == "yes":
            credit += [(hook, "shared") for hook in fired_names] or [(None, "handled, none fired")]
        elif handled == "unreadable":
            credit.append((None, "unreadable flag"))
        for hook, state in credit:
            counts[(bucket, source, persona, hook, state)] += rows_n
    return [(*group, n, None, None) for group, n in counts.items()]


def _usage_facts(rows) -> list[tuple]:
    """(model, band, requests, prompt sum, completion sum) → a prompt and a completion row, so
    each sum is a `total` that stored hours add up like any other."""
    return [
        (bucket, source, persona, model, f"{part}:{band}", n, total, None)
        for bucket, source, persona, model, band, n, prompt, completion in rows
        for part, total in (("prompt", prompt), ("completion", completion))
    ]


# Per-kind rewriting of the raw query's rows before they are stored or summed.
TRANSFORMS = {"hooks": _hook_facts, "usage": _usage_facts}


@dataclass
class Plan:
    """Where a window's facts come from: stored hours (their settled rows), live [start, end)
    ranges (every row), and `processing` [start, end) ranges whose 'processing' rows are read
    live (the stored hours that hold some)."""

    stored: list[int]
    live: list[tuple[int, int]]
    processing: list[tuple[int, int]] = field(default_factory=list)
    ledger: str = ""  # the key the stored hours are kept under (ledger_key)
    # (hour, rows) of the window's whole hours not summarised yet (read live), newest first,
    # and those a bounded plan leaves out: not counted at all (see bounded).
    pending: list[tuple[int, int]] = field(default_factory=list)
    left_out: list[tuple[int, int]] = field(default_factory=list)
    live_only: bool = False  # every hour read live, stored or not (see live_plan)

    @property
    def reads_live(self) -> bool:
        return bool(self.live or self.processing)

    def live_part(self) -> "Plan":
        return replace(self, stored=[])

    def with_live(self, start: int, end: int) -> "Plan":
        return replace(self, live=_merged([*self.live, (start, end)]))

    def within(self, since_ms: int, until_ms: int) -> "Plan":
        """The part of this plan in [since, until), `since` on the hour (an hour is in or out
        whole): a shorter window read from the same census and the same left-out hours."""

        def inside(hour: int) -> bool:
            return since_ms <= hour < until_ms

        return replace(
            self,
            stored=[hour for hour in self.stored if inside(hour)],
            live=_clipped(self.live, since_ms, until_ms),
            processing=_clipped(self.processing, since_ms, until_ms),
            pending=[(hour, rows) for hour, rows in self.pending if inside(hour)],
            left_out=[(hour, rows) for hour, rows in self.left_out if inside(hour)],
        )

    def bounded(self, max_rows: int) -> "Plan":
        """This plan reading at most `max_rows` rows of its hours not summarised yet, newest
        first (the current hour and a window's cut edges are always read): the older ones are
        left out, and said (left_out), so that a chart answers in time while the hours are being
        summarised instead of reading a month live."""
        kept_rows, left_out = 0, []
        for hour, rows in self.pending:
            if left_out or kept_rows + rows > max_rows:
                left_out.append((hour, rows))
            else:
                kept_rows += rows
        if not left_out:
            return self
        out = {hour for hour, _ in left_out}
        live = [r for start, end in self.live for r in _without_hours(start, end, out)]
        return replace(self, live=live, left_out=left_out)


@dataclass
class Scope:
    """A window and the dashboard's filters: what a chart's facts are about."""

    since_ms: int
    until_ms: int
    source: str = ""
    persona: str = ""

    def ledger_filters(self) -> tuple[str, list]:
        clauses, params = [], []
        if self.source:
            clauses.append("event_source = %s")
            params.append(self.source)
        if self.persona:
            clauses.append("session_persona = %s")
            params.append(self.persona)
        return "".join(f" AND {c}" for c in clauses), params


# -- Which ledger ---------------------------------------------------------------------------------


def ledger_key() -> str:
    """The key this ledger's stored hours are kept under. We never write the ledger, so it
    cannot carry an id of ours: a ledger is recognised at its path by an anchor, one of its
    requests (id and started_at, by the primary key). A file replaced or rebuilt there lacks the
    anchor (its ids are new ULIDs) and gets a new random key: its hours are built afresh."""
    path = ledger_identity()  # the file, or the PostgreSQL database
    newest = _newest_request()
    if newest is None:  # no request to recognise it by: only the per-hour checks judge its hours
        return f"unanchored:{path}"
    key = _recognised_key(path, newest)
    if key is not None:
        return key
    # Hosts sharing a PostgreSQL meet a new ledger at the same moment: one names it (under a
    # lock on its path), the others then recognise it, so its hours are built under one key.
    with _one_at_a_time(f"ledger:{path}"):
        return _recognised_key(path, newest) or _new_key(path, newest)


def _recognised_key(path: str, newest: tuple[str, int]) -> str | None:
    now = now_ms()
    for known in RollupLedger.objects.filter(path=path).order_by("-seen_at", "id"):
        if sqlite.rows(
            "SELECT 1 FROM nexus_requests WHERE id = %s AND started_at = %s",
            [known.anchor_id, known.anchor_started_at],
        ):
            if now - known.seen_at >= REFRESH_MS:
                known.anchor_id, known.anchor_started_at = newest
                known.seen_at = now
                known.save(update_fields=["anchor_id", "anchor_started_at", "seen_at"])
                _forget_stale_ledgers(path, now)
            return known.key
    return None


def _new_key(path: str, newest: tuple[str, int]) -> str:
    now = now_ms()
    anchor_id, anchor_started_at = newest
    known = RollupLedger.objects.create(
        key=uuid.uuid4().hex, path=path, anchor_id=anchor_id,
        anchor_started_at=anchor_started_at, seen_at=now,
    )  # fmt: skip
    _forget_stale_ledgers(path, now)
    return known.key


def _newest_request() -> tuple[str, int] | None:
    """The newest request with a usable id and start (junk rows cannot anchor)."""
    # PostgreSQL's typed columns hold no junk to skip, and its planner cannot see through
    # typeof(): it expected a long search and started parallel workers to find one row (~25 ms
    # on the bench ledger, not 0.1).
    usable = "WHERE typeof(id) = 'text' AND typeof(started_at) = 'integer'"
    if dialect.on_postgres():
        usable = ""
    found = sqlite.rows(
        f"SELECT id, started_at FROM nexus_requests {usable} ORDER BY started_at DESC LIMIT 1"
    )
    return found[0] if found else None


def _forget_stale_ledgers(path: str, now: int) -> None:
    """Delete the hours of ledgers once at this path and not recognised for FORGET_MS (not at
    once: a worker's open connection may still read a replaced file for a minute), at most
    FORGET_ROWS rows of each table a call (a 1M-request ledger's month is ~900,000 rows, ~2 s to
    delete): the rest goes at the next call, and the key with its last rows."""
    stale = RollupLedger.objects.filter(path=path, seen_at__lt=now - FORGET_MS)
    for key in list(stale.values_list("key", flat=True)):
        with transaction.atomic(using="default"):
            left = False
            for model in (
                RollupFact,
                RollupTimings,
                FailureSignature,
                FailureGroupHour,
                RollupHour,
            ):
                batch = model.objects.filter(ledger=key).values("pk")[:FORGET_ROWS]
                deleted, _ = model.objects.filter(pk__in=batch).delete()
                left = left or deleted == FORGET_ROWS
            if left:
                return
            RollupLedger.objects.filter(key=key).delete()


# -- Planning -------------------------------------------------------------------------------------


def plan(
    since_ms: int, until_ms: int, budget_s: float | None = None, verify_rows: float | None = None
) -> Plan:
    """Split [since, until) into stored hours and live ranges, first building missing settled
    hours, newest first, for up to `budget_s` seconds (default BUILD_BUDGET_S), and re-reading
    the content of up to `verify_rows` (default VERIFY_ROWS) rows of stored hours.

    Work grows with the hours that hold rows, not with the window: a window from 1970 costs
    what the ledger's own hours cost."""
    if since_ms >= until_ms:
        return Plan([], [])
    first = since_ms // HOUR * HOUR
    settled_end = (now_ms() - SETTLE_MS) // HOUR * HOUR
    if first >= settled_end:
        return Plan([], [(since_ms, until_ms)])
    # Past the settled hours a window is read live whatever its end: the plan is kept without
    # it, so that a preset window ("the last 30 days", ending now) finds it again on the next
    # chart and the next page, not only when `until` repeats to the millisecond.
    head_end = min(until_ms, settled_end)
    budget_s = BUILD_BUDGET_S if budget_s is None else budget_s
    key: tuple = (ledger_identity(), since_ms, head_end)
    if budget_s == 0:
        # Nothing to build here (a summariser builds the hours): a plan with hours missing is
        # kept too, for a few seconds, so that a dashboard's seven charts share one. Hours
        # stored since are read live meanwhile: still exact.
        key += (int(time.monotonic() // UNFINISHED_PLAN_S),)

    def make() -> tuple[Plan, bool]:
        the_plan, finished = _make_plan(
            since_ms, head_end, first, min(-(-head_end // HOUR) * HOUR, settled_end), budget_s,
            VERIFY_ROWS if verify_rows is None else verify_rows,
        )  # fmt: skip
        return the_plan, finished or budget_s == 0

    head = _plans.get(key, make)
    return head if head_end == until_ms else head.with_live(head_end, until_ms)


def live_plan(since_ms: int, until_ms: int) -> Plan:
    """[since, until) read live whatever is stored (buckets under an hour cannot come from
    stored hours), its settled hours pending, newest first, so that bounded() can leave the
    oldest out and say so. The current hour is always read, as in any plan."""
    settled_end = (now_ms() - SETTLE_MS) // HOUR * HOUR
    first = since_ms // HOUR * HOUR
    counts = census(first, min(until_ms, settled_end)) if first < settled_end else {}
    pending = [(hour, json.loads(fingerprint)[0]) for hour, fingerprint in counts.items()]
    return Plan([], [(since_ms, until_ms)], pending=sorted(pending, reverse=True), live_only=True)


def _make_plan(
    since_ms: int, until_ms: int, first: int, settled_end: int, budget_s: float,
    verify_rows: float,
) -> tuple[Plan, bool]:  # fmt: skip
    """The plan, and whether it is worth keeping (no hour left to build: else the next chart
    makes it again and builds more)."""
    key = ledger_key()
    busy = processing_counts(first, settled_end)
    ledger_hours = {}  # hour → (settled rows, rowid sum of all rows)
    for hour, fingerprint in census(first, settled_end).items():
        rows, rowids = json.loads(fingerprint)
        ledger_hours[hour] = (rows - busy.get(hour, 0), rowids)
    cut = _cut_hours(since_ms, until_ms, first, settled_end)
    stored = _stored_hours(key, first, settled_end)
    fresh = {hour for hour, s in stored.items() if s.fingerprint == ledger_hours.get(hour)}
    fresh -= _edited_hours(key, {hour: stored[hour] for hour in fresh - cut}, verify_rows)
    deadline = time.monotonic() + budget_s
    usable, live, processing, pending = [], [(settled_end, until_ms)], [], []
    for hour in sorted(ledger_hours.keys() | stored.keys(), reverse=True):
        settled, digest = ledger_hours.get(hour, (0, 0.0))
        # An hour with no settled row needs nothing stored; any other must match the ledger.
        if hour not in cut and (
            not settled
            or hour in fresh
            or (time.monotonic() < deadline and build_hour(key, hour, settled, digest))
        ):
            if settled:
                usable.append(hour)
            if busy.get(hour):
                processing.append((hour, hour + HOUR))
        else:
            live.append((hour, hour + HOUR))
            if hour not in cut:
                pending.append((hour, settled + busy.get(hour, 0)))
    the_plan = Plan(
        sorted(usable), _clipped(live, since_ms, until_ms), _merged(processing), key, pending
    )
    return the_plan, not pending


@dataclass
class _StoredHour:
    requests: int
    rows_digest: float
    content: int
    verified_at: int

    @property
    def fingerprint(self) -> tuple[int, float]:
        return self.requests, self.rows_digest


def _stored_hours(key: str, first: int, end: int) -> dict[int, _StoredHour]:
    rows = RollupHour.objects.filter(ledger=key, hour__gte=first, hour__lt=end).values_list(
        "hour", "requests", "rows_digest", "content", "verified_at"
    )
    return {hour: _StoredHour(*rest) for hour, *rest in rows}


def _edited_hours(key: str, candidates: dict[int, _StoredHour], max_rows: float) -> set[int]:
    """Re-read the content of the candidate hours verified longest ago, up to `max_rows` settled
    rows (at least one hour; all of them with no limit, else at most every VERIFY_EVERY_S), and
    return those whose checksum moved: a settled row edited in place (outside the ledger's
    lifecycle, but it happens). Their stored hours are dropped, the others marked verified now."""
    global _content_checked_at
    if max_rows != math.inf and time.monotonic() - _content_checked_at < VERIFY_EVERY_S:
        return set()
    _content_checked_at = time.monotonic()
    picked, rows = [], 0
    for hour in sorted(candidates, key=lambda h: (candidates[h].verified_at, -h)):
        if picked and rows + candidates[hour].requests > max_rows:
            break
        picked.append(hour)
        rows += candidates[hour].requests
    if not picked:
        return set()
    try:
        checksums = content_checksums(picked)
    except sqlite.LedgerQueryTimeout:
        # Rows too big to re-read within a page's time limit: ledger_rollup (no limit) checks
        # them; they go to the back of the queue, so the next re-read tries other hours.
        checksums = {hour: candidates[hour].content for hour in picked}
    edited = {hour for hour in picked if checksums.get(hour, 0) != candidates[hour].content}
    RollupHour.objects.filter(ledger=key, hour__in=set(picked) - edited).update(
        verified_at=now_ms()
    )
    RollupHour.objects.filter(ledger=key, hour__in=edited).delete()
    return edited


def _cut_hours(since_ms: int, until_ms: int, first: int, end: int) -> set[int]:
    """The window's first and last settled hours (those before `end`) that hold rows outside
    the window: they are read live. A cut hour whose rows are all inside (a window ending at the
    ledger's last request, a bar's exact range) comes from the store like any other."""
    last = until_ms // HOUR * HOUR
    edges = [(first, first, since_ms), (last, until_ms, last + HOUR)]
    edges = [(hour, start, stop) for hour, start, stop in edges if start < stop and hour < end]
    if not edges:
        return set()
    probes = ", ".join(
        "EXISTS (SELECT 1 FROM nexus_requests WHERE started_at >= %s AND started_at < %s)"
        for _ in edges
    )
    ((*outside,),) = sqlite.rows(f"SELECT {probes}", [b for _, *bounds in edges for b in bounds])
    return {hour for (hour, _, _), rows in zip(edges, outside, strict=True) if rows}


def _without_hours(start: int, end: int, hours: set[int]) -> list[tuple[int, int]]:
    """[start, end) less the given hours."""
    pieces, cursor = [], start
    for hour in sorted(h for h in hours if h < end and h + HOUR > start):
        pieces.append((cursor, hour))
        cursor = hour + HOUR
    pieces.append((cursor, end))
    return [(a, b) for a, b in pieces if a < b]


def _clipped(ranges, since_ms: int, until_ms: int) -> list[tuple[int, int]]:
    return _merged([(max(start, since_ms), min(end, until_ms)) for start, end in ranges])


# Of an hour's rows: their count, and the sum of their rowids, both read from the started_at
# index alone (which holds the rowid): a row deleted and another inserted moves the sum, as the
# new row gets a new rowid (unless the deleted row was the last inserted: SQLite then reuses its
# rowid, and the content check finds the change). Adding the start times would cost ~2.5 times
# as much (decoding each index key); the rowid sum costs ~1.5 times the count alone (720 hours
# of a million rows: ~90 ms). total(): never an overflow error, exact below 2**53.
_FINGERPRINT = f"""SELECT json_array(count(*), total(rowid))
    FROM nexus_requests WHERE started_at >= {{0}} AND started_at < {{0}} + {HOUR}"""


def _fingerprint(start: str) -> str:
    """SQL for an hour's fingerprint. PostgreSQL has no rowid: the sum of the rows' id hashes
    (read from the table, not the index alone) moves the same way when a row is replaced."""
    if dialect.on_postgres():
        return f"""SELECT json_build_array(count(*), coalesce(sum(hashtext(id)), 0))::text
    FROM nexus_requests WHERE started_at >= {start} AND started_at < {start} + {HOUR}"""
    return _FINGERPRINT.format(start)


# A row no longer processing (SQLite's `IS NOT 'processing'`, in words both engines read).
SETTLED = "status IS DISTINCT FROM 'processing'"


def census(since_ms: int, until_ms: int) -> dict[int, str]:
    """[row count, rowid sum] (JSON) of each hour with rows in [since, until), hours aligned.

    Taken whole at least every CENSUS_WHOLE_EVERY_S; in between, on SQLite, a worker brings the
    census it took for the same hours up to date from the rows added since (_census_now): a
    live dashboard or overview asks every few seconds while the ledger moves, and a whole census
    of 30 days reads a million index entries (~70 ms) where the rows added since are a few."""
    if (
        dialect.on_postgres()
        or until_ms - since_ms < CENSUS_KEPT_FROM_HOURS * HOUR
        or since_ms < 0
        or since_ms % HOUR
        or until_ms % HOUR
    ):
        return _whole_census(since_ms, until_ms)
    kept = _censuses.update(
        (ledger_identity(), since_ms, until_ms),
        lambda stale: (_census_now(since_ms, until_ms, stale), True),
    )
    return {hour: json.dumps(figures) for hour, figures in kept.hours.items()}


# A census kept is brought up to date only when every change since it was taken is a row added
# (the table's count went up by exactly the rows past its rowid mark): a row deleted, replaced
# or moved (retention, a REPLACE) makes the next census whole. A row's started_at edited in
# place is the one change a count cannot see: it shows at the next whole census, as a tree's
# edit in place does (sessions/detail.py, WHOLE_READ_EVERY_S).
CENSUS_WHOLE_EVERY_S = 30.0
CENSUS_UPDATE_MAX_ROWS = 20_000
# A census of fewer hours is taken whole: a day's (~1 ms on the bench ledger) costs less than
# the table's count that tells a census kept from one gone stale (~4 ms for 1.3M rows).
CENSUS_KEPT_FROM_HOURS = 48
_censuses = sqlite.WhileUnchanged(keep=8)


@dataclass(frozen=True)
class _Census:
    hours: dict[int, list]  # hour → [row count, rowid sum], hours ascending
    table_rows: int  # count(*) of nexus_requests when taken
    mark: int  # its largest rowid then
    taken_whole_at: float  # time.monotonic() of the last whole census


def _census_now(since_ms: int, until_ms: int, stale: _Census | None) -> _Census:
    ((mark, table_rows),) = sqlite.rows(
        "SELECT (SELECT max(rowid) FROM nexus_requests), (SELECT count(*) FROM nexus_requests)"
    )
    mark = int(mark or 0)
    if (
        stale is not None
        and time.monotonic() - stale.taken_whole_at <= CENSUS_WHOLE_EVERY_S
        and stale.mark <= mark <= stale.mark + CENSUS_UPDATE_MAX_ROWS
    ):
        added = sqlite.rows(
            "SELECT rowid, started_at FROM nexus_requests WHERE rowid > %s AND rowid <= %s",
            [stale.mark, mark],
        )
        if table_rows == stale.table_rows + len(added):
            hours = {hour: list(figures) for hour, figures in stale.hours.items()}
            for rowid, started_at in added:
                # As the whole census counts: a number (not text, not a blob) in [since, until).
                if isinstance(started_at, int | float) and since_ms <= started_at < until_ms:
                    figures = hours.setdefault(int(started_at // HOUR * HOUR), [0, 0.0])
                    figures[0] += 1
                    figures[1] += rowid
            return _Census(dict(sorted(hours.items())), table_rows, mark, stale.taken_whole_at)
    whole = {
        hour: json.loads(figures) for hour, figures in _whole_census(since_ms, until_ms).items()
    }
    return _Census(whole, table_rows, mark, time.monotonic())


def _whole_census(since_ms: int, until_ms: int) -> dict[int, str]:
    """The census read from the ledger: the index is probed for the next row after each hour,
    then counted over the hour (720 hours of a million rows: ~60 ms, where a GROUP BY over the
    index takes ~500 ms)."""
    # Bounded by `until` (a text started_at sorts after every number: unbounded, the probe
    # would find it again and again), and CAST for a REAL started_at.
    next_hour = f"""CAST((SELECT min(started_at) FROM nexus_requests
        WHERE started_at >= {{}} AND started_at < {int(until_ms)}) AS BIGINT) / {HOUR} * {HOUR}"""
    return dict(
        sqlite.rows(
            f"""WITH RECURSIVE hour(start) AS (
                    SELECT {next_hour.format("%s")}
                    UNION ALL
                    SELECT {next_hour.format(f"hour.start + {HOUR}")} FROM hour
                    WHERE hour.start < %s)
                SELECT start, ({_fingerprint("start")}) FROM hour WHERE start < %s""",
            [since_ms, until_ms, until_ms],
        )
    )


def content_checksums(hours: list[int]) -> dict[int, int]:
    """The content checksum of each hour's settled rows: this reads the rows themselves."""
    return dict(
        sqlite.rows(
            f"""SELECT h.value, (SELECT coalesce(sum({_row_checksum()}), 0) FROM nexus_requests
                                 WHERE started_at >= h.value AND started_at < h.value + {HOUR}
                                   AND {SETTLED})
                FROM (SELECT CAST(value AS BIGINT) AS value FROM json_each(%s)) AS h""",
            [json.dumps(hours)],
        )
    )


def processing_counts(since_ms: int, until_ms: int) -> dict[int, int]:
    """How many 'processing' rows each hour of [since, until) holds (hours without: absent)."""
    return dict(
        sqlite.rows(
            f"""SELECT {_bucket(HOUR)}, count(*) FROM nexus_requests
                WHERE status = 'processing' AND started_at >= %s AND started_at < %s
                GROUP BY 1""",
            [since_ms, until_ms],
        )
    )


def _merged(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Non-empty [start, end) ranges, sorted, with touching ones joined."""
    merged: list[tuple[int, int]] = []
    for start, end in sorted(r for r in ranges if r[0] < r[1]):
        if merged and merged[-1][1] >= start:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


# -- Building -------------------------------------------------------------------------------------


def build_hour(key: str, hour: int, expected: int, digest: float) -> bool:
    """Compute and store the facts of one hour's settled rows with its fingerprints; False
    (nothing stored) when the rows are not those the census saw (the ledger moved in between).

    On PostgreSQL, where several hosts share the stored hours, an hour is built by one process
    at a time: the builder holds a lock on it in the database (an advisory lock, for its
    transaction). Another finding it taken builds nothing (False: the hour is read live, and
    built or found stored later); one that gets it after a build finds that build stored.
    On SQLite (one machine) an hour two workers meet is built by both, with the same result:
    holding SQLite's one write lock through a build made other pages wait past the busy timeout
    (bench/first_look.py: a chart answered 503 while the summariser ran)."""
    if not state_db.on_postgres():
        return _build_hour(key, hour, expected, digest)
    with transaction.atomic(using="default"), connections["default"].cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_xact_lock(%s, %s)", [_lock_space(key), hour // HOUR])
        if not cursor.fetchone()[0]:
            return False
        if RollupHour.objects.filter(
            ledger=key, hour=hour, requests=expected, rows_digest=digest
        ).exists():
            return True  # built by another process since this one's plan looked
        return _build_hour(key, hour, expected, digest)


def _lock_space(key: str) -> int:
    """A ledger's key as the first int4 of its hours' advisory locks."""
    return zlib.crc32(key.encode()) - (1 << 31)


@contextmanager
def _one_at_a_time(name: str):
    """A transaction in which processes take turns: on PostgreSQL it holds an advisory lock on
    `name` (processes of every host); on SQLite it holds the write lock from its start
    (IMMEDIATE), so a worker sharing the file waits, then reads what the other wrote."""
    with transaction.atomic(using="default"):
        if state_db.on_postgres():
            with connections["default"].cursor() as cursor:
                cursor.execute("SELECT pg_advisory_xact_lock(%s, 0)", [_lock_space(name)])
        yield


def _build_hour(key: str, hour: int, expected: int, digest: float) -> bool:
    where = f"started_at >= %s AND started_at < %s AND {SETTLED}"
    params = [hour, hour + HOUR]
    with transaction.atomic(using=LEDGER):  # one snapshot: the facts and their fingerprints
        facts = {kind: _raw_facts(kind, HOUR, where, params) for kind in FACTS}
        if sum(r[5] for r in facts["source"]) != expected:
            return False
        ((fingerprint,),) = sqlite.rows(f"SELECT ({_fingerprint('%s')})", [hour] * 2)
        if json.loads(fingerprint)[1] != digest:
            return False
        timings = _raw_timings(where, params)
        failed = sqlite.rows(failure_groups.rows_sql(where), params)
        content = content_checksums([hour])[hour]
    with transaction.atomic(using="default"):
        for model in (RollupHour, RollupFact, RollupTimings, FailureSignature, FailureGroupHour):
            model.objects.filter(ledger=key, hour=hour).delete()
        # Each failed row's signature for "similar failures" (pipeline/signature_search.py), by
        # rowid, which a PostgreSQL ledger has not: its similar failures are masked live.
        if not dialect.on_postgres():
            _insert(
                FailureSignature,
                ("ledger", "hour", "request_rowid", "signature"),
                ((key, hour, ref, signature) for ref, _, _, signature, *_ in failed),
            )
        _insert(
            FailureGroupHour,
            ("ledger", "hour", "combined", *failure_groups.STORED_FIELDS),
            ((key, hour, g.combined, *failure_groups.stored(g))
             for g in failure_groups.group_hours(failed)),
        )  # fmt: skip
        _insert(
            RollupFact,
            ("ledger", "hour", "kind", "combined", "source", "persona", "key", "sub", "n",
             "total", "last"),
            ((key, hour, kind, combined, source, persona, k, sub, n, total, last)
             for kind, rows in facts.items()
             for combined, kind_rows in ((False, rows), (True, _combined(rows)))
             for _, source, persona, k, sub, n, total, last in kind_rows),
        )  # fmt: skip
        per_scope = _arrays(timings)
        _insert(
            RollupTimings,
            ("ledger", "hour", "combined", "source", "persona", "stage", "values", "counts"),
            ((key, hour, combined, source, persona, stage, values.tobytes(), counts.tobytes())
             for combined, arrays in ((False, per_scope), (True, _combined_arrays(per_scope)))
             for (source, persona, stage), (values, counts) in arrays.items()),
        )  # fmt: skip
        now = now_ms()
        RollupHour.objects.create(
            ledger=key, hour=hour, requests=expected, rows_digest=digest, content=content,
            built_at=now, verified_at=now,
        )  # fmt: skip
    return True


def _insert(model, names: tuple[str, ...], rows) -> None:
    """Insert rows of values for the model's `names` fields in one executemany: an hour is
    ~2,000 fact rows, which bulk_create spent ~60 % of the hour's build time making into model
    objects and SQL. Text fields get str() of a value, as the ORM gives them."""
    fields = [model._meta.get_field(name) for name in names]
    as_text = [isinstance(f, models.TextField | models.CharField) for f in fields]

    def prepared(row):
        return [
            str(v) if text and v is not None and not isinstance(v, str) else v
            for v, text in zip(row, as_text, strict=True)
        ]

    columns = ", ".join(connections["default"].ops.quote_name(f.column) for f in fields)
    with connections["default"].cursor() as cursor:
        cursor.executemany(
            f"INSERT INTO {model._meta.db_table} ({columns}) "
            f"VALUES ({', '.join(['%s'] * len(fields))})",
            [prepared(row) for row in rows],
        )


def _combined(rows) -> list[tuple]:
    """An hour's fact rows summed over sources and personas (source and persona None)."""
    sums: dict[tuple, list] = {}
    for bucket, _, _, k, sub, n, total, last in rows:
        acc = sums.setdefault((bucket, k, sub), [0, None if total is None else 0, last])
        acc[0] += n
        if total is not None:
            acc[1] += total
        if last is not None:
            acc[2] = max(acc[2], last)
    return [(bucket, None, None, k, sub, *acc) for (bucket, k, sub), acc in sums.items()]


def _combined_arrays(per_scope: dict) -> dict[tuple, tuple[np.ndarray, np.ndarray]]:
    by_stage: dict[str, list] = defaultdict(list)
    for (_, _, stage), arrays in per_scope.items():
        by_stage[stage].append(arrays)
    combined = {}
    for stage, parts in by_stage.items():
        values, where = np.unique(np.concatenate([v for v, _ in parts]), return_inverse=True)
        counts = np.bincount(where, weights=np.concatenate([c for _, c in parts]))
        combined[(None, None, stage)] = (values, counts.astype(np.int64))
    return combined


def _raw_facts(kind: str, bucket_ms: int, where: str, params: list) -> list[tuple]:
    rows = sqlite.rows(FACTS[kind].format(bucket=_bucket(bucket_ms), where=where), params)
    transform = TRANSFORMS.get(kind)
    return transform(rows) if transform else rows


def _raw_timings(where: str, params: list) -> list[tuple]:
    items = sqlite.json_object_items("stage_timings")
    number = "NUMERIC" if dialect.on_postgres() else "DOUBLE PRECISION"
    sql = TIMINGS.format(bucket=_bucket(HOUR), where=where, items=items, number=number)
    return [(*row[:4], float(row[4]), row[5]) for row in sqlite.rows(sql, params)]


def _arrays(rows) -> dict[tuple, tuple[np.ndarray, np.ndarray]]:
    """(bucket, source, persona, stage, value, count) rows as value/count arrays per group."""
    grouped: dict[tuple, tuple[list, list]] = defaultdict(lambda: ([], []))
    for _, source, persona, stage, value, count in rows:
        values, counts = grouped[(source, persona, stage)]
        values.append(value)
        counts.append(count)
    return {
        group: (np.array(values, dtype=np.float64), np.array(counts, dtype=np.int64))
        for group, (values, counts) in grouped.items()
    }


# -- Reading --------------------------------------------------------------------------------------


def _live_sql(the_plan: Plan) -> tuple[str, list]:
    """The plan's live rows as a WHERE condition: every row of its live ranges, and the
    'processing' rows of its stored hours."""
    ranges = " OR ".join("(started_at >= %s AND started_at < %s)" for _ in the_plan.live)
    busy = " OR ".join("(started_at >= %s AND started_at < %s)" for _ in the_plan.processing)
    parts = [f"({ranges})"] if ranges else []
    if busy:
        parts.append(f"(status = 'processing' AND ({busy}))")
    params = [bound for r in the_plan.live + the_plan.processing for bound in r]
    return f"({' OR '.join(parts)})", params


# PostgreSQL sums BIGINTs as NUMERIC (Decimal in Python): counts stay whole numbers on both.
_SUM_N = "CAST(sum(n) AS BIGINT)"


def facts(scope: Scope, the_plan: Plan, kind: str, bucket_ms: int | None = None) -> list[tuple]:
    """(bucket, source, key, sub, n, total, last) rows of one kind over the scope's window: the
    stored hours' and the live ranges'. A key may appear in several rows: callers sum.

    With `bucket_ms` (a whole number of hours, or any size when nothing is stored) rows carry
    the start of their bucket, aligned on multiples of it; without, bucket is 0."""
    rows: list[tuple] = []
    if the_plan.reads_live:
        ranges, range_params = _live_sql(the_plan)
        filters, filter_params = scope.ledger_filters()
        for bucket, source, _, k, sub, n, total, last in _raw_facts(
            kind, bucket_ms or HOUR, ranges + filters, range_params + filter_params
        ):
            rows.append((bucket if bucket_ms else 0, source, k, sub, n, total, last))
    if the_plan.stored:
        assert not bucket_ms or bucket_ms % HOUR == 0, "stored hours cannot be split"
        size = bucket_ms or 0
        with _stored_facts(
            scope, the_plan, kind,
            f"""{f"(hour / {size}) * {size}" if size else 0}, source, key, sub, {_SUM_N},
                CAST(sum(total) AS BIGINT), max(last)""",
            "GROUP BY 1, 2, 3, 4",
        ) as cursor:  # fmt: skip
            rows.extend(cursor.fetchall())
    return rows


def statuses_by_persona(the_plan: Plan) -> list[tuple]:
    """(persona, status, n) rows over the plan, from the requests-by-status facts kept per source
    and persona (the stored hours') and the same query over the live ranges. A persona may
    appear in several rows: callers sum."""
    rows: list[tuple] = []
    if the_plan.reads_live:
        ranges, range_params = _live_sql(the_plan)
        for _, _, persona, _, sub, n, _, _ in _raw_facts("source", HOUR, ranges, range_params):
            rows.append((persona, sub, n))
    if the_plan.stored:
        hours, hour_params = state_db.in_list(the_plan.stored)
        with connections["default"].cursor() as cursor:
            cursor.execute(
                f"""SELECT persona, sub, {_SUM_N} FROM {RollupFact._meta.db_table}
                    WHERE ledger = %s AND kind = 'source' AND combined = %s AND hour IN {hours}
                    GROUP BY 1, 2""",
                [the_plan.ledger, False, *hour_params],
            )
            rows.extend(cursor.fetchall())
    return rows


def top_keys(scope: Scope, the_plan: Plan, kind: str, limit: int) -> dict[object, Counter]:
    """The `limit` keys of a kind with the most requests (ties: by key), each with its counts
    by sub, exactly, without summing every key in Python (30 days: ~100,000 principals × status).

    Stored totals are read most first and cut once at least limit + L keys are in (L: the keys
    of the live part) and the total drops: a key left out has fewer stored requests than each of
    `limit` kept keys that have no live ones, so it cannot make the top."""
    live: dict[object, Counter] = defaultdict(Counter)
    for _, _, key, sub, n, _, _ in facts(scope, the_plan.live_part(), kind):
        live[key][sub] += n  # NULL is a key too: requests with no principal are many
    stored: dict[object, int] = {}
    if the_plan.stored:
        need = limit + len(live)
        with _stored_facts(
            scope, the_plan, kind, f"key, {_SUM_N}", "GROUP BY key ORDER BY 2 DESC"
        ) as cursor:  # fmt: skip
            lowest = 0
            for key, total in cursor:
                if len(stored) >= need and total < lowest:
                    break
                stored[key] = lowest = total
        missing = [key for key in live if key not in stored]
        if missing:  # live keys whose stored totals the cut left out
            keys, key_params = _key_in(missing)
            with _stored_facts(
                scope, the_plan, kind, f"key, {_SUM_N}", f"AND {keys} GROUP BY key", key_params,
            ) as cursor:  # fmt: skip
                stored.update(cursor.fetchall())
    totals = {k: stored.get(k, 0) + sum(live[k].values()) for k in stored.keys() | live.keys()}
    top = sorted(totals, key=lambda k: (-totals[k], str(k)))[:limit]
    result = {key: Counter(live.get(key, {})) for key in top}
    if the_plan.stored and top:
        keys, key_params = _key_in(top)
        with _stored_facts(
            scope, the_plan, kind, f"key, sub, {_SUM_N}", f"AND {keys} GROUP BY 1, 2", key_params,
        ) as cursor:  # fmt: skip
            for key, sub, n in cursor:
                result[key][sub] += n
    return result


def _key_in(keys: list) -> tuple[str, list]:
    """SQL selecting stored facts whose key is one of `keys`, None (NULL) included."""
    values, params = state_db.in_list([key for key in keys if key is not None])
    return f"(key IN {values}{' OR key IS NULL' if None in keys else ''})", params


@contextmanager
def _stored_facts(scope: Scope, the_plan: Plan, kind: str, select: str, tail: str, params=()):
    """A cursor over one kind's stored facts of the plan's hours, for the scope's filters."""
    hours, hour_params = state_db.in_list(the_plan.stored)
    filters, filter_params = _store_filters(scope)
    with connections["default"].cursor() as cursor:
        cursor.execute(
            f"""SELECT {select} FROM {RollupFact._meta.db_table}
                WHERE ledger = %s AND kind = %s AND hour IN {hours} {filters} {tail}""",
            [the_plan.ledger, kind, *hour_params, *filter_params, *params],
        )
        yield cursor


def timing_distributions(scope: Scope, the_plan: Plan) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per stage, every timing value in the window with its count (values may repeat)."""
    parts: dict[str, tuple[list, list]] = defaultdict(lambda: ([], []))
    if the_plan.reads_live:
        ranges, range_params = _live_sql(the_plan)
        filters, filter_params = scope.ledger_filters()
        rows = _raw_timings(ranges + filters, range_params + filter_params)
        for (_, _, stage), (values, counts) in _arrays(rows).items():
            parts[stage][0].append(values)
            parts[stage][1].append(counts)
    if the_plan.stored:
        hours, hour_params = state_db.in_list(the_plan.stored)
        filters, filter_params = _store_filters(scope)
        with connections["default"].cursor() as cursor:
            cursor.execute(
                f"""SELECT stage, "values", counts FROM {RollupTimings._meta.db_table}
                    WHERE ledger = %s AND hour IN {hours} {filters}""",
                [the_plan.ledger, *hour_params, *filter_params],
            )
            for stage, values, counts in cursor.fetchall():
                parts[stage][0].append(np.frombuffer(values, dtype=np.float64))
                parts[stage][1].append(np.frombuffer(counts, dtype=np.int64))
    return {
        stage: (np.concatenate(values), np.concatenate(counts))
        for stage, (values, counts) in parts.items()
    }


def stored_timings(the_plan: Plan, stage: str) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Per stored hour of the plan, the timing values of one stage with their counts, over all
    sources and personas (pipeline/timing_search.py finds the hours worth reading with them)."""
    if not the_plan.stored:
        return {}
    hours, hour_params = state_db.in_list(the_plan.stored)
    with connections["default"].cursor() as cursor:
        cursor.execute(
            f"""SELECT hour, "values", counts FROM {RollupTimings._meta.db_table}
                WHERE ledger = %s AND combined = %s AND stage = %s AND hour IN {hours}""",
            [the_plan.ledger, True, stage, *hour_params],
        )
        return {
            hour: (np.frombuffer(values, dtype=np.float64), np.frombuffer(counts, dtype=np.int64))
            for hour, values, counts in cursor.fetchall()
        }


def live_condition(the_plan: Plan) -> tuple[str, list]:
    """The rows a plan reads live (its live ranges, and the 'processing' rows of its stored
    hours) as an SQL condition and its parameters."""
    if not the_plan.reads_live:
        return "(1 = 0)", []
    return _live_sql(the_plan)


def _store_filters(scope: Scope) -> tuple[str, list]:
    """Stored rows for the scope: the combined ones unless a source or persona is asked for."""
    clauses, params = " AND combined = %s", [not (scope.source or scope.persona)]
    if scope.source:
        clauses += " AND source = %s"
        params.append(scope.source)
    if scope.persona:
        clauses += " AND persona = %s"
        params.append(scope.persona)
    return clauses, params
