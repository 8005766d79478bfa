"""What a person posts to annotate a target, read strictly: each bad value is a message for them,
and nothing is saved while one is wrong (a typo must not wipe a note)."""

import re
import unicodedata
from dataclasses import dataclass, field

from annotations.store import Marks

MAX_LABELS = 20
MAX_LABEL_CHARS = 100
MAX_NOTE_CHARS = 50_000
THUMBS = {"up": 1, "down": -1, "": None}
# Labels are names: runs of spaces (tabs, newlines) are one space, control characters go.
_SPACES = re.compile(r"\s+")


@dataclass
class MarksForm:
    marks: Marks
    errors: list[str] = field(default_factory=list)

    @classmethod
    def read(cls, post) -> "MarksForm":
        errors: list[str] = []
        thumb_raw = post.get("thumb", "")
        if thumb_raw not in THUMBS:
            errors.append(f"thumb={thumb_raw[:20]!r}: choose 👍 (up), 👎 (down) or neither.")
        score_raw = post.get("score", "").strip()
        score = None
        if score_raw:
            if score_raw in {"1", "2", "3", "4", "5"}:
                score = int(score_raw)
            else:
                errors.append(
                    f"score={score_raw[:20]!r}: give a whole number from 1 to 5, or none."
                )
        labels, label_errors = parse_labels(post.getlist("labels"))
        errors += label_errors
        note = post.get("note", "").replace("\r\n", "\n")
        if "\x00" in note:
            errors.append("The note holds a NUL character, which cannot be stored: remove it.")
        if len(note) > MAX_NOTE_CHARS:
            errors.append(
                f"The note is {len(note):,} characters long: keep it under {MAX_NOTE_CHARS:,}."
            )
        marks = Marks(THUMBS.get(thumb_raw), score, note.strip(), labels)
        return cls(marks, errors)


def parse_labels(values: list[str]) -> tuple[list[str], list[str]]:
    """Labels from one or more fields of comma-separated names, in the order given, each once."""
    names: list[str] = []
    errors: list[str] = []
    for value in values:
        for raw in value.split(","):
            name = clean_label(raw)
            if not name or name in names:
                continue
            if len(name) > MAX_LABEL_CHARS:
                errors.append(
                    f"The label “{name[:40]}…” is {len(name):,} characters long:"
                    f" keep labels under {MAX_LABEL_CHARS}."
                )
                continue
            names.append(name)
    if len(names) > MAX_LABELS:
        errors.append(f"{len(names)} labels: give at most {MAX_LABELS}.")
    return names, errors


def clean_label(raw: str) -> str:
    """A label as stored: spaces collapsed and trimmed, control characters (NUL too) dropped."""
    kept = "".join(ch for ch in raw if unicodedata.category(ch) != "Cc" or ch in "\t\n")
    return _SPACES.sub(" ", kept).strip()
