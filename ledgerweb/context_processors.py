from django.conf import settings

from ledgerweb.db import ledger_name


def ledger(request) -> dict:
    """The open ledger's name, shown in every page header. No query: the path or URL says it."""
    return {"ledger_name": ledger_name(settings.LEDGER_DB)}
