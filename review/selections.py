"""What a queue is made of: the turns or branch points a selection names, newest first, at most
QUEUE_CAP of them, read once when the queue is made (its items stay put while people work)."""

from contextlib import suppress
from dataclasses import dataclass, field

from django.db import OperationalError

from annotations import store
from annotations.store import MarkFilter
from ledgerfacts.timestamps import now_ms
from ledgerweb import sqlite
from ledgerweb.params import WINDOWS
from ledgerweb.sqlite import LedgerQueryTimeout
from search import engine, indexer, results
from search.query import QueryError, parse

QUEUE_CAP = 2_000
SOURCES = {
    "failed": "failed turns",
    "label": "turns with a label",
    "search": "turns a search finds",
    "branches": "branch points of a persona's sessions",
}
DAY_MS = 86_400_000
# A search page's share of indexing before a queue is made of its results (search/views.py).
INDEX_BUDGET_S = 0.3


class SelectionError(ValueError):
    """A selection that cannot be made, with what to change."""


@dataclass
class Selection:
    source: str
    window: str = "7d"
    persona: str = ""
    label: str = ""
    q: str = ""
    errors: list[str] = field(default_factory=list)

    @classmethod
    def read(cls, params) -> "Selection":
        s = cls(
            source=params.get("source", "failed"),
            window=params.get("window", "7d") or "7d",
            persona=params.get("persona", "").strip(),
            label=params.get("label", "").strip(),
            q=params.get("q", "").strip(),
        )
        if s.source not in SOURCES:
            s.errors.append(f"source={s.source[:40]!r}: choose one of {', '.join(SOURCES)}.")
        if s.window not in WINDOWS:
            s.errors.append(f"window={s.window[:20]!r}: choose {', '.join(WINDOWS)}.")
        if s.source == "label" and not s.label:
            s.errors.append("Choose the label whose turns to review.")
        if s.source == "search" and not s.q:
            s.errors.append("Type what to search for.")
        if s.source == "branches" and not s.persona:
            s.errors.append("Choose the persona whose branch points to review.")
        return s

    def describe(self) -> str:
        window = f"in the last {self.window}"
        if self.source == "failed":
            who = f" of {self.persona}" if self.persona else ""
            return f"Failed turns{who} {window}"
        if self.source == "label":
            return f"Turns labelled “{self.label}”"
        if self.source == "search":
            return f"Turns found by “{self.q}”"
        return f"Branch points of {self.persona}'s sessions {window}"

    def params(self) -> dict:
        return {"window": self.window, "persona": self.persona, "label": self.label, "q": self.q}


def items_of(selection: Selection, cap: int = QUEUE_CAP) -> tuple[list[tuple[str, str]], bool]:
    """(session id, turn id) of the selection's items, newest first, and whether there were
    more than `cap`."""
    since = now_ms() - WINDOWS[selection.window]
    until = now_ms() + DAY_MS  # a text time sorts past every number in SQLite: kept out
    if selection.source == "failed":
        rows = _failed(selection.persona, since, until, cap + 1)
    elif selection.source == "label":
        found = store.turn_ids(MarkFilter(label=selection.label), cap=cap)
        return found.ids, found.capped
    elif selection.source == "search":
        rows = _searched(selection.q, cap + 1)
    else:
        rows = _branch_points(selection.persona, since, until, cap + 1)
    unique = list(dict.fromkeys((str(s), str(t)) for s, t in rows))
    return unique[:cap], len(unique) > cap


def _failed(persona: str, since: int, until: int, limit: int) -> list:
    join, params = "", []
    if persona:
        join = "JOIN sessions s ON s.id = t.session_id AND s.persona = %s"
        params.append(persona)
    return sqlite.rows(
        f"""SELECT t.session_id, t.id FROM turns t {join}
            WHERE t.status = 'failed' AND t.started_at >= %s AND t.started_at < %s
            ORDER BY t.started_at DESC, t.id DESC LIMIT %s""",
        [*params, since, until, limit],
    )


def _branch_points(persona: str, since: int, until: int, limit: int) -> list:
    """Turns of the persona's sessions with two children or more, one of them started in the
    window, the newest such child first."""
    return sqlite.rows(
        """SELECT p.session_id, p.id FROM turns c
             JOIN turns p ON p.id = c.parent_turn_id
             JOIN sessions s ON s.id = p.session_id
            WHERE s.persona = %s AND c.started_at >= %s AND c.started_at < %s
            GROUP BY p.session_id, p.id
           HAVING (SELECT count(*) FROM turns k WHERE k.parent_turn_id = p.id) >= 2
            ORDER BY max(c.started_at) DESC, p.id DESC LIMIT %s""",
        [persona, since, until, limit],
    )


def _searched(q: str, limit: int) -> list:
    """The turns whose messages or tool calls answer the search, newest first."""
    try:
        query = parse(q)
    except QueryError as error:
        raise SelectionError(str(error)) from error
    # Bring the index on a little, as a search page does; busy or unusable: search what is in it.
    with suppress(LedgerQueryTimeout, OperationalError, indexer.RowidsMissing):
        indexer.step(INDEX_BUDGET_S)
    found = []
    for _, read in results.Walk(query, engine.Filters([]), None, results.CHECK_CAP):
        if read is not None and read.row.turn_id is not None and read.row.session_id is not None:
            found.append((read.row.session_id, read.row.turn_id))
            if len(found) >= limit:
                break
    return found
