"""The links a page prints, and whether a server would take them: gunicorn refuses a request
line ("GET <path?query> HTTP/1.1") longer than its limit_request_line, 4,094 bytes by default,
with a 414 the user cannot get past."""

import html
import re
from urllib.parse import urlsplit

REQUEST_LINE_LIMIT = 4094
# Attributes that make the browser (or htmx) request a URL of the site.
_URL_ATTRIBUTE = re.compile(r'\s(?:href|hx-get|hx-post|action|src)="([^"]*)"')
_GET_ATTRIBUTE = re.compile(r'\s(?:href|hx-get)="([^"]*)"')


def links_of(page: str) -> list[str]:
    """Every URL an HTML page names in an attribute a click, htmx or a form requests."""
    return [html.unescape(raw) for raw in _URL_ATTRIBUTE.findall(page)]


def get_links_of(page: str) -> list[str]:
    """The URLs a click or htmx GETs (not a form's POST): what a crawl may follow."""
    return [html.unescape(raw) for raw in _GET_ATTRIBUTE.findall(page)]


def request_line_bytes(url: str) -> int:
    """The bytes of the request line a browser sends for `url` (the fragment stays behind)."""
    parts = urlsplit(url)
    target = parts.path + (f"?{parts.query}" if parts.query else "")
    return len(f"GET {target} HTTP/1.1".encode())


def unfollowable(urls) -> list[str]:
    """The URLs a server would refuse as too long (shortened, for a readable failure)."""
    return [f"{url[:80]}… ({request_line_bytes(url):,} bytes)" for url in urls
            if request_line_bytes(url) > REQUEST_LINE_LIMIT]  # fmt: skip
