"""Annotations as pages show them: everyone's, each with who and when, notes rendered as
sanitised Markdown, and what the viewer may do with each."""

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from annotations import store
from annotations.models import Annotation
from annotations.store import Summary
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


def summary_html(summary: Summary | None, label_url: Callable[[str], str]) -> SafeString:
    """Everyone's marks on a session or turn, in a line: 👍/👎 counts, the mean score, notes
    and the most used labels, each label a link (`label_url(name)`, already a URL). Written in
    Python, not a template include: a list draws one per row (50 includes cost a list page
    ~100 ms under load; this costs a few)."""
    if summary is None:
        return mark_safe("")
    url = lru_cache(maxsize=None)(label_url)  # the same labels repeat from row to row
    parts = []
    if summary.up:
        parts.append(f'<span class="thumb" title="{summary.up} 👍">👍{summary.up}</span>')
    if summary.down:
        parts.append(f'<span class="thumb" title="{summary.down} 👎">👎{summary.down}</span>')
    if summary.score is not None:
        parts.append(
            f'<span class="score" title="mean score of {len(summary.scores)}">'
            f"{summary.score:.1f}/5</span>"
        )
    if summary.notes:
        notes = f"{summary.notes} note{'' if summary.notes == 1 else 's'}"
        parts.append(f'<span class="muted small" title="{notes}">✎{summary.notes}</span>')
    for name, n in summary.top_labels:
        parts.append(
            f'<a class="label-chip" href="{escape(url(name))}"'
            f' title="{n}× — sessions labelled {escape(name)}">{escape(name)}</a>'
        )
    if summary.more_labels:
        parts.append(f'<span class="muted small">+{summary.more_labels}</span>')
    return mark_safe(f'<span class="marks-summary">{" ".join(parts)}</span>')  # all escaped
