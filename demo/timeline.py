"""Time in the demo: Unix milliseconds, a daily rhythm, and turn schedules that fit a window."""

import random

SECOND = 1000
MINUTE = 60 * SECOND
HOUR = 60 * MINUTE
DAY = 24 * HOUR

HISTORY = 30 * DAY  # everything happens within the 30 days before the anchor time
SNAPSHOT_RETENTION = 7 * DAY  # the Nexus Ledger keeps request snapshots for a week

# The demo household lives on US Pacific time: its nights are quiet, its afternoons busy.
LOCAL_OFFSET = -7 * HOUR
# Relative activity per local hour (1.0 = the busiest hour), used by rejection sampling.
HOUR_WEIGHTS = (
    0.06, 0.04, 0.03, 0.03, 0.04, 0.08, 0.20, 0.40, 0.65, 0.85, 0.95, 1.00,
    0.90, 0.95, 1.00, 0.95, 0.90, 0.80, 0.70, 0.65, 0.55, 0.40, 0.25, 0.12,
)  # fmt: skip


def local_hour(ms: int) -> int:
    return ((ms + LOCAL_OFFSET) // HOUR) % 24


def rhythmic_time(rng: random.Random, start: int, end: int) -> int:
    """A time in [start, end) that follows the daily rhythm (busier in the daytime)."""
    while True:
        t = rng.randrange(start, end)
        if rng.random() < HOUR_WEIGHTS[local_hour(t)]:
            return t


def before_the_night(rng: random.Random, t: int) -> int:
    """Move a time that falls in the small hours back to the previous evening, mostly."""
    hour = local_hour(t)
    if 1 <= hour < 7 and rng.random() < 0.85:
        return t - (hour + 1) * HOUR - rng.randrange(HOUR)
    return t


def idle_gap(rng: random.Random, big_gap_mean: float) -> int:
    """The pause between two turns: usually a minute or two, sometimes hours (a new burst)."""
    if rng.random() < 0.8:
        return int(rng.lognormvariate(4.3, 0.8) * SECOND) + 5 * SECOND
    return int(rng.expovariate(1 / big_gap_mean)) + 10 * MINUTE


def schedule(
    rng: random.Random, durations: list[int], *, last_start: int, floor: int, bursty: bool = True
) -> list[tuple[int, int]]:
    """(started_at, completed_at) for consecutive turns, the last one starting at last_start.

    Walking backwards from the newest turn keeps a session's head where we want it (recent or
    old) and still leaves realistic pauses; a schedule that overflows the floor is squeezed
    linearly, which keeps every turn after its predecessor.
    """
    n = len(durations)
    span = max(last_start - floor, n * SECOND)
    big_gap_mean = min(4 * HOUR, 0.6 * span / max(1, 0.2 * n)) if bursty else MINUTE
    starts = [0] * n
    t = last_start
    for i in range(n - 1, -1, -1):
        starts[i] = t
        if i:
            gap = idle_gap(rng, big_gap_mean) if bursty else rng.randrange(2, 20) * SECOND
            t = t - gap - durations[i - 1]
            if bursty:
                t = before_the_night(rng, t)
    ends = [s + d for s, d in zip(starts, durations, strict=True)]
    if starts[0] >= floor:
        return list(zip(starts, ends, strict=True))
    return _squeeze(starts, ends, floor, last_start)


def _squeeze(starts: list[int], ends: list[int], floor: int, last_start: int):
    origin = starts[0]
    factor = (last_start - floor) / max(1, last_start - origin)
    squeezed = []
    previous_end = floor - 1
    for s, e in zip(starts, ends, strict=True):
        start = max(floor + int((s - origin) * factor), previous_end + 1)
        end = max(floor + int((e - origin) * factor), start + 1)
        squeezed.append((start, end))
        previous_end = end
    return squeezed
