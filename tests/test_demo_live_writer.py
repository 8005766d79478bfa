"""The demo's live writer (issue 29): on a ledger `ledger_demo --live` built, the background job
keeps a session and its requests moving, one short commit a step; on any other ledger it writes
nothing at all."""

import hashlib
import sqlite3
from contextlib import closing

import pytest
from builders import use_ledger
from django.core.management import call_command

from background.jobs import named
from background.runner import run_step
from demo.live_writer import ROUTING_KEY

pytestmark = pytest.mark.django_db(transaction=True, databases="__all__")


@pytest.fixture
def demo_ledger(tmp_path, settings):
    """Build a small demo ledger (with or without --live) and serve it, as make demo does."""
    original = settings.LEDGER_DB

    def build(*flags: str):
        path = tmp_path / f"demo{'-live' if flags else ''}.sqlite3"
        call_command("ledger_demo", str(path), "--scale", "0.05", "--seed", "5", *flags,
                     verbosity=0)  # fmt: skip
        use_ledger(path)
        return path

    yield build
    use_ledger(original)


def steps(n: int) -> list[str]:
    (job,) = named(["demo-live-writer"])
    return [run_step(job, {}, print, print).message for _ in range(n)]


def digest(path) -> str:
    with closing(sqlite3.connect(path)) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_ledger_built_without_live_is_never_written(demo_ledger):
    path = demo_ledger()
    before = digest(path)
    assert set(steps(5)) == {""}
    assert digest(path) == before


def test_the_live_demo_session_moves_turn_by_turn_and_its_requests_stage_by_stage(demo_ledger):
    path = demo_ledger("--live")
    said = steps(60)
    assert any("received" in s for s in said)
    assert any(" at resolveAccess" in s for s in said)
    assert any("began" in s for s in said)
    assert any("calls" in s for s in said)
    assert any(s.endswith(("completed", "failed")) and s.startswith("turn") for s in said)
    with closing(sqlite3.connect(path)) as conn:
        (session, head) = conn.execute(
            "SELECT id, current_turn_id FROM sessions WHERE routing_key = ?", (ROUTING_KEY,)
        ).fetchone()
        turns = conn.execute(
            "SELECT id, status FROM turns WHERE session_id = ?", (session,)
        ).fetchall()
        requests = conn.execute(
            "SELECT stage, status, turn_id FROM nexus_requests WHERE session_key = ?",
            (ROUTING_KEY,),
        ).fetchall()
        calls = conn.execute(
            "SELECT count(*) FROM tool_calls WHERE turn_id IN"
            " (SELECT id FROM turns WHERE session_id = ?)",
            (session,),
        ).fetchone()[0]
    assert len(turns) >= 3 and head in {t for t, _ in turns}
    assert {status for _, status in turns} <= {"pending", "streaming", "completed", "failed"}
    assert calls >= 1
    # Every request but the newest has ended; each that ran the agent names its turn.
    assert sum(status == "processing" for _, status, _ in requests) <= 1
    assert all(turn for stage, _, turn in requests if stage in ("deliverResponse", "finalize"))
