"""Claude Code session transcripts (~/.claude/projects/<project>/<session>.jsonl).

Each line is an entry (user, assistant or system) linked to its parent by `parentUuid`; a parent
with several children is a rewind, so the entries form a tree. A turn starts at a user prompt and
takes everything that follows it until the next prompt: the assistant's lines, and the user lines
that only carry `tool_result` blocks (they answer the assistant's tool calls, so they belong to its
turn). A compaction (`compact_boundary` system line, then the `isCompactSummary` user line) is a
turn of its own. Sidechain entries (`isSidechain`, in the file itself or, since Claude Code 2, in
<session>/subagents/agent-<id>.jsonl) are a subagent's conversation: linked to the Task tool call
that spawned it, they become a subagent session.

Ids are the transcript's own: a turn is named after the uuid of the line that starts it, a
message after its line's uuid, a tool call after its tool_use id; a subagent session, which has
none, gets one derived from its parent session and tool call.

A resumed session is a new transcript that starts by repeating an earlier one's records (its
origin: a file of the same project folder that starts with the same record, or, when that file
is gone, the repeated records themselves, which carry the origin's session id). It becomes a fork
of the origin at the turn where it went on: its own turns below the origin's, the repeated ones
not written twice (docs/decisions.md, "A resumed Claude Code session is a fork of its origin").
"""

import hashlib
import json
import re
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from importers.bundle import ImportReport, SessionBundle, WrongFormat, derived_id
from importers.jsonl import (
    Record,
    encode_json,
    int_or_zero,
    jsonl_files,
    read_jsonl,
    read_transcripts,
)
from importers.naming import label_from, main_routing_key
from importers.times import KEPT_ORDER, TurnOrder, zoned_iso_ms
from ledgerfacts.commands import as_typed

FORMAT = "claude-code"
PERSONA = "claude-code"
EXPECTED = (
    "a Claude Code transcript: JSONL lines with type, uuid, parentUuid and sessionId, as in "
    "~/.claude/projects/<project>/<session>.jsonl"
)
ENTRY_TYPES = {"user", "assistant", "system"}
# Lines Claude Code writes that are not part of the conversation and that the ledger cannot hold.
NOT_CONVERSATION = {"file-history-snapshot", "queue-operation", "progress", "custom-title"}
SUBAGENT_TOOLS = {"Task", "Agent"}  # the tool that spawns a subagent (renamed Agent lately)
INTERRUPTION = "[Request interrupted by user"
AGENT_ID_IN_RESULT = re.compile(r"agentId: ?([\w@.-]+)")


def read(paths: list[Path], report: ImportReport) -> Iterator[SessionBundle]:
    folders = ProjectFolders()

    def read_one(path: Path, report: ImportReport) -> list[SessionBundle] | None:
        if path.resolve() in folders.imported:
            return None  # imported earlier in this run, as the origin of a resumed session
        return read_transcript(path, report, folders)

    return read_transcripts(
        paths, report, read_one=read_one, files_in=transcript_files, expected=EXPECTED
    )


@dataclass
class Head:
    """What a transcript starts with: its summary lines, and its first conversation record."""

    summaries: list[dict]
    first: str | None  # the fingerprint of its first record


class ProjectFolders:
    """What the importer knows of a transcript's neighbours in its project folder, read once.

    Claude Code writes the summary of a session at the top of *another* transcript of the same
    project (anthropics/claude-code#2597), so a session's label may be in a file next to it,
    whichever of the two is imported first, or alone. And a resumed session's transcript starts
    with its origin's first record: the files starting alike are read whole to find it.
    """

    def __init__(self):
        self.heads: dict[Path, dict[Path, Head]] = {}
        self.read: dict[Path, list[Entry]] = {}  # transcripts read whole to compare them
        self.imported: set[Path] = set()  # transcripts made into bundles in this run

    def _heads(self, path: Path) -> dict[Path, Head]:
        folder = path.parent
        if folder not in self.heads:
            self.heads[folder] = {
                other.resolve(): _head(other)
                for other in sorted(folder.glob("*.jsonl"))
                if other.is_file()
            }
        return self.heads[folder]

    def around(self, path: Path) -> list[dict]:
        """The summary lines at the heads of the transcripts of `path`'s folder."""
        return [summary for head in self._heads(path).values() for summary in head.summaries]

    def starting_like(self, path: Path, first: str) -> list[Path]:
        """The other transcripts of the folder whose first record is `first`."""
        me = path.resolve()
        return [p for p, head in self._heads(path).items() if head.first == first and p != me]

    def entries(self, path: Path) -> "list[Entry]":
        """A transcript's conversation entries (main chain and sidechains), read once."""
        if path not in self.read:
            try:
                main, sidechain, _ = _sort_lines(read_jsonl(path).records, ImportReport())
            except (OSError, ValueError, RecursionError):
                main, sidechain = [], []
            self.read[path] = main + sidechain
        return self.read[path]


