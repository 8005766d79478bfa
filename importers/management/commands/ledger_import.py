"""Import other ledgers and agent transcripts into an Agents Ledger (see importers/)."""

import sqlite3
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from importers import FORMATS, format_module
from importers.bundle import ImportReport, WrongFormat
from importers.postgres_ledger import PostgresLedger
from importers.writer import write
from ledgerfacts import schema
from ledgerweb.db import BUSY_TIMEOUT_S, LEDGER_WRITE, is_postgres_url, ledger_path_of


class Command(BaseCommand):
    help = (
        "Import FORMAT inputs (files or folders) into the configured ledger, or into --ledger "
        "DEST (a SQLite file, created when missing, or a postgres:// URL). Safe to repeat: rows "
        "already there are not added again."
    )

    def add_arguments(self, parser):
        parser.add_argument("format", choices=sorted(FORMATS), help="the format of the inputs")
        parser.add_argument("paths", nargs="+", type=Path, metavar="PATH")
        parser.add_argument(
            "--ledger",
            help="the ledger to write: a SQLite file (created when missing) or a postgres:// URL "
            "(its tables created in an empty database); default: the configured LEDGER_DB",
        )

    def handle(self, *args, format: str, paths: list[Path], ledger: str | None, **options):
        paths = [path.expanduser() for path in paths]
        if missing := [str(path) for path in paths if not path.exists()]:
            raise CommandError(f"No such file or folder: {', '.join(missing)}")
        destination = self._destination(ledger)
        for table, problems in destination.mismatches.items():
            self.stdout.write(
                self.style.WARNING(f"{table} differs from the schema: " + "; ".join(problems))
            )
        module = format_module(format)
        report = ImportReport()
        try:
            for path in paths:
                self._import_one(module, path, destination.conn, report)
        finally:
            # A new ledger with nothing in it would only be a surprise later (also after an
            # interruption; one with sessions in it stays: a rerun adds the rest).
            destination.close(discard_created=not report.wrote_anything)
        self._write_summary(format, destination, report)
        if problems := report.left_out(format):
            # Exit non-zero so that cron (or a script) notices what did not come in.
            raise CommandError("; ".join(problems) + " (see above)")

    def _write_summary(self, format: str, destination, report: ImportReport):
        if destination.created and not report.wrote_anything:
            self.stdout.write(f"Nothing imported: {destination.nothing_created}")
        else:
            if destination.created:
                self.stdout.write(f"Created {destination.what_was_created}")
            self.stdout.write(f"Imported {format} into {destination.name}")
        self.stdout.write(f"sessions added: {report.added['sessions']}")
        for line in report.summary_lines():
            self.stdout.write(line)

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

    def _destination(self, ledger: str | None) -> "_FileLedger | PostgresLedger":
        """The ledger to write: --ledger (a file, created when missing, or a postgres:// URL),
        else the configured LEDGER_DB."""
        if ledger is None and is_postgres_url(settings.LEDGER_DB):
            return PostgresLedger.open(settings.LEDGER_DB)
        if ledger is not None and is_postgres_url(ledger):
            return PostgresLedger.open(ledger)
        if ledger is None:
            path = ledger_path_of(LEDGER_WRITE)
            if not path.exists():
                raise CommandError(
                    f"The configured ledger {path} does not exist: create it with "
                    "'manage.py ledger_init PATH' or pass --ledger PATH"
                )
            return _FileLedger.open(path, None)
        path = Path(ledger).expanduser()
        created = None
        if not path.exists() or path.stat().st_size == 0:
            created = _NewLedger.create(path)
        return _FileLedger.open(path, created)


class _FileLedger:
    """A SQLite ledger file as the destination: checked, and opened for the writer."""

    def __init__(self, path: Path, created: "_NewLedger | None", mismatches: dict):
        self.path = path
        self.name = str(path)
        self.new = created
        self.created = created is not None
        self.mismatches = mismatches
        self.conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None)

    @classmethod
    def open(cls, path: Path, created: "_NewLedger | None") -> "_FileLedger":
        try:
            mismatches = cls._check_is_agents_ledger(path)
        except CommandError:
            if created:
                created.remove()
            raise
        return cls(path, created, mismatches)

    @staticmethod
    def _check_is_agents_ledger(path: Path) -> dict[str, list[str]]:
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
        return inspection.mismatches

    @property
    def what_was_created(self) -> str:
        return f"a new ledger at {self.name}"

    @property
    def nothing_created(self) -> str:
        return f"no ledger was created at {self.name}"

    def close(self, *, discard_created: bool) -> None:
        """Close; with discard_created, take away the file (and folders) this run created."""
        self.conn.close()
        if discard_created and self.new:
            self.new.remove()


class _NewLedger:
    """A ledger file this run created (with any folders it needed), so that a run that writes
    nothing can take it away again and leave the disk as it found it."""

    def __init__(self, path: Path, folders: list[Path], was_empty_file: bool):
        self.path = path
        self.folders = folders  # created, innermost first
        self.was_empty_file = was_empty_file  # given as an empty file: emptied again, not deleted

    @classmethod
    def create(cls, path: Path) -> "_NewLedger":
        missing = [p for p in path.parents if not p.exists()]
        if any(p.exists() and not p.is_dir() for p in path.parents):
            raise CommandError(f"{path.parent} is not a folder")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise CommandError(f"Cannot create the folder {path.parent}: {error}") from None
        was_empty_file = path.exists()
        schema.create_ledger(path)
        return cls(path, missing, was_empty_file)

    def remove(self) -> None:
        for suffix in ("-wal", "-shm", "-journal"):
            Path(f"{self.path}{suffix}").unlink(missing_ok=True)
        if self.was_empty_file:
            self.path.write_bytes(b"")
        else:
            self.path.unlink(missing_ok=True)
        for folder in self.folders:
            try:
                folder.rmdir()
            except OSError:
                break  # something else is in it now
