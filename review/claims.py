"""Handing out a queue's items: each reviewer gets the next open item nobody holds, keeps it
while working on it (CLAIM_MS), and an item done (or skipped) is not handed out again.

A claim is one conditional UPDATE (the item is still open and unclaimed, or its claim expired,
exactly as read): of two reviewers asking at once, one update finds the row as it read it and the
other finds nothing and takes the next item. No transaction or lock is held between requests."""

from django.db.models import Count, Q

from ledgerfacts.timestamps import now_ms
from review.models import Item, Queue

CLAIM_MS = 15 * 60_000  # a claim not acted on for this long is handed to someone else
TRIES = 50  # claims lost to other reviewers before giving up for this request


def held_by(queue: Queue, user) -> Item | None:
    """The item this person holds in this queue (they reloaded, or came back)."""
    fresh = now_ms() - CLAIM_MS
    return (
        queue.items.filter(state=Item.OPEN, claimed_by=user, claimed_at__gte=fresh)
        .order_by("position")
        .first()
    )


def claim_next(queue: Queue, user) -> Item | None:
    """The item this person should work on now: the one they hold, else the first open item
    nobody holds (claimed for them), else None: the queue is done."""
    mine = held_by(queue, user)
    if mine is not None:
        return mine
    for _ in range(TRIES):
        now = now_ms()
        free = Q(claimed_by__isnull=True) | Q(claimed_at__lt=now - CLAIM_MS)
        candidate = queue.items.filter(free, state=Item.OPEN).order_by("position").first()
        if candidate is None:
            return None
        if take(candidate, user, now):
            return candidate
    return None


def take(candidate: Item, user, now: int) -> bool:
    """Claim the item if it is still as it was read: True when this person got it."""
    taken = Item.objects.filter(
        pk=candidate.pk,
        state=Item.OPEN,
        claimed_by=candidate.claimed_by_id,
        claimed_at=candidate.claimed_at,
    ).update(claimed_by=user, claimed_at=now)
    if taken:
        candidate.claimed_by, candidate.claimed_at = user, now
    return bool(taken)


def finish(item: Item, user, state: str = Item.DONE) -> bool:
    """Mark the item done (or skipped) by this person; False when it was done already."""
    return bool(
        Item.objects.filter(pk=item.pk, state=Item.OPEN).update(
            state=state, done_by=user, done_at=now_ms(), claimed_by=None, claimed_at=None
        )
    )


def release(item: Item, user) -> None:
    """Give an item back without doing it (the reviewer stops)."""
    Item.objects.filter(pk=item.pk, state=Item.OPEN, claimed_by=user).update(
        claimed_by=None, claimed_at=None
    )


def reopen_skipped(queue: Queue) -> int:
    return queue.items.filter(state=Item.SKIPPED).update(
        state=Item.OPEN, done_by=None, done_at=None
    )


def progress(queue: Queue) -> dict:
    """How far the queue is, shared by everyone: counts by state, who is on which item now, and
    who did how many (three grouped queries)."""
    now = now_ms()
    by_state = dict(queue.items.values_list("state").annotate(n=Count("id")).order_by())
    held = (
        queue.items.filter(state=Item.OPEN, claimed_at__gte=now - CLAIM_MS)
        .values_list("claimed_by__username")
        .annotate(n=Count("id"))
        .order_by()
    )
    done_by = (
        queue.items.exclude(state=Item.OPEN)
        .values_list("done_by__username", "state")
        .annotate(n=Count("id"))
        .order_by("done_by__username")
    )
    people: dict[str, dict] = {}
    for name, state, n in done_by:
        people.setdefault(name or "(removed user)", {})[state] = n
    done, skipped = by_state.get(Item.DONE, 0), by_state.get(Item.SKIPPED, 0)
    total = queue.total
    return {
        "total": total,
        "done": done,
        "skipped": skipped,
        "open": by_state.get(Item.OPEN, 0),
        "in_hand": dict(held),
        "people": people,
        "percent": round(100 * (done + skipped) / total) if total else 100,
    }
