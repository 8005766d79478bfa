"""An issue's lifecycle: what operators decided (issues.models.Issue) read against its failures.

The stored decision is open, resolved or ignored; the status a person sees follows from it and
from the failures themselves, so it is right whether or not the background process runs:

- open: "new" while its first failure is under a day old, else "open";
- resolved: "regressed" as soon as it failed after it was resolved, else "resolved";
- ignored: "ignored" until its time is up or N more failures came, then open again.

Every change is kept with who, when and an optional note (IssueChange, shown on the issue) and in
Django's admin log. Merging sends one issue's failures to another: its page then leads there.
"""

from collections.abc import Callable
from dataclasses import dataclass

from django.contrib.admin.models import CHANGE, LogEntry
from django.db import transaction

from issues.figures import Figures, issue_id
from issues.models import Issue, IssueChange
from ledgerfacts.timestamps import now_ms
from ledgerweb.db import ledger_identity

HOUR = 3_600_000
NEW_FOR_MS = 24 * HOUR
STATUSES = ("new", "open", "regressed", "resolved", "ignored")
# What an inbox shows by default: what still needs someone.
UNRESOLVED = ("regressed", "new", "open")
MAX_MERGE_HOPS = 20  # a chain of merges longer than this is junk (a loop): it stops there
MAX_NOTE = 5_000
ACTIONS = ("resolve", "reopen", "ignore", "merge", "unmerge")


class Refused(ValueError):
    """A change that cannot be made, in words for the person who asked."""


def states() -> dict[str, Issue]:
    """Every decision kept for this ledger, by issue id."""
    return {i.issue_id: i for i in Issue.objects.filter(ledger=ledger_identity())}


def canonical(known: dict[str, Issue]):
    """A function naming the issue a failure group belongs to: its own, or the one it was merged
    into (followed through chains; a loop stops where it closes)."""
    merged = {key: state.merged_into for key, state in known.items() if state.merged_into}

    def issue_of(group) -> str:
        key, seen = issue_id(*group), set()
        while key in merged and key not in seen and len(seen) < MAX_MERGE_HOPS:
            seen.add(key)
            key = merged[key]
        return key

    return issue_of


@dataclass
class Status:
    name: str  # one of STATUSES
    why: str = ""  # "resolved 3 h ago, failed again 10 min ago", "ignore ended: 10 more failures"


# How many failures of an issue started after a moment (issues.inbox.Reading.failures_after).
FailuresAfter = Callable[[Figures, int], int]


def status_of(
    state: Issue | None, f: Figures | None, now: int, failures_after: FailuresAfter
) -> Status:
    decision = state.decision if state else Issue.OPEN
    if decision == Issue.RESOLVED:
        if f is not None and f.last_seen is not None and f.last_seen > state.resolved_at:
            return Status("regressed", "failed again after it was resolved")
        return Status("resolved")
    if decision == Issue.IGNORED:
        if state.ignore_until is not None and now >= state.ignore_until:
            return _open(f, now, "its time ignored is up")
        if state.ignore_count is not None and f is not None:
            more = failures_after(f, state.ignored_at)
            if more >= state.ignore_count:
                return _open(f, now, f"{more:,} more failures since it was ignored")
        return Status("ignored")
    return _open(f, now)


def _open(f: Figures | None, now: int, why: str = "") -> Status:
    new = f is not None and f.first_seen is not None and f.first_seen >= now - NEW_FOR_MS
    return Status("new" if new else "open", why)


# -- Changes --------------------------------------------------------------------------------------


def change(issue: str, f: Figures | None, action: str, user, note: str = "", **options) -> Issue:
    """Make one change to an issue (an operator's: the view checks the permission), keep it in its
    history and in the admin log. Raises Refused with the reason when it cannot be made."""
    if action not in ACTIONS:
        raise Refused(f"unknown action {action!r}")
    note = note.strip()[:MAX_NOTE]
    now = now_ms()
    with transaction.atomic(using="default"):
        state = _state_for(issue, f)
        detail = _apply(state, action, now, options)
        state.changed_at = now
        state.save()
        IssueChange.objects.create(
            issue=state, action=PAST[action], detail=detail, note=note, by=user,
            by_name=user.get_username(), at=now,
        )  # fmt: skip
    message = f"{PAST[action].capitalize()}{f' {detail}' if detail else ''}"
    LogEntry.objects.log_actions(
        user_id=user.pk, queryset=[state], action_flag=CHANGE,
        change_message=f"{message}{f': {note}' if note else ''}"[:MAX_NOTE],
    )  # fmt: skip
    return state


PAST = {
    "resolve": "resolved",
    "reopen": "reopened",
    "ignore": "ignored",
    "merge": "merged",
    "unmerge": "unmerged",
}


def _state_for(issue: str, f: Figures | None) -> Issue:
    state = Issue.objects.select_for_update().filter(ledger=ledger_identity(), issue_id=issue)
    found = state.first()
    if found is not None:
        return found
    if f is None:
        raise Refused("no such issue in this ledger")
    stage, signature = f.groups[0]
    return Issue(ledger=ledger_identity(), issue_id=issue, error_stage=stage, signature=signature)


def _apply(state: Issue, action: str, now: int, options: dict) -> str:
    """Change the decision; returns what the history says besides the action."""
    if action == "resolve":
        state.decision, state.resolved_at = Issue.RESOLVED, now
        _forget_ignore(state)
        return ""
    if action == "reopen":
        state.decision, state.resolved_at = Issue.OPEN, None
        _forget_ignore(state)
        return ""
    if action == "ignore":
        hours, count = options.get("hours"), options.get("count")
        state.decision, state.resolved_at, state.ignored_at = Issue.IGNORED, None, now
        state.ignore_until = now + hours * HOUR if hours else None
        state.ignore_count = count or None
        if hours and count:
            return f"for {hours:,} hours or until {count:,} more failures"
        if hours:
            return f"for {hours:,} hour{'s' if hours != 1 else ''}"
        if count:
            return f"until {count:,} more failure{'s' if count != 1 else ''}"
        return "until reopened"
    if action == "merge":
        into = options.get("into", "")
        if into == state.issue_id:
            raise Refused("an issue cannot be merged into itself")
        state.merged_into = into
        return f"into {into}"
    state.merged_into = ""  # unmerge
    return ""


def _forget_ignore(state: Issue) -> None:
    state.ignored_at = state.ignore_until = state.ignore_count = None


def history(issue_ids: list[str]) -> list[IssueChange]:
    """The changes to these issues (one, and those merged into it), newest first."""
    return list(
        IssueChange.objects.filter(
            issue__ledger=ledger_identity(), issue__issue_id__in=issue_ids
        ).select_related("issue")[:200]
    )
