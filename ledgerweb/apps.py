from django.apps import AppConfig
from django.contrib.admin import apps as admin_apps


class LedgerwebConfig(AppConfig):
    name = "ledgerweb"
    verbose_name = "ledgerweb"

    def ready(self) -> None:
        # Connect the ledger time limit, and the check for a ledger file replaced at its path.
        from ledgerweb import replaced, sqlite  # noqa: F401


class LedgerAdminConfig(admin_apps.AdminConfig):
    """Django's admin with ledgerweb's site, which lets operators and admins in by role."""

    default = False  # named in INSTALLED_APPS; LedgerwebConfig stays this module's default
    default_site = "ledgerweb.admin_site.LedgerAdminSite"
