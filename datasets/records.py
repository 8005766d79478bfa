"""Dataset records as JSONL, streamed: one line per record, built from people's annotations and
the ledger's threads, in the forms training and evaluation tools read.

Chat records (fine-tuning from labelled or 👍 turns): the thread at the turn as an agent resuming
there would have it, compactions applied (the latest compaction's summary as a system message,
then the turns it kept and the turns after it: seeds/004, "Compaction"), then the turn's prompt
and its answer (its texts, tool calls and their results as they happened, sessions/export.py).

    messages           {"messages": [...]}: OpenAI's chat fine-tuning form and TRL's
                       conversational language-modeling form; assistant messages of the
                       context carry "weight": 0, the turn's answer "weight": 1 (OpenAI's way
                       to train on the answer only).
    prompt-completion  {"prompt": [...], "completion": [...]}: TRL's conversational
                       prompt-completion form.

Preference records (from the choices at branch points): {"prompt": [...], "chosen": [...],
"rejected": [...]}, TRL's conversational preference form: the shared context (the thread at the
branch point, and the siblings' prompt when they share one), then each sibling's answer.

Every record carries `ledger` (its session, turn and thread ids, one entry per message naming
the ledger row it came from) and `annotations` (labels, thumbs, scores, who): traceable back.
What cannot be exported (a turn gone from the ledger, a chain of parents that loops or breaks,
a compaction whose ids cannot be read, a turn with no answer) is left out and reported with why.
"""

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from annotations.store import PairChoice, TurnMarks
from ledgerweb.text import as_text
from sessions.export import Value, chat_messages, encode_json
from sessions.thread import Thread, load_thread

CHAT = "chat"
PREFERENCES = "preferences"
FORMS = {
    CHAT: ("messages", "prompt-completion"),
    PREFERENCES: ("prompt-chosen-rejected",),
}
# The answer goes out in pieces of about this many characters (a record may hold megabytes).
WRITE_CHARS = 64_000
# Left-out turns named one by one in a report (the rest are counted by reason).
NAMED_LEFT_OUT = 1_000


@dataclass
class LeftOut:
    what: str  # "turn T" or "pair A > B at T"
    session_id: str
    reason: str


@dataclass
class Report:
    """What an export wrote and what it left out, and why."""

    records: int = 0
    left_out: list[LeftOut] = field(default_factory=list)
    left_out_count: int = 0
    by_reason: dict[str, int] = field(default_factory=dict)

    def leave_out(self, what: str, session_id: str, reason: str) -> None:
        self.left_out_count += 1
        key = reason.split(":")[0]
        self.by_reason[key] = self.by_reason.get(key, 0) + 1
        if len(self.left_out) < NAMED_LEFT_OUT:
            self.left_out.append(LeftOut(what, session_id, reason))

    def as_json(self) -> dict:
        return {
            "records": self.records,
            "left_out": self.left_out_count,
            "left_out_by_reason": self.by_reason,
            "left_out_named": [vars(item) for item in self.left_out],
        }


class Unexportable(Exception):
    """A record that cannot be built, with the reason a person reads."""


# -- The thread as it would be resumed --------------------------------------------------------


@dataclass
class Context:
    """A thread's chat messages as resumed, with the ledger row of each."""

    messages: list[dict]
    refs: list[dict]
    turn_ids: list[str]  # the turns whose messages are in it, in order
    compaction_turn_id: str | None


def thread_at(turn_id: str) -> Thread:
    thread = load_thread(turn_id, page_size=1)
    if thread is None:
        raise Unexportable("gone: the turn is no longer in the ledger")
    if thread.problems:
        raise Unexportable("unreadable thread: " + "; ".join(thread.problems))
    return thread


