from django.apps import AppConfig


class LedgerwebConfig(AppConfig):
    name = "ledgerweb"
    verbose_name = "ledgerweb"

    def ready(self) -> None:
        # Connect the ledger time limit, and the check for a ledger file replaced at its path.
        from ledgerweb import replaced, sqlite  # noqa: F401
