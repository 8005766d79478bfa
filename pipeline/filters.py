"""Request filters from the query string, shared by the list, the dashboard's click-through links
and the request page's "similar failures": the same filter always selects the same rows."""

import math
from dataclasses import dataclass, field
from functools import cached_property

from django.db.models import BigIntegerField, BooleanField, F
from django.db.models.expressions import RawSQL

from ledgerfacts.timestamps import now_ms
from ledgerweb import sqlite
from ledgerweb.params import (
    WINDOWS,
    Cursor,
    choice,
    duration_ms,
    exact,
    moment_ms,
    read,
    read_as_is,
    reject,
    text,
)
from pipeline import signature_search, timing_search
from pipeline.flags import FLAG_STATES, HANDLED_BY, NAMED_HANDLER_FIRED, flag_state
from pipeline.models import NexusRequest
from pipeline.signature_search import SignatureSearch
from pipeline.timing_search import TimingSearch, timing_between, timing_expression

HOUR = 3_600_000
# Preset windows from this long up start on the hour (see window_bounds).
WHOLE_HOURS_FROM = 12 * HOUR

# ?hook=…&hook_state=: the hook fired; fired and handled (hooks_context names it as the
# handler); fired in a handled request that names no handler that fired (a shared credit).
HOOK_STATES = ("fired", "handled", "shared")

# ?order=: newest first (the default), or slowest first by the duration of the stage named by
# ?timing= (which ?timing_min= and ?timing_max= bound, in ms, both included).
ORDERS = ("newest", "slowest")
TIMING_PARAMS = ("timing_min", "timing_max")

# Exact-match filters: query parameter → column.
EXACT = {
    "status": "status",
    "stage": "stage",
    "error_stage": "error_stage",
    "source": "event_source",
    "type": "event_type",
    "principal": "principal_id",
    "session_key": "session_key",
    "persona": "session_persona",
    "model": "agent_model",
    "event": "event_id",
    "channel": "delivery_channel",
    "turn": "turn_id",
}


# A value that is NULL or the empty string is a value a person must be able to select, apart from
# "any" (an empty form field): `?source__isnull=1` selects NULL, `?source__exact=` selects ''
# (and any value), in Datasette's spelling. `value_query` writes them; `from_query` reads them.
ISNULL = "__isnull"
EXACT_SUFFIX = "__exact"


def value_query(param: str, value: str | None) -> dict[str, str]:
    """The query parameters that select rows whose `param` column is exactly `value` (None is
    NULL, "" the empty string)."""
    if value is None:
        return {param + ISNULL: "1"}
    if value == "" or value != value.strip():
        return {param + EXACT_SUFFIX: value}
    return {param: value}


# Text filters on values the site prints from the ledger (a hook's name, a failure's signature),
# not columns: written and read like EXACT's (`hook__exact=` for '' or a name with spaces at its
# ends), never NULL.
AS_STORED = ("hook", "signature", "timing")


def _exact_values(params, errors: dict[str, str]) -> dict[str, str | None]:
    values: dict[str, str | None] = {}
    for param in EXACT:
        if read(params, param + ISNULL, choice("1", "true", "on"), errors):
            values[param] = None
        elif (value := _as_stored(params, param, errors)) is not None:
            values[param] = value
    return values


def _as_stored(params, param: str, errors: dict[str, str]) -> str | None:
    """A value as the site wrote it (`param__exact`: exactly), else as a person typed it
    (`param`: stripped, blank is "any"); None when neither is given."""
    as_is = read_as_is(params, param + EXACT_SUFFIX, exact, errors)
    if as_is is not None:
        return as_is
    return read(params, param, exact, errors) or None


def window_bounds(window: str, now: int) -> tuple[int, int]:
    """The instants [since, until) of a preset window, the same on the dashboard and the list: it
    ends now and, from 12 hours up, starts on the hour ("24h" at 14:37 is from 14:00 yesterday),
    so the dashboard sums whole stored hours and its bars count exactly the list's rows."""
    since = now - WINDOWS[window]
    if WINDOWS[window] >= WHOLE_HOURS_FROM:
        since = since // HOUR * HOUR
    return since, now


