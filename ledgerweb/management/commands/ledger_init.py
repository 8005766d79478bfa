"""Create a new ledger file from the DDL, or report what an existing file holds."""

import sqlite3
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from ledgerfacts import schema


class Command(BaseCommand):
    help = (
        "Create a new ledger (Agents Ledger, Nexus Ledger and compactions tables, WAL mode) at "
        "PATH. On a file that already has tables, add nothing and report what it holds."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", type=Path)

    def handle(self, *args, path: Path, **options):
        path = path.expanduser()
        if not path.parent.is_dir():
            raise CommandError(f"{path.parent} is not a folder")
        if path.exists() and path.stat().st_size > 0:
            self._report_existing(path)
            return
        schema.create_ledger(path)
        self.stdout.write(self.style.SUCCESS(f"Created a new ledger at {path} (WAL mode)"))
        self.stdout.write("Tables: " + ", ".join(schema.LEDGER_TABLES))

    def _report_existing(self, path: Path) -> None:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            inspection = schema.inspect_ledger(conn)
            journal = conn.execute("PRAGMA journal_mode").fetchone()[0]
        except sqlite3.DatabaseError as error:
            raise CommandError(f"{path} is not a SQLite database ({error})") from None
        finally:
            conn.close()

        if not inspection.tables:
            raise CommandError(
                f"{path} exists but holds no table; remove it or choose another path"
            )
        if not inspection.is_ledger:
            raise CommandError(
                f"{path} has tables ({', '.join(sorted(inspection.other_tables))}) but none of "
                f"the ledger's ({', '.join(schema.LEDGER_TABLES)}): it is not a ledger. "
                "Nothing changed."
            )
        self.stdout.write(f"{path} already has tables: nothing added.")
        self.stdout.write("Ledger tables: " + ", ".join(sorted(inspection.ledger_tables)))
        if inspection.missing_tables:
            self.stdout.write("Missing: " + ", ".join(sorted(inspection.missing_tables)))
        if inspection.other_tables:
            self.stdout.write("Other tables: " + ", ".join(sorted(inspection.other_tables)))
        for table, problems in inspection.mismatches.items():
            self.stdout.write(
                self.style.WARNING(f"{table} differs from the schema: " + "; ".join(problems))
            )
        if journal.lower() != "wal":
            self.stdout.write(
                self.style.WARNING(
                    f"Journal mode is {journal}, not WAL: a live writer will block readers."
                )
            )