# A transcript's first conversation record is among its first lines (summaries, file history
# snapshots and the like come before it).
HEAD_LINES = 200


def _head(path: Path) -> Head:
    """The summary lines a transcript starts with (Claude Code writes them first), and the
    fingerprint of its first conversation record."""
    summaries: list[dict] = []
    try:
        with path.open("rb") as file:
            for _, raw in zip(range(HEAD_LINES), file, strict=False):
                try:
                    data = json.loads(raw)
                except (ValueError, RecursionError):
                    continue
                if not isinstance(data, dict):
                    continue
                if data.get("type") == "summary":
                    summaries.append(data)
                elif data.get("type") in ENTRY_TYPES and isinstance(data.get("uuid"), str):
                    return Head(summaries, _fingerprint(data))
    except OSError:
        pass
    return Head(summaries, None)


def _fingerprint(data: dict) -> str:
    """What a record is, whoever wrote it down: its type, time and content. A resumed session
    repeats its origin's records verbatim (uuids included) in most Claude Code versions; the
    fingerprint also knows them when a copy was given new uuids and session ids."""
    what = [data.get("type"), data.get("timestamp"), data.get("subtype")]
    what.append(data.get("message") if "message" in data else data.get("content"))
    text = json.dumps(what, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def transcript_files(folder: Path) -> list[Path]:
    """The session transcripts of a ~/.claude/projects-style folder (subagent files are read
    with the session that spawned them)."""
    return [p for p in jsonl_files(folder) if p.parent.name != "subagents"]


def subagent_files(transcript: Path) -> list[Path]:
    folder = transcript.parent / transcript.stem / "subagents"
    if not folder.is_dir():
        return []
    # agent-acompact-* files are Claude Code's own compaction runs, not subagents it was asked for.
    return sorted(
        p for p in folder.glob("agent-*.jsonl") if not p.name.startswith("agent-acompact")
    )


@dataclass(eq=False)  # an entry is itself: comparing two would compare whole JSON lines
class Entry:
    """A conversation line (user, assistant or system) of a transcript."""

    record: Record
    order: int  # position among all entries read, for file order across files
    ms: int

    @property
    def data(self) -> dict:
        return self.record.data

    @property
    def uuid(self) -> str:
        return self.data["uuid"]

    @property
    def type(self) -> str:
        return self.data["type"]

    @property
    def message(self) -> dict:
        message = self.data.get("message")
        return message if isinstance(message, dict) else {}

    @property
    def blocks(self) -> list[dict]:
        """The content as a list of blocks (a plain string is one text block)."""
        content = self.message.get("content", self.data.get("content"))
        if isinstance(content, str):
            return [{"type": "text", "text": content}]
        if isinstance(content, list):
            return [b for b in content if isinstance(b, dict)]
        return []

    @property
    def text(self) -> str:
        return "\n\n".join(
            b["text"]
            for b in self.blocks
            if b.get("type") == "text" and isinstance(b.get("text"), str)
        )

    @property
    def is_compact_boundary(self) -> bool:
        return self.type == "system" and self.data.get("subtype") == "compact_boundary"

    @property
    def is_compact_summary(self) -> bool:
        return bool(self.data.get("isCompactSummary"))

    @property
    def is_prompt(self) -> bool:
        """A user line that asks something (not tool results, an interruption or a meta line)."""
        if self.type != "user" or self.is_compact_summary or self.data.get("isMeta"):
            return False
        kinds = [b.get("type") for b in self.blocks]
        if all(kind == "tool_result" for kind in kinds):
            return False
        return not self.text.startswith(INTERRUPTION)


def read_transcript(
    path: Path, report: ImportReport, folders: ProjectFolders | None = None
) -> list[SessionBundle] | None:
    """The bundles of one transcript: its session (with its subagents), after the session it
    continues when it is a resumed one and that session is not imported yet in this run."""
    folders = folders or ProjectFolders()
    folders.imported.add(path.resolve())
    jsonl = read_jsonl(path)
    if jsonl.records and not any(_looks_like_claude(r.data) for r in jsonl.records):
        hint = " (it looks like a Codex rollout: try 'codex')" if _looks_like_codex(jsonl) else ""
        raise WrongFormat(f"{path} is not {EXPECTED}{hint}")
    if not jsonl.records and jsonl.malformed:
        raise WrongFormat(f"{path} has no JSON line: expected {EXPECTED}")
    jsonl.report_malformed(report)

    records = list(jsonl.records)
    for sub in subagent_files(path):
        sub_jsonl = read_jsonl(sub)
        sub_jsonl.report_malformed(report)
        records += [r for r in sub_jsonl.records if _looks_like_claude(r.data)]

    main, sidechain, summaries = _sort_lines(records, report)
    if not main:
        if summaries or sidechain:
            report.unmapped("transcripts without conversation lines (only summaries)")
        return None
    session_id = _session_id(path, main)
    summaries += folders.around(path)
    origin = _origin(path, main, session_id, folders)
    if origin is not None:
        return _continuation(path, origin, main, sidechain, summaries, report, folders)
    bundle, agent_ids = _build_session(
        where=str(path),
        session_id=session_id,
        entries=main,
        routing_key=_routing_key(main, session_id),
        label=_label(summaries, main),
        report=report,
    )
    _attach_subagents(bundle, agent_ids, sidechain, report)
    return [bundle]


def _routing_key(entries: list[Entry], session_id: str) -> str:
    cwd = entries[0].data.get("cwd")
    return main_routing_key(cwd, cwd if isinstance(cwd, str) and cwd else session_id)


# ----- resumed sessions -----------------------------------------------------------------------


@dataclass
class Origin:
    """The session a resumed transcript continues, and what it repeats of it."""

    session_id: str
    entries: list[Entry]  # the origin's main chain (its transcript's, or the repeated records)
    path: Path | None  # its transcript; None: known from the repeated records only
    repeated: int  # how many of the resumed transcript's first records repeat it
    names: dict[str, str]  # the resumed transcript's uuid of a repeated record -> the origin's


def _origin(path: Path, main: list[Entry], session_id: str, folders) -> Origin | None:
    """The session this transcript continues, if it starts by repeating another's records."""
    prints = [_fingerprint(e.data) for e in main]
    best: Origin | None = None
    for other in folders.starting_like(path, prints[0]):
        everything = folders.entries(other)
        theirs = [e for e in everything if not e.data.get("isSidechain")]
        if not theirs:
            continue
        by_print = {_fingerprint(e.data): e for e in everything}
        mine = _run(prints, by_print)
        their_prints = [_fingerprint(e.data) for e in theirs]
        own = set(prints)
        their_run = _run(their_prints, own)
        if not _continues((path, main, mine), (other, theirs, their_run)):
            continue
        if best is None or mine > best.repeated:
            names = {e.uuid: by_print[p].uuid for e, p in zip(main[:mine], prints, strict=False)}
            best = Origin(_session_id(other, theirs), theirs, other, mine, names)
    if best is not None:
        return best
    # The origin's file is gone (Claude Code deletes old transcripts): records copied verbatim
    # still carry its session id.
    leading = []
    for entry in main:
        if entry.data.get("sessionId") in (session_id, None, ""):
            break
        leading.append(entry)
    if leading and len({e.data.get("sessionId") for e in leading}) == 1:
        origin_id = leading[0].data["sessionId"]
        if isinstance(origin_id, str):
            return Origin(origin_id, leading, None, len(leading), {})
    return None


def _run(prints: list[str], known) -> int:
    """How many of the first `prints` are `known`."""
    count = 0
    for fingerprint in prints:
        if fingerprint not in known:
            break
        count += 1
    return count


def _continues(mine: tuple, theirs: tuple) -> bool:
    """Whether transcript `mine` continues `theirs`, each (path, main entries, how many of its
    first records the other holds): when it repeats all of the other and goes on; when both
    went on from a shared start, the one that went on later; the same records, the later name."""
    path, entries, run = mine
    other, their_entries, their_run = theirs
    if run == 0:
        return False
    if run == len(entries) and their_run == len(their_entries):
        return other.name < path.name
    if run == len(entries):
        return False  # the other continues this one
    if their_run == len(their_entries):
        return True
    return (entries[run].ms, path.name) > (their_entries[their_run].ms, other.name)


def _continuation(path, origin: Origin, main, sidechain, summaries, report, folders):
    """A resumed transcript as a fork of its origin (written after it)."""
    session_id = _session_id(path, main)
    before: list[SessionBundle] = []
    if origin.path is not None and origin.path.resolve() not in folders.imported:
        before = read_transcript(origin.path, report, folders) or []
    origin_turns = _turn_tree(origin.entries, ImportReport())
    turn_of = {e.uuid: t.id for t in origin_turns for e in t.entries}
    if origin.path is None:
        # Its records are all there is of the origin: the origin is imported from them.
        repeated = f"{path}: its first {origin.repeated} records (session {origin.session_id})"
        base, _ = _build_session(
            where=repeated,
            session_id=origin.session_id,
            entries=origin.entries,
            routing_key=_routing_key(origin.entries, origin.session_id),
            label=_label(summaries, origin.entries),
            report=report,
        )
        before.append(base)
    own = [_renamed(entry, origin.names) for entry in main[origin.repeated :]]
    repeated_prints = {_fingerprint(e.data) for e in origin.entries}
    own_sidechain = [e for e in sidechain if _fingerprint(e.data) not in repeated_prints]
    last_repeated = main[origin.repeated - 1].uuid
    fork_point = turn_of[origin.names.get(last_repeated, last_repeated)]
    label = _label(summaries, own) if own else None
    if label is None:
        origin_label = _label(summaries, origin.entries)
        label = label_from(f"{origin_label} (resumed)") if origin_label else None
    routing_key = f"fork:{origin.session_id}:{session_id}"  # a fork (ARCHITECTURE.md §2)
    if own:
        bundle, agent_ids = _build_session(
            where=str(path),
            session_id=session_id,
            entries=own,
            routing_key=routing_key,
            label=label,
            report=report,
            outer=turn_of,
        )
        _attach_subagents(bundle, agent_ids, own_sidechain, report)
    else:  # resumed and left at once: a fork with no turn of its own yet
        bundle = SessionBundle(where=str(path), session={
            "id": session_id, "persona": PERSONA, "routing_key": routing_key, "label": label,
            "root_turn_id": origin_turns[0].id, "current_turn_id": fork_point,
            "created_at": main[-1].ms, "updated_at": main[-1].ms, "status": "active",
        }, turns=[], messages=[], tool_calls=[])  # fmt: skip
    bundle.session["root_turn_id"] = origin_turns[0].id
    own_turns = len(bundle.turns)
    report.continued(
        str(path),
        f"continues session {origin.session_id} (its first {origin.repeated} records repeat "
        f"{origin.path or 'that session'}): a fork of it at turn {fork_point}, with "
        f"{own_turns} turn{'s' * (own_turns != 1)} of its own",
    )
    return [*before, bundle]


def _renamed(entry: Entry, names: dict[str, str]) -> Entry:
    """An entry whose parent is a repeated record, named as in the origin."""
    data = entry.data
    renamed = {
        key: names[data[key]]
        for key in ("parentUuid", "logicalParentUuid")
        if isinstance(data.get(key), str) and data[key] in names
    }
    if not renamed:
        return entry
    record = Record(entry.record.where, entry.record.line, data | renamed)
    return Entry(record, entry.order, entry.ms)


def _looks_like_claude(data: dict) -> bool:
    if data.get("type") == "summary":
        return "summary" in data
    return isinstance(data.get("uuid"), str) and "sessionId" in data


def _looks_like_codex(jsonl) -> bool:
    """Envelope lines, or the older flat layout's state lines / first {id, timestamp} line."""
    head = [r.data for r in jsonl.records[:50]]
    return any(
        {"timestamp", "type", "payload"} <= data.keys() or data.get("record_type") == "state"
        for data in head
    ) or bool(head and {"id", "timestamp"} <= head[0].keys() and "type" not in head[0])


def _sort_lines(records: list[Record], report: ImportReport):
    """Conversation entries of the main chain and of sidechains, and summary lines."""
    main, sidechain, summaries, seen = [], [], [], set()
    for order, record in enumerate(records):
        data = record.data
        kind = _nonempty_str(data.get("type")) or "(none)"
        if kind == "summary":
            summaries.append(data)
            continue
        if kind in NOT_CONVERSATION:
            report.unmapped(f"Claude Code {kind} lines")
            continue
        if kind not in ENTRY_TYPES:
            report.unknown(f"claude-code:{kind}")
            continue
        if not isinstance(data.get("uuid"), str):
            report.skipped(record.where, f"a {kind} line without a uuid")
            continue
        ms = zoned_iso_ms(data.get("timestamp"))
        if ms is None:
            report.skipped(record.where, f"no usable timestamp ({data.get('timestamp')!r})")
            continue
        if data["uuid"] in seen:
            continue  # Claude Code writes some lines twice (resumes); the first one counts
        seen.add(data["uuid"])
        (sidechain if data.get("isSidechain") else main).append(Entry(record, order, ms))
    return main, sidechain, summaries


def _session_id(path: Path, main: list[Entry]) -> str:
    # Lines copied from an earlier session on resume keep that session's id: the last line
    # names the session this file is.
    session_id = main[-1].data.get("sessionId")
    return session_id if isinstance(session_id, str) and session_id else path.stem


def _label(summaries: list[dict], main: list[Entry]) -> str | None:
    # Claude Code writes summaries of other sessions into a file too (anthropics/claude-code
    # #2597): only a summary whose leaf is a line of this session names it; of several, the one
    # of its latest leaf.
    position = {e.uuid: n for n, e in enumerate(main)}
    own = [
        (position[leaf], n, label)
        for n, s in enumerate(summaries)
        if (leaf := _nonempty_str(s.get("leafUuid"))) in position
        and (label := label_from(s.get("summary")))
    ]
    if own:
        return max(own)[2]
    first_prompt = next((e for e in main if e.is_prompt), None)
    if first_prompt is None:
        return None
    # A slash command is written as tags: its label is the command as typed, with its arguments.
    return label_from(as_typed(first_prompt.text) or first_prompt.text)


# ----- the turn tree --------------------------------------------------------------------------


@dataclass
class TurnBuild:
    id: str
    parent: str | None
    entries: list[Entry] = field(default_factory=list)
    compaction: bool = False


def _turn_tree(
    entries: list[Entry], report: ImportReport, outer: dict[str, str] | None = None
) -> list[TurnBuild]:
    """Group entries into turns along the parentUuid tree (parents before children). An entry
    whose parent is a line of `outer` (uuid -> turn id: the origin of a resumed session) starts
    a turn below that turn."""
    outer = outer or {}
    by_uuid = {e.uuid: e for e in entries}
    parent_of: dict[str, str | None] = {}
    outer_turn: dict[str, str] = {}  # a root entry -> the other session's turn above it
    children: dict[str | None, list[Entry]] = defaultdict(list)
    previous = None
    for entry in entries:
        # A boundary starts a new root; its logical parent keeps the thread one tree.
        named = entry.data.get("logicalParentUuid" if entry.is_compact_boundary else "parentUuid")
        parent = named if isinstance(named, str) and named in by_uuid else None
        if parent is None and isinstance(named, str) and named in outer:
            outer_turn[entry.uuid] = outer[named]
        elif named is not None and parent is None:
            # A parent in another file (resume) or on a skipped line: the line before it.
            parent = previous.uuid if previous else None
        parent_of[entry.uuid] = parent
        children[parent].append(entry)
        previous = entry

    turns: list[TurnBuild] = []
    turn_of: dict[str, TurnBuild] = {}
    stack = list(reversed(children[None]))
    reached = set()
    while stack:
        entry = stack.pop()
        reached.add(entry.uuid)
        parent = parent_of[entry.uuid]
        siblings = children[parent]
        parent_turn = turn_of.get(parent) if parent else None
        starts = (
            parent_turn is None
            or entry.is_prompt
            or entry.is_compact_boundary
            or (entry.is_compact_summary and not by_uuid[parent].is_compact_boundary)
            or entry is not siblings[0]  # a rewind below a non-prompt line: a branch turn
        )
        if starts:
            above = parent_turn.id if parent_turn else outer_turn.get(entry.uuid)
            turn = TurnBuild(entry.uuid, above)
            turn.compaction = entry.is_compact_boundary or entry.is_compact_summary
            turns.append(turn)
        else:
            turn = parent_turn
        turn.entries.append(entry)
        turn_of[entry.uuid] = turn
        stack.extend(reversed(children[entry.uuid]))
    for entry in entries:
        if entry.uuid not in reached:
            report.skipped(entry.record.where, "its parentUuid chain loops: not reachable")
    return turns


# ----- rows -----------------------------------------------------------------------------------


def _build_session(*, where, session_id, entries, routing_key, label, report, outer=None):
    """One session's bundle, and the agent ids its Task calls' results name. `outer`: turns of
    another session the entries' parents may be in (uuid -> turn id), for a resumed session."""
    turns = _turn_tree(entries, report, outer or {})
    reached = [e for t in turns for e in t.entries]
    last = max(reached, key=lambda e: (e.ms, e.order))
    tail = next(t for t in turns if last in t.entries)
    rows = _Rows(session_id, report)
    for turn in turns:
        rows.add_turn(turn, is_tail=turn is tail)
    rows.add_compactions(turns)
    session = {
        "id": session_id,
        "persona": PERSONA,
        "routing_key": routing_key,
        "label": label,
        "root_turn_id": turns[0].id,
        "current_turn_id": tail.id,
        "created_at": min(e.ms for e in reached),
        "updated_at": last.ms,
        "status": "active",
    }
    bundle = SessionBundle(
        where=where,
        session=session,
        turns=rows.turns,
        messages=rows.messages,
        tool_calls=rows.tool_calls,
        compactions=rows.compactions,
        turn_usage=rows.turn_usage,
    )
    return bundle, rows.agent_ids


class _Rows:
    """The ledger rows of one session's turns."""

    def __init__(self, session_id: str, report: ImportReport):
        self.session_id = session_id
        self.report = report
        self.turns: list[dict] = []
        self.messages: list[dict] = []
        self.tool_calls: list[dict] = []
        self.compactions: list[dict] = []
        self.turn_usage: list[dict] = []
        self.calls_by_id: dict[str, dict] = {}
        self.agent_ids: dict[str, str] = {}  # tool call id -> the subagent its result names

    def add_turn(self, turn: TurnBuild, *, is_tail: bool) -> None:
        calls: list[dict] = []
        sequence = 0
        # Timed so that the ledger's order (by time, a message first at equal times) is the
        # transcript's (importers/times.py).
        order = TurnOrder()
        for entry in turn.entries:
            text = self._text_of(entry)
            # A line's text is one message, placed before its calls unless a call comes first.
            text_last = bool(text) and _call_before_text(entry)
            if text and not text_last:
                self._message(turn, entry, text, sequence, order.message(entry.ms))
                sequence += 1
            for block in entry.blocks:
                kind = block.get("type")
                if kind == "tool_use" and entry.type == "assistant":
                    calls.append(self._tool_call(turn, block, entry, len(calls), order))
                elif kind == "tool_result":
                    self._tool_result(block, entry)
                elif kind in ("thinking", "redacted_thinking"):
                    self.report.unmapped("Claude Code thinking blocks")
                elif kind == "image":
                    self.report.unmapped("Claude Code image blocks")
            if text_last:
                self._message(turn, entry, text, sequence, order.message(entry.ms))
                sequence += 1
        if order.moved:
            self.report.repaired(KEPT_ORDER, order.moved)
        self.turns.append(self._turn_row(turn, calls, is_tail))
        if usage := _billed_usage(turn):
            self.turn_usage.append(usage)

    def _message(self, turn: TurnBuild, entry: Entry, text: str, sequence: int, ms: int) -> None:
        self.messages.append({
            "id": entry.uuid,
            "turn_id": turn.id,
            "role": "system" if entry.type == "system" else entry.type,
            "content": text,
            "sequence": sequence,
            "created_at": ms,
        })  # fmt: skip

    def _text_of(self, entry: Entry) -> str:
        if entry.is_compact_boundary:
            meta = entry.data.get("compactMetadata") or {}
            how = meta.get("trigger") or "compaction"
            before = meta.get("preTokens")
            size = f", {before:,} tokens before" if isinstance(before, int) else ""
            return f"Conversation compacted ({how}{size})"
        if entry.type == "system":
            content = entry.data.get("content")
            return content if isinstance(content, str) else ""
        return entry.text

    def _tool_call(
        self, turn: TurnBuild, block: dict, entry: Entry, sequence: int, order: TurnOrder
    ) -> dict:
        call_id = _nonempty_str(block.get("id")) or derived_id(entry.ms, entry.uuid, sequence)
        if call_id in self.calls_by_id:
            return self.calls_by_id[call_id]  # the same tool_use written on two lines
        row = {
            "id": call_id,
            "turn_id": turn.id,
            "tool_name": str(block.get("name") or "(unnamed tool)"),
            "parameters": encode_json(block.get("input", {})),
            "result": None,
            "error": None,
            "status": "pending",
            "started_at": order.call(entry.ms),
            "completed_at": None,
            "sequence": sequence,
        }
        self.calls_by_id[call_id] = row
        self.tool_calls.append(row)
        return row

    def _tool_result(self, block: dict, entry: Entry) -> None:
        call = self.calls_by_id.get(_nonempty_str(block.get("tool_use_id")))
        if call is None:
            self.report.unmapped("Claude Code tool results whose tool_use is not in the transcript")
            return
        content = block.get("content")
        if block.get("is_error"):
            call["status"] = "failed"
            call["error"] = _result_text(content) or "(error without a message)"
        else:
            call["status"] = "completed"
            call["error"] = None
            call["result"] = encode_json(_plain(content))
        call["completed_at"] = entry.ms
        if agent_id := _agent_id(entry.data.get("toolUseResult"), content):
            self.agent_ids[call["id"]] = agent_id

    def _turn_row(self, turn: TurnBuild, calls: list[dict], is_tail: bool) -> dict:
        answered = any(e.type == "assistant" for e in turn.entries)
        last = turn.entries[-1]
        open_calls = [c for c in calls if c["status"] == "pending"]
        if turn.compaction:
            status = "completed"
        elif is_tail and not answered:
            status = "pending"
        elif is_tail and (open_calls or (last.type == "user" and not last.is_prompt)):
            status = "streaming"  # waiting for a tool or for the model: the file may grow
        elif _api_error(turn):
            status = "failed"
        else:
            status = "completed"
        if not is_tail:
            for call in open_calls:
                call["status"] = "failed"
                call["error"] = "no tool_result for this call in the transcript"
        prompt, completion, model = _usage(turn)
        finished = status in ("completed", "failed")
        return {
            "id": turn.id,
            "session_id": self.session_id,
            "parent_turn_id": turn.parent,
            "status": status,
            "started_at": turn.entries[0].ms,
            "completed_at": max(e.ms for e in turn.entries) if finished else None,
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion if prompt is not None else None,
            "model": model,
        }

    def add_compactions(self, turns: list[TurnBuild]) -> None:
        parent_of = {t.id: t.parent for t in turns}
        for turn in turns:
            if not turn.compaction:
                continue
            boundary = next((e for e in turn.entries if e.is_compact_boundary), None)
            summary = next((e for e in turn.entries if e.is_compact_summary), None)
            meta = (boundary.data.get("compactMetadata") if boundary else None) or {}
            folded, current = [], turn.parent
            while current and current not in folded:
                folded.append(current)
                current = parent_of.get(current)
            self.compactions.append({
                "turn_id": turn.id,
                "summary": summary.text if summary else "",
                "summarized_turn_ids": json.dumps(list(reversed(folded))),
                "kept_turn_ids": "[]",
                "tokens_before": int_or_zero(meta.get("preTokens")) or None,
                "trigger_reason": _nonempty_str(meta.get("trigger")),
                "created_at": turn.entries[0].ms,
            })  # fmt: skip


def _call_before_text(entry: Entry) -> bool:
    """Whether a line's first tool_use block comes before its first text block."""
    kinds = [b.get("type") for b in entry.blocks]
    return "tool_use" in kinds and "text" in kinds and kinds.index("tool_use") < kinds.index("text")


def _plain(content):
    """A result as the model saw it: a list of text blocks only is just its text."""
    if (
        isinstance(content, list)
        and content
        and all(isinstance(b, dict) and b.get("type") == "text" for b in content)
    ):
        return _result_text(content)
    return "" if content is None else content


def _result_text(content) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"
        )
    return "" if content is None else json.dumps(content)


