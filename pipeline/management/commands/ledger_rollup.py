"""Build the dashboard's hourly rollups ahead of time (see pipeline/rollups.py).

Once: builds the last --days days and re-reads the content of every stored hour, where a chart
re-reads only a few hours' (a settled row edited in place, outside the ledger's lifecycle, is
found then).

--follow (what `make serve` runs beside gunicorn): the background summariser. It builds the
missing hours of the last --days days newest first, in slices of a few seconds, then checks
again every --every seconds, as long as it runs; it also runs the ledger's health checks every
hour and keeps the report the /health/ page shows. Pages meanwhile build nothing and answer from
the stored hours plus a bounded live part, saying which hours they left out.
"""

import math
import time

from django.core.management.base import BaseCommand, CommandError
from django.db import DatabaseError
from tqdm import tqdm

from ledgerfacts.timestamps import now_ms
from ledgerweb import health, sqlite
from ledgerweb.db import ledger_place
from pipeline import rollups, summariser

DAY = 24 * rollups.HOUR
# Building time per plan in --follow: the census of the window runs again between slices.
SLICE_S = 5.0
HEALTH_TIME_LIMIT_MS = 600_000  # as ledger_check's


class Command(BaseCommand):
    help = "Build the pipeline dashboard's hourly rollups for the last --days days."

    def add_arguments(self, parser):
        parser.add_argument("--days", type=int, default=30, help="how far back (default 30)")
        parser.add_argument(
            "--follow", action="store_true",
            help="keep running: build missing hours newest first, then keep up with the ledger",
        )  # fmt: skip
        parser.add_argument(
            "--every", type=float, default=30.0,
            help="with --follow: seconds between checks once all hours are built (default 30)",
        )  # fmt: skip
        parser.add_argument(
            "--rounds", type=int, default=0, help="with --follow: stop after this many (0: never)"
        )

    def handle(self, *args, **options):
        if options["days"] < 1:
            raise CommandError("--days must be at least 1")
        if options["follow"]:
            self.follow(options["days"], options["every"], options["rounds"] or math.inf)
            return
        until = now_ms()
        since = self.first_hour(until, options["days"])
        if since is None:
            self.stdout.write("The ledger has no nexus_requests: nothing to build.")
            return
        stored = live = 0
        days = range(since, until, DAY)
        for day in tqdm(days, desc="days", unit="day", disable=None):
            plan = rollups.plan(day, min(day + DAY, until), budget_s=math.inf, verify_rows=math.inf)
            stored += len(plan.stored)
            live += sum(math.ceil((end - start) / rollups.HOUR) for start, end in plan.live)
        self.stdout.write(
            f"{stored:,} hours stored and verified for {ledger_place()}; about {live:,} hours "
            "stay live (the current hour; requests still processing are always read live)."
        )

    @staticmethod
    def first_hour(until: int, days: int) -> int | None:
        """On the hour (a window's cut first hour is read live, not built), and not before the
        ledger's first request; None for a ledger without requests."""
        ((oldest,),) = sqlite.rows("SELECT min(started_at) FROM nexus_requests")
        if oldest is None:
            return None
        return int(max(until - days * DAY, oldest)) // rollups.HOUR * rollups.HOUR

    def follow(self, days: int, every: float, rounds: float = math.inf) -> None:
        with summariser.holding_lock(wait=False) as held:
            if not held:
                self.stdout.write("Another summariser runs for this database: waiting for it.")
        with summariser.holding_lock(wait=True):
            self.stdout.write(f"Summarising {ledger_place()} (last {days} days), newest first.")
            health_due = time.monotonic()
            while rounds > 0:
                rounds -= 1
                try:
                    self.summarise_once(days)
                    if time.monotonic() >= health_due:
                        self.check_health()
                        health_due = time.monotonic() + health.EVERY_S
                except (sqlite.LedgerQueryTimeout, DatabaseError) as error:
                    # A busy or locked database: said, and tried again next round.
                    self.stderr.write(f"Summarising stopped: {error}; trying again.")
                if rounds > 0:
                    time.sleep(every)

    def check_health(self) -> None:
        """The ledger's health checks, kept for the /health/ page (they scan whole tables: a
        page view should not wait for them)."""
        with sqlite.longer_time_limit(HEALTH_TIME_LIMIT_MS):
            report = health.check_and_keep()
        self.stdout.write(
            f"Health checked in {report.took_ms / 1000:.1f} s: {report.problems} problem(s)."
        )

    def summarise_once(self, days: int) -> None:
        """Build every missing hour of the window, newest first, a slice at a time, as long as
        each slice builds some (an hour the ledger keeps changing waits for the next round)."""
        left = len(self.window_plan(days, budget_s=0).pending)
        while left:
            started = time.monotonic()
            plan = self.window_plan(days, budget_s=SLICE_S)
            self.stdout.write(
                f"{len(plan.stored):,} of {len(plan.stored) + len(plan.pending):,} hours "
                f"summarised ({time.monotonic() - started:.1f} s)"
            )
            if len(plan.pending) >= left:
                return
            left = len(plan.pending)

    def window_plan(self, days: int, budget_s: float) -> rollups.Plan:
        until = now_ms()
        since = self.first_hour(until, days)
        return rollups.Plan([], []) if since is None else rollups.plan(since, until, budget_s)
