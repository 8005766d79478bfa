"""Annotations named in a query: `label:wrong-tool` (or `label:"two words"`), `thumb:down`,
`thumb:up`, 👎 and 👍. The session page's find box marks and walks such turns; the search page
takes them as its label and 👍/👎 filters. What is left is searched as words."""

import re

from annotations import store
from annotations.store import MarkFilter
from ledgerweb import sqlite

MARK_TERM = re.compile(r'(?<!\S)(?:label:(?:"([^"]*)"|(\S+))|thumb:(up|down)|(👍|👎))(?!\S)')
THUMBS = {"up": 1, "down": -1, "👍": 1, "👎": -1}


def split_marks(q: str) -> tuple[str, MarkFilter | None]:
    """The query without its mark terms, and the filter they make (None without any)."""
    label, thumb = "", None
    for match in MARK_TERM.finditer(q):
        quoted, bare, word, sign = match.groups()
        if quoted is not None or bare is not None:
            label = (quoted if quoted is not None else bare).strip()
        else:
            thumb = THUMBS[word or sign]
    rest = " ".join(MARK_TERM.sub(" ", q).split())
    mark = MarkFilter(label=label, thumb=thumb)
    return rest, (mark if mark else None)


def marked_turn_ids(mark: MarkFilter, session_id: str, limit: int) -> list[str]:
    """The session's turns holding such an annotation, in the order they started."""
    found = store.turn_ids(mark, session_id=session_id, cap=limit).ids
    if not found:
        return []
    ids_sql, ids = sqlite.in_list([turn_id for _, turn_id in found])
    rows = sqlite.rows(f"SELECT id FROM turns WHERE id IN {ids_sql} ORDER BY started_at, id", ids)
    return [turn_id for (turn_id,) in rows]
