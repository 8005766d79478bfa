"""The background process (manage.py ledger_background): one per ledger, its jobs taking turns,
each step's outcome kept and shown, and a ledger file replaced under it noticed."""

import io
import shutil
import sqlite3
from contextlib import closing

import pytest
from builders import LEDGER_DB, use_ledger
from django.core.management import call_command
from django.db import connections

from background import jobs, lock, runner
from background.models import JobStatus
from ledgerfacts import schema
from ledgerfacts.timestamps import now_ms
from ledgerweb import health
from pipeline import rollups
from pipeline.models import RollupHour

pytestmark = LEDGER_DB
H = rollups.HOUR


@pytest.fixture
def scratch_jobs(monkeypatch):
    """The registry as a test's own: jobs registered here vanish after the test."""
    monkeypatch.setattr(jobs, "_registry", dict(jobs._registry))
    return jobs


def background(*only: str, rounds: int = 1) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("ledger_background", only=",".join(only), rounds=rounds, every=0,
                 stdout=out, stderr=err)  # fmt: skip
    return out.getvalue(), err.getvalue()


def test_a_failing_job_is_kept_and_shown_and_the_others_still_run(
    scratch_jobs, ledger, admin_user, client
):
    def broken(**options):
        raise ValueError("the webhook's address is not a URL")

    scratch_jobs.register(jobs.Job("broken", every_s=60, step=broken))
    ledger.request(started_at=now_ms() - 3 * H)

    out, err = background("broken", "summarise", "health")

    assert "broken: failed" in err and "ValueError" in err
    assert "summarise: 1 of 1 hours summarised" in out
    status = {s.name: s for s in JobStatus.objects.all()}
    assert status["broken"].last_error == "ValueError: the webhook's address is not a URL"
    assert status["broken"].failures == 1
    assert status["health"].last_error == "" and status["health"].last_ok_at
    client.force_login(admin_user)
    page = client.get("/health/").content.decode()
    assert "Background work" in page
    assert "the webhook&#x27;s address is not a URL" in page
    assert "1 in a row" in page


def long_and_short_jobs(scratch_jobs, *, long_first: bool) -> list[str]:
    """A job with three steps to do and one with one, registered; the list their steps append
    their names to as they run."""
    calls: list[str] = []
    left = {"long": 3}

    def long(**options):
        calls.append("long")
        left["long"] -= 1
        return jobs.Step(f"{left['long']} left", more=left["long"] > 0)

    def short(**options):
        calls.append("short")
        return jobs.Step()

    scratch_jobs.register(jobs.Job("long", every_s=None, step=long, first=long_first))
    scratch_jobs.register(jobs.Job("short", every_s=None, step=short))
    return calls


def test_a_job_that_has_more_to_do_takes_turns_with_the_others(scratch_jobs):
    calls = long_and_short_jobs(scratch_jobs, long_first=False)
    background("long", "short")
    assert calls == ["long", "short", "long", "long"]


def test_a_job_that_goes_first_does_all_it_has_before_the_others_take_a_turn(scratch_jobs):
    calls = long_and_short_jobs(scratch_jobs, long_first=True)
    background("short", "long")
    assert calls == ["long", "long", "long", "short"]


def test_the_chart_summaries_go_before_the_search_index_and_the_health_checks():
    """A fresh install's dashboard waits on the summaries ("Summarising: 12 of 720 hours"):
    they do not share their turns with a first search index or the hourly checks."""
    first = [job.name for job in jobs.registered() if job.first]
    assert first == ["summarise"]


def test_an_unknown_job_is_refused_with_the_known_names(scratch_jobs):
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="No such job: nonsense .*summarise"):
        background("nonsense")


def test_the_lock_is_per_ledger(tmp_path):
    """Another `make serve` on another ledger from the same checkout runs its own background
    process: the first one's lock is not the second's."""
    first = tmp_path / "first.sqlite3"
    second = tmp_path / "second.sqlite3"
    for path in (first, second):
        schema.create_ledger(path)
    use_ledger(first)
    with lock.holding_lock(wait=False) as held:
        assert held and lock.running()
        use_ledger(second)
        assert not lock.running()
        with lock.holding_lock(wait=False) as held_too:
            assert held_too
        use_ledger(first)
        assert lock.running()
        with lock.holding_lock(wait=False) as held_again:
            assert not held_again
    assert not lock.running()


