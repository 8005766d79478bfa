"""The demo reports itself healthy as time passes (issue 27, item 9): 15 minutes after
`make demo`, "check again" on the health page reported an ERROR for the requests the demo
leaves in flight. The background process finishes a demo ledger's in-flight work as a runtime
would; a ledger that is not the demo's is never touched."""

import sqlite3
from contextlib import closing

import pytest
from builders import use_ledger
from django.core.management import call_command

from background.jobs import named
from background.runner import run_step
from demo import live
from ledgerfacts.timestamps import now_ms
from ledgerweb import health

pytestmark = pytest.mark.django_db(transaction=True, databases="__all__")
MINUTE = 60_000


def errors_of(report) -> dict[str, int]:
    return {
        f.check: f.count.value for f in report.findings if f.severity == "error" and f.count.value
    }


@pytest.fixture
def demo_20_minutes_later(tmp_path, settings):
    """A demo ledger built 20 minutes ago: what `make demo` left when a newcomer comes back."""
    path = tmp_path / "demo.sqlite3"
    call_command("ledger_demo", str(path), "--scale", "0.1", "--seed", "3",
                 "--now", str(now_ms() - 20 * MINUTE), verbosity=0)  # fmt: skip
    original = settings.LEDGER_DB
    use_ledger(path)
    yield path
    use_ledger(original)


def in_flight(path) -> tuple[int, int]:
    with closing(sqlite3.connect(path)) as conn:
        requests = conn.execute(
            "SELECT count(*) FROM nexus_requests WHERE status = 'processing'"
        ).fetchone()[0]
        turns = conn.execute(
            "SELECT count(*) FROM turns WHERE status IN ('pending', 'streaming')"
        ).fetchone()[0]
    return requests, turns


def test_a_demo_left_alone_for_20_minutes_is_healthy_once_the_background_ran(
    demo_20_minutes_later,
):
    before = in_flight(demo_20_minutes_later)
    assert before[0] > 0 and before[1] > 0  # the showcase's live work
    assert "always finalized" in errors_of(health.check_and_keep())  # what the newcomer saw

    (job,) = named(["demo-in-flight"])
    step = run_step(job, {}, print, print)  # as ledger_background runs it
    assert step is not None and "finished" in step.message
    assert in_flight(demo_20_minutes_later) == (0, 0)
    assert errors_of(health.check_and_keep()) == {}  # stuck, stage progression, tool calls: none


def test_the_background_leaves_recent_and_other_ledgers_in_flight_work_alone(ledger):
    ledger.request(
        id="OLD", status="processing", stage="runAgent", started_at=now_ms() - 60 * MINUTE
    )
    assert not live.is_demo_ledger()
    assert live.finish_in_flight().message == ""
    with closing(sqlite3.connect(ledger.path)) as conn:
        assert conn.execute("SELECT status FROM nexus_requests").fetchone() == ("processing",)


def test_a_fresh_demos_in_flight_work_stays_in_flight_for_a_few_minutes(tmp_path, settings):
    path = tmp_path / "demo.sqlite3"
    call_command("ledger_demo", str(path), "--scale", "0.1", "--seed", "3", verbosity=0)
    use_ledger(path)
    try:
        before = in_flight(path)
        live.finish_in_flight()
        assert in_flight(path) == before  # the live pages still have something to show
    finally:
        use_ledger(settings.LEDGER_DB)
