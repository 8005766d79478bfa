"""A page of search results: hits from the index, their rows' current status, time and text read
back from the ledger, grouped by session."""

import heapq
import re
from dataclasses import dataclass, field

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from ledgerweb import sqlite
from ledgerweb.text import plain_lines
from search import engine, indexer
from search.ids import page_url, turn_url
from search.query import Query
from search.words import SEGMENT

PAGE_SIZE = 50
SNIPPET_BEFORE = 80
SNIPPET_AFTER = 200
# A phrase is checked on the text of the documents that hold all its words (search/query.py):
# read CHECK_BATCH at a time, and per page at most CHECK_CAP documents or CHECK_BYTES of text;
# then the page ends and says so, and its next link goes on from there.
CHECK_BATCH = 200
# Rows of several documents (a field over 64 KB) decided per query, a batch at a time.
PIECES_BATCH = 50
CHECK_CAP = 2000
CHECK_BYTES = 16_000_000
KIND_NAMES = {
    "message": "message",
    "tool_call": "tool call",
    "request": "request",
    "session": "session label",
    "compaction": "compaction summary",
}


@dataclass
class Hit:
    id: int  # the index's id: the cursor of the next page
    kind: str
    item_id: str
    fields: list[str]
    session_id: str | None
    turn_id: str | None
    status: str | None
    at: object
    snippet: SafeString
    url: str | None
    turn_status: str | None = None  # a tool call's turn's

    @property
    def kind_name(self) -> str:
        return KIND_NAMES.get(self.kind, self.kind)


@dataclass
class Group:
    session_id: str | None
    label: str | None = None
    persona: str | None = None
    url: str | None = None
    hits: list[Hit] = field(default_factory=list)


@dataclass
class Page:
    groups: list[Group]
    hits: int  # on this page
    next_cursor: int | None
    gone: int  # hits whose ledger rows are no longer there
    checked: int = 0  # documents whose text was checked for a phrase
    check_capped: bool = False  # the page ended at CHECK_CAP / CHECK_BYTES, not at PAGE_SIZE


@dataclass
class _Found:
    """A document the index matched, read back from the ledger: its row and the texts of its
    fields (name, text) as indexed."""

    match: engine.Match
    row: indexer.LedgerRow
    texts: list[tuple[str, str]]
    answers: bool = True


class Walk:
    """The rows that answer a query, newest first, read back from the ledger (None for one
    whose row is gone), until `wanted` answers; or until CHECK_CAP documents (or CHECK_BYTES of
    their text) were examined. Then `cursor` is where the next page starts (None: nothing
    older) and `capped` says whether the cap ended it.

    Two walks merged by their place in time: rows of one document, which the index answers
    (phrases checked on their text), and rows of several (a field over 64 KB), each decided as
    a whole: every term looked up among its documents, so two words in different chunks of one
    value find it and a left-out word in any chunk leaves it out."""

    def __init__(self, query: Query, filters: engine.Filters, before: int | None, wanted: int):
        self.query, self.filters, self.wanted = query, filters, wanted
        self.before = self.cursor = before
        self.examined = self.checked = self.bytes = 0
        self.capped = False

    def __iter__(self):
        answered = 0
        walks = heapq.merge(self._rows_of_one(), self._rows_of_pieces(), key=lambda i: -i[0])
        for position, match, read, answers in walks:
            self.cursor = position
            self.examined += 1
            if read is not None:
                self.bytes += sum(len(text) for _, text in read.texts)
            if answers:
                yield match, read
                answered += read is not None
                if answered >= self.wanted:
                    return
            if self.examined >= CHECK_CAP or self.bytes >= CHECK_BYTES:
                self.capped = True
                return
        self.cursor = None

    def _in_scope(self, read: "_Found | None") -> bool:
        """Whether a row is among the annotated ones asked for (any row, without that filter)."""
        marked = self.filters.marked
        return read is None or marked is None or marked.holds(read.row.session_id, read.row.turn_id)

    def _rows_of_one(self):
        """(position, match, read, answers) of rows of one document, newest first."""
        batch = CHECK_BATCH if self.query.needs_check else self.wanted
        cursor = self.before
        while True:
            found = engine.search(self.query.match, self.filters, cursor, batch)
            for match, read in zip(found, _read_back(found), strict=True):
                cursor = match.id
                answers = self._in_scope(read)
                if answers and read is not None and self.query.needs_check:
                    self.checked += 1
                    answers = self.query.finds([text for _, text in read.texts])
                yield match.id, match, read, answers
            if len(found) < batch:
                return

    def _rows_of_pieces(self):
        """(position, match, read, answers) of rows of several documents, newest first."""
        cursor = self.before
        while True:
            found = engine.pieces_rows(self.query.any_match, self.filters, cursor, PIECES_BATCH)
            decided = decide_rows(self.query, [(kind, src) for _, kind, src in found])
            for head, kind, src in found:
                cursor = head
                read = decided.get((kind, src))
                self.checked += self.query.needs_check
                match = read.match if read else engine.Match(head, kind, src, 0, 0)
                match.id = head
                yield head, match, read, read is not None and read.answers and self._in_scope(read)
            if len(found) < PIECES_BATCH:
                return


