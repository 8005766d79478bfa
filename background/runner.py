"""The background process's loop (see background/__init__.py)."""

import logging
import math
import time
import traceback
from collections.abc import Callable

from django.db import DatabaseError, connections

from background import lock
from background.jobs import Job, Step
from background.models import JobStatus
from ledgerfacts.timestamps import now_ms
from ledgerweb import sqlite
from ledgerweb.db import LEDGER_ALIASES, ledger_identity, ledger_place
from ledgerweb.replaced import file_identity

log = logging.getLogger(__name__)

Say = Callable[[str], None]


def run(jobs: list[Job], options: dict, say: Say, warn: Say, every: float = 30.0,
        rounds: float = math.inf) -> None:  # fmt: skip
    """Hold this ledger's lock and run the jobs' steps as long as `rounds` lasts: in each round
    every due job steps until it has no more to do, the jobs taking turns; between rounds the
    process sleeps until the next job is due (at most `every` seconds)."""
    with lock.holding_lock(wait=False) as held:
        if not held:
            say("Another background process runs for this ledger: waiting for it.")
    with lock.holding_lock(wait=True):
        say(f"Working for {ledger_place()}: {', '.join(job.name for job in jobs)}.")
        due = dict.fromkeys((job.name for job in jobs), 0.0)  # monotonic time each is next due
        watch = LedgerWatch()
        while rounds > 0:
            rounds -= 1
            run_round(jobs, due, options, say, warn, watch, every)
            if rounds > 0:
                time.sleep(max(0.0, min([every, *(at - time.monotonic() for at in due.values())])))


def run_round(jobs: list[Job], due: dict[str, float], options: dict, say: Say, warn: Say,
              watch: "LedgerWatch", every: float) -> None:  # fmt: skip
    if watch.reopen_if_replaced():  # a new file: every job's work on the old one is stale
        due.update(dict.fromkeys(due, 0.0))
    waiting = [job for job in jobs if time.monotonic() >= due[job.name]]
    while waiting:
        # The jobs that go first take their turns alone until they have no more to do.
        for job in [job for job in waiting if job.first] or list(waiting):
            if watch.reopen_if_replaced():
                waiting.extend(j for j in jobs if j not in waiting)
            step = run_step(job, options, say, warn)
            if step is None or not step.more:
                waiting.remove(job)
                due[job.name] = time.monotonic() + (every if job.every_s is None else job.every_s)


def run_step(job: Job, options: dict, say: Say, warn: Say) -> Step | None:
    """One step of a job, its outcome kept; a failure is said and kept, never raised: one job's
    trouble (a locked database, a bug) must not stop the others."""
    started = now_ms()
    try:
        step = job.step(**options)
    except (sqlite.LedgerQueryTimeout, DatabaseError) as error:
        # A busy or locked database: said, and tried again when the job is next due.
        warn(f"{job.name}: stopped: {error}; trying again.")
        _keep(job, started, error=f"{type(error).__name__}: {error}")
        return None
    except Exception as error:  # noqa: BLE001 - kept and shown; the other jobs go on
        warn(f"{job.name}: failed:\n{traceback.format_exc()}")
        _keep(job, started, error=f"{type(error).__name__}: {error}")
        return None
    if step.message:
        say(f"{job.name}: {step.message}")
    _keep(job, started, message=step.message)
    return step


def _keep(job: Job, started: int, message: str = "", error: str = "") -> None:
    finished = now_ms()
    try:
        status, _ = JobStatus.objects.get_or_create(ledger=ledger_identity(), name=job.name)
        status.last_started_at, status.last_finished_at = started, finished
        status.steps += 1
        if error:
            status.last_error, status.last_error_at = error[:2000], finished
            status.failures += 1
        else:
            status.last_message, status.last_ok_at = message[:2000], finished
            status.last_error, status.failures = "", 0
        status.save()
    except DatabaseError as problem:  # ledgerweb's database busy: the next step keeps it
        log.warning("Could not keep the status of %s: %s", job.name, problem)


class LedgerWatch:
    """Notices a ledger file replaced at its path between steps (ledgerweb/replaced.py): the
    ledger's connections are closed, and the next query opens the file now at the path. Kept
    here as the identity seen when the process started, so a replacement made while no
    connection was open is noticed too."""

    def __init__(self) -> None:
        self.seen = file_identity()

    def reopen_if_replaced(self) -> bool:
        now = file_identity()
        if now == self.seen:
            return False
        self.seen = now
        for alias in LEDGER_ALIASES:
            connections[alias].close()
        log.warning("The ledger at %s was replaced: reading the new file.", ledger_place())
        return True


def statuses() -> list[JobStatus]:
    """What each background job last did for this ledger."""
    return list(JobStatus.objects.filter(ledger=ledger_identity()))


def status_of(name: str) -> JobStatus | None:
    """What one background job last did for this ledger (None: it never ran for it)."""
    return JobStatus.objects.filter(ledger=ledger_identity(), name=name).first()
