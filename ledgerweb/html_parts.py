"""Helpers for the HTML that long lists build in Python (the turn tree's rows, a turn's tool
calls, the session and request lists): escaping, and the URLs of many ledger ids without one
reverse() each."""

import re
from functools import lru_cache
from html import escape as _html_escape
from urllib.parse import quote

from django.urls import reverse
from django.utils.text import slugify

from ledgerweb.converters import LedgerIdConverter
from ledgerweb.long_values import LINK_VALUE_BYTES, MARK

_NEEDS_ESCAPE = re.compile(r"[&<>\"']").search
# What the id converter and the path leave as it is. Ledger ids are usually ULIDs made only of
# these characters; anything else takes the careful path.
_PLAIN = re.compile(r"[A-Za-z0-9_.~-]*").fullmatch
_PLACEHOLDER = "LEDGER-ID-PLACEHOLDER"
_to_url = LedgerIdConverter().to_url


def escape(value) -> str:
    """HTML-escape any value (&, <, >, " and '), as Django's escape does, without its lazy-string
    wrapper: it runs tens of thousands of times on a big tree."""
    text = str(value)
    return _html_escape(text, quote=True) if _NEEDS_ESCAPE(text) else text


def css_name(text: str) -> str:
    """A ledger word (a status, a mark) as part of a CSS class name, as the slugify filter makes
    it. The same few words come back on every row, so short ones are remembered; a ledger value
    can be megabytes, and a long one is never kept."""
    return _short_css_name(text) if len(text) <= 64 else slugify(text)


@lru_cache(maxsize=1024)
def _short_css_name(text: str) -> str:
    return slugify(text)


def path_segment(ledger_id) -> str:
    """An id as reverse() writes it into a path: the converter's encoding, then the path's (which
    turns each % into %25). The result holds only letters, digits, `-_.~` and `%`: it is also
    safe in HTML as it is."""
    text = str(ledger_id)
    # "." and ".." are plain characters but dot segments, and a long or `~~` id goes by its key
    # (long_values): the converter sees to them.
    plain = _PLAIN(text) and len(text) <= LINK_VALUE_BYTES and not text.startswith(MARK)
    return text if plain and text not in (".", "..") else quote(_to_url(text), safe="")


class IdUrls:
    """The URLs of one view for many ids: reverse() once with a placeholder as the last argument,
    then put each id in its place (reverse() costs tens of microseconds; a 5,000-turn tree needs
    a URL per row)."""

    def __init__(self, viewname: str, *args):
        url = reverse(viewname, args=[*args, _PLACEHOLDER])
        # Split at the last placeholder: the arguments before it are ledger ids too, and one
        # of them may contain the placeholder's text; what follows it is the pattern's own.
        head, tail = url.rsplit(path_segment(_PLACEHOLDER), 1)
        self._head, self._tail = escape(head), escape(tail)

    def html(self, ledger_id) -> str:
        """The id's URL, escaped for an HTML attribute."""
        return f"{self._head}{path_segment(ledger_id)}{self._tail}"
