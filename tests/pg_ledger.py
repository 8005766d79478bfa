"""PostgreSQL for the tests: a throwaway server, and the ledger on it.

Two uses:
- `postgres_database`, for tests that need a PostgreSQL database of their own (on the run's
  throwaway server, conftest's `postgres` fixture);
- `pytest --ledger-backend=postgres`: every test's ledger is a fresh PostgreSQL database made
  from the DDL in ledgerweb/sql/postgres/ instead of a fresh SQLite file, so the same tests check
  the pages on both backends (make test runs the view, chart, admin, health and importer tests a
  second time this way). The ledger holds what ledger_ship would store from the builders' rows:
  a request PostgreSQL cannot hold with the same meaning (a REAL time, a flag of 2) is left out
  (the builder's `left_out` names it) and the test runs on the rest; a session's such row skips
  the test, since ledger_ship leaves out that whole session.

`make test` installs PostgreSQL's binaries when missing (`make postgres`): without them these
tests fail with that command (tests/postgres_server.py), never skip silently.
"""

from collections.abc import Callable
from itertools import count

import psycopg
import pytest
from postgres_server import PostgresServer

_serial = count()
TEMPLATE = "ledger_template"


def pytest_addoption(parser):
    parser.addoption(
        "--ledger-backend",
        choices=("sqlite", "postgres"),
        default="sqlite",
        help="where each test's ledger lives (default: a SQLite file)",
    )


@pytest.fixture
def postgres_database(postgres) -> str:
    """A new empty database on the run's throwaway server: its postgres:// URL."""
    return postgres.create_database(f"test_{next(_serial)}")


@pytest.fixture
def central(postgres_database, settings):
    """The ledger aliases on a new, empty PostgreSQL database for one test, then back."""
    from builders import use_ledger

    original = settings.LEDGER_DB
    use_ledger(postgres_database)
    yield postgres_database
    use_ledger(original)


# Tests that fail on a PostgreSQL ledger, each with why: marked as expected failures on the
# PostgreSQL pass (strict: one that starts passing fails, so this list stays true).
SETS_JOURNAL_MODE = "the test sets SQLite's journal mode (PRAGMA): PostgreSQL has none"
SQLITE_FILE = "the test checkpoints and hashes the SQLite file"
SQLITE_ERROR = "the test expects SQLite's error (test_postgres_ledger.py checks PostgreSQL's)"
KNOWN_TO_FAIL_ON_POSTGRES = {
    "test_health.py::test_a_ledger_not_in_wal_mode_gets_a_warning": SETS_JOURNAL_MODE,
    "test_overview.py::test_a_ledger_not_in_wal_mode_gets_a_warning": SETS_JOURNAL_MODE,
    "test_overview.py::test_the_ledger_file_is_unchanged_by_browsing": SQLITE_FILE,
    "test_databases.py::test_a_write_through_the_browsing_connection_fails": SQLITE_ERROR,
    "test_databases.py::test_an_accidental_save_of_a_ledger_model_fails": SQLITE_ERROR,
}


# Tests that swap the ledger for a missing SQLite file mid-test: back from SQLite to PostgreSQL,
# the test transaction's teardown still flushes the missing file. Not run on that pass.
MISSING_FILE = "swaps the ledger for a missing SQLite file: not a PostgreSQL case"
# And tests that open the ledger file with sqlite3 (on PostgreSQL they would create one).
OPENS_THE_FILE = "opens the ledger file with sqlite3: not a PostgreSQL case"
NOT_RUN_ON_POSTGRES = dict.fromkeys(
    (
        "test_databases.py::test_a_missing_ledger_file_gives_a_clear_page",
        "test_databases.py::test_healthz_says_unavailable_when_the_ledger_file_is_missing",
        "test_overview.py::test_healthz_says_unavailable_when_the_ledger_does_not_open",
    ),
    MISSING_FILE,
) | dict.fromkeys(
    (
        "test_databases.py::test_migrate_never_creates_a_table_in_the_ledger",
        "test_databases.py::test_migrate_refuses_to_run_on_the_ledger",
    ),
    OPENS_THE_FILE,
)
# A test that replaces the ledger's file; tests about values only SQLite holds: the builders
# leave such requests out of a PostgreSQL ledger, as ledger_ship does (PostgresConnection.fit).
SQLITE_ONLY_VALUES = (
    "about values only SQLite holds (a flag of 2 or 'true', 12.5 tokens): ledger_ship leaves"
    " such requests out of a PostgreSQL ledger"
)
NOT_RUN_ON_POSTGRES |= {
    "test_rollups.py::test_a_ledger_replaced_at_the_same_path_shows_its_own_figures": (
        "replaces the ledger's SQLite file at its path: not a PostgreSQL case"
    ),
    "test_pipeline_charts.py::test_odd_flags_are_counted_and_the_chart_says_where_they_went": (
        SQLITE_ONLY_VALUES
    ),
    "test_pipeline_charts.py::test_the_list_an_unreadable_flag_leads_to_says_what_it_selects": (
        SQLITE_ONLY_VALUES
    ),
    "test_request_page.py::test_a_boolean_column_holding_something_else_shows_it_as_stored": (
        SQLITE_ONLY_VALUES
    ),
    "test_request_page.py::test_the_hooks_card_reads_an_odd_handled_flag_as_the_charts_do": (
        SQLITE_ONLY_VALUES
    ),
    "test_admin.py::test_a_request_whose_boolean_holds_something_else_opens_and_shows_it": (
        SQLITE_ONLY_VALUES
    ),
    "test_live_requests.py::test_a_row_whose_time_is_text_is_neither_counted_nor_inserted_twice": (
        "about a text time, which only SQLite holds (test_pipeline.py's banner runs on both)"
    ),
}
NOT_RUN_ON_POSTGRES |= dict.fromkeys(
    (
        "test_nul_in_values.py::test_a_request_field_holding_a_nul_downloads_whole",
        "test_nul_in_values.py::test_the_request_page_shows_a_field_past_its_nul_and_offers_the_whole",
    ),
    "about a NUL inside a request's text, which only SQLite holds: ledger_ship leaves such"
    " requests out of a PostgreSQL ledger",
)
NOT_RUN_ON_POSTGRES[
    "test_hostile_ledger.py::test_the_odd_id_ledger_is_crawled_link_by_link_and_every_download_is_named_safely"
] = (
    "crawls a SQLite ledger file of its own (ids holding a NUL, which PostgreSQL's text cannot"
    " hold): the SQLite pass runs it"
)
NOT_RUN_ON_POSTGRES |= dict.fromkeys(
    (
        "test_retention.py::test_rows_without_an_id_stay_and_are_counted",
        "test_pipeline_pages.py::test_the_list_twin_answers_a_page_holding_a_request_without_an_id",
    ),
    "a row without an id: PostgreSQL's primary key cannot hold one",
)