def decide_rows(query: Query, rows: list[tuple[str, int]], check: bool = True) -> dict:
    """Rows of several documents, each decided as a whole: (kind, src) → its _Found (answers
    true when the row answers the query; its texts those of the first document holding a
    positive term), absent when the row is gone from the ledger. Without `check` a phrase is
    taken as found where its words are (the count's upper bound)."""
    terms = [*query.terms, *query.negatives]
    holding = [engine.docs_holding(term.fts(), rows) for term in terms]
    ledger_rows: dict[tuple[str, int], indexer.LedgerRow] = {}
    for kind in {kind for kind, _ in rows}:
        srcs = sorted(src for k, src in rows if k == kind)
        for rowid, row in indexer.read_rows(kind, srcs).items():
            ledger_rows[(kind, rowid)] = row
    out = {}
    for key in rows:
        row = ledger_rows.get(key)
        if row is None:
            continue
        texts = _DocTexts(key, row)
        where = {}  # term index → the (field, chunk) of a document holding it
        for index, term in enumerate(terms):
            for doc in holding[index].get(key, []):
                if not (check and term.is_phrase) or term.found_in_any(texts.of(doc)):
                    where[index] = doc
                    break
        positives = len(query.terms)
        negated = any(index in where for index in range(positives, len(terms)))
        satisfied = [
            group for group in query.groups
            if all(query.terms.index(term) in where for term in group)
        ]  # fmt: skip
        answers = not negated and bool(satisfied)
        shown = where.get(query.terms.index(satisfied[0][0])) if satisfied else (0, 0)
        field_index, chunk = shown
        match = engine.Match(0, key[0], key[1], chunk, field_index)
        out[key] = _Found(match, row, texts.named(shown), answers)
    return out


class _DocTexts:
    """The texts of a row's documents, read from the ledger when first asked for: the first
    document's fields' first chunks, or one later chunk of a field."""

    def __init__(self, key: tuple[str, int], row: indexer.LedgerRow):
        self.kind, self.src = key
        self.row = row
        self.read: dict[tuple[int, int], str] = {}

    def of(self, doc: tuple[int, int]) -> list[str]:
        return [text for _, text in self.named(doc)]

    def named(self, doc: tuple[int, int]) -> list[tuple[str, str]]:
        field_index, chunk = doc
        if not chunk:
            return [(name, head) for name, length, head in self.row.pieces if length]
        if doc not in self.read:
            source = indexer.BY_KIND[self.kind]
            self.read[doc] = indexer.read_chunk(source, field_index, chunk, [self.src]).get(
                self.src, ""
            )
        name = self.row.pieces[field_index][0] if field_index < len(self.row.pieces) else "text"
        return [(name, self.read[doc])]


