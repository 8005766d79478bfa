"""Build the dashboard's hourly rollups ahead of time (see pipeline/rollups.py).

Pages build missing hours themselves, a second's worth per chart, and read the rest live; on a
big ledger, run this once (and from cron if you like) so that the first 30-day dashboard is as
fast as the next. It also re-reads the content of every stored hour, where a chart re-reads only
a few hours' (a settled row edited in place, outside the ledger's lifecycle, is found then).
"""

import math

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from ledgerweb import sqlite
from ledgerweb.db import ledger_path_of
from ledgerweb.timestamps import now_ms
from pipeline import rollups

DAY = 24 * rollups.HOUR


class Command(BaseCommand):
    help = "Build the pipeline dashboard's hourly rollups for the last --days days."

    def add_arguments(self, parser):
        parser.add_argument("--days", type=int, default=30, help="how far back (default 30)")

    def handle(self, *args, **options):
        if options["days"] < 1:
            raise CommandError("--days must be at least 1")
        until = now_ms()
        ((oldest,),) = sqlite.rows("SELECT min(started_at) FROM nexus_requests")
        if oldest is None:
            self.stdout.write("The ledger has no nexus_requests: nothing to build.")
            return
        # On the hour: a window's cut first hour is read live, not built.
        since = max(until - options["days"] * DAY, oldest) // rollups.HOUR * rollups.HOUR
        stored = live = 0
        days = range(since, until, DAY)
        for day in tqdm(days, desc="days", unit="day", disable=None):
            plan = rollups.plan(day, min(day + DAY, until), budget_s=math.inf, verify_rows=math.inf)
            stored += len(plan.stored)
            live += sum(math.ceil((end - start) / rollups.HOUR) for start, end in plan.live)
        self.stdout.write(
            f"{stored:,} hours stored and verified for {ledger_path_of()}; about {live:,} hours "
            "stay live (the current hour; requests still processing are always read live)."
        )
