"""Reading transcript JSONL files line by line, the way the transcript importers need it.

A file is read whole before anything is reported: its format is checked first, so a file of the
wrong format is refused with one message instead of a malformed-line report for every line.
"""

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from importers.bundle import WrongFormat

SQLITE_HEADER = b"SQLite format 3\x00"


@dataclass
class Record:
    """One JSON object of a JSONL file, with where it came from (for messages and ids)."""

    where: str  # "path/to/file.jsonl:12"
    line: int
    data: dict


@dataclass
class JsonlFile:
    path: Path
    records: list[Record]
    malformed: list[tuple[str, str]]  # (where, why): to report once the format is confirmed


def read_jsonl(path: Path) -> JsonlFile:
    """Every JSON object line of a file; blank lines are ignored, anything else is malformed."""
    records, malformed = [], []
    with path.open("rb") as file:
        for number, raw in enumerate(file, start=1):
            where = f"{path}:{number}"
            if not raw.strip():
                continue
            try:
                data = json.loads(raw)
            except UnicodeDecodeError:
                malformed.append((where, "not UTF-8 text"))
                continue
            except json.JSONDecodeError as error:
                malformed.append((where, f"not JSON: {error}"))
                continue
            if not isinstance(data, dict):
                malformed.append((where, f"a JSON {type(data).__name__}, not an object"))
                continue
            records.append(Record(where, number, data))
    return JsonlFile(path, records, malformed)


def is_sqlite(path: Path) -> bool:
    with path.open("rb") as file:
        return file.read(len(SQLITE_HEADER)) == SQLITE_HEADER


def iso_ms(value) -> int | None:
    """Unix milliseconds of an ISO 8601 timestamp ("2025-06-10T12:36:23.208Z"), or None."""
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    if moment.tzinfo is None:
        return None  # a time without a zone cannot be placed; the transcripts always write Z
    return int(moment.timestamp() * 1000)


def jsonl_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*.jsonl") if p.is_file())


def json_text(value) -> str:
    """A value as the JSON text the ledger's JSON columns hold (a string that already is JSON
    text is kept as it is, so it is not shown quoted)."""
    if isinstance(value, str):
        try:
            json.loads(value)
        except ValueError:
            return json.dumps(value, ensure_ascii=False)
        return value
    return json.dumps(value, ensure_ascii=False)


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
            if bundle := _read_guarded(read_one, path, report):
                yield bundle
            continue
        files = files_in(path)
        if not files:
            raise WrongFormat(f"{path} holds no .jsonl file: expected {expected}")
        for file in files:
            try:
                bundle = _read_guarded(read_one, file, report)
            except WrongFormat as error:
                report.wrong_format(str(file), str(error))
                continue
            if bundle:
                yield bundle


def _read_guarded(read_one: Callable, path: Path, report):
    try:
        return read_one(path, report)
    except WrongFormat:
        raise
    except (OSError, ValueError, TypeError, KeyError, AttributeError, RecursionError) as error:
        report.session_failed(str(path), f"could not be read: {type(error).__name__}: {error}")
        return None
