"""Import other ledgers and agent transcripts into an Agents Ledger (see importers/)."""

import sqlite3
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from importers import FORMATS, format_module
from importers.bundle import ImportReport, WrongFormat
from importers.writer import write
from ledgerweb import schema
from ledgerweb.db import BUSY_TIMEOUT_S, LEDGER_WRITE, ledger_path_of


class Command(BaseCommand):
    help = (
        "Import FORMAT inputs (files or folders) into the configured ledger, or into --ledger "
        "DEST (created when missing). Safe to repeat: rows already there are not added again."
    )

    def add_arguments(self, parser):
        parser.add_argument("format", choices=sorted(FORMATS), help="the format of the inputs")
        parser.add_argument("paths", nargs="+", type=Path, metavar="PATH")
        parser.add_argument(
            "--ledger",
            type=Path,
            help="the ledger to write (default: the configured LEDGER_DB); created when missing",
        )

    def handle(self, *args, format: str, paths: list[Path], ledger: Path | None, **options):
        paths = [path.expanduser() for path in paths]
        if missing := [str(path) for path in paths if not path.exists()]:
            raise CommandError(f"No such file or folder: {', '.join(missing)}")
        destination = self._destination(ledger)
        module = format_module(format)
        report = ImportReport()
        conn = sqlite3.connect(destination, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        try:
            for path in paths:
                self._import_one(module, path, conn, report)
        finally:
            conn.close()

        self.stdout.write(f"Imported {format} into {destination}")
        self.stdout.write(f"sessions written: {report.sessions_written}")
        for line in report.summary_lines():
            self.stdout.write(line)
        if report.wrong_formats:
            raise CommandError(
                f"{len(report.wrong_formats)} input(s) refused: not {format} (see 'Refused' above)"
            )

    def _import_one(self, module, path: Path, conn, report: ImportReport) -> None:
        # A wrong-format input is refused on its own; the other inputs are still imported.
        bundles = module.read([path], report)
        progress = tqdm(bundles, desc=path.name, unit=" sessions", disable=None)
        try:
            for bundle in progress:
                write(conn, bundle, report)
                progress.set_postfix(turns=report.added["turns"], refresh=False)
        except WrongFormat as error:
            report.wrong_format(str(path), str(error))
        finally:
            progress.close()

    def _destination(self, ledger: Path | None) -> Path:
        if ledger is None:
            path = ledger_path_of(LEDGER_WRITE)
            if not path.exists():
                raise CommandError(
                    f"The configured ledger {path} does not exist: create it with "
                    "'manage.py ledger_init PATH' or pass --ledger PATH"
                )
        else:
            path = ledger.expanduser()
            if not path.parent.is_dir():
                raise CommandError(f"{path.parent} is not a folder")
            if not path.exists() or path.stat().st_size == 0:
                schema.create_ledger(path)
                self.stdout.write(f"Created a new ledger at {path}")
        self._check_is_agents_ledger(path)
        return path

    def _check_is_agents_ledger(self, path: Path) -> None:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            inspection = schema.inspect_ledger(conn)
        except sqlite3.DatabaseError as error:
            raise CommandError(f"{path} is not a SQLite database ({error})") from None
        finally:
            conn.close()
        missing = set(schema.AGENTS_TABLES) - inspection.tables
        if missing:
            raise CommandError(
                f"{path} is not an Agents Ledger (no {', '.join(sorted(missing))} table): "
                "nothing imported"
            )
        for table, problems in inspection.mismatches.items():
            self.stdout.write(
                self.style.WARNING(f"{table} differs from the schema: " + "; ".join(problems))
            )
