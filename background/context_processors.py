"""`background_jobs` for any template: what each background job last did for this ledger. A
function, so a page that does not show it never queries for it (Django calls it when used)."""

from background.runner import statuses


def background(request) -> dict:
    return {"background_jobs": statuses}
