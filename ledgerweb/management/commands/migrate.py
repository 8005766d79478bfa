"""Django's migrate, refusing the ledger aliases.

The router already keeps every model out of the ledger, but Django's migration recorder still
creates its django_migrations table in whatever database migrate is pointed at. The ledger
belongs to the agent runtime, so migrate must not open it at all.
"""

from django.core.management.base import CommandError
from django.core.management.commands.migrate import Command as DjangoMigrate

from ledgerweb.db import LEDGER_ALIASES


class Command(DjangoMigrate):
    def handle(self, *args, **options):
        if options["database"] in LEDGER_ALIASES:
            raise CommandError(
                f"{options['database']!r} is the agents' ledger: ledgerweb never migrates it. "
                "Its schema is created by the agent runtime (or `manage.py ledger_init`)."
            )
        return super().handle(*args, **options)
