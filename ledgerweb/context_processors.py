from django.conf import settings

from ledgerweb.db import ledger_name
from ledgerweb.roles import may_see_health, may_use_admin_site


def ledger(request) -> dict:
    """The open ledger's name, shown in every page header (no query: the path or URL says it),
    and which of the role-bound areas the header links (the user's permissions, cached)."""
    user = getattr(request, "user", None)
    signed_in = user is not None and user.is_authenticated
    return {
        "ledger_name": ledger_name(settings.LEDGER_DB),
        "may_see_health": signed_in and may_see_health(user),
        "may_use_admin_site": signed_in and may_use_admin_site(user),
    }
