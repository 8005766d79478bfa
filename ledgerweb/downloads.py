"""Values too long for a page: a page shows their first PAGE_CHARS characters and offers the
whole value as a download, read PIECE_CHARS at a time so no worker holds it all (a 50 MB tool
result made a 50 MB page, and a worker held it twice)."""

from collections.abc import Iterator

from django.db.models import QuerySet
from django.db.models.functions import Length, Substr
from django.http import StreamingHttpResponse

from ledgerweb import sqlite

PAGE_CHARS = 1_000_000
PIECE_CHARS = 1_000_000


def with_heads(rows: QuerySet, fields: tuple[str, ...]) -> QuerySet:
    """`rows` reading only the first PAGE_CHARS characters of each of `fields` (and their
    lengths); `cut_to_heads` puts them in place of the fields."""
    heads = {}
    for name in fields:
        heads[f"head_of_{name}"] = Substr(name, 1, PAGE_CHARS)
        heads[f"length_of_{name}"] = Length(name)
    return rows.defer(*fields).annotate(**heads)


def cut_to_heads(row, fields: tuple[str, ...]) -> dict[str, int]:
    """Each field of a `with_heads` row set to its head; {field: its whole length} of the
    fields that were cut."""
    cut = {}
    for name in fields:
        head, length = getattr(row, f"head_of_{name}"), getattr(row, f"length_of_{name}")
        setattr(row, name, head)
        if head is not None and length is not None and length > len(head):
            cut[name] = length
    return cut


def pieces(table: str, column: str, where: str, params: list) -> Iterator[bytes]:
    """The whole value of `column` in the one row `where` picks, as bytes. A BLOB comes as
    stored: substr cuts it in bytes, and decoding pieces could split a character."""
    start = 1
    while True:
        found = sqlite.rows(
            f"SELECT substr({column}, %s, %s) FROM {table} WHERE {where}",
            [start, PIECE_CHARS, *params],
        )
        piece = found[0][0] if found else None
        if piece is None or len(piece) == 0:
            return
        yield piece if isinstance(piece, bytes) else str(piece).encode()
        start += PIECE_CHARS


def attachment(content: Iterator[bytes], stem: str, *, is_json: bool) -> StreamingHttpResponse:
    """A download of `content`, streamed: the one answer not capped in bytes, as asked for."""
    kind = "application/json" if is_json else "text/plain; charset=utf-8"
    response = StreamingHttpResponse(content, content_type=kind)
    name = f"{stem}.{'json' if is_json else 'txt'}"
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response
