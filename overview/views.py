"""The overview page and its JSON twin."""

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from issues.inbox import attention
from ledgerweb.db import ledger_shown_to
from ledgerweb.http import respond
from overview import json_twins
from overview.summary import ledger_overview


@require_GET
def overview(request: HttpRequest) -> HttpResponse:
    summary = ledger_overview()
    staff = request.user.is_staff
    # The failure inbox's new and regressed issues (issues/), when the ledger has requests.
    issues = attention() if summary.has_requests else None
    ctx = {"overview": summary, "ledger_shown_as": ledger_shown_to(staff), "attention": issues}
    return respond(
        request,
        page=lambda: render(request, "overview.html", ctx),
        twin=lambda: json_twins.overview(summary, staff, issues),
    )
