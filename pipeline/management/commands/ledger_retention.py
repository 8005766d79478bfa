"""Apply the Nexus Ledger's retention policy (see pipeline/retention.py)."""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from ledgerweb.db import LEDGER_WRITE, is_postgres_url, ledger_connectable, ledger_place
from pipeline.retention import apply_retention


class Command(BaseCommand):
    help = (
        "Drop request snapshots of nexus_requests older than --snapshot-days, and move rows "
        "older than --delete-days to an archive ledger (--archive-to: a SQLite file, or for a "
        "PostgreSQL ledger also a postgres:// URL). Never touches the Agents Ledger; without an "
        "archive nothing is removed."
    )

    def add_arguments(self, parser):
        parser.add_argument("--dry-run", action="store_true", help="say what would be done")
        parser.add_argument("--snapshot-days", type=int, default=7)
        parser.add_argument("--delete-days", type=int, default=30)
        parser.add_argument("--archive-to", type=archive_location, default=None, metavar="PATH|URL")
        parser.add_argument("--batch", type=int, default=5_000, help="rows per transaction")

    def handle(self, *args, **options):
        if options["batch"] < 1 or options["snapshot_days"] < 0:
            raise CommandError("--batch must be at least 1 and the ages not negative")
        try:
            report = apply_retention(
                ledger_connectable(LEDGER_WRITE),
                snapshot_days=options["snapshot_days"],
                delete_days=options["delete_days"],
                archive=options["archive_to"],
                batch=options["batch"],
                dry_run=options["dry_run"],
            )
        except ValueError as error:
            raise CommandError(str(error)) from None
        dry_run = " (dry run)" if options["dry_run"] else ""
        self.stdout.write(f"Retention on {ledger_place(LEDGER_WRITE)}{dry_run}")
        for line in report.lines():
            style = self.style.WARNING if line.startswith("kept") else str
            self.stdout.write(style(line))


def archive_location(raw: str) -> Path | str:
    """--archive-to: a PostgreSQL URL as given, anything else a file's path."""
    return raw if is_postgres_url(raw) else Path(raw)
