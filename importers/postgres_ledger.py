"""A PostgreSQL ledger as ledger_import's destination (LEDGER_DB or --ledger postgres://…).

The counterpart of the command's SQLite file: checked to be an Agents Ledger before anything is
written, its tables created when the database is empty (as a missing file is created), and those
tables taken away again when the run wrote nothing, so the database is left as it was found.
The writer (importers/writer.py) writes it through importers/target.py, as ledger_ship does:
values PostgreSQL's typed columns cannot hold unchanged leave their session out, reported.
"""

import psycopg
from django.core.management.base import CommandError

from ledgerfacts import schema
from ledgerweb.pg_schema import create_postgres_ledger, inspect_postgres_ledger, postgres_tables


class PostgresLedger:
    """An open autocommit connection to the ledger database, and what this run created in it."""

    def __init__(self, conn: psycopg.Connection):
        self.conn = conn
        info = conn.info
        # Named as ledgerweb.db.ledger_identity names it: never with the password.
        self.name = f"postgres://{info.user}@{info.host}:{info.port}/{info.dbname}"
        self.created_tables: list[str] = []
        self.created_functions: list[str] = []
        self.mismatches: dict[str, list[str]] = {}

    @classmethod
    def open(cls, url: str) -> "PostgresLedger":
        try:
            conn = psycopg.connect(url, autocommit=True)
        except psycopg.Error as error:
            raise CommandError(f"Cannot connect to the ledger database: {error}") from None
        ledger = cls(conn)
        try:
            ledger._prepare()
        except BaseException:
            conn.close()
            raise
        return ledger

    @property
    def created(self) -> bool:
        return bool(self.created_tables)

    @property
    def what_was_created(self) -> str:
        return f"the ledger's tables in {self.name}"

    @property
    def nothing_created(self) -> str:
        return f"the ledger's tables were not left in {self.name}"

    def _prepare(self) -> None:
        if not postgres_tables(self.conn):
            self._create()
        inspection = inspect_postgres_ledger(self.conn)
        if missing := set(schema.AGENTS_TABLES) - inspection.tables:
            raise CommandError(
                f"{self.name} is not an Agents Ledger (no {', '.join(sorted(missing))} table): "
                "nothing imported"
            )
        self.mismatches = inspection.mismatches

    def _create(self) -> None:
        """The ledger's tables (and the SQLite functions its queries use) in an empty database."""
        functions_before = set(self._functions())
        with self.conn.transaction():
            create_postgres_ledger(self.conn)
        self.created_tables = sorted(postgres_tables(self.conn))
        self.created_functions = [f for f in self._functions() if f not in functions_before]

    def _functions(self) -> list[str]:
        found = self.conn.execute(
            "SELECT oid::regprocedure::text FROM pg_proc"
            " WHERE pronamespace = current_schema()::regnamespace"
        ).fetchall()
        return [signature for (signature,) in found]

    def remove_created(self) -> None:
        """Drop what this run created (the database itself was there before and stays)."""
        with self.conn.transaction():
            for table in self.created_tables:
                self.conn.execute(f'DROP TABLE IF EXISTS "{table}" CASCADE')
            for signature in self.created_functions:
                # CASCADE: the operators functions.sql defines on them go with them.
                self.conn.execute(f"DROP FUNCTION IF EXISTS {signature} CASCADE")

    def close(self, *, discard_created: bool) -> None:
        """Close; with discard_created, first drop what this run created."""
        try:
            if discard_created and self.created:
                self.remove_created()
        finally:
            self.conn.close()
