"""Reading a chat app's conversations.json (ChatGPT, Claude.ai): the file, or the unzipped export
folder holding it, as (where, conversation) pairs; what both importers share besides the tree."""

import json
from collections.abc import Callable, Iterator
from pathlib import Path

from importers.bundle import ImportReport, WrongFormat
from importers.jsonl import is_blank
from importers.times import zoned_iso_ms


def export_conversations(
    paths: list[Path],
    report: ImportReport,
    *,
    looks_right: Callable[[dict], bool],
    expected: str,
    other: tuple[str, str],
) -> Iterator[tuple[str, dict]]:
    """Each conversation object of each input. A file that is not a JSON array (or object) of
    conversations of this app is refused with the format expected; `other` is (a key only the
    other app's conversations have, its format name), for a hint."""
    for path in paths:
        file = path / "conversations.json" if path.is_dir() else path
        if path.is_dir() and not file.is_file():
            raise WrongFormat(f"{path} holds no conversations.json: expected {expected}")
        if is_blank(file):
            report.empty(str(file))
            continue
        try:
            data = json.loads(file.read_bytes())
        except (ValueError, RecursionError) as error:
            raise WrongFormat(
                f"{file} is not JSON ({str(error)[:80]}): expected {expected}"
            ) from None
        conversations = data if isinstance(data, list) else [data]
        objects = [c for c in conversations if isinstance(c, dict)]
        if conversations and not any(looks_right(c) for c in objects):
            key, name = other
            hint = (
                f" (it looks like a {name} export: try '{name}')"
                if any(key in c for c in objects)
                else ""
            )
            raise WrongFormat(f"{file} is not {expected}{hint}")
        for number, conversation in enumerate(conversations, start=1):
            where = f"{file}[{number}]"
            if not isinstance(conversation, dict) or not looks_right(conversation):
                report.skipped(where, "not a conversation of this export")
                continue
            yield where, conversation


def seconds_ms(value) -> int | None:
    """ChatGPT's times: Unix seconds as a number (fractions kept to the millisecond)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        return None
    return int(value * 1000) if 0 < value < 1e11 else None


def iso_ms(value) -> int | None:
    """Claude.ai's times: ISO 8601 with a zone."""
    return zoned_iso_ms(value)
