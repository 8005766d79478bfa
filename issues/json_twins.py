"""The JSON twins of the inbox and of an issue's page: the same figures as the HTML."""

from django.urls import reverse

from issues.detail import IssueDetail
from issues.figures import Figures, previous_window
from issues.inbox import PAGE_SIZE, Attention, Inbox, Row


def _figures(f: Figures, now: int) -> dict:
    return {
        "id": f.id,
        "url": reverse("issues:issue", args=[f.id]),
        "error_stage": f.stage,
        "signature": f.signature,
        "groups": [{"error_stage": stage, "signature": sig} for stage, sig in f.groups],
        "count": f.count,
        "previous_count": f.previous,
        "escalation": None if f.escalation == float("inf") else round(f.escalation, 3),
        "total": f.total,
        "first_seen": f.first_seen,
        "last_seen": f.last_seen,
        "last_seen_in_window": f.last_in_window,
        "trend": {
            "hourly": [{"hour": hour, "count": n} for hour, n in f.hourly_trend(now)],
            "daily": [{"day": day, "count": n} for day, n in f.daily_trend(now)],
        },
        "touched": f.touched(),
    }


def _row(row: Row, now: int, newest: list[dict], requests_url: str) -> dict:
    return _figures(row.figures, now) | {
        "status": row.status.name,
        "status_why": row.status.why or None,
        "newest_requests": [{"id": r["id"], "started_at": r["started_at"]} for r in newest],
        "requests_url": requests_url,
    }


def inbox(box: Inbox, newest: dict[str, list[dict]]) -> dict:
    f = box.filters
    return {
        "window": f.window,
        "since": f.since_ms,
        "until": f.until_ms,
        "previous_since": previous_window(f.since_ms, f.until_ms)[0],
        "status": f.status,
        "sort": f.sort,
        "errors": f.errors,
        "not_counted": box.notes,
        "statuses": box.statuses,
        "count": len(box.rows),
        "page": f.page,
        "page_size": PAGE_SIZE,
        "next": f.url(page=f.page + 1, format="json") if box.has_next else None,
        "issues": [
            _row(row, box.now, newest.get(row.id, []), f.requests_url(row.figures.groups[0]))
            for row in box.page
        ],
    }


def issue(d: IssueDetail) -> dict:
    state = d.state
    return _figures(d.figures, d.now) | {
        "since": d.filters.since_ms,
        "until": d.filters.until_ms,
        "previous_since": previous_window(d.filters.since_ms, d.filters.until_ms)[0],
        "errors": d.filters.errors,
        "not_counted": d.notes,
        "status": d.status.name,
        "status_why": d.status.why or None,
        "decision": {
            "decision": state.decision,
            "resolved_at": state.resolved_at,
            "ignored_at": state.ignored_at,
            "ignore_until": state.ignore_until,
            "ignore_count": state.ignore_count,
        }
        if state
        else None,
        "merged": [{"id": key, "error_stage": g[0], "signature": g[1]} for key, g in d.merged],
        "requests": [
            {"error_stage": g[0], "signature": g[1], "url": url} for g, url in d.requests_links
        ],
        "breakdowns": {
            b.name: {
                "values": [{"value": v, "count": n, "url": url or None} for v, n, url in b.values],
                "more": b.more,
                "problem": b.problem or None,
            }
            for b in d.breakdowns
        },
        "newest_requests": [
            {
                "id": r["id"],
                "started_at": r["started_at"],
                "turn_id": r["turn_id"],
                "turn_url": r["turn_url"],
            }
            for r in d.newest
        ],
        "stack": d.stack,
        "stack_cut": d.stack_cut,
        "history": [
            {
                "action": c.action,
                "detail": c.detail,
                "note": c.note,
                "by": c.by_name,
                "at": c.at,
                "issue": c.issue.issue_id,
            }
            for c in d.history
        ],
    }


def attention(found: Attention) -> dict:
    """The overview's new and regressed issues."""
    return {
        "counts": found.counts,
        "not_counted": found.notes,
        "issues": [
            {
                "id": row.id,
                "url": reverse("issues:issue", args=[row.id]),
                "status": row.status.name,
                "error_stage": row.figures.stage,
                "signature": row.figures.signature,
                "count": row.figures.count,
                "first_seen": row.figures.first_seen,
                "last_seen": row.figures.last_seen,
            }
            for row in found.rows
        ],
    }
