"""What a person can paste as an id: the search box's id jump (search/ids.py) looks such a text
up in the ledger, and an importer keeps a source's own id for a row only when it is one
(importers/codex.py: a Codex call_id)."""

# Longer than any id we know of: a longer query is text, not an id.
MAX_ID_CHARS = 300


def looks_like_id(text: str) -> bool:
    return 0 < len(text) <= MAX_ID_CHARS and not any(c.isspace() for c in text)
