"""The few functions other rooms use to read and write annotations (see annotations/__init__)."""

from collections import defaultdict
from collections.abc import Iterable

from annotations.models import Annotation
from ledgerfacts.timestamps import now_ms


def on_session(session_id: str, turn_ids: Iterable[str] | None = None) -> dict[str, list]:
    """Everyone's annotations on a session and its turns, by turn id ('' for the session), labels
    fetched with them: two queries whatever the number."""
    found = Annotation.objects.filter(session_id=session_id)
    if turn_ids is not None:
        found = found.filter(turn_id__in=["", *turn_ids])
    by_turn: dict[str, list] = defaultdict(list)
    for annotation in found.select_related("user").prefetch_related("labels").order_by("id"):
        by_turn[annotation.turn_id].append(annotation)
    return dict(by_turn)


def bookmarks(user=None, session_id: str | None = None):
    """Bookmarks, newest first: one person's, one session's, or all."""
    found = Annotation.objects.filter(bookmarked=True)
    if user is not None:
        found = found.filter(user=user)
    if session_id is not None:
        found = found.filter(session_id=session_id)
    return found.select_related("user").order_by("-updated_at", "-id")


def mine(user, session_id: str, turn_id: str = "") -> Annotation:
    """This person's annotation on a target, created empty (unsaved) when there is none."""
    found = Annotation.objects.filter(user=user, session_id=session_id, turn_id=turn_id).first()
    if found is not None:
        return found
    now = now_ms()
    return Annotation(user=user, session_id=session_id, turn_id=turn_id, created_at=now,
                      updated_at=now)  # fmt: skip


def set_bookmark(user, session_id: str, turn_id: str, on: bool, note: str = "") -> Annotation:
    annotation = mine(user, session_id, turn_id)
    annotation.bookmarked = on
    annotation.bookmark_note = note[:200] if on else ""
    annotation.updated_at = now_ms()
    annotation.save()
    return annotation
