"""Build the dashboard's hourly rollups ahead of time (see pipeline/rollups.py).

Once: builds the last --days days and re-reads the content of every stored hour, where a chart
re-reads only a few hours' (a settled row edited in place, outside the ledger's lifecycle, is
found then).

--follow: the background process (`manage.py ledger_background`, which `make serve` starts beside
gunicorn), kept under this name too: it builds the missing hours of the last --days days newest
first, in slices of a few seconds, then checks again every --every seconds, and runs the other
background jobs (the health checks every hour, …). Pages meanwhile build nothing and answer from
the stored hours plus a bounded live part, saying which hours they left out.
"""

import math

from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from ledgerfacts.timestamps import now_ms
from ledgerweb.db import ledger_place
from pipeline import rollups, summariser


class Command(BaseCommand):
    help = "Build the pipeline dashboard's hourly rollups for the last --days days."

    def add_arguments(self, parser):
        parser.add_argument("--days", type=int, default=30, help="how far back (default 30)")
        parser.add_argument(
            "--follow", action="store_true",
            help="keep running as the background process (manage.py ledger_background)",
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
            call_command(
                "ledger_background", days=options["days"], every=options["every"],
                rounds=options["rounds"], stdout=self.stdout, stderr=self.stderr,
            )  # fmt: skip
            return
        until = now_ms()
        since = summariser.first_hour(until, options["days"])
        if since is None:
            self.stdout.write("The ledger has no nexus_requests: nothing to build.")
            return
        stored = live = 0
        days = range(since, until, summariser.DAY)
        for day in tqdm(days, desc="days", unit="day", disable=None):
            end = min(day + summariser.DAY, until)
            plan = rollups.plan(day, end, budget_s=math.inf, verify_rows=math.inf)
            stored += len(plan.stored)
            live += sum(math.ceil((end - start) / rollups.HOUR) for start, end in plan.live)
        self.stdout.write(
            f"{stored:,} hours stored and verified for {ledger_place()}; about {live:,} hours "
            "stay live (the current hour; requests still processing are always read live)."
        )
