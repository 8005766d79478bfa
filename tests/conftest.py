"""Test ledgers are built from the DDL files (never from the models), one fresh file per test.

Before each test's fixtures run, the `ledger` and `ledger_write` aliases are pointed at a new copy
of an empty ledger, so a test sees only the rows its own builder wrote. The builder writes through
a plain sqlite3 connection that commits at once, the way the agent runtime writes: the read-only
alias sees those rows as a reader next to a live writer would.

Within one test the read-only alias sits in the test's transaction: its snapshot starts at its
first query, so a test builds all its rows before its first request.
"""

import os
import shutil
import sqlite3
import tempfile
from itertools import count
from pathlib import Path

import pytest
from builders import LedgerBuilder, use_ledger
from django.test import TestCase
from pg_ledger import (  # noqa: F401 - the --ledger-backend fixtures
    PostgresLedgers,
    central,
    postgres_database,
    pytest_collection_modifyitems,
)
from pg_ledger import pytest_addoption as add_ledger_backend_option
from postgres_server import PostgresServer

from ledgerfacts import schema
from ledgerweb import state_db
from ledgerweb.db import LEDGER_ALIASES


def pytest_addoption(parser):
    add_ledger_backend_option(parser)
    parser.addoption(
        "--django-db",
        choices=("sqlite", "postgres"),
        default=os.getenv("LEDGERWEB_TEST_DJANGO_DB", "sqlite"),
        help="ledgerweb's own database in the tests: a SQLite file (default) or a throwaway "
        "PostgreSQL started for the run (env LEDGERWEB_TEST_DJANGO_DB). The ledger stays SQLite.",
    )


def pytest_configure(config):
    if config.getoption("--django-db") == "postgres":
        config.stash[_state_postgres_key] = use_throwaway_postgres()
    if config.getoption("--ledger-backend") == "postgres":
        config.stash[_postgres_key] = PostgresLedgers()
    folder = Path(tempfile.mkdtemp(prefix="ledgerweb-tests-"))
    template = folder / "template.sqlite3"
    schema.create_ledger(template)
    with sqlite3.connect(template) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # one self-contained file to copy
    config.stash[_folder_key] = folder


def pytest_unconfigure(config):
    for key in (_postgres_key, _state_postgres_key):
        if key in config.stash:
            config.stash[key].stop()
    shutil.rmtree(config.stash[_folder_key], ignore_errors=True)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item):
    # Runs before the test's fixtures, so before pytest-django opens its transactions.
    folder = item.config.stash[_folder_key]
    path = folder / f"ledger-{next(_serial)}.sqlite3"
    shutil.copyfile(folder / "template.sqlite3", path)
    if _postgres_key in item.config.stash:
        use_ledger(item.config.stash[_postgres_key].fresh())
    else:
        use_ledger(path)
    return (yield)


_folder_key = pytest.StashKey[Path]()
_postgres_key = pytest.StashKey[PostgresLedgers]()
_state_postgres_key = pytest.StashKey[PostgresServer]()


def use_throwaway_postgres() -> PostgresServer:
    """Start a PostgreSQL for this run and make it Django's default database (pytest-django
    creates its test database there). Runs before any connection is opened."""
    from django.conf import settings
    from django.db import connections

    server = PostgresServer().start()
    settings.DATABASES["default"].clear()
    settings.DATABASES["default"].update(state_db.postgres_database(server.url("ledgerweb")))
    settings.DATABASES["default"]["TEST"] = {"NAME": "ledgerweb_test"}
    connections.configure_settings(settings.DATABASES)  # fills in the defaults again
    del connections["default"]  # built with the SQLite settings if anything touched it
    return server


_serial = count()


# Django's TestCase checks foreign keys when a test ends. A ledger's references are dangling by
# design (events live in another ledger, sessions and turns point at each other), so skip it there.
_should_check_constraints = TestCase._should_check_constraints


def _check_constraints_outside_the_ledger(self, connection) -> bool:
    return connection.alias not in LEDGER_ALIASES and _should_check_constraints(self, connection)


TestCase._should_check_constraints = _check_constraints_outside_the_ledger


@pytest.fixture(scope="session")
def django_db_setup(django_test_environment, django_db_blocker):
    """Create only Django's own test database: the ledger aliases are never set up or migrated."""
    from django.test.utils import setup_databases, teardown_databases

    with django_db_blocker.unblock():
        old_config = setup_databases(verbosity=0, interactive=False, aliases={"default"})
    yield
    with django_db_blocker.unblock():
        teardown_databases(old_config, verbosity=0)


@pytest.fixture(scope="session")
def postgres(request) -> PostgresServer:
    """A throwaway PostgreSQL for tests that need one: the run's own with --django-db=postgres,
    else one started for the session (a few seconds) and stopped at its end."""
    if _state_postgres_key in request.config.stash:
        return request.config.stash[_state_postgres_key]
    server = PostgresServer().start()
    request.addfinalizer(server.stop)
    return server


@pytest.fixture(scope="session")
def postgres_ledgers(request) -> PostgresLedgers:
    """The server of the PostgreSQL pass's ledgers (pytest --ledger-backend=postgres)."""
    return request.config.stash[_postgres_key]


@pytest.fixture(autouse=True)
def _forget_linked_values():
    """Each test's database starts empty: the keys a process remembers writing
    (ledgerweb/long_values.py) must not outlive the test that wrote them."""
    from ledgerweb import long_values

    long_values._known.clear()


@pytest.fixture
def ledger() -> LedgerBuilder:
    """The current test's ledger (file or PostgreSQL database), with builders for its rows."""
    from django.conf import settings

    builder = LedgerBuilder(settings.LEDGER_DB)
    yield builder
    builder.conn.close()


# -- Named personas ------------------------------------------------------------------------------


def _member_of(django_user_model, username: str, role: str, **flags):
    from django.contrib.auth.models import Group, Permission

    from ledgerweb.roles import sync_roles

    sync_roles(Group, Permission)  # a transactional test may have flushed the migration's groups
    user = django_user_model.objects.create_user(username=username, password="pw", **flags)
    user.groups.add(Group.objects.get(name=role))
    return user


@pytest.fixture
def viewer(django_user_model):
    return _member_of(django_user_model, "vera", "viewer")


@pytest.fixture
def operator(django_user_model):
    # As the README describes one: in the operator group, nothing more (no staff flag).
    return _member_of(django_user_model, "otto", "operator")


@pytest.fixture
def admin_by_role(django_user_model):
    """An admin as the README describes one: in the admin group, neither staff nor superuser."""
    return _member_of(django_user_model, "adele", "admin")


@pytest.fixture
def admin_user(django_user_model):
    return _member_of(django_user_model, "ada", "admin", is_staff=True, is_superuser=True)


@pytest.fixture
def viewer_client(client, viewer):
    client.force_login(viewer)
    return client