def _read_back(found: list[engine.Match]) -> list[_Found | None]:
    """Each matched document's ledger row and texts: one query per kind, and one per field and
    offset of later chunks of huge values."""
    rows: dict[tuple, indexer.LedgerRow] = {}
    by_kind: dict[str, list[int]] = {}
    for match in found:
        by_kind.setdefault(match.kind, []).append(match.src)
    for kind, srcs in by_kind.items():
        for rowid, row in indexer.read_rows(kind, sorted(set(srcs))).items():
            rows[(kind, rowid)] = row
    chunks: dict[tuple, dict[int, str]] = {}
    for match in found:
        if match.chunk:
            chunks.setdefault((match.kind, match.field, match.chunk), {})[match.src] = ""
    for (kind, field_index, offset), wanted in chunks.items():
        source = indexer.BY_KIND[kind]
        wanted.update(indexer.read_chunk(source, field_index, offset, sorted(wanted)))
    out = []
    for match in found:
        row = rows.get((match.kind, match.src))
        if row is None:
            out.append(None)
            continue
        if match.chunk:
            name = row.pieces[match.field][0] if match.field < len(row.pieces) else "text"
            texts = [(name, chunks[(match.kind, match.field, match.chunk)].get(match.src, ""))]
        else:
            texts = [(name, head) for name, length, head in row.pieces if length]
        out.append(_Found(match, row, texts))
    return out


# Rows of several documents counted at most, each decided (beyond: the count is an upper bound).
PIECES_COUNT_CAP = 500


def count(query: Query, filters: engine.Filters, cap: int) -> tuple[int, bool]:
    """How many rows answer the query, up to cap + 1, and whether that is only an upper bound
    (a phrase is counted where its words are; rows of several documents past
    PIECES_COUNT_CAP are counted undecided)."""
    total = engine.count(query.match, filters, cap)
    upper = query.needs_check
    seen, before = 0, None
    while total <= cap:
        found = engine.pieces_rows(query.any_match, filters, before, PIECES_BATCH)
        if seen >= PIECES_COUNT_CAP:
            total += len(found)
            upper = upper or bool(found)
            break
        decided = decide_rows(query, [(kind, src) for _, kind, src in found], check=False)
        total += sum(read.answers for read in decided.values())
        seen += len(found)
        if len(found) < PIECES_BATCH:
            break
        before = found[-1][0]
    return total, upper


def run(query: Query, filters: engine.Filters, before: int | None) -> Page:
    walk = Walk(query, filters, before, PAGE_SIZE)
    hits: dict[tuple, Hit] = {}
    gone = 0
    for match, read in walk:
        if read is None:
            gone += 1
            continue
        fields = [name for name, text in read.texts if query.found_in_text(text)]
        fields = fields or [name for name, _ in read.texts[:1]]
        known = hits.get((match.kind, match.src))
        if known:  # another chunk of the same row: one hit, several fields
            known.fields += [name for name in fields if name not in known.fields]
            continue
        hits[(match.kind, match.src)] = _hit(query, read, fields)
    return Page(
        _grouped(list(hits.values())), len(hits), walk.cursor, gone, walk.checked, walk.capped
    )


def _hit(query: Query, read: _Found, fields: list[str]) -> Hit:
    row, kind = read.row, read.match.kind
    text = next(text for name, text in read.texts if name == fields[0])
    session_id = None if row.session_id is None else str(row.session_id)
    turn_id = None if row.turn_id is None else str(row.turn_id)
    return Hit(
        read.match.id,
        kind,
        str(row.id),
        fields,
        session_id,
        turn_id,
        None if row.status is None else str(row.status),
        row.at,
        snippet(text, query, readable_for(kind, fields[0])),
        _hit_url(kind, str(row.id), session_id, turn_id),
        None if row.turn_status is None else str(row.turn_status),
    )


def turn_ids(query: Query, filters: engine.Filters, limit: int) -> list[str]:
    """The turns (oldest first) whose documents answer the query, of at most CHECK_CAP
    documents: find in a session."""
    first: dict[str, int] = {}
    for match, read in Walk(query, filters, None, CHECK_CAP):
        if read is not None and read.row.turn_id is not None:
            first[str(read.row.turn_id)] = match.id
    return sorted(first, key=first.get)[:limit]


def _hit_url(kind, item_id, session_id, turn_id) -> str | None:
    if kind == "request":
        return page_url("pipeline:request", item_id)
    if kind == "session":
        return page_url("sessions:detail", item_id)
    anchor = {"message": f"message-{item_id}", "tool_call": f"call-{item_id}"}.get(kind, "")
    return turn_url(session_id, turn_id, anchor)


