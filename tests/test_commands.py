"""ledger_init creates ledgers and never alters an existing file; demo_admin creates one admin."""

import sqlite3
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from ledgerfacts import schema


def run(*args) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def tables_and_indexes(path) -> set[tuple[str, str]]:
    with sqlite3.connect(path) as conn:
        return set(
            conn.execute("SELECT type, name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'")
        )


def test_ledger_init_creates_every_table_and_index_in_wal_mode(tmp_path):
    path = tmp_path / "new.sqlite3"
    assert "Created a new ledger" in run("ledger_init", str(path))
    created = tables_and_indexes(path)
    assert {name for kind, name in created if kind == "table"} == set(schema.LEDGER_TABLES)
    assert len([name for kind, name in created if kind == "index"]) == 17  # the seeds' 16 and ours
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert schema.inspect_ledger(conn).mismatches == {}


def test_ledger_init_on_an_existing_ledger_adds_nothing_and_says_what_it_found(tmp_path):
    path = tmp_path / "agents-only.sqlite3"
    with sqlite3.connect(path) as conn:
        conn.executescript(schema.ddl(("agents_ledger.sql",)))
    before = tables_and_indexes(path)
    report = run("ledger_init", str(path))
    assert tables_and_indexes(path) == before
    assert "already has tables: nothing added" in report
    assert "Ledger tables: messages, sessions, tool_calls, turns" in report
    assert "Missing: nexus_requests" in report
    assert "not WAL" in report


def test_ledger_init_reports_columns_that_differ_from_the_schema(tmp_path):
    path = tmp_path / "drifted.sqlite3"
    with sqlite3.connect(path) as conn:
        conn.executescript(schema.ddl())
        conn.execute("ALTER TABLE nexus_requests ADD COLUMN region TEXT")
    assert "nexus_requests differs from the schema: extra column region" in run(
        "ledger_init", str(path)
    )


def test_ledger_init_refuses_a_database_that_is_not_a_ledger(tmp_path):
    path = tmp_path / "shop.sqlite3"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY)")
    with pytest.raises(CommandError, match=r"has tables \(orders\) but none of the ledger's"):
        run("ledger_init", str(path))
    assert tables_and_indexes(path) == {("table", "orders")}


def test_ledger_init_refuses_a_file_that_is_not_sqlite(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("hello\n" * 100)
    with pytest.raises(CommandError, match="is not a SQLite database"):
        run("ledger_init", str(path))
    assert path.read_text() == "hello\n" * 100


@pytest.mark.django_db
def test_demo_admin_prints_the_password_last_framed_with_the_address():
    """It was one line among dozens of setup lines (issue 27, item 9)."""
    said = run("demo_admin", "--url", "http://127.0.0.1:8123/").rstrip("\n").splitlines()
    box = said[-5:]
    assert box[0].startswith("╔") and box[-1].startswith("╚")
    assert all(line.startswith("║ ") and line.endswith(" ║") for line in box[1:-1])
    assert len({len(line) for line in box}) == 1  # a closed frame
    assert "ledgerweb is ready: http://127.0.0.1:8123/" in box[1]
    assert "Sign in as admin with the password " in box[2]


@pytest.mark.django_db(transaction=True)
def test_demo_admin_waits_for_the_server_then_prints(live_server):
    """make demo starts the server, then demo_admin --wait prints once the site answers: the
    box comes after the server's start-up lines."""
    from django.contrib.auth.models import Group, Permission

    from ledgerweb.roles import sync_roles

    sync_roles(Group, Permission)  # a transactional test flushed the migration's groups
    out = run("demo_admin", "--url", live_server.url + "/", "--wait")
    assert f"ledgerweb is ready: {live_server.url}/" in out


@pytest.mark.django_db
def test_demo_admin_is_created_once_and_never_overwritten():
    first = run("demo_admin")
    assert "Sign in as admin with the password " in first
    password = first.split("with the password ", 1)[1].split()[0]
    user = get_user_model().objects.get(username="admin")
    assert user.is_superuser and user.check_password(password)
    assert list(user.groups.values_list("name", flat=True)) == ["admin"]

    second = run("demo_admin")
    assert "its password was shown when it was created" in second
    assert "manage.py changepassword admin" in second
    user.refresh_from_db()
    assert user.check_password(password)


@pytest.mark.django_db
def test_the_roles_hold_the_permissions_of_the_security_model():
    from django.contrib.auth.models import Group

    def perms(role):
        group = Group.objects.get(name=role)
        return {f"{p.content_type.app_label}.{p.codename}" for p in group.permissions.all()}

    viewer, operator, admin = perms("viewer"), perms("operator"), perms("admin")
    assert "conversations.view_session" in viewer and "pipeline.view_nexusrequest" in viewer
    assert not {p for p in viewer if not p.split(".")[1].startswith("view_")}
    assert operator - viewer == {
        "conversations.archive_session",
        "conversations.fork_session",
        "annotations.remove_any_annotation",
        "issues.triage_issue",
    }
    assert admin - operator == {
        "conversations.mark_session_deleted",
        "pipeline.run_retention",
        "admin.view_logentry",
        "ledgerweb.view_person",  # the admin's "People and roles"
        "ledgerweb.assign_role",
        "issues.view_issue",
        "issues.view_issuechange",
        "alerts.view_alertrule",
        "alerts.add_alertrule",
        "alerts.change_alertrule",
        "alerts.delete_alertrule",
        "alerts.view_alert",
    }
