"""Query parameters, read once and strictly.

Each parser takes the raw text of one parameter and gives its value, or raises `Invalid` with
what is wrong. `read` turns that into one sentence, worded the same on every page
("since=abc: not a time …; this filter is not applied"), which a list or the dashboard shows
inline and puts in its JSON twin's `errors`. Where no page makes sense for a bad value (a flag, a
live-mode cursor), the view answers 400 with the same sentence (`answers_bad_parameters`).

Bounds matter as much as syntax: Python's int() reads "²" and 30-digit numbers that SQLite cannot
hold, and date arithmetic overflows at year 9999, so every number is checked against the range
its use can hold.
"""

import json
import math
import re
from collections.abc import Callable
from datetime import date, datetime
from functools import wraps

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils import timezone

from ledgerweb import long_values
from ledgerweb.http import wants_json

MAX_TEXT = 1000  # characters of a text filter: links repeat it, and LIKE patterns have limits
SHOWN = 40  # characters of a bad value quoted back in a message
# Ledger times are Unix ms from 1970 up to the last moment Python's datetime can show.
MAX_MS = 253_402_300_799_999  # 9999-12-31T23:59:59.999Z
# The preset time windows a page offers as ?window= (the pipeline's filters, search), in ms.
_HOUR_MS = 3_600_000
WINDOWS = {"1h": _HOUR_MS, "24h": 24 * _HOUR_MS, "7d": 7 * 24 * _HOUR_MS, "30d": 30 * 24 * _HOUR_MS}
FIRST_DAY = date(1970, 1, 1)
SQLITE_INT = 2**63 - 1  # SQLite's INTEGER is a signed 64-bit number
NOT_APPLIED = "this filter is not applied"

_DIGITS = re.compile(r"[0-9]+")  # ASCII only: str.isdigit() also says yes to "²" and "١"
_INTEGER = re.compile(r"-?[0-9]{1,20}")
_NUMBER = re.compile(r"-?[0-9]{1,20}(\.[0-9]{1,20})?")
_DAY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_MOMENT = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}"  # a date,
    r"([T ][0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]{1,6})?)?)?"  # maybe a time,
    r"(Z|[+-][0-9]{2}:?[0-9]{2})?"  # maybe a time zone
)


class Invalid(ValueError):
    """A parameter's text does not say what the parameter means; the message says why."""


def shown(raw: str) -> str:
    """A bad value as a message quotes it: short, so a 10 KB value does not fill the page."""
    return raw if len(raw) <= SHOWN else raw[:SHOWN] + "…"


def problem(name: str, raw: str, why: str, consequence: str = "") -> str:
    """The one wording of a bad parameter on every page and in every JSON twin."""
    sentence = f"{name}={shown(raw)}: {why}"
    return f"{sentence}; {consequence}" if consequence else sentence


def reject(params, name: str, why: str, errors: dict[str, str], consequence=NOT_APPLIED) -> None:
    """Report a parameter that parsed but makes no sense with the others."""
    errors[name] = problem(name, params.get(name, "").strip(), why, consequence)


def read(params, name: str, parse: Callable, errors: dict[str, str], consequence=NOT_APPLIED):
    """The value of one parameter, or None when it is absent or blank, or when it is bad: then
    `errors[name]` says so."""
    raw = params.get(name, "").strip()
    return _parse(name, raw, parse, errors, consequence) if raw else None


def read_as_is(params, name: str, parse: Callable, errors: dict[str, str]):
    """Like read, for a value taken exactly as written: spaces and '' are values here."""
    return _parse(name, params[name], parse, errors, NOT_APPLIED) if name in params else None


def _parse(name: str, raw: str, parse: Callable, errors: dict[str, str], consequence: str):
    try:
        return _parse_linked(raw, parse)
    except Invalid as why:
        errors[name] = problem(name, raw, str(why), consequence)
        return None


def _parse_linked(raw: str, parse: Callable):
    """A parameter as a link wrote it: a value too long for a link comes as its key
    (ledgerweb/long_values.py), read back here before it is parsed."""
    try:
        value = long_values.resolve(raw)
    except long_values.UnknownKey as error:
        raise Invalid(str(error)) from None
    if parse is exact and value is not raw:
        return value  # a ledger value our own link carried by its key: any length
    return parse(value)


def linked(raw: str | None) -> str | None:
    """A parameter read without a parser (an anchor id), its key read back; None for a key this
    site does not hold."""
    try:
        return None if raw is None else long_values.resolve(raw)
    except long_values.UnknownKey:
        return None


# -- Parsers: raw text → value, or Invalid ------------------------------------------------------


def text(raw: str) -> str:
    if len(raw) > MAX_TEXT:
        raise Invalid(f"longer than {MAX_TEXT:,} characters")
    return raw


def exact(raw: str) -> str:
    """A value matched exactly (an id, a column's value, a hook's name). Typed, as long as
    `text`; carried by a link of ours as its key (ledgerweb/long_values.py), any length the
    ledger holds: equality costs the same at any length. Text searched *within* (a LIKE) is
    `text` whichever way it came."""
    return text(raw)


def choice(*options: str, unlisted: tuple[str, ...] = ()) -> Callable[[str], str]:
    """One of `options` (or of `unlisted`: values our own links write, which people need not)."""

    def parse(raw: str) -> str:
        if raw in options or raw in unlisted:
            return raw
        if len(options) == 1:  # a flag
            raise Invalid(f"give {options[0]} or leave it out")
        raise Invalid("choose " + ", ".join(options[:-1]) + " or " + options[-1])

    return parse