def _grouped(hits: list[Hit]) -> list[Group]:
    """Hits by session, sessions in the order of their newest hit (hits come newest first)."""
    groups: dict[str | None, Group] = {}
    for hit in hits:
        groups.setdefault(hit.session_id, Group(hit.session_id)).hits.append(hit)
    ids = [sid for sid in groups if sid is not None]
    if ids:
        listed, params = sqlite.in_list(ids)
        for sid, label, persona in sqlite.rows(
            f"SELECT id, label, persona FROM sessions WHERE id IN {listed}", params
        ):
            group = groups.get(sid)
            if group:
                group.label, group.persona = label, persona
                group.url = page_url("sessions:detail", sid)
    return list(groups.values())


def snippet(text: str, query: Query, readable=None) -> SafeString:
    """A window of the text around its first marked word, escaped, with the query's words (or
    the parts of a Chinese or Japanese run it names) in <mark> (the only markup that is ours).

    `readable` turns the text into what a person reads (JSON escapes decoded, Markdown's markup
    dropped): it is given a wider window of the text, cut again around the mark."""
    if readable is None:
        return _window(text, query)
    start, end = _around(text, query, 2 * SNIPPET_BEFORE, 2 * SNIPPET_AFTER)
    return _window(readable(text[start:end]), query, start > 0, end < len(text))


def _around(text: str, query: Query, before: int, after: int) -> tuple[int, int]:
    """Where the window of the text around its first marked word starts and ends."""
    first = None
    for word in SEGMENT.finditer(text):
        spans = query.marks(word.group())
        if spans:
            first = (word.start() + spans[0][0], word.start() + spans[0][1])
            break
    start = 0 if first is None else max(0, first[0] - before)
    return start, (first[1] if first else 0) + after


def _window(text: str, query: Query, cut_before=False, cut_after=False) -> SafeString:
    start, end = _around(text, query, SNIPPET_BEFORE, SNIPPET_AFTER)
    window = text[start:end]
    parts, done = [], 0
    for word in SEGMENT.finditer(window):
        for mark_start, mark_end in query.marks(word.group()):
            at, to = word.start() + mark_start, word.start() + mark_end
            parts.append(escape(window[done:at]))
            parts.append(f"<mark>{escape(window[at:to])}</mark>")
            done = to
    parts.append(escape(window[done:]))
    body = re.sub(r"\s+", " ", "".join(parts)).strip()
    before = "… " if start or cut_before else ""
    return mark_safe(before + body + (" …" if end < len(text) or cut_after else ""))


# A JSON string escape: a surrogate pair, one \uXXXX, or one of the short ones.
_ESCAPE = re.compile(
    r"\\u([dD][89abAB][0-9a-fA-F]{2})\\u([dD][c-fC-F][0-9a-fA-F]{2})"
    r"|\\u([0-9a-fA-F]{4})|\\([\"\\/bfnrt])"
)
_SHORT = {'"': '"', "\\": "\\", "/": "/", "b": " ", "f": " ", "n": "\n", "r": "\n", "t": "\t"}


def json_text(text: str) -> str:
    """A JSON value's text with its string escapes decoded: a tool's result holding "\\u2014"
    reads "—", one holding "\\n" a line break (a lone surrogate reads as �)."""

    def decoded(m: re.Match) -> str:
        if m.group(1):
            high, low = int(m.group(1), 16), int(m.group(2), 16)
            return chr(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))
        if m.group(3):
            code = int(m.group(3), 16)
            return "\ufffd" if 0xD800 <= code <= 0xDFFF else chr(code)
        return _SHORT[m.group(4)]

    return _ESCAPE.sub(decoded, text)


# How each kind of hit's text reads (search/indexer.py's field names): a tool's parameters and
# result are JSON, a message or a compaction's summary Markdown.
READABLE = {
    ("tool_call", "parameters"): json_text,
    ("tool_call", "result"): json_text,
    ("message", None): plain_lines,
    ("compaction", None): plain_lines,
}


def readable_for(kind: str, field: str):
    return READABLE.get((kind, field)) or READABLE.get((kind, None))
