"""The overview page's JSON twin: the same figures as the page, for scripts."""

from issues.json_twins import attention as issues_json


def overview(summary, staff: bool, attention=None) -> dict:
    """The overview page's numbers; the ledger's path for staff only, as on the page."""
    return {
        "issues": issues_json(attention) if attention is not None else None,
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
        # The dashboard's "24h" window the figures above and the 24 h cost count: [since, until).
        "last_24h_window": dict(zip(("since", "until"), summary.last_day_window, strict=True)),
        "cost": {window: total.as_json() for window, total in summary.costs.items()},
        "cost_not_counted": summary.cost_notes,
        "latest_sessions": summary.latest_sessions,
        "latest_requests": summary.latest_requests,
        # Rows dated after now, or in text, which the latest lists leave out.
        "not_listed_as_latest": {table: n.value for table, n in summary.not_latest.items()},
    }
