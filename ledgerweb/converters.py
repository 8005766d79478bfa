"""A URL converter for ledger ids, which other programs choose: they may hold '/', '%' or spaces,
or be just '.' or '..'.

to_url percent-encodes everything but letters, digits and `-_.~`, so an id with a slash still
fills exactly one path segment; to_python decodes it back. An id made only of dots is encoded
too: a browser (and urljoin) would otherwise read the segment `.` or `..` as "this folder" or
"the folder above" and drop it before the request is sent. reverse() then encodes the `%` once
more (`%252E`), which no browser reads as a dot segment.

An id too long for a link goes by a short key (ledgerweb/long_values.py): to_url writes the key,
to_python reads the id back (a key the site does not know is no match: a 404).
"""

from urllib.parse import quote, unquote

from ledgerweb import long_values


class LedgerIdConverter:
    regex = "[^/]+"

    def to_python(self, value: str) -> str:
        return long_values.resolve(unquote(value))  # UnknownKey is a ValueError: no match

    def to_url(self, value) -> str:
        text = long_values.for_link(value)
        if text in (".", ".."):
            return text.replace(".", "%2E")
        return quote(text, safe="")