def _agent_id(tool_use_result, content) -> str | None:
    """The subagent a Task result names: Claude Code 2 writes its agentId there."""
    if isinstance(tool_use_result, dict) and isinstance(tool_use_result.get("agentId"), str):
        return tool_use_result["agentId"]
    found = AGENT_ID_IN_RESULT.search(_result_text(content))
    return found.group(1) if found else None


def _api_error(turn: TurnBuild) -> bool:
    answers = [e for e in turn.entries if e.type == "assistant"]
    return bool(answers) and bool(answers[-1].data.get("isApiErrorMessage"))


# Anthropic's usage splits input three ways; all three are billed input (at different rates).
INPUT_KEYS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
# A usage of zeros everywhere measured no model call: the turn's tokens are unknown, not 0.
USAGE_KEYS = (*INPUT_KEYS, "output_tokens")
# The model Claude Code names on answers it writes itself ("No response requested.").
SYNTHETIC = "<synthetic>"


def _usage(turn: TurnBuild) -> tuple[int | None, int | None, str | None]:
    """Tokens of a turn: the prompt of its last model call (the context the agent then held,
    cache included) and the output of all its calls."""
    responses, model = _responses(turn)
    if not responses:
        return None, None, model
    last = responses[-1]
    prompt = sum(int_or_zero(last.get(k)) for k in INPUT_KEYS)
    completion = sum(int_or_zero(u.get("output_tokens")) for u in responses)
    return prompt, completion, model


