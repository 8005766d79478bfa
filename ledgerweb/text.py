"""Showing text the ledger holds: JSON that may be invalid, Markdown that may hold script.

Everything here treats its input as hostile: it never raises on bad input and never returns HTML
that a browser would run.
"""

import codecs
import json
import re
from dataclasses import dataclass
from functools import cache
from html import escape as html_escape

import nh3
from markdown_it import MarkdownIt

from ledgerfacts.commands import as_typed

# Bigger payloads are shown truncated, with a link that loads the rest on demand.
PREVIEW_CHARS = 20_000


@dataclass(frozen=True)
class JsonText:
    """A JSON column ready to show: pretty when it parses, raw with the reason when it does not."""

    text: str
    valid: bool
    error: str = ""
    truncated: bool = False
    total_chars: int = 0
    is_string: bool = False  # a JSON string, shown as its text (tool results often are)
    decoded: int = 0  # strings holding JSON, shown decoded (show_json's decode_strings)

    @property
    def is_empty(self) -> bool:
        return not self.text


def show_json(raw, *, total_chars: int | None = None, decode_strings: bool = False) -> JsonText:
    """Pretty-print a JSON column. `raw` may already be cut to a preview of `total_chars`.

    With `decode_strings`, a string that holds a JSON object or array (an MCP tool's result
    inside its CallToolResult, a tool that returns JSON as text) is shown as that JSON, not as
    one line of \\n and \\" escapes; `decoded` counts them, so the page can say so."""
    if raw is None:
        return JsonText("", valid=True)
    if not isinstance(raw, str):
        raw = head_text(raw)  # a BLOB, or a text holding a NUL read in bytes: not "b'…'"
    total = total_chars if total_chars is not None else len(raw)
    if total > len(raw):
        # Only a prefix was loaded: it cannot parse, and pretending it is invalid would mislead.
        return JsonText(raw, valid=True, truncated=True, total_chars=total)
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError) as error:
        return JsonText(raw, valid=False, error=_short(error), total_chars=total)
    decoded = 0
    if decode_strings:
        value, decoded = _decode_strings(value)
    if isinstance(value, str):
        # "line 1\nline 2" in quotes with escapes is unreadable; its text is what was meant.
        return JsonText(value, valid=True, total_chars=total, is_string=True)
    pretty = json.dumps(value, indent=2, ensure_ascii=False)
    return JsonText(pretty, valid=True, total_chars=total, decoded=decoded)


# Strings holding JSON are decoded this deep at most (a string in a string in a string…).
DECODE_DEPTH = 4


def _decode_strings(value, depth: int = 0) -> tuple[object, int]:
    """`value` with every string that holds a JSON object or array replaced by its value, and
    how many were."""
    if isinstance(value, str):
        inner = _json_in(value) if depth < DECODE_DEPTH else None
        if inner is None:
            return value, 0
        inner, deeper = _decode_strings(inner, depth + 1)
        return inner, deeper + 1
    if isinstance(value, list):
        items = [_decode_strings(item, depth) for item in value]
        return [v for v, _ in items], sum(n for _, n in items)
    if isinstance(value, dict):
        items = {key: _decode_strings(item, depth) for key, item in value.items()}
        return {k: v for k, (v, _) in items.items()}, sum(n for _, n in items.values())
    return value, 0


def _json_in(text: str):
    """The object or array a string holds as JSON text, else None."""
    stripped = text.strip()
    if not stripped or stripped[0] not in "[{" or stripped[-1] not in "]}":
        return None
    try:
        value = json.loads(stripped)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict | list) else None


def parse_json(raw, default=None):
    """The value of a JSON column, or `default` when it is missing or invalid."""
    if not isinstance(raw, str):
        return default
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        return default


def _short(error: Exception) -> str:
    return str(error).split("\n", 1)[0][:200]


@cache
def _markdown() -> MarkdownIt:
    # html=False: raw HTML in a message is shown as text, never passed through.
    return MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")


ALLOWED_URL_SCHEMES = {"http", "https", "mailto"}


# Text in which Markdown would only find paragraphs: letters, digits, spaces and punctuation with
# no Markdown meaning, and no line that starts like a list, a heading rule or indented code, or
# ends in spaces. Most chat messages are like this; writing their paragraphs directly skips the
# parser and the sanitizer (a thread page renders hundreds of messages). The tests check that
# both paths give the same HTML.
_PLAIN_CHARS = re.compile(r"(?:[^\W_]|[ .,;:?!'\"()/@%$+=\n-])*")
_MARKDOWN_LINE = re.compile(r"^(?:[ +=-]|\d{1,9}[.)](?: |$))| $", re.MULTILINE)
_PARAGRAPH_BREAK = re.compile(r"\n{2,}")


def _plain_paragraphs(text: str) -> str | None:
    """The HTML Markdown makes of a plain text, or None when the text may hold Markdown."""
    if not _PLAIN_CHARS.fullmatch(text) or _MARKDOWN_LINE.search(text):
        return None
    paragraphs = _PARAGRAPH_BREAK.split(text.strip("\n"))
    return "".join(f"<p>{html_escape(p, quote=False)}</p>\n" for p in paragraphs if p)


def as_text(value) -> str:
    """A TEXT column's value as text, whatever SQLite holds there: a BLOB is decoded as the
    UTF-8 it most likely is (bad bytes as U+FFFD), 42 or 4.2 as written, NULL as nothing."""
    if value is None:
        return ""
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return value if isinstance(value, str) else str(value)


