from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.db import DatabaseError, transaction
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.templatetags.static import static
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from ledgerweb import dialect, health, json_twins, sqlite
from ledgerweb.db import LEDGER
from ledgerweb.http import respond, wants_json
from ledgerweb.params import answers_bad_parameters, choice, strict
from ledgerweb.roles import ROLE_PROMISES, RoleRequired, may_see_health, role_of, who_gives_roles


@login_not_required
@never_cache
@transaction.non_atomic_requests(using=LEDGER)  # must answer even when the ledger cannot open
@require_GET
def healthz(request: HttpRequest) -> HttpResponse:
    """Liveness for load balancers: no login, no data; `ok` when the ledger opens."""
    try:
        # Reads the catalogue: a ledger file that cannot be opened fails here.
        sqlite.rows(f"SELECT 1 FROM ({dialect.table_names_sql()}) AS t LIMIT 1")
    except DatabaseError:
        return HttpResponse("ledger unavailable\n", status=503, content_type="text/plain")
    return HttpResponse("ok\n", content_type="text/plain")


@require_GET
@answers_bad_parameters
def health_report(request: HttpRequest) -> HttpResponse:
    """The ledger's invariants, for staff: the report the background summariser keeps (the
    checks scan whole tables: 41 s on a big ledger), or run now when there is none or on ?run=1."""
    if not may_see_health(request.user):
        raise RoleRequired("admin", "The health report")
    run_now = strict(request.GET, "run", choice("1")) == "1"
    report = None if run_now else health.kept_report()
    kept = report is not None
    if report is None:
        with sqlite.longer_time_limit(settings.LEDGER_HEALTH_TIMEOUT_MS):
            report = health.check_and_keep()
    ctx = {
        "findings": report.findings,
        "problems": report.problems,
        "checked_at": report.checked_at,
        "took_ms": report.took_ms,
        "kept": kept,
        "every_hours": health.EVERY_S // 3600,
    }
    return respond(
        request,
        page=lambda: render(request, "health.html", ctx),
        twin=lambda: json_twins.health_report(report, kept),
    )


@login_not_required
@require_GET
def favicon(request: HttpRequest) -> HttpResponse:
    """Pages we do not template (the admin's) make browsers ask for /favicon.ico."""
    return redirect(static("favicon.svg"), permanent=True)


@login_not_required
def form_refused(request: HttpRequest, reason: str = "") -> HttpResponse:
    """CSRF_FAILURE_VIEW: a form without a valid token, said in the site's layout (not Django's
    bare "403 Forbidden"); a JSON twin gets the same as JSON."""
    if wants_json(request):
        detail = "CSRF token missing or no longer valid: reload the page and send it again."
        return JsonResponse({"error": "refused", "detail": detail}, status=403)
    return render(request, "form_refused.html", status=403)


def refused(request: HttpRequest, exception=None) -> HttpResponse:
    """The 403 page (handler403): in the site's layout, saying which role the page needs, what
    the person has, and whom to ask for it. JSON for a JSON twin."""
    needed = getattr(exception, "role", None)
    what = getattr(exception, "what", None)
    user = request.user
    ctx = {
        "needed": needed,
        "needed_promise": ROLE_PROMISES.get(needed or ""),
        "what": what,
        "message": str(exception) if exception and not needed else "",
        "current": role_of(user) if user.is_authenticated else None,
        # Whom to ask: never the person refused (an admin refused a superuser's page).
        "ask": [name for name in who_gives_roles() if name != user.get_username()]
        if user.is_authenticated
        else [],
    }
    # "an operator", "an admin", "a viewer"
    ctx["article"] = "an" if (ctx["current"] or "x")[0] in "aeiou" else "a"
    if wants_json(request):
        body = {"error": "refused", "role_needed": needed, "your_role": ctx["current"],
                "ask": ctx["ask"], "detail": str(exception or "")}  # fmt: skip
        return JsonResponse(body, status=403)
    template = "refused.html#message" if getattr(request, "htmx", False) else "refused.html"
    return render(request, template, ctx, status=403)
