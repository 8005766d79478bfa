"""The JSON twin of the search page (ledgerweb.http.respond picks the one asked for)."""


def search(ctx: dict) -> dict:
    """What the results page shows: the query, the ids it names, the hits by session."""
    form = ctx["form"]
    page = ctx.get("page")
    notes = ctx.get("notes")
    return {
        "notes": None
        if notes is None
        else {
            "more": notes.more,
            "scanned": notes.scanned,
            "scan_capped": notes.scan_capped,
            "hits": [
                {
                    "user": n.user,
                    "session_id": n.session_id,
                    "turn_id": n.turn_id or None,
                    "updated_at": n.updated_at,
                    "snippet": str(n.snippet),
                    "url": n.url,
                }
                for n in notes.hits
            ],
        },
        # A query of marks alone (label:… thumb:…): the turns so marked.
        "marked": ctx.get("marked"),
        # With an annotation filter the matches are not counted ahead (search/views.py).
        "counted": not ctx.get("uncounted", False),
        "query": form.as_query(),
        "errors": form.errors,
        "query_error": ctx.get("query_error"),
        "ids": [
            {"kind": j.kind, "id": j.item_id, "url": j.url, "detail": j.detail}
            for j in ctx["jumps"]
        ],
        "index": {
            "caught_up_at": ctx["caught_up_at"],
            "not_yet_indexed": ctx["backlog"],
            # Values over 64 KB whose later chunks are still being indexed.
            "values_still_indexing": ctx.get("pending_values", 0),
            # Why nothing can be searched, when so (search.indexer.RowidsMissing).
            "unavailable": str(ctx["unindexable"]) if ctx.get("unindexable") else None,
        },
        "count": ctx.get("total"),
        "count_capped": ctx.get("total_capped", False),
        "count_is_upper_bound": ctx.get("total_at_most", False),
        "phrase_checked": page.checked if page else 0,
        "phrase_check_capped": page.check_capped if page else False,
        "next": page.next_cursor if page else None,
        "groups": [
            {
                "session_id": g.session_id,
                "label": g.label,
                "persona": g.persona,
                "hits": [
                    {
                        "kind": h.kind,
                        "id": h.item_id,
                        "fields": h.fields,
                        "turn_id": h.turn_id,
                        "status": h.status,
                        "turn_status": h.turn_status,
                        "at": h.at,
                        "snippet": str(h.snippet),
                        "url": h.url,
                    }
                    for h in g.hits
                ],
            }
            for g in (page.groups if page else [])
        ],
    }