@dataclass
class RequestFilters:
    # Column filters: None selects NULL, "" the empty string (see value_query).
    exact: dict[str, str | None] = field(default_factory=dict)
    q: str = ""  # text in the error message
    # None: any. A masked error signature (with error_stage: "similar failures"); a hook name
    # in hooks_matched ("" and " sp " are names too, see AS_STORED).
    signature: str | None = None
    hook: str | None = None
    hook_state: str = ""  # "", or one of HOOK_STATES
    delivered: str = ""  # "", or one of flags.FLAG_STATES
    # None: any. A stage whose duration (in stage_timings) the list bounds or orders by.
    timing: str | None = None
    timing_min: float | None = None  # ms, at least
    timing_max: float | None = None  # ms, at most
    order: str = "newest"  # one of ORDERS
    window: str = ""  # one of WINDOWS, "custom" (since/until), or "" for all time
    since_ms: int | None = None
    until_ms: int | None = None
    after: Cursor | None = None  # where the previous page ended (the list view reads it)
    errors: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_query(cls, params, *, default_window: str = "") -> "RequestFilters":
        errors: dict[str, str] = {}

        def value(name: str, parse=text) -> str:
            return read(params, name, parse, errors) or ""

        window = default_window  # "window=" (the form's "all time") is no window at all
        if "window" in params:
            window = value("window", choice(*WINDOWS, unlisted=("custom",)))
        f = cls(
            exact=_exact_values(params, errors),
            q=value("q"),
            signature=_as_stored(params, "signature", errors),
            hook=_as_stored(params, "hook", errors),
            hook_state=value("hook_state", choice(*HOOK_STATES)),
            delivered=value("delivered", choice(*FLAG_STATES)),
            timing=_as_stored(params, "timing", errors),
            timing_min=read(params, "timing_min", duration_ms, errors),
            timing_max=read(params, "timing_max", duration_ms, errors),
            order=value("order", choice(*ORDERS)) or "newest",
            window=window,
            since_ms=read(params, "since", moment_ms, errors),
            until_ms=read(params, "until", moment_ms, errors),
            errors=errors,
        )
        if f.since_ms is not None and f.until_ms is not None and f.until_ms <= f.since_ms:
            reject(params, "until", "not after since", errors)
            f.until_ms = None
        f._check_timing(params)
        if f.since_ms is not None or f.until_ms is not None:
            f.window = "custom"
        elif f.window in WINDOWS:
            f.since_ms, f.until_ms = window_bounds(f.window, now_ms())
        elif f.window == "custom":  # custom, but neither end given: all time
            f.window = ""
        return f

    def _check_timing(self, params) -> None:
        """A duration bound or order without a stage, or an empty range, is said and dropped."""
        if self.timing is None:
            for name in TIMING_PARAMS:
                if getattr(self, name) is not None:
                    reject(params, name, "give the stage it is about (timing=…)", self.errors)
                    setattr(self, name, None)
            if self.order == "slowest":
                why = "sorts by a stage's duration: give the stage (timing=…)"
                reject(params, "order", why, self.errors, "showing the newest first")
                self.order = "newest"
        if (self.timing_min or 0) > (self.timing_max if self.timing_max is not None else math.inf):
            reject(params, "timing_max", "less than timing_min", self.errors)
            self.timing_max = None

    def apply(
        self,
        qs,
        *,
        newest_first_walk: bool = False,
        timing_from: float | None = None,
        live_only: bool = False,
    ):
        """The filters on a queryset. With newest_first_walk the exact filters do not use their
        column's index, so SQLite walks started_at from the newest row and stops after a page:
        right for common values, wrong for rare ones (the caller decides by a capped count).
        `timing_from` raises the duration's lower bound (a slowest-first page, see listing)."""
        for param, value in self.exact.items():
            if value is None:
                qs = qs.filter(**{f"{EXACT[param]}__isnull": True})
            elif newest_first_walk:
                name = f"unindexed_{param}"
                qs = qs.alias(**{name: sqlite.Unindexed(F(EXACT[param]))}).filter(**{name: value})
            else:
                qs = qs.filter(**{EXACT[param]: value})
        if self.q:
            qs = qs.filter(error_message__icontains=self.q)
        if self.signature is not None:  # failed requests only: a signature is a failure's
            condition, params = self.signature_search.condition()
            qs = qs.filter(_sql(condition, *params))
        if self.hook is not None:
            column = "hooks_matched" if self.hook_state == "" else "hooks_fired"
            qs = qs.filter(_sql(sqlite.json_array_has(column), self.hook))
            if self.hook_state in ("handled", "shared"):
                qs = qs.filter(_sql(f"{flag_state('hooks_handled')} = 'yes'"))
            if self.hook_state == "handled":  # the hook hooks_context names as the handler
                qs = qs.filter(_sql(f"{HANDLED_BY} = %s", self.hook))
            elif self.hook_state == "shared":  # handled, naming no hook that fired
                qs = qs.filter(_sql(f"NOT {NAMED_HANDLER_FIRED}"))
        if self.delivered:
            qs = qs.filter(_sql(f"{flag_state('delivery_success')} = %s", self.delivered))
        if self.timing is not None:
            qs = self._apply_timing(qs, timing_from, live_only)
        started = "started_at"
        if self.timing is not None:
            # The window is a bound, not the way in: the hours holding such a timing are (a
            # month's window walked by its index read every row's JSON: 5-10 s on the bench).
            started = "unindexed_started_at"
            qs = qs.alias(
                **{started: sqlite.Unindexed(F("started_at"), output_field=BigIntegerField())}
            )
        if self.since_ms is not None:
            qs = qs.filter(**{f"{started}__gte": self.since_ms})
        if self.until_ms is not None:
            qs = qs.filter(**{f"{started}__lt": self.until_ms})
        return qs

    def _apply_timing(self, qs, timing_from: float | None, live_only: bool = False):
        """Rows whose stage took [timing_min, timing_max] ms (any timing without them), found
        through the hours that hold such a value (pipeline/timing_search.py); each row carries
        the duration as stage_ms. `live_only`: only the rows of hours not summarised."""
        bounds = [v for v in (self.timing_min, timing_from) if v is not None]
        low = max(bounds) if bounds else None
        search = self.timing_search
        condition, params = search.live if live_only else search.condition(at_least=low)
        between, between_params = timing_between(self.timing, low, self.timing_max)
        qs = qs.annotate(stage_ms=timing_expression(self.timing)).filter(_sql(condition, *params))
        return qs.filter(_sql(between, *between_params))

    def counts_from_summaries(self) -> bool:
        """Whether the list's count can be the summaries' (plus the live rows'): a stage's
        duration in a window, and no filter the summaries do not keep."""
        others = (self.exact, self.q, self.signature, self.hook, self.delivered)
        return self.timing is not None and not any(v not in (None, "", {}) for v in others)

    @cached_property
    def timing_search(self) -> TimingSearch:
        """Where the stage's durations are found: the summarised hours holding one in range,
        and the rest live (bounded); its note says which hours it did not search."""
        return timing_search.search(
            self.timing, self.timing_min, self.timing_max, self.since_ms, self.until_ms
        )

    @property
    def not_searched(self) -> list[str]:
        """What the signature and duration searches left out, in words."""
        notes = []
        if self.signature is not None:
            notes.append(self.signature_search.note)
        if self.timing is not None:
            notes.append(self.timing_search.note)
        return [note for note in notes if note]

    @cached_property
    def signature_search(self) -> SignatureSearch:
        """Where the signature's failures are found: stored with the summarised hours, masked
        live in the rest (bounded); its note says which hours it did not search."""
        return signature_search.search(self.signature or "", self.since_ms, self.until_ms)

    def queryset(self, **how):
        return self.apply(NexusRequest.objects.all(), **how)

    def as_query(self, **changes) -> dict[str, str]:
        exact = {}
        stored = {name: getattr(self, name) for name in AS_STORED}
        given = {name: value for name, value in stored.items() if value is not None}
        for param, value in (self.exact | given).items():
            if param not in changes:
                exact |= value_query(param, value)
        values = {
            "q": self.q,
            "hook_state": self.hook_state,
            "delivered": self.delivered,
            "timing_min": number_text(self.timing_min),
            "timing_max": number_text(self.timing_max),
            "order": "" if self.order == "newest" else self.order,
        }
        if self.window == "custom":
            values |= {"since": self.since_ms or "", "until": self.until_ms or ""}
        elif self.window:
            values["window"] = self.window
        values |= changes
        return exact | {k: str(v) for k, v in values.items() if v not in ("", None)}


def number_text(value: float | None) -> str:
    """A number as a link writes it: 4100, not 4100.0; "" for None."""
    if value is None:
        return ""
    return str(int(value)) if value.is_integer() and abs(value) < 2**53 else repr(value)


def _sql(condition: str, *params):
    return RawSQL(condition, params, output_field=BooleanField())
