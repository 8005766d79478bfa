"""Annotations as pages show them: everyone's, each with who and when, notes rendered as
sanitised Markdown, and what the viewer may do with each."""

from dataclasses import dataclass

from annotations import store
from annotations.models import Annotation
from ledgerweb.text import render_markdown

THUMB_TEXT = {1: "👍 good", -1: "👎 bad"}  # a word beside the sign: fonts without emoji


@dataclass
class Shown:
    annotation: Annotation
    labels: list[str]
    note_html: str
    is_mine: bool
    may_remove: bool

    @property
    def thumb(self) -> str:
        return THUMB_TEXT.get(self.annotation.thumb, "")

    @property
    def has_marks(self) -> bool:
        a = self.annotation
        return a.thumb is not None or a.score is not None or bool(a.note) or bool(self.labels)


def shown(annotations: list[Annotation], user) -> list[Shown]:
    """The annotations holding marks (a bare bookmark is the tree's), for `user` to see."""
    found = []
    for annotation in annotations:
        labels = [label.name for label in annotation.labels.all()]  # prefetched
        item = Shown(
            annotation,
            sorted(labels),
            render_markdown(annotation.note) if annotation.note else "",
            annotation.user_id == user.pk,
            store.may_remove(user, annotation),
        )
        if item.has_marks:
            found.append(item)
    return found


def block(user, session_id: str, turn_id: str = "", errors=(), posted=None) -> dict:
    """What the annotations block of a turn or session shows: everyone's, and this person's own
    in the form (or what they just posted, when it was refused)."""
    everyone = shown(store.on_target(session_id, turn_id), user)
    mine = next((s for s in everyone if s.is_mine and s.annotation.session_id == session_id), None)
    if posted is not None:
        form = {
            "thumb": {1: "up", -1: "down"}.get(posted.thumb, ""),
            "score": posted.score or "",
            "labels": ", ".join(posted.labels),
            "note": posted.note,
        }
    elif mine is not None:
        a = mine.annotation
        form = {
            "thumb": {1: "up", -1: "down"}.get(a.thumb, ""),
            "score": a.score or "",
            "labels": ", ".join(mine.labels),
            "note": a.note,
        }
    else:
        form = {"thumb": "", "score": "", "labels": "", "note": ""}
    return {
        "annotation_target": {"session_id": session_id, "turn_id": turn_id},
        "annotations": everyone,
        "mine": mine,
        "form": form,
        "errors": list(errors),
        "labels_in_use": store.labels_in_use(),
        "summary": _summary(everyone),
    }


def _summary(everyone: list[Shown]) -> dict:
    up = sum(1 for s in everyone if s.annotation.thumb == 1)
    down = sum(1 for s in everyone if s.annotation.thumb == -1)
    return {"up": up, "down": down, "people": len(everyone)}


def as_json(annotations: list[Annotation]) -> list[dict]:
    """Annotations for a JSON twin: who, when, and every mark."""
    return [
        {
            "user": a.user.get_username(),
            "thumb": a.thumb,
            "score": a.score,
            "labels": sorted(label.name for label in a.labels.all()),
            "note": a.note,
            "created_at": a.created_at,
            "updated_at": a.updated_at,
        }
        for a in annotations
    ]
