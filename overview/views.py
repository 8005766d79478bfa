"""The overview page and its JSON twin."""

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from ledgerweb.http import wants_json
from overview.summary import ledger_overview


@require_GET
def overview(request: HttpRequest) -> HttpResponse:
    summary = ledger_overview()
    if wants_json(request):
        return JsonResponse(_overview_json(summary, request.user.is_staff))
    ctx = {"overview": summary, "ledger_shown_as": _ledger_shown_as(summary, request.user.is_staff)}
    return render(request, "overview.html", ctx)


def _ledger_shown_as(summary, staff: bool) -> str:
    """Staff see the ledger's absolute path; others its file name (the path tells about the
    server, and the name is what a person recognises)."""
    return str(summary.path) if staff else summary.path.name


def _overview_json(summary, staff: bool) -> dict:
    return {
        "ledger": {
            "name": summary.path.name,
            "path": str(summary.path) if staff else None,
            "size_bytes": summary.size_bytes,
            "wal_bytes": summary.wal_bytes,
            "journal_mode": summary.journal_mode,
            "missing_tables": summary.missing_tables,
            "other_tables": summary.other_tables,
            "schema_mismatches": summary.mismatches,
        },
        "counts": {
            c.table: None if c.count is None else {"count": c.count.value, "capped": c.count.capped}
            for c in summary.counts
        },
        "last_24h": summary.last_day,
        "cost": {window: total.as_json() for window, total in summary.costs.items()},
        "cost_not_counted": summary.cost_notes,
        "latest_sessions": summary.latest_sessions,
        "latest_requests": summary.latest_requests,
    }