@pytest.mark.django_db(transaction=True, databases="__all__")
def test_a_ledger_replaced_at_its_path_is_summarised_afresh(tmp_path, scratch_jobs):
    """A restore or a copy from another host replaces the file while the process runs: the old
    file's connection would keep reading the deleted file for good."""
    from django.conf import settings

    path = tmp_path / "ledger.sqlite3"
    shutil.copyfile(settings.LEDGER_DB, path)
    use_ledger(path)
    start = now_ms() // H * H - 6 * H
    with closing(sqlite3.connect(path)) as conn, conn:
        # No -wal file left behind at the path: its frames would be read over the new file.
        conn.execute("PRAGMA journal_mode = DELETE")
        conn.execute(
            "INSERT INTO nexus_requests (id, event_id, event_type, event_source, stage, status,"
            " started_at) VALUES ('OLD', 'e', 'message', 'imessage', 'finalize', 'completed', ?)",
            (start,),
        )
    replacement = tmp_path / "replacement.sqlite3"
    schema.create_ledger(replacement)
    with closing(sqlite3.connect(replacement)) as conn, conn:
        for n in range(5):
            conn.execute(
                "INSERT INTO nexus_requests (id, event_id, event_type, event_source, stage,"
                " status, started_at) VALUES (?, 'e', 'message', 'gmail', 'finalize',"
                " 'completed', ?)",
                (f"NEW{n}", start + n * H + 60_000),
            )
    rounds = {"n": 0}

    def restore(**options):  # the operator's restore, between two rounds
        rounds["n"] += 1
        if rounds["n"] == 2:
            shutil.copyfile(replacement, path.with_suffix(".tmp"))
            path.with_suffix(".tmp").replace(path)
        return jobs.Step()

    scratch_jobs.register(jobs.Job("restore", every_s=None, step=restore))
    # Restored at the end of the second round (the summaries go first): the third reads the new
    # file from its start.
    out, err = background("restore", "summarise", "health", rounds=3)

    assert not err, (out, err)
    new_hours = {(start + n * H) for n in range(5)}
    assert new_hours <= set(RollupHour.objects.values_list("hour", flat=True))
    ((count,),) = connections["ledger"].cursor().execute("SELECT count(*) FROM nexus_requests")
    assert count == 5
    # The health report (due hourly) is made again at once for the new file: its row counts.
    assert out.count("health: Health checked") == 2
    facts = [e.label for f in health.kept_report().findings for e in f.examples]
    assert "nexus_requests: 5 rows" in facts


def test_ledger_rollup_follow_is_still_the_background_process(ledger):
    ledger.request(started_at=now_ms() - 2 * H)
    out = io.StringIO()
    call_command("ledger_rollup", follow=True, every=0, rounds=1, stdout=out)
    assert (
        "Working for " in out.getvalue() and "summarise: 1 of 1 hours summarised" in out.getvalue()
    )
    assert runner.statuses()


@pytest.mark.django_db(transaction=True, databases="__all__")
def test_a_web_worker_reads_a_ledger_replaced_at_its_path_at_its_next_request(
    tmp_path, viewer_client
):
    """A worker keeps its ledger connection up to a minute (CONN_MAX_AGE): after a restore its
    pages showed the deleted file's rows for that long. Each request now notices the new file."""
    path = tmp_path / "ledger.sqlite3"
    replacement = tmp_path / "replacement.sqlite3"
    for file, requests in ((path, 1), (replacement, 3)):
        schema.create_ledger(file)
        with closing(sqlite3.connect(file)) as conn, conn:
            conn.execute("PRAGMA journal_mode = DELETE")  # no -wal left behind at the path
            for n in range(requests):
                conn.execute(
                    "INSERT INTO nexus_requests (id, event_id, event_type, event_source, stage,"
                    " status, started_at) VALUES (?, 'e', 'message', 'imessage', 'finalize',"
                    " 'completed', ?)",
                    (f"R{n}", now_ms() - 60_000),
                )
    use_ledger(path)

    def requests_listed() -> int:
        return viewer_client.get("/?format=json").json()["counts"]["nexus_requests"]["count"]

    assert requests_listed() == 1
    assert connections["ledger"].connection is not None  # kept open, as in a worker
    shutil.copyfile(replacement, path.with_suffix(".tmp"))
    path.with_suffix(".tmp").replace(path)
    assert requests_listed() == 3
