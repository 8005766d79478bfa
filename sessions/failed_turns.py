"""Walking a session's failed turns: the "N failed turns" pill opens the first, and a failed
turn's panel links the previous and the next one.

The order is the turns' start time (then id), the order they happened in; the same turns the
pill counts (the session's own turns with status 'failed').
"""

from dataclasses import dataclass

from ledgerweb import sqlite
from sessions.detail import FAILED

# A session with more failed turns than this walks the first ones only.
WALK_LIMIT = 10_000


@dataclass(frozen=True)
class FailedWalk:
    position: int  # 1 for the first failed turn
    count: int
    previous_id: str | None
    next_id: str | None
    capped: bool  # count stopped at WALK_LIMIT


def failed_turn_ids(session_id: str, limit: int = WALK_LIMIT) -> list[str]:
    rows = sqlite.rows(
        """SELECT id FROM turns WHERE session_id = %s AND status = %s
           ORDER BY started_at, id LIMIT %s""",
        [session_id, FAILED, limit],
    )
    return [row[0] for row in rows]


def first_failed_turn_id(session_id: str) -> str | None:
    ids = failed_turn_ids(session_id, limit=1)
    return ids[0] if ids else None


def failed_walk(session_id: str, turn_id: str) -> FailedWalk | None:
    """Where a failed turn stands among the session's failed turns; None for any other turn."""
    ids = failed_turn_ids(session_id)
    if turn_id not in ids:
        return None
    at = ids.index(turn_id)
    return FailedWalk(
        position=at + 1,
        count=len(ids),
        previous_id=ids[at - 1] if at > 0 else None,
        next_id=ids[at + 1] if at + 1 < len(ids) else None,
        capped=len(ids) == WALK_LIMIT,
    )