def _responses(turn: TurnBuild) -> tuple[list[dict], str | None]:
    """The usage of each model call of a turn, in order, and the model that answered. One API
    response is written on several lines (one per content block) with the same message id and
    usage, so it is counted once."""
    responses: dict[str, dict] = {}
    model = None
    for entry in turn.entries:
        if entry.type != "assistant":
            continue
        message = entry.message
        if message.get("model") == SYNTHETIC:
            continue  # Claude Code's own stand-in answer: no model call, its usage all zeros
        if isinstance(message.get("model"), str):
            model = message["model"]
        usage = message.get("usage")
        if isinstance(usage, dict) and any(int_or_zero(usage.get(k)) for k in USAGE_KEYS):
            responses[message.get("id") or entry.uuid] = usage
    return list(responses.values()), model


def _billed_usage(turn: TurnBuild) -> dict | None:
    """The optional turn_usage row: the input billed over all of the turn's calls (cache reads
    and writes included, and apart), the output, and how many calls there were."""
    responses, _ = _responses(turn)
    if not responses:
        return None

    def total(key: str) -> int:
        return sum(int_or_zero(usage.get(key)) for usage in responses)

    return {
        "turn_id": turn.id,
        "model_calls": len(responses),
        "input_tokens": sum(total(key) for key in INPUT_KEYS),
        "cache_read_tokens": total("cache_read_input_tokens"),
        "cache_write_tokens": total("cache_creation_input_tokens"),
        "output_tokens": total("output_tokens"),
    }


