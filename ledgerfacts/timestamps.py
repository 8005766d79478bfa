"""Ledger timestamps are Unix milliseconds; other programs sometimes write seconds or junk."""

from datetime import UTC, datetime

# Below this a value cannot be milliseconds of this century (it is 1973-03-03 in ms), but it is a
# plausible time in seconds: ledgers written by mistake in seconds still show the right date.
_SECONDS_BELOW = 100_000_000_000


def ms_to_datetime(value) -> datetime | None:
    """An aware UTC datetime for a ledger timestamp, or None when it is not a usable number."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    seconds = value if 0 < value < _SECONDS_BELOW else value / 1000
    try:
        return datetime.fromtimestamp(seconds, tz=UTC)
    except (OverflowError, OSError, ValueError):
        return None


def looks_like_seconds(value) -> bool:
    return isinstance(value, int | float) and 0 < value < _SECONDS_BELOW


def now_ms() -> int:
    return int(datetime.now(tz=UTC).timestamp() * 1000)


def elapsed_ms(started, completed) -> int | None:
    """Milliseconds between two ledger timestamps, or None when either is missing or junk."""
    if isinstance(started, int) and isinstance(completed, int):
        return completed - started
    return None
