"""An issue's figures, added up from its failure groups (pipeline/failure_window.py): counts in a
window, the window before and in all, first and last seen, the trends, what it touched and its
newest requests. An issue is one group (failed stage, signature), or several an operator merged.
"""

import hashlib
import json
from collections import defaultdict
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from pipeline import failure_window
from pipeline.failure_groups import TOUCHED
from pipeline.failure_window import Reader

HOUR = 3_600_000
DAY = 24 * HOUR
TREND_HOURS = 24
TREND_DAYS = 30
NEWEST = 10

Group = tuple[str | None, str]  # (failed stage, signature)


@lru_cache(maxsize=100_000)
def issue_id(stage: str | None, signature: str) -> str:
    """An issue's stable id: the same failure has the same id on every page and every ledger."""
    text = json.dumps([stage, signature], ensure_ascii=False)
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


@dataclass
class Figures:
    """One issue's figures (all its groups together)."""

    id: str
    groups: list[Group] = field(default_factory=list)  # its own first, then those merged in
    count: int = 0  # in the window
    previous: int = 0  # in the window of the same length before it
    total: int = 0  # in all
    first_seen: int | None = None  # in all
    last_seen: int | None = None
    last_in_window: int | None = None
    hourly: dict[int, int] = field(default_factory=dict)  # hour → failures, the last 24 h
    daily: dict[int, int] = field(default_factory=dict)  # day (UTC) → failures, the last 30 d
    touched_parts: dict[str, list[np.ndarray]] = field(default_factory=lambda: defaultdict(list))
    newest: list[tuple[int, int | str]] = field(default_factory=list)  # in the window
    detailed: bool = False  # touched_parts and newest were read (only for the issues shown)

    @property
    def stage(self) -> str | None:
        return self.groups[0][0]

    @property
    def signature(self) -> str:
        return self.groups[0][1]

    @property
    def escalation(self) -> float:
        """The rate now against the window before: 3.0 is three times as many failures; an issue
        absent from the previous window escalates without bound."""
        if self.previous == 0:
            return float("inf") if self.count else 0.0
        return self.count / self.previous

    def touched(self) -> dict[str, int]:
        """How many distinct principals, sessions, channels, personas and models it touched in the
        window (the union of its hours' hashes)."""
        return {
            name: len(np.unique(np.concatenate(parts)))
            if (parts := self.touched_parts[name])
            else 0
            for name in TOUCHED
        }

    def hourly_trend(self, now_ms: int) -> list[tuple[int, int]]:
        """(hour, failures) of the last TREND_HOURS hours, the current one last."""
        current = now_ms // HOUR * HOUR
        hours = [current - i * HOUR for i in range(TREND_HOURS - 1, -1, -1)]
        return [(hour, self.hourly.get(hour, 0)) for hour in hours]

    def daily_trend(self, now_ms: int) -> list[tuple[int, int]]:
        """(day, failures) of the last TREND_DAYS days (UTC), today last."""
        today = now_ms // DAY * DAY
        days = [today - i * DAY for i in range(TREND_DAYS - 1, -1, -1)]
        return [(day, self.daily.get(day, 0)) for day in days]


def previous_window(since_ms: int, until_ms: int) -> tuple[int, int]:
    """The window before [since, until) that escalation compares with: as many whole hours as
    the window covers (its last one may be the current, partial hour), ending where it starts."""
    hours = -(-(until_ms - since_ms) // HOUR)
    return since_ms - hours * HOUR, since_ms


def trend_spans(now_ms: int) -> tuple[tuple[int, int], tuple[int, int]]:
    """The hours of the hourly trend and of the daily one: [start, end) each."""
    current, today = now_ms // HOUR * HOUR, now_ms // DAY * DAY
    return (
        (current - (TREND_HOURS - 1) * HOUR, current + HOUR),
        (today - (TREND_DAYS - 1) * DAY, today + DAY),
    )


def read(
    reader: Reader, since_ms: int, until_ms: int, now_ms: int, canonical
) -> dict[str, Figures]:
    """Every issue's figures but what it touched and its newest requests (see add_details):
    `canonical(group)` names the issue a group belongs to (its own, or the one it was merged
    into)."""
    issues: dict[str, Figures] = {}

    def figures_of(group: Group) -> Figures:
        found = issues.get(key := canonical(group))
        if found is None:
            found = issues[key] = Figures(key)
        if group not in found.groups:
            found.groups.append(group)
        return found

    ranges = {"window": (since_ms, until_ms), "previous": previous_window(since_ms, until_ms)}
    for group, t in reader.totals(ranges).items():
        f = figures_of(group)
        f.total += t.n
        f.count += t.within["window"]
        f.previous += t.within["previous"]
        f.first_seen = _least(f.first_seen, t.first_at)
        f.last_seen = _most(f.last_seen, t.last_at)
        f.last_in_window = _most(f.last_in_window, t.last_within.get("window"))
    hours, days = trend_spans(now_ms)
    for attribute, (start, end), size in (("hourly", hours, HOUR), ("daily", days, DAY)):
        for group, buckets in reader.counts(start, end, size).items():
            trend = getattr(figures_of(group), attribute)
            for bucket, n in buckets.items():
                trend[bucket] = trend.get(bucket, 0) + n
    for f in issues.values():
        # Its own group first (it names the issue), then the merged ones in a steady order.
        f.groups.sort(key=lambda g: (issue_id(*g) != f.id, str(g)))
    return issues


def add_details(reader: Reader, issues: list[Figures], since_ms: int, until_ms: int) -> None:
    """What these issues touched in the window and their newest requests: only the issues a
    page shows (the hash arrays are the bulk of the stored records)."""
    by_group = {group: f for f in issues for group in f.groups}
    for group, d in reader.details(since_ms, until_ms, list(by_group)).items():
        f = by_group[group]
        for name, parts in d.touched.items():
            f.touched_parts[name].extend(parts)
        f.newest.extend(d.newest)
    for f in issues:
        f.newest = sorted(set(f.newest), key=lambda s: (s[0], str(s[1])), reverse=True)[:NEWEST]
        f.detailed = True


def failures_after(reader: Reader, f: Figures, moment: int) -> int:
    """How many of an issue's failures started after `moment`: the whole hours after it from the
    summaries, the rest of its own hour counted in the ledger."""
    next_hour = moment // HOUR * HOUR + HOUR
    later = reader.count_from(f.groups, next_hour)
    return later + failure_window.failures_between(f.groups, moment + 1, next_hour)


def _least(a, b):
    return b if a is None else a if b is None else min(a, b)


def _most(a, b):
    return b if a is None else a if b is None else max(a, b)
