"""Values too long for a page: a page shows their first PAGE_CHARS characters and offers the
whole value as a download, read PIECE_BYTES at a time so no worker holds it all (a 50 MB tool
result made a 50 MB page, and a worker held it twice)."""

import re
from collections.abc import Iterator

from django.db.models import Func, QuerySet, TextField
from django.db.models.functions import Length, Substr
from django.http import StreamingHttpResponse
from django.utils.http import content_disposition_header

from ledgerweb import dialect, sqlite
from ledgerweb.text import head_text

PAGE_CHARS = 1_000_000
PIECE_BYTES = 1_000_000


class Whole(Func):
    """A column as substr() and length() read it whole (dialect.whole): a text holding a NUL
    as its bytes on SQLite, whose substr() and length() of a TEXT stop at the NUL."""

    template = "%(expressions)s"
    output_field = TextField()

    def as_sqlite(self, compiler, connection, **extra_context):
        sql, params = compiler.compile(self.source_expressions[0])
        return dialect.whole(sql, connection.alias), [*params, *params, *params]


def with_heads(rows: QuerySet, fields: tuple[str, ...]) -> QuerySet:
    """`rows` reading only the first PAGE_CHARS characters of each of `fields` (and their
    lengths); `cut_to_heads` puts them in place of the fields. A text holding a NUL comes as
    bytes, counted in bytes, as a BLOB does."""
    heads = {}
    for name in fields:
        heads[f"head_of_{name}"] = Substr(Whole(name), 1, PAGE_CHARS)
        heads[f"length_of_{name}"] = Length(Whole(name))
    return rows.defer(*fields).annotate(**heads)


def cut_to_heads(row, fields: tuple[str, ...]) -> dict[str, int]:
    """Each field of a `with_heads` row set to its head, as text; {field: its whole length} of
    the fields that were cut (in bytes for a BLOB or a text holding a NUL)."""
    cut = {}
    for name in fields:
        head, length = getattr(row, f"head_of_{name}"), getattr(row, f"length_of_{name}")
        if head is not None and length is not None and length > len(head):
            cut[name] = length
        if isinstance(head, bytes):
            # A BLOB, or a text holding a NUL, read in bytes: shown as text (a page showed
            # "b'Traceback\x00…'").
            head = head_text(head)
        setattr(row, name, head)
    return cut


def pieces(table: str, column: str, where: str, params: list, start: int = 1) -> Iterator[bytes]:
    """The whole value of `column` in the one row `where` picks, as its UTF-8 bytes (a BLOB's
    as stored), from its `start`th byte (1 the first), PIECE_BYTES at a time; decode them
    incrementally, a piece may end inside a character. Read in bytes, not with substr() of the
    text: SQLite's substr() of a TEXT stops at a NUL inside it ("before\x00after" downloaded
    as "before"), and must walk the characters before `start` on every piece."""
    while True:
        found = sqlite.rows(
            f"SELECT substr({dialect.as_bytes(column)}, %s, %s) FROM {table} WHERE {where}",
            [start, PIECE_BYTES, *params],
        )
        piece = found[0][0] if found else None
        if piece is None or len(piece) == 0:
            return
        yield bytes(piece)  # PostgreSQL's driver gives a bytea as a memoryview
        start += PIECE_BYTES


def attachment(content: Iterator[bytes], stem: str, *, is_json: bool) -> StreamingHttpResponse:
    """A download of `content`, streamed: the one answer not capped in bytes, as asked for."""
    kind = "application/json" if is_json else "text/plain; charset=utf-8"
    response = StreamingHttpResponse(content, content_type=kind)
    response["Content-Disposition"] = attachment_disposition(stem, "json" if is_json else "txt")
    return response


# What a saved file's name keeps of a ledger id: anything else (quotes, semicolons, line breaks,
# NULs, slashes, other scripts) becomes one "_" per run.
UNSAFE_IN_NAME = re.compile(r"[^A-Za-z0-9_-]+")
NAME_CHARS = 120


def safe_filename(stem: str, extension: str) -> str:
    """A file name made of `stem` that no browser or file system reads as anything else: an id
    `x"; filename*=UTF-8''evil.html; x="` is saved as x_filename_UTF-8_evil_html_x_.json, not
    as evil.html; a line break or a NUL no longer makes the header invalid (a 500)."""
    safe = UNSAFE_IN_NAME.sub("_", stem)[:NAME_CHARS].strip("_-") or "download"
    return f"{safe}.{extension}"


def attachment_disposition(stem: str, extension: str) -> str:
    """The Content-Disposition of a download saved as `safe_filename(stem, extension)`."""
    return content_disposition_header(True, safe_filename(stem, extension))