def _nonempty_str(value) -> str | None:
    return value if isinstance(value, str) and value else None


# ----- subagents ------------------------------------------------------------------------------


def _attach_subagents(
    bundle: SessionBundle, agent_ids: dict[str, str], sidechain: list[Entry], report: ImportReport
) -> None:
    chains = _chains(sidechain)
    if not chains:
        return
    session_id = bundle.session["id"]
    tasks = [c for c in bundle.tool_calls if c["tool_name"] in SUBAGENT_TOOLS]
    unlinked = 0
    for chain in chains:
        call = _spawning_call(chain, tasks, agent_ids)
        if call is None:
            unlinked += len(chain)
            continue
        tasks.remove(call)
        parameters = _loads(call["parameters"])
        description = parameters.get("description") or parameters.get("subagent_type")
        child_id = derived_id(chain[0].ms, "claude-code-subagent", session_id, call["id"])
        child, _ = _build_session(
            where=f"{chain[0].record.where} (subagent of tool call {call['id']})",
            session_id=child_id,
            entries=chain,
            routing_key=f"subagent:{session_id}:{call['id']}",
            label=label_from(str(description)) if description else _label([], chain),
            report=report,
        )
        bundle.children.append(child)
    if unlinked:
        report.unmapped("Claude Code sidechain lines not linked to a Task tool call", unlinked)


