"""Reading transcript JSONL files line by line, the way the transcript importers need it.

A file is read whole before anything is reported: its format is checked first, so a file of the
wrong format is refused with one message instead of a malformed-line report for every line. What
the Claude Code and Codex importers share is here too: reading files or folders of transcripts,
and turning their values into JSON text, labels and token counts.
"""

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from importers.bundle import ImportReport, WrongFormat

SQLITE_HEADER = b"SQLite format 3\x00"
# A JSON escape of a UTF-16 surrogate: only lines with one need the (slower) full check.
ESCAPED_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")


@dataclass
class Record:
    """One JSON object of a JSONL file, with where it came from (for messages and ids)."""

    where: str  # "path/to/file.jsonl:12"
    line: int
    data: dict
    # Its time is not its own: an importer gave it one (an older Codex layout has none).
    stand_in_time: bool = False


@dataclass
class JsonlFile:
    """A JSONL file read whole: its JSON objects, and the lines that are not one."""

    records: list[Record]
    malformed: list[tuple[str, str]]  # (where, why): to report once the format is confirmed

    def report_malformed(self, report: ImportReport) -> None:
        for where, why in self.malformed:
            report.skipped(where, why)


def read_jsonl(path: Path) -> JsonlFile:
    """Every JSON object line of a file; blank lines are ignored, anything else is malformed."""
    records, malformed = [], []
    with path.open("rb") as file:
        for number, raw in enumerate(file, start=1):
            where = f"{path}:{number}"
            if not raw.strip():
                continue
            data, why = _parse_line(raw)
            if why:
                malformed.append((where, why))
            else:
                records.append(Record(where, number, data))
    return JsonlFile(records, malformed)


def _parse_line(raw: bytes) -> tuple[dict | None, str | None]:
    """The JSON object of one line, or why it is not one the ledger can take."""
    try:
        data = json.loads(raw)
    except UnicodeDecodeError:
        return None, "not UTF-8 text"
    except json.JSONDecodeError as error:
        return None, f"not JSON: {error}"
    except RecursionError:
        return None, "nested too deeply to read"
    if not isinstance(data, dict):
        return None, f"a JSON {type(data).__name__}, not an object"
    if ESCAPED_SURROGATE.search(raw) and _holds_lone_surrogate(data):
        # Valid JSON, but no text column can store it: the whole session would fail to write.
        return None, "holds a lone surrogate (\\ud800-\\udfff), which is not text"
    return data, None


def _holds_lone_surrogate(data: dict) -> bool:
    try:
        json.dumps(data, ensure_ascii=False).encode()
    except UnicodeEncodeError:
        return True
    return False


def is_blank(path: Path) -> bool:
    """True when a file holds nothing but whitespace (read until its first other byte)."""
    with path.open("rb") as file:
        while chunk := file.read(1 << 16):
            if chunk.strip():
                return False
    return True


def _is_sqlite(path: Path) -> bool:
    with path.open("rb") as file:
        return file.read(len(SQLITE_HEADER)) == SQLITE_HEADER


def jsonl_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*.jsonl") if p.is_file())


def encode_json(value) -> str:
    """A value read from a JSON line as the JSON text the ledger's JSON columns hold (a string
    that already is JSON text is kept as it is, so it is not shown quoted)."""
    if isinstance(value, str):
        try:
            json.loads(value)
        except ValueError:
            return json.dumps(value, ensure_ascii=False)
        return value
    return json.dumps(value, ensure_ascii=False)


def int_or_zero(value) -> int:
    """A token count as written, or 0 when it is missing or not a whole number."""
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def read_transcripts(
    paths: list[Path], report, *, read_one: Callable, files_in: Callable, expected: str
) -> Iterator:
    """Bundles from transcript files, or folders of them (files_in lists a folder's files).

    A file given by name that is of the wrong format raises WrongFormat (the command refuses that
    input); in a folder, a stray file is refused on its own and the others still come in. A file
    the reader cannot make sense of is reported as a session left out, not a crash.
    """
    for path in paths:
        if not path.is_dir():
            yield from _bundles(_read_guarded(read_one, path, report, expected))
            continue
        files = files_in(path)
        if not files:
            raise WrongFormat(f"{path} holds no .jsonl file: expected {expected}")
        for file in files:
            try:
                read = _read_guarded(read_one, file, report, expected)
            except WrongFormat as error:
                report.wrong_format(str(file), str(error))
                continue
            yield from _bundles(read)


def _bundles(read) -> list:
    """What read_one gave: nothing, a bundle, or bundles in the order to write them (a
    resumed session after the session it continues)."""
    if not read:
        return []
    return read if isinstance(read, list) else [read]


def _read_guarded(read_one: Callable, path: Path, report: ImportReport, expected: str):
    try:
        # Read as lines, a database would be reported malformed line after line.
        if _is_sqlite(path):
            raise WrongFormat(f"{path} is a SQLite database, not {expected}")
        if is_blank(path):
            report.empty(str(path))  # of any format: nothing to refuse, nothing to import
            return None
        return read_one(path, report)
    except WrongFormat:
        raise
    except (OSError, ValueError, TypeError, KeyError, AttributeError, RecursionError) as error:
        report.session_failed(str(path), f"could not be read: {type(error).__name__}: {error}")
        return None
