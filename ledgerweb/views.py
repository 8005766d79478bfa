from django.contrib.auth.decorators import login_not_required
from django.db import DatabaseError, connections
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from ledgerweb.db import LEDGER
from ledgerweb.overview import ledger_overview


@require_GET
def overview(request: HttpRequest) -> HttpResponse:
    summary = ledger_overview()
    if request.GET.get("format") == "json":
        return JsonResponse(_overview_json(summary))
    return render(request, "overview.html", {"overview": summary})


def _overview_json(summary) -> dict:
    return {
        "ledger": {
            "path": str(summary.path),
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
        "latest_sessions": summary.latest_sessions,
        "latest_requests": summary.latest_requests,
    }


@login_not_required
@never_cache
@require_GET
def healthz(request: HttpRequest) -> HttpResponse:
    """Liveness for load balancers: no login, no data; `ok` when the ledger opens."""
    try:
        with connections[LEDGER].cursor() as cursor:
            cursor.execute("SELECT 1 FROM sqlite_master LIMIT 1")
    except DatabaseError:
        return HttpResponse("ledger unavailable\n", status=503, content_type="text/plain")
    return HttpResponse("ok\n", content_type="text/plain")
