"""The JSON twin of the pipeline pages."""

from dataclasses import asdict

from django.urls import reverse

from ledgerweb.costs import cost_json
from ledgerweb.paging import list_envelope
from pipeline.costs import request_cost
from pipeline.detail import RequestDetail
from pipeline.filters import RequestFilters
from pipeline.listing import SUMMARY_FIELDS, RequestPage


def request_list(filters: RequestFilters, page: RequestPage) -> dict:
    return list_envelope(filters, page) | {
        # The window's instants [since, until), also for a preset window (filters.window_bounds).
        "since": filters.since_ms,
        "until": filters.until_ms,
        # Hours a signature or duration filter did not search yet (signature_search.py,
        # timing_search.py).
        "not_searched": " ".join(filters.not_searched) or None,
        "order": filters.order,
        "requests": [
            {name: getattr(row.request, name) for name in SUMMARY_FIELDS}
            | {"duration_ms": row.duration_ms, "error": row.error_line, "cost": _cost(row.request)}
            | ({"stage_ms": row.stage_ms} if filters.timing is not None else {})
            for row in page.rows
        ],
    }


def _cost(r) -> dict | None:
    return cost_json(request_cost(r))


def request_detail(d: RequestDetail) -> dict:
    r = d.request
    here = reverse("pipeline:request", args=[r.id])
    fields = {f.attname: getattr(r, f.attname) for f in r._meta.concrete_fields}
    return {
        "request": fields,
        "duration_ms": d.duration_ms,
        "cost": _cost(r),
        "problems": d.problems,
        "waterfall": [asdict(bar) for bar in d.bars],
        "hooks_matched_not_fired": d.hooks.matched_not_fired,
        "signature": d.signature or None,
        "similar_failures": (
            {"count": d.similar.value, "capped": d.similar.capped} if d.similar else None
        ),
        "similar_failures_not_searched": d.similar_not_searched or None,
        "same_event": [x.id for x in d.same_event],
        "same_principal": [x.id for x in d.same_principal],
        "same_session_key": [x.id for x in d.same_session],
        "previous_failure": d.previous_failure,
        "next_failure": d.next_failure,
        "turn": {"id": r.turn_id, "session_id": d.turn_session_id} if r.turn_id else None,
        "stage_cards": {
            stage: {"state": card.state, "note": card.note} for stage, card in d.cards.items()
        },
        "failing_hook": d.failing_hook,
        # Long fields above hold their first characters only: here is how to get each whole.
        "cut": {
            name: {"total_chars": total, "download": f"{here}?download={name}"}
            for name, total in d.cut.items()
        },
    }
