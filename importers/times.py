"""Other programs' timestamps as the ledger's Unix milliseconds.

Two readers, because the sources write time differently. Transcripts (Claude Code, Codex) write
ISO 8601 with a zone, so a timestamp without one is junk: zoned_iso_ms. SQLite ledgers (AIX,
Agent OS) write numbers in whatever unit their program chose, or SQLite's own
"YYYY-MM-DD HH:MM:SS", which is UTC: any_unit_ms.
"""

from datetime import UTC, datetime

from ledgerfacts.timestamps import looks_like_seconds

# Above this a number cannot be milliseconds of a real date (it is the year 5138): it is
# microseconds, and above a thousand times that, nanoseconds.
_MICROSECONDS_ABOVE = 100_000_000_000_000
_NANOSECONDS_ABOVE = _MICROSECONDS_ABOVE * 1000


def zoned_iso_ms(value) -> int | None:
    """Unix ms of an ISO 8601 timestamp with a zone ("2025-06-10T12:36:23.208Z"), else None."""
    moment = _iso_datetime(value) if isinstance(value, str) else None
    if moment is None or moment.tzinfo is None:
        return None  # a time without a zone cannot be placed; the transcripts always write Z
    return _ms(moment)


def any_unit_ms(value) -> int | None:
    """Unix ms from seconds, milliseconds, microseconds or nanoseconds (a number or its text),
    or from ISO 8601 text (UTC when it has no zone, as SQLite writes it); None for junk and for
    times not after 1970."""
    if isinstance(value, str):
        text = value.strip()
        try:
            value = float(text)
        except ValueError:
            moment = _iso_datetime(text)
            if moment is None:
                return None
            ms = _ms(moment if moment.tzinfo else moment.replace(tzinfo=UTC))
            return ms if ms > 0 else None
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        return None
    if not 0 < value < _NANOSECONDS_ABOVE * 1000:
        return None  # also inf; nothing past the year 5138 in nanoseconds is a time
    if looks_like_seconds(value):
        return int(value * 1000)
    if value > _NANOSECONDS_ABOVE:
        return int(value // 1_000_000)
    if value > _MICROSECONDS_ABOVE:
        return int(value // 1000)
    return int(value)


def _iso_datetime(text: str) -> datetime | None:
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return None


def _ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


class TurnOrder:
    """Times for one turn's messages and tool calls, given in the order the transcript has them,
    that the ledger's order keeps (sessions/timeline.py: by time, the message first at equal
    times; docs/decisions.md, "A turn is shown as it happened").

    A message recorded in the same millisecond as a call before it, or earlier (clocks skew,
    stand-in times repeat), is placed 1 ms after that call; a call earlier than a message
    before it takes the message's time. Everything else keeps its own time. `moved` counts the
    times changed, for the import's summary."""

    def __init__(self):
        self.last_message: int | None = None
        self.last_call: int | None = None
        self.moved = 0

    def message(self, ms: int) -> int:
        if self.last_call is not None and ms <= self.last_call:
            ms, self.moved = self.last_call + 1, self.moved + 1
        self.last_message = ms if self.last_message is None else max(self.last_message, ms)
        return ms

    def call(self, ms: int) -> int:
        if self.last_message is not None and ms < self.last_message:
            ms, self.moved = self.last_message, self.moved + 1
        self.last_call = ms if self.last_call is None else max(self.last_call, ms)
        return ms


KEPT_ORDER = "times moved by a millisecond or so to keep the transcript's order of text and calls"
