"""What every importer produces and reports: sessions as Agents Ledger rows, and an account.

A format module (claude_code, codex, aix, agentos) exposes:

    FORMAT = "claude-code"            # the name used on the command line
    def read(paths: list[Path], report: ImportReport) -> Iterator[SessionBundle]

It raises WrongFormat when an input is not that format, and reports malformed records with their
file and line (or table and row id) and goes on. The writer (importers/writer.py) turns each
bundle into one transaction.
"""

import hashlib
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime

from ledgerfacts import ulid
from ledgerfacts.schema import OPTIONAL_TABLES

TABLES = (
    "sessions", "turns", "messages", "tool_calls", "compactions", "turn_usage",
    "tool_call_source_ids",
)  # fmt: skip
# Tables a ledger may lack (ARCHITECTURE.md §2, ledgerweb/sql/), and the Nexus Ledger's requests
# that only ledger_ship writes: the summary names them only when rows were written or found.
OPTIONAL = (*OPTIONAL_TABLES, "nexus_requests")


@dataclass
class SessionBundle:
    """One session as rows of the Agents Ledger, ready to write in one transaction."""

    where: str  # for messages, e.g. "path/to/file.jsonl" or "aix.sqlite3: agent_sessions id=…"
    session: dict  # column -> value of one `sessions` row (all NOT NULL columns set)
    turns: list[dict]  # `turns` rows; a parent before its children
    messages: list[dict]  # `messages` rows
    tool_calls: list[dict]  # `tool_calls` rows (parameters/result are JSON text)
    compactions: list[dict] = field(default_factory=list)  # optional `compactions` rows
    # optional `turn_usage` rows: billed input with cache reads/writes, where the format has it
    turn_usage: list[dict] = field(default_factory=list)
    # optional `tool_call_source_ids` rows: a call's id in the transcript where the ledger's
    # is another (a Codex call_id), so a pasted one is found
    tool_call_source_ids: list[dict] = field(default_factory=list)
    children: list["SessionBundle"] = field(default_factory=list)  # subagents, written after

    def rows(self) -> dict[str, list[dict]]:
        """This session's own rows by table (not its children's)."""
        return {
            "sessions": [self.session],
            "turns": self.turns,
            "messages": self.messages,
            "tool_calls": self.tool_calls,
            "compactions": self.compactions,
            "turn_usage": self.turn_usage,
            "tool_call_source_ids": self.tool_call_source_ids,
        }


class WrongFormat(Exception):
    """The input is not of the format asked for; the message names the expected format."""


# How many malformed records the summary lists one by one; the rest are only counted.
LISTED_SKIPS = 20