def resumed_context(thread: Thread, *, through: int | None = None) -> Context:
    """The chat messages an agent resuming at the thread's step `through` (default: the step
    before the last) has: the latest compaction's summary first, then the turns it kept, then the
    turns after it, each as it happened."""
    steps = thread.steps[: (len(thread.steps) - 1) if through is None else through + 1]
    compaction = thread.compaction
    summary: list[dict] = []
    refs: list[dict] = []
    turns = []
    for step in steps:
        if not step.in_context:
            continue
        if compaction is not None and step.turn.id == compaction.turn_id:
            summary = [{"role": "system", "content": compaction.summary}]
            refs.insert(0, {"compaction_turn_id": compaction.turn_id})
            continue
        turns.append(step.turn)
    messages = list(summary)
    for _, turn_messages in chat_messages(turns):
        for message, _ in turn_messages:
            refs.append(message.pop("ledger"))
            messages.append(message)
    shown_compaction = compaction.turn_id if summary else None
    return Context(messages, refs, [t.id for t in turns], shown_compaction)


def split_turn(turn) -> tuple[list[dict], list[dict], list[dict], list[dict]]:
    """A turn's own messages as (prompt, prompt refs, answer, answer refs): the user messages it
    opens with, and everything after them."""
    prompt, prompt_refs, answer, answer_refs = [], [], [], []
    for _, turn_messages in chat_messages([turn]):
        for message, _ in turn_messages:
            ref = message.pop("ledger")
            if not answer and message.get("role") == "user":
                prompt.append(message)
                prompt_refs.append(ref)
            else:
                answer.append(message)
                answer_refs.append(ref)
    return prompt, prompt_refs, answer, answer_refs


# -- Chat records ----------------------------------------------------------------------------


def chat_record(marks: TurnMarks, form: str) -> dict:
    """The record of one annotated turn (raises Unexportable)."""
    thread = thread_at(marks.turn_id)
    turn = thread.turn
    if turn.is_compaction:
        raise Unexportable("a compaction turn: its answer is a summary, not a reply")
    context = resumed_context(thread)
    prompt, prompt_refs, answer, answer_refs = split_turn(turn)
    if not answer:
        raise Unexportable(f"no answer: the turn ({turn.status}) holds no reply yet")
    ledger = {
        "session_id": turn.session_id,
        "annotated_in": marks.session_ids,
        "turn_id": turn.id,
        "status": turn.status,
        "model": turn.model,
        "thread_turn_ids": [*context.turn_ids, turn.id],
        "compaction_turn_id": context.compaction_turn_id,
    }
    if form == "prompt-completion":
        ledger["prompt_messages"] = context.refs + prompt_refs
        ledger["completion_messages"] = answer_refs
        return {
            "prompt": context.messages + prompt,
            "completion": answer,
            "ledger": ledger,
            "annotations": marks.as_json(),
        }
    messages = context.messages + prompt + answer
    for message in context.messages:
        if message.get("role") == "assistant":
            message["weight"] = 0
    for message in answer:
        if message.get("role") == "assistant":
            message["weight"] = 1
    ledger["messages"] = context.refs + prompt_refs + answer_refs
    ledger["answer_starts_at"] = len(context.messages) + len(prompt)
    return {"messages": messages, "ledger": ledger, "annotations": marks.as_json()}


def chat_records(turns: Iterator[TurnMarks], form: str, report: Report) -> Iterator[dict]:
    for marks in turns:
        try:
            record = chat_record(marks, form)
        except Unexportable as why:
            report.leave_out(f"turn {marks.turn_id}", (marks.session_ids or [""])[0], str(why))
            continue
        report.records += 1
        yield record


# -- Preference records -----------------------------------------------------------------------