def _chains(sidechain: list[Entry]) -> list[list[Entry]]:
    """Sidechain entries grouped into conversations: each root with everything below it."""
    by_uuid = {e.uuid: e for e in sidechain}
    children = defaultdict(list)
    roots = []
    for entry in sidechain:
        parent = entry.data.get("parentUuid")
        if isinstance(parent, str) and parent in by_uuid:
            children[parent].append(entry)
        else:
            roots.append(entry)
    chains = []
    for root in roots:
        chain, stack = [], [root]
        while stack:
            entry = stack.pop()
            chain.append(entry)
            stack.extend(children[entry.uuid])
        chains.append(sorted(chain, key=lambda e: e.order))
    return chains


def _spawning_call(chain: list[Entry], tasks: list[dict], agent_ids: dict[str, str]):
    """The Task call that spawned a sidechain: by agent id, else by its prompt."""
    agent_id = next(
        (e.data["agentId"] for e in chain if isinstance(e.data.get("agentId"), str)), None
    )
    if agent_id:
        for call in tasks:
            if agent_ids.get(call["id"]) == agent_id:
                return call
    prompt = chain[0].text.strip()
    for call in tasks:
        if str(_loads(call["parameters"]).get("prompt", "")).strip() == prompt:
            return call
    return None


def _loads(text: str) -> dict:
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