def head_text(value) -> str:
    """as_text of a value's head, which may have been cut in bytes (a BLOB's, a text holding a
    NUL: dialect.whole): a character its last bytes split is left out, not shown as U+FFFD."""
    if isinstance(value, bytes):
        return codecs.getincrementaldecoder("utf-8")(errors="replace").decode(value)
    return as_text(value)


def render_markdown(text: str) -> str:
    """Markdown to HTML, then sanitized (nh3): no script, no event handlers, no javascript: URLs.
    A Claude Code slash command is shown as it was typed (ledgerfacts/commands.py)."""
    text = as_text(text)
    if (typed := as_typed(text)) is not None:
        title = "A Claude Code command, as typed; its raw text has what Claude Code recorded"
        return f'<p class="typed-command" title="{title}"><code>{html_escape(typed)}</code></p>\n'
    plain = _plain_paragraphs(text or "")
    if plain is not None:
        return plain
    html = _markdown().render(text or "")
    return nh3.clean(
        html,
        url_schemes=ALLOWED_URL_SCHEMES,
        link_rel="noopener noreferrer nofollow",
    )


def first_line(text, limit: int = 160) -> str:
    """A one-line hint of a text: its first non-blank line, cut to `limit` characters."""
    if not isinstance(text, str):
        return ""
    for line in text.splitlines():
        if line.strip():
            line = " ".join(line.split())
            return line if len(line) <= limit else line[: limit - 1] + "…"
    return ""


# Markdown syntax at the start of a line: headings, quotes, list items and task boxes.
_LINE_PREFIX = re.compile(r"^(?:\s*(?:#{1,6}\s+|>\s?|[-*+]\s+(?:\[[ xX]\]\s+)?|\d{1,9}[.)]\s+))+")
_HEADING = re.compile(r"^\s*#{1,6}\s")
# Lines with no words to show: fences, rules, table separator rows.
_NO_TEXT = re.compile(
    r"^\s*(?:```|~~~"  # fences
    r"|(?:[-*_]\s*){3,}$"  # rules
    r"|\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)*\|?\s*$)"  # table separators
)
_INLINE = [
    # links and images: their text (a URL may hold one level of parentheses)
    (re.compile(r"!?\[([^\]]*)\]\((?:[^()]|\([^()]*\))*\)"), r"\1"),
    (re.compile(r"\*\*|__|~~|`"), ""),  # bold, strikethrough, code
    (re.compile(r"(?<![\w*])\*(?=\S)([^*]+?)(?<=\S)\*(?![\w*])"), r"\1"),  # *emphasis*
]


def plain_preview(text, limit: int = 160) -> str:
    """A one-line hint of a Markdown text as plain words: "## Summary\\n\\nThey planned a trip"
    becomes "Summary — They planned a trip"; a Claude Code slash command the command as typed.
    Regular expressions, not a Markdown parser: the tree makes one per turn, thousands per page,
    and only the first lines matter."""
    if not isinstance(text, str):
        return ""
    if (typed := as_typed(text)) is not None:
        text = typed
    found: list[str] = []
    for line in text.splitlines()[:50]:  # a preview needs no more; a huge text has no limit
        if not line.strip() or _NO_TEXT.match(line):
            continue
        words = _plain_line(line[: limit * 4])  # enough for the limit, whatever the line
        if not words:
            continue
        found.append(words)
        if not _HEADING.match(line) or len(found) == 2:
            break
    return first_line(" — ".join(found), limit)


def plain_words(text, limit: int = 300) -> str:
    """A text's words on one line, every line of it, as plain words: "I. Introduction\nThe
    first…" becomes "I. Introduction The first…". Where plain_preview stops at the first line
    (a title), this goes on: regenerations of one prompt often share their first line and differ
    in the next ones, and a row of the turn tree is wide enough to show them. A Claude Code
    slash command is the command as typed."""
    if not isinstance(text, str):
        return ""
    if (typed := as_typed(text)) is not None:
        text = typed
    joined = ""
    after_heading = False
    for line in text.splitlines()[:200]:  # enough for the limit, whatever the text
        if not line.strip() or _NO_TEXT.match(line):
            continue
        words = _plain_line(line[: limit * 2])
        if words:
            # A heading reads as plain_preview writes it: "Summary — They planned a trip".
            joined += (" — " if after_heading else " ") + words if joined else words
            after_heading = bool(_HEADING.match(line))
            if len(joined) > limit:
                break
    return first_line(joined, limit)


def plain_lines(text: str) -> str:
    """Markdown as its words, line by line: what a search snippet of a message shows (headings,
    quotes, list marks, emphasis, code ticks and link syntax dropped; fences, rules and table
    separator rows gone). For a short piece of text: each line is read by regular expressions."""
    if not isinstance(text, str):
        return ""
    kept = (_plain_line(line) for line in text.splitlines() if not _NO_TEXT.match(line))
    return "\n".join(words for words in kept if words)


def _plain_line(line: str) -> str:
    line = _LINE_PREFIX.sub("", line)
    if line.lstrip().startswith("|"):  # a table row: its cells
        line = " · ".join(cell.strip() for cell in line.strip().strip("|").split("|"))
    for pattern, replacement in _INLINE:
        line = pattern.sub(replacement, line)
    return " ".join(line.split())
