"""A URL converter for ledger ids, which other programs choose: they may hold '/', '%' or spaces.

to_url percent-encodes everything but letters, digits and `-_.~`, so an id with a slash still
fills exactly one path segment; to_python decodes it back.
"""

from urllib.parse import quote, unquote


class LedgerIdConverter:
    regex = "[^/]+"

    def to_python(self, value: str) -> str:
        return unquote(value)

    def to_url(self, value) -> str:
        return quote(str(value), safe="")