def pytest_collection_modifyitems(config, items):
    if config.getoption("--ledger-backend") != "postgres":
        return
    for item in items:
        where = f"{item.path.name}::{item.originalname}"
        if where in KNOWN_TO_FAIL_ON_POSTGRES:
            reason = KNOWN_TO_FAIL_ON_POSTGRES[where]
            item.add_marker(pytest.mark.xfail(reason=reason, strict=True))
        if where in NOT_RUN_ON_POSTGRES:
            item.add_marker(pytest.mark.skip(reason=NOT_RUN_ON_POSTGRES[where]))


class PostgresLedgers:
    """One throwaway server for a whole run; a fresh ledger database per test, copied from a
    template holding the DDL (CREATE DATABASE … TEMPLATE is a file copy: a few ms)."""

    def __init__(self):
        from ledgerweb.pg_schema import create_postgres_ledger

        self.server = PostgresServer().start()
        self.server.create_database(TEMPLATE)
        with self.server.connect(TEMPLATE) as conn:
            create_postgres_ledger(conn)
        self.current: str | None = None

    def fresh(self, template: str = TEMPLATE) -> str:
        """A new ledger database's URL, a copy of `template` (by default: the DDL alone); the
        previous one (this test's or the previous test's) is dropped."""
        name = f"ledger_{next(_serial)}"
        with self.server.connect() as conn:
            if self.current:
                conn.execute(f'DROP DATABASE IF EXISTS "{self.current}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
        self.current = name
        return self.server.url(name)

    def template(self, name: str, fill: Callable[[str], None]) -> str:
        """A template `name` for fresh(): the DDL, then what fill(its URL) writes (once a run:
        copying it for each test is a file copy). fill must close its connections."""
        with self.server.connect() as conn:
            conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{TEMPLATE}"')
        fill(self.server.url(name))
        return name

    def stop(self) -> None:
        self.server.stop()


class PostgresConnection:
    """A psycopg connection that speaks like the builders' sqlite3 one: `?` placeholders (no
    literal `?` in the tests' SQL; `%` is SQL's own, modulo or LIKE), every statement committed
    at once, like the runtime."""

    def __init__(self, url: str):
        self.conn = psycopg.connect(url, autocommit=True)

    def execute(self, sql: str, params=()):
        try:
            return self.conn.execute(placeholders(sql), params)
        # (ProgramLimitExceeded: a key longer than a B-tree entry holds, a 10 kB session id.)
        except (psycopg.DataError, psycopg.errors.ProgramLimitExceeded) as error:
            unstorable(error)

    def fit(self, table: str, row: dict) -> list | None:
        """A row's values as the strict columns hold them (2.0 → 2, 1 → true), as ledger_ship
        stores them; None for a row PostgreSQL cannot hold with the same meaning, which
        ledger_ship leaves out (`refused` says why)."""
        from importers.target import fit_for_postgres
        from ledgerfacts.schema import expected_columns

        types = {column.name: column.type for column in expected_columns()[table]}
        try:
            return [fit_for_postgres(v, types[c], f"{table}.{c}") for c, v in row.items()]
        except ValueError as error:
            self.refused = error
            return None

    def executemany(self, sql: str, rows):
        with self.conn.cursor() as cursor:
            cursor.executemany(placeholders(sql), rows)
            return cursor

    def close(self) -> None:
        self.conn.close()


def placeholders(sql: str) -> str:
    """sqlite3's SQL in psycopg's placeholder style."""
    return sql.replace("%", "%%").replace("?", "%s")


def unstorable(error: Exception, consequence: str = "") -> None:
    """A test of odd data PostgreSQL's typed columns refuse (text in a BIGINT, 2 in a BOOLEAN):
    such a ledger cannot exist there, so the test does not apply; the reason is in the report."""
    pytest.skip(
        f"a PostgreSQL ledger cannot hold this test's data ({consequence}"
        f"{str(error).splitlines()[0]})"
    )
