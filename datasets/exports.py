"""One export, from the page or the command: what was asked for, the records streamed out, and
the run kept in ledgerweb's database with what it left out."""

from collections.abc import Iterator
from dataclasses import asdict, dataclass, field

from annotations import store
from datasets.models import ExportRun
from datasets.records import (
    CHAT,
    FORMS,
    PREFERENCES,
    Report,
    chat_records,
    jsonl,
    preference_records,
)
from ledgerfacts.timestamps import now_ms


@dataclass
class Selection:
    """What to export. Chat: the turns holding one of `labels`, or a 👍 (`thumbs_up`); with
    neither, the 👍 turns. Preferences: every choice made at a branch point."""

    kind: str = CHAT
    form: str = "messages"
    labels: list[str] = field(default_factory=list)
    thumbs_up: bool = False

    def __post_init__(self):
        if self.kind not in FORMS:
            raise ValueError(f"kind {self.kind!r}: choose {' or '.join(FORMS)}")
        if self.form not in FORMS[self.kind]:
            self.form = FORMS[self.kind][0]
        if self.kind == CHAT and not self.labels:
            self.thumbs_up = True

    def describe(self) -> str:
        if self.kind == PREFERENCES:
            return "preference pairs from the choices at branch points"
        parts = [f"labelled {', '.join(self.labels)}"] if self.labels else []
        if self.thumbs_up:
            parts.append("given a 👍")
        return "turns " + " or ".join(parts)

    @property
    def filename(self) -> str:
        return f"ledgerweb-{self.kind}-{self.form}"


def records_of(selection: Selection, report: Report) -> Iterator[dict]:
    if selection.kind == PREFERENCES:
        return preference_records(store.preference_pairs(), _labels_of, report)
    turns = store.marked_turns(selection.labels, selection.thumbs_up)
    return chat_records(turns, selection.form, report)


def _labels_of(turn_id: str) -> list[str]:
    summary = store.by_turn([turn_id]).get(turn_id)
    return sorted(summary.labels) if summary else []


def start(selection: Selection, user=None, by_command: bool = False) -> tuple[ExportRun, Report]:
    run = ExportRun.objects.create(
        user=user if user is not None and user.is_authenticated else None,
        by_command=by_command,
        kind=selection.kind,
        selection=asdict(selection),
        started_at=now_ms(),
    )
    return run, Report()


def stream(selection: Selection, run: ExportRun, report: Report) -> Iterator[bytes]:
    """The JSONL, piece by piece; the run is kept when the stream ends (finished, or stopped
    part way: a download cancelled), with its report."""
    finished = False
    try:
        yield from jsonl(records_of(selection, report))
        finished = True
    finally:
        run.finished_at = now_ms() if finished else None
        run.records = report.records
        run.report = report.as_json() | {"finished": finished}
        run.save(update_fields=["finished_at", "records", "report"])
