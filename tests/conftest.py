"""Test ledgers are built from the DDL files (never from the models), one fresh file per test.

Before each test's fixtures run, the `ledger` and `ledger_write` aliases are pointed at a new copy
of an empty ledger, so a test sees only the rows its own builder wrote. The builder writes through
a plain sqlite3 connection that commits at once, the way the agent runtime writes: the read-only
alias sees those rows as a reader next to a live writer would.

Within one test the read-only alias sits in the test's transaction: its snapshot starts at its
first query, so a test builds all its rows before its first request.
"""

import shutil
import sqlite3
import tempfile
from itertools import count
from pathlib import Path

import pytest
from builders import LedgerBuilder, use_ledger
from django.test import TestCase
from pg_ledger import (  # noqa: F401 - the --ledger-backend option and the fixtures
    PostgresLedgers,
    postgres_database,
    postgres_server,
    pytest_addoption,
    pytest_collection_modifyitems,
)

from ledgerweb import schema
from ledgerweb.db import LEDGER_ALIASES


def pytest_configure(config):
    if config.getoption("--ledger-backend") == "postgres":
        config.stash[_postgres_key] = PostgresLedgers()
    folder = Path(tempfile.mkdtemp(prefix="ledgerweb-tests-"))
    template = folder / "template.sqlite3"
    schema.create_ledger(template)
    with sqlite3.connect(template) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # one self-contained file to copy
    config.stash[_folder_key] = folder


def pytest_unconfigure(config):
    if _postgres_key in config.stash:
        config.stash[_postgres_key].stop()
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
    return _member_of(django_user_model, "otto", "operator", is_staff=True)


@pytest.fixture
def admin_user(django_user_model):
    return _member_of(django_user_model, "ada", "admin", is_staff=True, is_superuser=True)


@pytest.fixture
def viewer_client(client, viewer):
    client.force_login(viewer)
    return client
