"""A URL converter for ledger ids, which other programs choose: they may hold '/', '%' or spaces,
or be just '.' or '..'.

to_url percent-encodes everything but letters, digits and `-_.~`, so an id with a slash still
fills exactly one path segment; to_python decodes it back. An id made only of dots is encoded
too: a browser (and urljoin) would otherwise read the segment `.` or `..` as "this folder" or
"the folder above" and drop it before the request is sent. reverse() then encodes the `%` once
more (`%252E`), which no browser reads as a dot segment.
"""

from urllib.parse import quote, unquote


class LedgerIdConverter:
    regex = "[^/]+"

    def to_python(self, value: str) -> str:
        return unquote(value)

    def to_url(self, value) -> str:
        text = str(value)
        if text in (".", ".."):
            return text.replace(".", "%2E")
        return quote(text, safe="")
