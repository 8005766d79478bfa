from django.conf import settings


def ledger(request) -> dict:
    """The open ledger's file name, shown in every page header. No query: it is just the path."""
    return {"ledger_name": settings.LEDGER_DB.name}
