"""Two ledgers, one checkout (issue 27, item 8): two `make serve`s on two ledgers start two
background processes from the same checkout, with the same ledgerweb database and lock folder;
each summarises its own ledger, and a third started for a ledger that has one waits for it
instead of working beside it. Real processes, as `make serve` starts them."""

import os
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

import pytest

from ledgerfacts import schema
from ledgerfacts.timestamps import now_ms

ROOT = Path(__file__).resolve().parent.parent
H = 3_600_000
WAIT_S = 90  # for a process to start (Django's import) and step, on a busy 2-core machine


def ledger_with_requests(path: Path, n: int) -> Path:
    schema.create_ledger(path)
    start = now_ms() - 5 * H
    with closing(sqlite3.connect(path)) as conn:
        conn.executemany(
            "INSERT INTO nexus_requests (id, event_id, event_type, event_source, stage, status,"
            " started_at, completed_at) VALUES (?, 'e', 'message', 'imessage', 'finalize',"
            " 'completed', ?, ?)",
            [(f"R{i}", start + i * 60_000, start + i * 60_000 + 500) for i in range(n)],
        )
        conn.commit()
    return path


def manage(*args, env: dict, **popen) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "manage.py", *args], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            **popen)  # fmt: skip


def summarised_ledgers(django_db: Path) -> set[str]:
    """The ledgers whose summarise job has had a step that did not fail."""
    if not django_db.exists():
        return set()
    with closing(sqlite3.connect(django_db, timeout=10)) as conn:
        try:
            rows = conn.execute(
                "SELECT ledger FROM background_jobstatus"
                " WHERE name = 'summarise' AND last_ok_at IS NOT NULL"
            ).fetchall()
        except sqlite3.OperationalError:  # not migrated yet
            return set()
    return {ledger for (ledger,) in rows}


def stored_hours(django_db: Path) -> dict[str, int]:
    with closing(sqlite3.connect(django_db, timeout=10)) as conn:
        return dict(conn.execute("SELECT ledger, count(*) FROM pipeline_rolluphour GROUP BY 1"))


@pytest.fixture
def checkout_env(tmp_path) -> dict:
    """What `make serve` sets, in a folder of this test's own: the same ledgerweb database and
    lock folder for every process started from the checkout."""
    env = {k: v for k, v in os.environ.items() if k not in {"LEDGER_DB", "DJANGO_SETTINGS_MODULE"}}
    env |= {"SECRET_KEY": "two-ledgers", "DJANGO_DB": str(tmp_path / "django.sqlite3"),
            "SUMMARISER_LOCK": str(tmp_path / "var" / "summariser.lock")}  # fmt: skip
    migrated = manage("migrate", "--noinput", "-v0", env=env)
    assert migrated.wait(timeout=300) == 0, migrated.stdout.read()
    return env


def test_two_background_processes_on_two_ledgers_each_summarise_their_own(tmp_path, checkout_env):
    first = ledger_with_requests(tmp_path / "first.sqlite3", 120)
    second = ledger_with_requests(tmp_path / "second.sqlite3", 60)
    django_db = Path(checkout_env["DJANGO_DB"])
    started = [
        manage("ledger_background", "--every", "1", env=checkout_env | {"LEDGER_DB": str(path)})
        for path in (first, second)
    ]
    try:
        ends = time.monotonic() + WAIT_S
        while time.monotonic() < ends and summarised_ledgers(django_db) != {
            str(first),
            str(second),
        }:
            assert all(p.poll() is None for p in started), [p.stdout.read() for p in started]
            time.sleep(0.5)
        assert summarised_ledgers(django_db) == {str(first), str(second)}
        # Each ledger's hours are stored under its own key (pipeline/rollups.py names them).
        assert len(stored_hours(django_db)) == 2
        # A third for the first ledger waits for the one working for it.
        third = manage("ledger_background", "--every", "1",
                       env=checkout_env | {"LEDGER_DB": str(first)})  # fmt: skip
        started.append(third)
        time.sleep(8)
    finally:
        for process in started:
            process.terminate()
        said = [process.communicate(timeout=30)[0] for process in started]
    assert "waiting" not in said[0] and "waiting" not in said[1]
    assert "Another background process runs for this ledger: waiting for it." in said[2]
