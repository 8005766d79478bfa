from dataclasses import asdict

from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.core.exceptions import PermissionDenied
from django.db import DatabaseError, connections, transaction
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.templatetags.static import static
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from ledgerweb import dialect, health, sqlite
from ledgerweb.db import LEDGER
from ledgerweb.http import wants_json
from ledgerweb.overview import ledger_overview
from ledgerweb.params import answers_bad_parameters, choice, strict


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
        "shipments": summary.shipments,
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


@login_not_required
@never_cache
@transaction.non_atomic_requests(using=LEDGER)  # must answer even when the ledger cannot open
@require_GET
def healthz(request: HttpRequest) -> HttpResponse:
    """Liveness for load balancers: no login, no data; `ok` when the ledger opens."""
    try:
        with connections[LEDGER].cursor() as cursor:
            # Reads the catalogue: a ledger file that cannot be opened fails here.
            cursor.execute(f"SELECT 1 FROM ({dialect.table_names_sql()}) AS t LIMIT 1")
    except DatabaseError:
        return HttpResponse("ledger unavailable\n", status=503, content_type="text/plain")
    return HttpResponse("ok\n", content_type="text/plain")


@require_GET
@answers_bad_parameters
def health_report(request: HttpRequest) -> HttpResponse:
    """The ledger's invariants, for staff: the report the background summariser keeps (the
    checks scan whole tables: 41 s on a big ledger), or run now when there is none or on ?run=1."""
    if not request.user.is_staff:
        raise PermissionDenied("The health report is for staff.")
    run_now = strict(request.GET, "run", choice("1")) == "1"
    report = None if run_now else health.kept_report()
    kept = report is not None
    if report is None:
        with sqlite.longer_time_limit(settings.LEDGER_HEALTH_TIMEOUT_MS):
            report = health.check_and_keep()
    if wants_json(request):
        return JsonResponse(
            {
                "checked_at": report.checked_at,
                "took_ms": report.took_ms,
                "kept": kept,
                "findings": [asdict(f) | {"passed": f.passed} for f in report.findings],
            }
        )
    ctx = {
        "findings": report.findings,
        "problems": report.problems,
        "checked_at": report.checked_at,
        "took_ms": report.took_ms,
        "kept": kept,
        "every_hours": health.EVERY_S // 3600,
    }
    return render(request, "health.html", ctx)


@login_not_required
@require_GET
def favicon(request: HttpRequest) -> HttpResponse:
    """Pages we do not template (the admin's) make browsers ask for /favicon.ico."""
    return redirect(static("favicon.svg"), permanent=True)
