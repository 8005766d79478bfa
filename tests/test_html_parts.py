"""ledgerweb/html_parts.py: the escaping and the URLs that the Python-built lists (the turn tree's
rows, a turn's tool calls) use instead of the template's autoescape and {% url %}."""

import pytest
from django.urls import reverse
from django.utils.html import escape as django_escape
from hostile import PAYLOAD, WEIRD

from ledgerweb.html_parts import IdUrls, escape

# Ids other programs may choose: plain ULIDs, and everything a URL or HTML can trip on.
IDS = [
    "01M5XHW7X8KRC2QBDQP6XHHSR3",
    "turn/1",
    "imported/2024 50%",
    "%2F already encoded",
    "quote \" and ' apostrophe",
    "a&b<c>d",
    "ünïcødé ✓ 😀",
    "?query#fragment",
    PAYLOAD,
    WEIRD,
    "LEDGER-ID-PLACEHOLDER",  # the helper's own placeholder, as an id
]


@pytest.mark.parametrize("value", [*IDS, "", 42, 3.5, None, b"bytes"])
def test_escape_matches_djangos_escape(value):
    assert escape(value) == str(django_escape(value))


@pytest.mark.parametrize("session_id", IDS)
@pytest.mark.parametrize("turn_id", IDS)
def test_turn_urls_are_exactly_what_reverse_gives(session_id, turn_id):
    urls = IdUrls("sessions:turn", session_id)
    assert urls.html(turn_id) == django_escape(reverse("sessions:turn", args=[session_id, turn_id]))


@pytest.mark.parametrize("call_id", IDS)
def test_call_urls_keep_the_session_and_turn_that_hold_the_placeholder_text(call_id):
    # Earlier arguments that spell the placeholder must not be mistaken for its place.
    session_id, turn_id = "LEDGER-ID-PLACEHOLDER", "x-LEDGER-ID-PLACEHOLDER-y"
    urls = IdUrls("sessions:call", session_id, turn_id)
    expected = reverse("sessions:call", args=[session_id, turn_id, call_id])
    assert urls.html(call_id) == django_escape(expected)
