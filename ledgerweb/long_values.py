"""Values too long for a link: a short key stands for them, kept in ledgerweb's own database.

A link carries ledger values: ids in its path, filter values in its query (a principal, a
persona, a session key, an error signature, a page cursor holding a row's id). The ledger may
hold any of them at any length, and a server refuses a request line past its limit (gunicorn:
4,094 bytes, a 414): a 100,000-character principal made a chart's bars unfollowable, and a
3,000-character session id every turn link of its session. So each value a link would carry
past LINK_VALUE_BYTES (percent-encoded) is stored once, under a key made from its hash, and the
link carries the key instead, written `~~<key>`; reading the link gives the value back.

- `for_link(value)` is what a link builder puts in a link (the path converter for ids, the
  `link_value` template filter and `query()` for query values); `resolve(raw)` is what reading a
  parameter does with it (the converter, ledgerweb.params' readers).
- A value that itself begins with `~~` always goes by its key, so a link's `~~…` is never a
  value as written: nothing a ledger holds can be mistaken for a key, or a key for a value.
- A key is the value's hash: the same value gets the same key on every page and every host
  sharing the database, and is written once (a process remembers the keys it wrote).
- Keys are never deleted, so a bookmarked link keeps working; a key the database does not hold
  (another site's link, a database started afresh) reads as a clear "not a link this site wrote".
"""

import base64
import hashlib
import json
from urllib.parse import quote, urlencode

MARK = "~~"
# Percent-encoded bytes of one value in a link before it goes by its key. A link holds at most a
# few such values (a path's three ids, a chart bar's filters), so it stays well under gunicorn's
# 4,094-byte request line, and a link of short values is written as before.
LINK_VALUE_BYTES = 256
KEY_CHARS = 22  # of the URL-safe base64 of the SHA-256: 132 bits


class UnknownKey(ValueError):
    """A `~~key` this site's database does not hold."""


def for_link(value) -> str:
    """What a link carries for `value`: itself when short, else its key (stored)."""
    text = str(value)
    if not text.startswith(MARK) and _encoded_bytes(text) <= LINK_VALUE_BYTES:
        return text
    key = key_of(text)
    _store(key, text)
    return MARK + key


def _encoded_bytes(text: str) -> int:
    """Its length percent-encoded in a link; past any limit when it cannot be encoded at all (a
    lone surrogate is no UTF-8): such a value always goes by its key."""
    if len(text) * 12 <= LINK_VALUE_BYTES:  # even if each character took 12 bytes encoded
        return len(text)
    try:
        return len(quote(text, safe=""))
    except UnicodeEncodeError:
        return LINK_VALUE_BYTES + 1


def resolve(raw: str) -> str:
    """The value a link's `raw` text stands for: a key's stored value, else the text itself."""
    if not raw.startswith(MARK):
        return raw
    value = _stored(raw[len(MARK) :])
    if value is None:
        raise UnknownKey(
            f"{raw[:40]} stands for a value this site's database does not hold: "
            "not a link this site wrote, or written before its database was started afresh"
        )
    return value


def query(mapping: dict) -> str:
    """A query string of `mapping`, each value as a link carries it (urlencode's arguments)."""
    return urlencode({name: for_link(value) for name, value in mapping.items()})


def key_of(value: str) -> str:
    digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).digest()
    return base64.urlsafe_b64encode(digest).decode()[:KEY_CHARS]


# Keys this process wrote or read: a page of 5,000 turn links of one long session id writes its
# key once, not 5,000 times. Bounded: a value is at most what the ledger holds.
_known: dict[str, str] = {}
KNOWN_MAX = 256


def _remember(key: str, value: str) -> None:
    if len(_known) >= KNOWN_MAX:
        _known.clear()
    _known[key] = value


def _store(key: str, value: str) -> None:
    if _known.get(key) == value:
        return
    from ledgerweb.models import LinkedValue

    # One short write in autocommit, on ledgerweb's database (never the ledger): a second
    # worker writing the same key at once finds it there.
    LinkedValue.objects.get_or_create(key=key, defaults={"value": _as_stored(value)})
    _remember(key, value)


def _stored(key: str) -> str | None:
    if key in _known:
        return _known[key]
    if len(key) != KEY_CHARS:
        return None
    from ledgerweb.models import LinkedValue

    stored = LinkedValue.objects.filter(key=key).values_list("value", flat=True).first()
    if stored is None:
        return None
    value = json.loads(stored)
    _remember(key, value)
    return value


def _as_stored(value: str) -> str:
    """As JSON text, all ASCII: PostgreSQL's text holds no NUL, and neither engine a lone
    surrogate; JSON escapes both."""
    return json.dumps(value)
