"""The inbox, an issue's page, an operator's change to an issue, and a failed request's issue."""

import re

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from issues import detail, json_twins, lifecycle
from issues.inbox import (
    INBOX_WINDOWS,
    SORTS,
    STATUS_FILTERS,
    TRENDS,
    InboxFilters,
    inbox,
    read_issues,
)
from ledgerweb.http import respond
from ledgerweb.params import answers_bad_parameters
from ledgerweb.roles import RoleRequired
from pipeline.stages import STAGES

ISSUE_ID = re.compile(r"[0-9a-f]{16}")
TRIAGE = "issues.triage_issue"
# "Ignore" choices: hours (0: until reopened), or until this many more failures.
IGNORE_HOURS = (("1", "1 hour"), ("24", "24 hours"), ("168", "7 days"), ("0", "until reopened"))
IGNORE_COUNTS = (10, 100, 1000)


@require_GET
@answers_bad_parameters
def inbox_page(request: HttpRequest) -> HttpResponse:
    filters = InboxFilters.from_query(request.GET)
    box = inbox(filters)
    newest = detail.newest_requests(box.page, per_issue=3)
    return respond(
        request,
        page=lambda: render(
            request,
            "issues/inbox.html",
            {
                "box": box,
                "filters": filters,
                "newest": newest,
                "windows": INBOX_WINDOWS,
                "sorts": SORTS,
                "trends": TRENDS,
                "status_filters": STATUS_FILTERS,
                "stages": STAGES,
            },
        ),
        twin=lambda: json_twins.inbox(box, newest),
    )


def _issue_id(value: str) -> str:
    if not ISSUE_ID.fullmatch(value):
        raise Http404(f"{value!r} is not an issue id")
    return value


@require_GET
@answers_bad_parameters
def issue_page(request: HttpRequest, issue_id: str) -> HttpResponse:
    issue_id = _issue_id(issue_id)
    filters = InboxFilters.from_query(request.GET)
    reading = read_issues(filters)
    state = reading.states.get(issue_id)
    if state is not None and state.merged_into:
        target = lifecycle.canonical(reading.states)((state.error_stage, state.signature))
        messages.info(request, f"Issue {issue_id} was merged into this one.")
        return redirect(reverse("issues:issue", args=[target]) + _query(request))
    page = detail.issue_detail(issue_id, reading, filters)
    if page is None:
        raise Http404(f"No issue {issue_id} in this ledger")
    return respond(
        request,
        page=lambda: render(
            request,
            "issues/issue.html",
            {
                "d": page,
                "filters": filters,
                "windows": INBOX_WINDOWS,
                "can_triage": request.user.has_perm(TRIAGE),
                "ignore_hours": IGNORE_HOURS,
                "ignore_counts": IGNORE_COUNTS,
            },
        ),
        twin=lambda: json_twins.issue(page),
    )


def _query(request: HttpRequest) -> str:
    return f"?{request.GET.urlencode()}" if request.GET else ""


@require_POST
def change_issue(request: HttpRequest, issue_id: str) -> HttpResponse:
    """An operator resolves, reopens, ignores, merges or splits an issue; viewers are refused
    here, whatever the page showed them."""
    issue_id = _issue_id(issue_id)
    if not request.user.has_perm(TRIAGE):
        raise RoleRequired("operator", "Resolving, ignoring or merging an issue")
    back = reverse("issues:issue", args=[issue_id])
    action = request.POST.get("action", "")
    reading = read_issues(InboxFilters.from_query({}))
    try:
        options = detail.change_options(request.POST, action, issue_id, reading)
        target = options.pop("issue", issue_id)
        lifecycle.change(
            target, reading.figures.get(target), action, request.user,
            request.POST.get("note", ""), **options,
        )  # fmt: skip
    except lifecycle.Refused as why:
        messages.error(request, f"Not changed: {why}.")
        return redirect(back)
    if action == "merge":
        messages.success(request, "Merged: this issue's failures now count in the one below.")
        return redirect(reverse("issues:issue", args=[options["into"]]))
    messages.success(request, f"Issue {lifecycle.PAST[action]}.")
    return redirect(back)


@require_GET
def request_issue(request: HttpRequest, request_id: str) -> HttpResponse:
    """A failed request's issue and its status, loaded after the request page (it adds up the
    issue's hours: the request page itself stays quick)."""
    found = detail.issue_of_request(request_id)
    if found is None:
        raise Http404(f"No failed request {request_id!r} in this ledger")
    return render(request, "issues/_request_issue.html", {"found": found, "loaded": True})
