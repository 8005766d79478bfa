"""Fork a new session from a turn, exactly as ARCHITECTURE.md §2 describes: new ULID, same persona,
routing key fork:<origin>:<new>, root = the origin's root, head = the chosen turn, active."""

import random

from django.db import transaction

from ledgerweb.db import LEDGER_WRITE
from ledgerweb.timestamps import now_ms
from ledgerweb.ulid import UlidFactory
from sessions.models import Session, Turn

_ids = UlidFactory(random.SystemRandom())


class ForkError(Exception):
    pass


def fork_session(origin: Session, turn_id: str, label: str) -> Session:
    """Create the fork in one transaction on the writable ledger connection."""
    with transaction.atomic(using=LEDGER_WRITE):
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
            root_turn_id=origin.root_turn_id,
            current_turn_id=turn.id,
            created_at=now,
            updated_at=now,
            status="active",
            source_event_id=None,
        )
