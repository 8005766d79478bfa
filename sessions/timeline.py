"""A turn as it happened: its messages and tool calls in one list, in the ledger's time order.

The ledger keeps a turn's messages and its tool calls apart, each numbered by `sequence`. The
turn's panel, its JSON twin and the export interleave them (docs/decisions.md, "A turn is shown
as it happened"):

- each kind keeps its own order, as it is read (by sequence, then time, then id);
- the two are merged by time, a message's `created_at` against a call's `started_at`: the
  earlier comes first;
- at equal times the message comes first: a model writes its text before the calls it makes
  in the same response, and a prompt comes before everything (the importers time a
  transcript's records so that this rule keeps their order: importers/times.py);
- a time that is not a number (NULL, text, a blob, NaN) is the time of the item before it in its
  own list, so it stays right after that one; the first of a list takes the turn's start. A REAL
  time is a number like any other.
"""

import math
from collections.abc import Sequence


def as_time(value) -> float | None:
    """A ledger time as a number to compare, or None when it is not one."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return None if math.isnan(value) else float(value)


def _times(items: Sequence, attribute: str, start: float) -> list[float]:
    """Each item's time; an unreadable one is the time of the item before it."""
    times, previous = [], start
    for item in items:
        time = as_time(getattr(item, attribute))
        previous = previous if time is None else time
        times.append(previous)
    return times


def in_order[Message, Call](
    messages: Sequence[Message], calls: Sequence[Call], turn_start=None
) -> list[Message | Call]:
    """The turn's messages and calls in one list, as they happened (the module's rule). Each
    list must be in its own order already (as the panel and the export read them)."""
    start = as_time(turn_start)
    start = -math.inf if start is None else start
    message_times = _times(messages, "created_at", start)
    call_times = _times(calls, "started_at", start)
    merged: list[Message | Call] = []
    m = c = 0
    while m < len(messages) and c < len(calls):
        if message_times[m] <= call_times[c]:
            merged.append(messages[m])
            m += 1
        else:
            merged.append(calls[c])
            c += 1
    merged += messages[m:]
    merged += calls[c:]
    return merged


def call_batches[Call](calls: Sequence[Call]) -> list[list[Call]]:
    """Consecutive calls grouped as one model response made them: a call joins the calls
    before it when it started before any of them had its result (parallel calls); one that
    started after a result came back was made by the next response. A call whose start or
    results' ends are unknown joins (nothing says a response came in between)."""
    batches: list[list[Call]] = []
    first_result = math.inf
    for call in calls:
        started = as_time(call.started_at)
        if batches and (started is None or started < first_result):
            batches[-1].append(call)
        else:
            batches.append([call])
            first_result = math.inf
        ended = as_time(call.completed_at)
        if ended is not None:
            first_result = min(first_result, ended)
    return batches
