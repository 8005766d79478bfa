"""ledgerweb's own database: DJANGO_DB is a SQLite file's path or a PostgreSQL URL."""

import subprocess
import sys

import pytest
from test_settings import PROJECT, environment, load_settings

SHOW_DEFAULT = (
    "import django; django.setup(); from django.conf import settings as s; "
    "d = s.DATABASES['default']; print(d['ENGINE'], d['NAME'], d['HOST'] or '-', "
    "d['CONN_MAX_AGE'], d['OPTIONS'])"
)


def default_database(**env) -> subprocess.CompletedProcess:
    clean = environment(DJANGO_SETTINGS_MODULE="ledgerweb.settings", DEBUG="1", **env)
    return subprocess.run(
        [sys.executable, "-c", SHOW_DEFAULT], cwd=PROJECT, env=clean, capture_output=True,
        text=True,
    )  # fmt: skip


def test_a_postgres_url_makes_postgresql_ledgerwebs_own_database():
    result = default_database(DJANGO_DB="postgres://web:pw@db.example.org:5432/ledgerweb")
    assert result.returncode == 0, result.stderr
    engine, name, host, max_age, options = result.stdout.split(" ", 4)
    assert (engine, name, host, max_age) == (
        "django.db.backends.postgresql", "ledgerweb", "db.example.org", "60",
    )  # fmt: skip
    # A runaway statement ends like a ledger query on SQLite, and a lock is waited for briefly.
    assert "statement_timeout=10000" in options and "lock_timeout=5000" in options
    # Short queries: no JIT compiling hundreds of ms before one (ledgerweb.db.JIT_OFF).
    assert "-c jit=off" in options


def test_options_in_the_url_are_kept_beside_the_time_limits():
    result = default_database(
        DJANGO_DB="postgres://web@db.example.org/lw?sslmode=require&options=-c%20search_path%3Dweb"
    )
    assert result.returncode == 0, result.stderr
    assert "'sslmode': 'require'" in result.stdout
    # The URL's options come after the limits, so that a URL can lift them.
    assert "-c lock_timeout=5000 -c search_path=web" in result.stdout


def test_a_sqlite_path_keeps_its_sqlite_options(tmp_path):
    result = default_database(DJANGO_DB=str(tmp_path / "state.sqlite3"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"django.db.backends.sqlite3 {tmp_path / 'state.sqlite3'} - 60")
    assert "'transaction_mode': 'IMMEDIATE'" in result.stdout


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("mysql://web@db/lw", "a URL must name PostgreSQL"),
        ("postgres://web@db:port/lw", "is not a usable database URL"),
        ("nosuch://web@db/lw", "is not a usable database URL"),
    ],
)
def test_a_url_ledgerweb_cannot_use_stops_the_start_with_its_name(url, message):
    result = load_settings(DEBUG="1", DJANGO_DB=url)
    assert result.returncode != 0
    assert "DJANGO_DB=" in result.stderr and message in result.stderr


def test_production_settings_on_postgresql_pass_the_deployment_checks(postgres):
    url = postgres.create_database("deploy_checks")
    env = environment(SECRET_KEY="a-long-random-looking-key-" + "k7Q2x9Lm" * 6, DJANGO_DB=url)
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--database", "default",
         "--fail-level", "WARNING"],
        cwd=PROJECT, env=env, capture_output=True, text=True,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr + result.stdout
    assert "no issues" in result.stdout


@pytest.mark.django_db
def test_the_tests_run_on_the_database_they_were_asked_for(request):
    from django.db import connection

    asked = request.config.getoption("--django-db")
    assert connection.vendor == {"sqlite": "sqlite", "postgres": "postgresql"}[asked]
