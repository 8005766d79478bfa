"""Copy this host's SQLite ledger into a central PostgreSQL ledger (see importers/ship.py)."""

import socket
from pathlib import Path

import psycopg
from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from importers.bundle import ImportReport
from importers.ship import LOCK_WAIT_S, SourceLocked, ship
from ledgerweb.db import is_postgres_url


class Command(BaseCommand):
    help = (
        "Ship SRC (this host's SQLite ledger) into the central PostgreSQL ledger --to URL: only "
        "what is new or changed since the last run. Safe to repeat, to kill and to run next to "
        "the live runtime (run it from cron)."
    )

    def add_arguments(self, parser):
        parser.add_argument("source", type=Path, metavar="SRC", help="the SQLite ledger to ship")
        parser.add_argument(
            "--to", required=True, metavar="URL", help="the central ledger: postgres://…"
        )
        parser.add_argument(
            "--host",
            default=socket.gethostname(),
            help="this host's name in the central ledger (default: the hostname)",
        )
        parser.add_argument(
            "--full",
            action="store_true",
            help="look at every row again, not only what changed since the last run",
        )
        parser.add_argument(
            "--wait",
            type=float,
            default=LOCK_WAIT_S,
            metavar="SECONDS",
            help="how long to wait when the runtime holds its lock on SRC (a rollback-journal "
            f"ledger's writer keeps readers out while it commits); default {LOCK_WAIT_S} s",
        )

    def handle(self, *args, source: Path, to: str, host: str, full: bool, wait: float, **options):
        source = source.expanduser()
        if not source.is_file():
            raise CommandError(f"No such ledger file: {source}")
        if not is_postgres_url(to):
            raise CommandError(f"--to must be a postgres:// URL, not {to!r}")
        try:
            central = psycopg.connect(to, autocommit=True)
        except psycopg.Error as error:
            raise CommandError(f"Cannot connect to the central ledger: {error}") from None
        report = ImportReport()
        try:
            result = ship(
                source, central, host, report,
                full=full, progress=self._progress, wait_s=wait, notify=self._notify,
            )  # fmt: skip
        except psycopg.Error as error:
            raise CommandError(f"The central ledger refused: {error}") from None
        except SourceLocked as error:
            self._stopped(report, str(error))
        finally:
            central.close()
        self._summary(source, host, result, report)
        if problems := report.left_out("a ledger"):
            raise CommandError("; ".join(problems) + " (see above)")

    def _progress(self, items, unit: str):
        return tqdm(items, unit=f" {unit}", disable=None, file=self.stderr)

    def _notify(self, message: str) -> None:
        tqdm.write(message, file=self.stderr)  # above the progress bar, not through it

    def _summary(self, source: Path, host: str, result, report: ImportReport) -> None:
        if result.created_schema:
            self.stdout.write("Created the ledger's tables in the central database")
        retried = f", {result.retried} of them left out before" if result.retried else ""
        self.stdout.write(
            f"Shipped {source} from {host}: {result.sessions} session(s) and "
            f"{result.requests} request(s) looked at{retried}"
        )
        if result.waited_s >= 1:
            self.stdout.write(f"Waited {result.waited_s:.0f} s for the runtime's lock on {source}")
        for line in report.summary_lines():
            self.stdout.write(line)

    def _stopped(self, report: ImportReport, why: str) -> None:
        """A run the runtime's lock stopped: what it wrote stays, and the next run goes on."""
        self.stdout.write(f"Stopped: {why}. What was written so far:")
        for line in report.summary_lines():
            self.stdout.write(line)
        raise CommandError(
            f"{why}: stopped before the end; nothing written is lost and the next run ships "
            "the rest (--wait SECONDS waits longer)"
        )