def whole_number(low: int, high: int) -> Callable[[str], int]:
    """A whole number from `low` to `high` written in ASCII digits (a page, an id, a count)."""

    def parse(raw: str) -> int:
        if not _DIGITS.fullmatch(raw) or not low <= int(raw) <= high:
            raise Invalid(f"a whole number from {low:,} to {high:,}")
        return int(raw)

    return parse


def moment_ms(raw: str) -> int:
    """A time as Unix milliseconds, or as an ISO date and time (the site's time zone unless the
    value names one), from 1970 to 9999."""
    if _DIGITS.fullmatch(raw):
        ms = int(raw) if len(raw) <= len(str(MAX_MS)) else MAX_MS + 1  # int() of 10 KB raises
    elif _MOMENT.fullmatch(raw):
        ms = _iso_ms(raw)
    else:
        raise Invalid("not a time; give Unix milliseconds or YYYY-MM-DDTHH:MM")
    if not 0 <= ms <= MAX_MS:
        raise Invalid("out of range; times run from 1970 to 9999")
    return ms


def _iso_ms(raw: str) -> int:
    try:
        moment = datetime.fromisoformat(raw)
        if timezone.is_naive(moment):
            moment = timezone.make_aware(moment)
        return round(moment.timestamp() * 1000)
    except (ValueError, OverflowError) as error:  # 2025-02-30, 25:00, the edges of time
        raise Invalid("no such date or time") from error


def iso_date(raw: str) -> date:
    if not _DAY.fullmatch(raw):
        raise Invalid("not a date; give YYYY-MM-DD")
    try:
        value = date.fromisoformat(raw)
    except ValueError as error:
        raise Invalid("no such date") from error
    if value < FIRST_DAY:
        raise Invalid("out of range; dates run from 1970 to 9999")
    return value


def sqlite_number(raw: str) -> int | float:
    """A number SQLite can compare with a column: a signed 64-bit integer, or a decimal (REAL
    timestamps are odd but normal data)."""
    if _INTEGER.fullmatch(raw):
        value = int(raw)
        if abs(value) > SQLITE_INT:
            raise Invalid("out of range")
        return value
    if _NUMBER.fullmatch(raw):
        return float(raw)
    raise Invalid("not a number")


_DURATION = re.compile(r"[0-9]{1,20}(\.[0-9]{1,20})?([eE][+-]?[0-9]{1,3})?")


def duration_ms(raw: str) -> float:
    """A duration in milliseconds: a number from 0 up, as our links write it (1200, 0.25, 1e-05)."""
    if not _DURATION.fullmatch(raw):
        raise Invalid("not a number of milliseconds")
    value = float(raw)
    if not math.isfinite(value):
        raise Invalid("out of range")
    return value


# A keyset cursor: the time (as the ledger holds it) and the id of the last row of a page.
Cursor = tuple[int | float | str, str]
NOT_A_PAGE_LINK = "not a page link ledgerweb wrote"


def cursor(raw: str) -> Cursor:
    """A keyset page link (ledgerweb.paging.page_cursor): "<time>:<id>" of the last row of the
    previous page, or the JSON pair [time, id] when that time is REAL or text."""
    if raw.startswith("["):
        return _json_cursor(raw)
    stamp, colon, last_id = raw.partition(":")
    if not colon:
        raise Invalid(NOT_A_PAGE_LINK)
    try:
        return sqlite_number(stamp), last_id
    except Invalid as error:
        raise Invalid(NOT_A_PAGE_LINK) from error


def _json_cursor(raw: str) -> Cursor:
    try:
        stamp, last_id = json.loads(raw)
    except (ValueError, TypeError) as error:  # not JSON, not a pair
        raise Invalid(NOT_A_PAGE_LINK) from error
    if not (isinstance(last_id, str) and _is_ledger_time(stamp)):
        raise Invalid(NOT_A_PAGE_LINK)
    return stamp, last_id


def _is_ledger_time(stamp) -> bool:
    """What a row's time can be: text, or a number SQLite holds (not a bool, inf or NaN)."""
    if isinstance(stamp, bool):
        return False
    if isinstance(stamp, int):
        return abs(stamp) <= SQLITE_INT
    if isinstance(stamp, float):
        return math.isfinite(stamp)
    return isinstance(stamp, str)


# -- Bad parameters where no page makes sense: 400 ---------------------------------------------


class BadParameter(Exception):
    def __init__(self, name: str, raw: str, why: str):
        self.name = name
        super().__init__(problem(name, raw, why))


def strict(params, name: str, parse: Callable, default=None):
    """The value of a parameter that has no sensible page when it is bad (raises BadParameter,
    which `answers_bad_parameters` turns into a 400)."""
    raw = params.get(name, "")
    if raw == "":
        return default
    try:
        return _parse_linked(raw, parse)
    except Invalid as why:
        raise BadParameter(name, raw, str(why)) from why


def bad_request(request: HttpRequest, error: BadParameter) -> HttpResponse:
    if wants_json(request):
        return JsonResponse({"errors": {error.name: str(error)}}, status=400)
    # The way on: the same page without the parameter.
    rest = request.GET.copy()
    rest.pop(error.name, None)
    link = {
        "url": request.path + (f"?{rest.urlencode()}" if rest else ""),
        "text": f"Open the page without {error.name}",
    }
    ctx = {"title": "That address has a bad parameter", "message": str(error), "link": link}
    template = (
        "ledger_error.html#message" if getattr(request, "htmx", False) else "ledger_error.html"
    )
    return render(request, template, ctx, status=400)


def answers_bad_parameters(view):
    """A view whose BadParameter becomes a 400 that says which parameter and why."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        try:
            return view(request, *args, **kwargs)
        except BadParameter as error:
            return bad_request(request, error)

    return wrapper
