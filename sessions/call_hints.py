"""A tool call's closed line says what it was about: "Glob **/*.toml", "Bash pytest -q", not eight
lines reading "Glob". The hint is read from the first HINT_CHARS characters of its parameters (a
600-call turn reads 600 short heads, not 600 payloads): the value of the first key a person would
look for, else the first text value, else the start of the JSON as written."""

import json

from ledgerweb.text import as_text

HINT_CHARS = 400
SHOWN_CHARS = 90
# Keys that say what a call was about, in the order they are looked for (Claude Code's and
# Codex's tools, MCP servers' usual names).
KEYS = ("command", "cmd", "pattern", "file_path", "path", "notebook_path", "url", "query", "q",
        "description", "prompt", "name", "input")  # fmt: skip


def call_hint(head) -> str:
    """A one-line hint of a call's parameters (their head), or "" when they say nothing."""
    text = as_text(head).strip()
    if not text or text in ("{}", "[]", "null"):
        return ""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return _one_line(text)  # cut by the head, or not JSON: the start as written
    return _one_line(_pick(value))


def _pick(value) -> str:
    if isinstance(value, dict):
        for key in KEYS:
            if isinstance(value.get(key), str | list) and value[key]:
                return _text(value[key])
        for item in value.values():
            if isinstance(item, str) and item.strip():
                return item
        return json.dumps(value, ensure_ascii=False)
    return _text(value)


def _text(value) -> str:
    if isinstance(value, list):  # a command as its words (Codex: ["bash", "-lc", "ls"])
        return " ".join(str(v) for v in value)
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _one_line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= SHOWN_CHARS else line[: SHOWN_CHARS - 1] + "…"
