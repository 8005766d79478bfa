"""Whether a turn belongs to a session: every turn URL (/sessions/<A>/turns/<T>/…) checks it, so
that a turn of session B is never shown, exported or forked under session A's name.

A turn belongs to session A when it is in A's tree as the session page draws it
(detail._read_tree):
- A's own turns (turns.session_id = A), and
- the turns A inherits: the ancestors of each own turn's parent that lives in another session,
  and of A's head when the head is not A's own (a fork continues its origin's thread).
A turn of the origin that is not on those paths (a sibling branch of the fork point) is not A's.
"""

from ledgerweb import sqlite
from sessions.detail import INHERITED_LIMIT


def turn_in_session(session_id: str, head_id: str | None, turn_id: str) -> bool:
    rows = sqlite.rows("SELECT session_id FROM turns WHERE id = %s", [turn_id])
    if not rows:
        return False
    if rows[0][0] == session_id:
        return True  # the common case: one lookup by primary key
    return _inherited(session_id, head_id, turn_id)


def _inherited(session_id: str, head_id: str | None, turn_id: str) -> bool:
    """Walk up from where A's own turns leave A, as _add_inherited_turns does, within the same
    limit, and look for the turn on the way. UNION ends the walk at a cycle."""
    rows = sqlite.rows(
        """WITH RECURSIVE starts(id) AS (
                SELECT t.parent_turn_id FROM turns t
                WHERE t.session_id = %s AND t.parent_turn_id IS NOT NULL
                  AND NOT EXISTS (SELECT 1 FROM turns p
                                  WHERE p.id = t.parent_turn_id AND p.session_id = %s)
                UNION
                SELECT %s WHERE NOT EXISTS (SELECT 1 FROM turns h
                                            WHERE h.id = %s AND h.session_id = %s)
            ), up(id) AS (
                SELECT id FROM turns WHERE id IN (SELECT id FROM starts)
                UNION
                SELECT t.parent_turn_id FROM turns t JOIN up ON t.id = up.id
                WHERE t.parent_turn_id IS NOT NULL
            )
            SELECT 1 FROM (SELECT id FROM up LIMIT %s) AS u WHERE id = %s LIMIT 1""",
        [session_id, session_id, head_id, head_id, session_id, INHERITED_LIMIT, turn_id],
    )
    return bool(rows)


def inherited_turns_sql(session_ids) -> tuple[str, list]:
    """SQL of (sid, id) rows: the turns each of these sessions inherits, found by the walk of
    _inherited for all of them at once (the session list's forks), at most INHERITED_LIMIT rows
    in all. UNION ends a walk at a cycle; a turn of the session itself is never inherited."""
    ids_sql, ids = sqlite.in_list(session_ids)
    sql = f"""WITH RECURSIVE starts(sid, id) AS (
            SELECT t.session_id, t.parent_turn_id FROM turns t
            WHERE t.session_id IN {ids_sql} AND t.parent_turn_id IS NOT NULL
              AND NOT EXISTS (SELECT 1 FROM turns p
                              WHERE p.id = t.parent_turn_id AND p.session_id = t.session_id)
            UNION
            SELECT s.id, s.current_turn_id FROM sessions s
            WHERE s.id IN {ids_sql} AND s.current_turn_id IS NOT NULL
              AND NOT EXISTS (SELECT 1 FROM turns h
                              WHERE h.id = s.current_turn_id AND h.session_id = s.id)
        ), up(sid, id) AS (
            SELECT starts.sid, t.id FROM starts JOIN turns t ON t.id = starts.id
            UNION
            SELECT up.sid, t.parent_turn_id FROM turns t JOIN up ON t.id = up.id
            WHERE t.parent_turn_id IS NOT NULL
        )
        SELECT up.sid, up.id FROM (SELECT sid, id FROM up LIMIT {INHERITED_LIMIT}) AS up
        JOIN turns t ON t.id = up.id AND t.session_id <> up.sid"""
    return sql, ids + ids