class ImportReport:
    """What an import did and what it could not do; printed as the summary at the end."""

    def __init__(self):
        self.added: Counter[str] = Counter()  # table -> new rows written
        self.present: Counter[str] = Counter()  # table -> rows already in the ledger
        self.updated: Counter[str] = Counter()  # table -> unfinished rows brought up to date
        self.skips: list[tuple[str, str]] = []  # (where, why) of malformed lines/rows
        self.unknown_types: Counter[str] = Counter()
        self.unmapped_data: Counter[str] = Counter()
        self.repairs: Counter[str] = Counter()
        self.failed_sessions: list[tuple[str, str]] = []  # (where, why)
        self.failed_requests: list[tuple[str, str]] = []  # (where, why): ledger_ship's requests
        self.wrong_formats: list[tuple[str, str]] = []  # (input, message)
        self.empty_inputs: list[str] = []
        self.waits: list[tuple[str, str]] = []  # (where, why) of records for a later import
        self.collisions: list[tuple[str, str]] = []  # (where, why): one id, other content
        # (where, why, since ms): left out again after an earlier run reported them (ledger_ship)
        self.still_left_out: list[tuple[str, str, int]] = []
        self.continuations: list[tuple[str, str]] = []  # (where, which session it continues)

    def skipped(self, where: str, why: str) -> None:
        """A malformed line or row, left out: where = "file.jsonl:12"."""
        self.skips.append((where, why))

    def waiting(self, where: str, why: str) -> None:
        """A record the source has not finished yet (a question without its answer): left for a
        later import, which brings it; listed, but not a reason to fail the run."""
        self.waits.append((where, why))

    def unknown(self, record_type: str) -> None:
        """A record type the importer does not know: counted, not fatal."""
        self.unknown_types[record_type] += 1

    def unmapped(self, what: str, n: int = 1) -> None:
        """Data the Agents Ledger schema cannot hold, e.g. "agent_sessions.metadata_json"."""
        self.unmapped_data[what] += n

    def repaired(self, what: str, n: int = 1) -> None:
        """Records imported with a stand-in for a value they lacked (said how in `what`)."""
        self.repairs[what] += n

    def continued(self, where: str, what: str) -> None:
        """A transcript that continues another session (a resumed one): imported as a fork of
        it, the records it repeats not written twice."""
        self.continuations.append((where, what))

    def collided(self, where: str, why: str) -> None:
        """A row whose id the ledger already holds for something else: kept as it was there."""
        self.collisions.append((where, why))

    def session_failed(self, where: str, why: str) -> None:
        """A session left out entirely (nothing of it written)."""
        self.failed_sessions.append((where, why))

    def request_failed(self, where: str, why: str) -> None:
        """A Nexus Ledger request left out (ledger_ship): not a session, so not counted as one."""
        self.failed_requests.append((where, why))

    def _left_out_lists(self) -> tuple[list, list, list]:
        return self.failed_sessions, self.failed_requests, self.collisions

    def mark(self) -> tuple[int, ...]:
        """Where the lists of what was left out end now, for problems_since()."""
        return tuple(map(len, self._left_out_lists()))

    def problems_since(self, mark: tuple[int, ...]) -> list[tuple[str, str]]:
        """(where, why) of what was left out since `mark`."""
        lists = self._left_out_lists()
        return [item for found, n in zip(lists, mark, strict=True) for item in found[n:]]

    def set_aside_since(self, mark: tuple[int, ...], since_ms: int) -> None:
        """What was left out since `mark` was already left out by an earlier run (since
        `since_ms`) and reported then: listed apart, not counted as a new problem."""
        self.still_left_out += [(where, why, since_ms) for where, why in self.problems_since(mark)]
        for found, n in zip(self._left_out_lists(), mark, strict=True):
            del found[n:]

    @property
    def left_out_count(self) -> int:
        """Sessions, requests and colliding rows left out, newly or still."""
        return sum(map(len, self._left_out_lists())) + len(self.still_left_out)

    def wrong_format(self, where: str, message: str) -> None:
        self.wrong_formats.append((where, message))

    def empty(self, where: str) -> None:
        """An input with nothing in it: nothing to import, said so, not an error."""
        self.empty_inputs.append(where)

    @property
    def wrote_anything(self) -> bool:
        return any(self.added.values())

    def left_out(self, fmt: str) -> list[str]:
        """What of the input did not come in, one phrase per kind; empty when everything did.

        Unknown record types are not in it: they are counted, but newer versions of an agent add
        them all the time, and a rollout with one is still imported whole.
        """
        problems = []
        if self.wrong_formats:
            problems.append(f"{len(self.wrong_formats)} input(s) refused: not {fmt}")
        if self.failed_sessions:
            problems.append(f"{len(self.failed_sessions)} session(s) left out entirely")
        if self.failed_requests:
            problems.append(f"{len(self.failed_requests)} request(s) left out")
        if self.skips:
            problems.append(f"{len(self.skips)} malformed record(s) skipped")
        if self.collisions:
            problems.append(f"{len(self.collisions)} id collision(s) not written")
        return problems

    def summary_lines(self) -> list[str]:
        lines = [
            f"{table}: {self.added[table]} added, {self.present[table]} already there"
            + (f", {self.updated[table]} brought up to date" if self.updated[table] else "")
            for table in (*TABLES, "nexus_requests")
            if self.added[table] or self.present[table] or table not in OPTIONAL
        ]
        if self.continuations:
            title = (
                "Resumed sessions (each a fork of the session it continues, the records it "
                f"repeats not written twice): {len(self.continuations)}"
            )
            lines += _listed(title, self.continuations)
        if self.skips:
            lines += _listed(f"Skipped {len(self.skips)} malformed record(s):", self.skips)
        if self.waits:
            title = f"Left for a later import (not finished in the source): {len(self.waits)}"
            lines += _listed(title, self.waits)
        if self.unknown_types:
            lines.append("Unknown record types (counted, skipped):")
            lines += [f"  {name}: {n}" for name, n in sorted(self.unknown_types.items())]
        if self.unmapped_data:
            lines.append("Not held by the Agents Ledger schema:")
            lines += [f"  {what}: {n}" for what, n in sorted(self.unmapped_data.items())]
        if self.repairs:
            lines.append("Imported with a stand-in value:")
            lines += [f"  {what}: {n}" for what, n in sorted(self.repairs.items())]
        if self.collisions:
            title = (
                f"Id collisions (the ledger holds other content under the id; "
                f"kept, not overwritten): {len(self.collisions)}"
            )
            lines += _listed(title, self.collisions)
        if self.failed_sessions:
            lines.append(f"Sessions left out entirely: {len(self.failed_sessions)}")
            lines += [f"  {where}: {why}" for where, why in self.failed_sessions]
        if self.failed_requests:
            lines.append(f"Requests left out: {len(self.failed_requests)}")
            lines += [f"  {where}: {why}" for where, why in self.failed_requests]
        if self.still_left_out:
            title = (
                "Still left out, as in earlier runs (tried again on every run until they go "
                f"in; not counted as new): {len(self.still_left_out)}"
            )
            lines += _listed(
                title,
                [
                    (f"{where} (since {_utc(since)})", why)
                    for where, why, since in self.still_left_out
                ],
            )
        if self.empty_inputs:
            title = f"Empty files (nothing to import): {len(self.empty_inputs)}"
            lines += _listed(title, [(where, None) for where in self.empty_inputs])
        for where, message in self.wrong_formats:
            lines.append(f"Refused {where}: {message}")
        return lines


def _listed(title: str, items: list[tuple[str, str | None]]) -> list[str]:
    """A title and its first LISTED_SKIPS items ("where: why"), the rest only counted."""
    shown = items[:LISTED_SKIPS]
    lines = [title] + [f"  {where}: {why}" if why else f"  {where}" for where, why in shown]
    if len(items) > LISTED_SKIPS:
        lines.append(f"  … and {len(items) - LISTED_SKIPS} more")
    return lines


def _utc(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M UTC")


def derived_id(ms: int, *parts) -> str:
    """A ULID-shaped id derived from the source's own identifiers, for rows the source gives none.

    The time prefix keeps ids sortable by time like the runtime's ULIDs; the 80 "random" bits are
    a hash of the parts (source id, position…), so importing again yields the same id.
    """
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode()).digest()
    return ulid.encode((max(ms, 0) % (1 << 48)) << 80 | int.from_bytes(digest[:10]))
