"""Slash commands as Claude Code records them in a user message, and as a person typed them.

Claude Code writes `/review src/app.py` as tags (imported into the ledger as they are):

    <command-message>review is running…</command-message>
    <command-name>/review</command-name>
    <command-args>src/app.py</command-args>

(in 1.0 the name without its "/", and the expanded prompt after them in <command-contents>; later
on a line of its own), and a local command's output as <local-command-stdout>…</local-command-
stdout>. Labels, previews and the turn panel show what was typed: `/review src/app.py`.
"""

import re

# The tags come first in the message; the expanded prompt after them may be long.
HEAD_CHARS = 20_000
_STARTS = ("<command-", "<local-command-")
_NAME = re.compile(r"<command-name>(.*?)</command-name>", re.S)
_ARGS = re.compile(r"<command-args>(.*?)</command-args>", re.S)
_MESSAGE = re.compile(r"<command-message>(.*?)</command-message>", re.S)
_OUTPUT = re.compile(r"<local-command-std(?:out|err)>(.*?)</local-command-std(?:out|err)>", re.S)


def as_typed(text) -> str | None:
    """What a person typed for a message holding Claude Code's command tags ("/review
    src/app.py"), a local command's output without its tags, or None for any other text."""
    if not isinstance(text, str) or not text.lstrip().startswith(_STARTS):
        return None
    head = text[:HEAD_CHARS]
    if name := _NAME.search(head):
        typed = "/" + name.group(1).strip().lstrip("/")
        args = _ARGS.search(head)
        if args and args.group(1).strip():
            typed += " " + " ".join(args.group(1).split())
        return typed
    found = _OUTPUT.search(head) or _MESSAGE.search(head)
    return found.group(1).strip() if found else None
