"""Fork a new session from a turn, as ARCHITECTURE.md §2 describes: new ULID, same persona,
routing key fork:<origin>:<new>, head = the chosen turn, active; its root is the root of the
chosen turn's thread (the origin's root only when that is the turn's ancestor: a session may
have several roots, see docs/decisions.md)."""

import random

from django.db import transaction

from ledgerfacts.dbapi import ROWID_ORDER_LOCK
from ledgerfacts.timestamps import now_ms
from ledgerfacts.ulid import UlidFactory
from ledgerweb import dialect, sqlite
from ledgerweb.db import LEDGER_WRITE
from sessions.kinds import FORK, children_prefix
from sessions.models import Session, Turn

_ids = UlidFactory(random.SystemRandom())


class ForkError(Exception):
    pass


def fork_session(
    origin: Session, turn_id: str, label: str, *, root_turn_id: str | None = None
) -> Session:
    """Create the fork in one transaction on the writable ledger connection. `root_turn_id`:
    the first turn of the chosen turn's thread (the view has it from the thread it checked);
    the origin's root when not given."""
    with transaction.atomic(using=LEDGER_WRITE):
        if dialect.on_postgres(LEDGER_WRITE):  # writers take turns: rowids.sql says why
            sqlite.rows(ROWID_ORDER_LOCK, alias=LEDGER_WRITE)
        turn = Turn.objects.using(LEDGER_WRITE).filter(id=turn_id).first()
        if turn is None:
            raise ForkError(f"Turn {turn_id} does not exist: nothing was forked.")
        now = now_ms()
        new_id = _ids.new(now)
        return Session.objects.using(LEDGER_WRITE).create(
            id=new_id,
            persona=origin.persona,
            routing_key=f"fork:{origin.id}:{new_id}",
            label=label[:500],
            root_turn_id=root_turn_id or origin.root_turn_id,
            current_turn_id=turn.id,
            created_at=now,
            updated_at=now,
            status="active",
            source_event_id=None,
        )


def fork_point_of(fork: Session) -> str | None:
    """The turn of the origin a fork was made at (see forks_by_point)."""
    points = forks_by_point([fork])
    return next(iter(points), None)


def forks_by_point(forks: list[Session]) -> dict[str, list[Session]]:
    """Where each fork was made: the origin's turn its own turns hang from, or, while it has
    none, its head (a fresh fork's head is the fork point). One query for all the forks."""
    if not forks:
        return {}
    ids_sql, ids = sqlite.in_list(f.id for f in forks)
    # The earliest own turn whose parent is not the fork's own marks where the fork left.
    attached = {}
    for session_id, parent_id in sqlite.rows(
        f"""SELECT t.session_id, t.parent_turn_id FROM turns t
            WHERE t.session_id IN {ids_sql} AND t.parent_turn_id IS NOT NULL
              AND NOT EXISTS (SELECT 1 FROM turns p
                              WHERE p.id = t.parent_turn_id AND p.session_id = t.session_id)
            ORDER BY t.started_at DESC, t.id DESC""",
        ids,
    ):
        attached[session_id] = parent_id  # the earliest wins: the rows come latest first
    points: dict[str, list[Session]] = {}
    for fork in forks:
        point = attached.get(fork.id, fork.current_turn_id)
        if point:
            points.setdefault(point, []).append(fork)
    return points


def forks_made_at(origin: Session, turn_id: str) -> list[Session]:
    """The forks of `origin` made at one of its turns (the turn panel lists them)."""
    low, high = children_prefix(FORK, origin.id)
    forks = list(
        Session.objects.filter(routing_key__gte=low, routing_key__lt=high).order_by("created_at")[
            :200
        ]
    )
    return forks_by_point(forks).get(turn_id, [])
