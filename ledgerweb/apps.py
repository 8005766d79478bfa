from django.apps import AppConfig


class LedgerwebConfig(AppConfig):
    name = "ledgerweb"
    verbose_name = "ledgerweb"

    def ready(self) -> None:
        from ledgerweb import sqlite  # noqa: F401  (connects the ledger time limit)
