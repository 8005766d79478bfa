"""Error signatures: an error message with its variable parts masked, so that "timeout after
5012 ms for 01HQ…" and "timeout after 498 ms for 01HR…" count as the same failure."""

import re

# Order matters: quoted values first (they may hold numbers), then ids, then bare numbers.
_MASKS = [
    (re.compile(r"\"[^\"]*\"|'[^']*'|`[^`]*`"), "'…'"),
    (re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.I), "<id>"),
    (re.compile(r"\b[0-9A-HJKMNP-TV-Z]{26}\b"), "<id>"),  # ULID
    (re.compile(r"\b(?=[0-9a-f]*\d)[0-9a-f]{12,}\b", re.I), "<id>"),  # hex ids and hashes
    # A number not glued to a name: "after 5012 ms" → "after <n> ms", but "command_v2" stays.
    (re.compile(r"(?<![A-Za-z_])[+-]?\d+(?:[.,:]\d+)*"), "<n>"),
]


SQL_FUNCTION = "ledger_error_signature"


def signature(message) -> str:
    """The message's first line that holds text (a message may start with a blank line: its
    signature was "", shared by unrelated failures), spaces collapsed, masked."""
    if not isinstance(message, str) or not message.strip():
        return "(no message)"
    text = " ".join(message.lstrip().split("\n", 1)[0].split())[:300]
    for pattern, replacement in _MASKS:
        text = pattern.sub(replacement, text)
    return text
