"""A throwaway PostgreSQL for the tests that need one, started once per test run.

Import the fixtures into a test module (`from pg_ledger import postgres_server`). A machine
without PostgreSQL binaries skips those tests with the command that installs them.
"""

from itertools import count

import pytest
from postgres_server import PostgresServer, postgres_bin

_serial = count()


@pytest.fixture(scope="session")
def postgres_server():
    if postgres_bin() is None:
        pytest.skip("no PostgreSQL binaries: run `make postgres`")
    with PostgresServer() as server:
        yield server


@pytest.fixture
def postgres_database(postgres_server) -> str:
    """A new empty database on the throwaway server: its postgres:// URL."""
    return postgres_server.create_database(f"test_{next(_serial)}")