def preference_record(pair: PairChoice, labels_of: Callable[[str], list[str]]) -> dict:
    chosen_thread = thread_at(pair.chosen_turn_id)
    rejected_thread = thread_at(pair.rejected_turn_id)
    for thread in (chosen_thread, rejected_thread):
        if thread.turn.parent_turn_id != pair.branch_turn_id:
            raise Unexportable(
                f"no longer siblings: turn {thread.turn.id}'s parent is"
                f" {thread.turn.parent_turn_id!r}, not the branch point"
            )
    context = resumed_context(chosen_thread)  # the thread up to the branch point, resumed
    chosen_prompt, chosen_prompt_refs, chosen, chosen_refs = split_turn(chosen_thread.turn)
    rejected_prompt, rejected_prompt_refs, rejected, rejected_refs = split_turn(
        rejected_thread.turn
    )
    if not chosen or not rejected:
        raise Unexportable("no answer: one of the two turns holds no reply yet")
    same_prompt = _texts(chosen_prompt) == _texts(rejected_prompt)
    prompt, prompt_refs = list(context.messages), list(context.refs)
    if same_prompt:
        prompt += chosen_prompt
        prompt_refs += chosen_prompt_refs
    else:  # an edited prompt: each side is its prompt and its answer
        chosen, chosen_refs = chosen_prompt + chosen, chosen_prompt_refs + chosen_refs
        rejected, rejected_refs = rejected_prompt + rejected, rejected_prompt_refs + rejected_refs
    return {
        "prompt": prompt,
        "chosen": chosen,
        "rejected": rejected,
        "ledger": {
            "session_id": pair.session_id,
            "branch_turn_id": pair.branch_turn_id,
            "chosen_turn_id": pair.chosen_turn_id,
            "rejected_turn_id": pair.rejected_turn_id,
            "context_turn_ids": context.turn_ids,
            "compaction_turn_id": context.compaction_turn_id,
            "same_prompt": same_prompt,
            "prompt_messages": prompt_refs,
            "chosen_messages": chosen_refs,
            "rejected_messages": rejected_refs,
        },
        "annotations": {
            "chosen_by": sorted(set(pair.chosen_by)),
            "chosen_labels": labels_of(pair.chosen_turn_id),
            "rejected_labels": labels_of(pair.rejected_turn_id),
        },
    }


def _texts(messages: list[dict]) -> list:
    return [_plain(m.get("content")) for m in messages]


def _plain(content):
    return "".join(content.texts()) if isinstance(content, Value) else content


def preference_records(
    pairs: Iterator[PairChoice], labels_of: Callable[[str], list[str]], report: Report
) -> Iterator[dict]:
    for pair in pairs:
        try:
            record = preference_record(pair, labels_of)
        except Unexportable as why:
            what = f"pair {pair.chosen_turn_id} > {pair.rejected_turn_id} at {pair.branch_turn_id}"
            report.leave_out(what, pair.session_id, str(why))
            continue
        report.records += 1
        yield record


# -- JSONL -----------------------------------------------------------------------------------


def jsonl(records: Iterator[dict]) -> Iterator[bytes]:
    """One JSON object per line (JSON escapes every line break inside a value), in pieces of
    about WRITE_CHARS characters; a long value is read and written piece by piece."""
    written: list[str] = []
    size = 0
    for record in records:
        for text in (*_encoded(record), "\n"):
            written.append(text)
            size += len(text)
            if size > WRITE_CHARS:
                yield "".join(written).encode()
                written, size = [], 0
    if written:
        yield "".join(written).encode()


class _Streamed(Exception):
    """A record holds a value to read in pieces (sessions.export.Value)."""


def _plain_or_stream(value):
    if isinstance(value, Value):
        raise _Streamed
    return as_text(value)  # a BLOB read as text, as the export does


def _encoded(record: dict) -> Iterator[str]:
    """A record's JSON: at once (most records), or piece by piece when it holds a long value."""
    try:
        yield json.dumps(record, ensure_ascii=False, default=_plain_or_stream)
    except _Streamed:
        yield from encode_json(record)


def dumps(record: dict) -> str:
    """A record as one line of text (tests and small exports)."""
    return "".join(_encoded(record))
