"""python manage.py ledger_demo PATH [--seed N] [--scale X] [--extra-requests-scale Y] [--now MS]
[--replace] [--live]"""

import time
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from demo.build import LedgerExists, build_demo_ledger


class Command(BaseCommand):
    help = "Build a deterministic demo ledger (Agents + Nexus) at PATH."

    def add_arguments(self, parser):
        parser.add_argument("path", type=Path)
        parser.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
        parser.add_argument(
            "--scale",
            type=float,
            default=1.0,
            help="multiply every count (0.1 for tests, 500 for benchmarks)",
        )
        parser.add_argument(
            "--extra-requests-scale",
            type=float,
            default=None,
            metavar="Y",
            help="scale of the requests that run no agent (hooks, denials, early failures,"
            " timers, webhooks) instead of --scale: lower it to keep a ledger with many sessions"
            " near one request per turn",
        )
        parser.add_argument("--now", type=int, default=None, metavar="MS",
                            help="anchor time in Unix ms (default: now)")  # fmt: skip
        parser.add_argument("--replace", action="store_true", help="overwrite an existing PATH")
        parser.add_argument(
            "--live",
            action="store_true",
            help="mark it for the demo's live writer (a background job that keeps a session"
            " and its requests moving: make demo)",
        )

    def handle(self, *args, path: Path, seed: int, scale: float, now: int | None,
               replace: bool, extra_requests_scale: float | None, live: bool = False,
               **options):  # fmt: skip
        if scale <= 0:
            raise CommandError("--scale must be positive")
        if extra_requests_scale is not None and extra_requests_scale < 0:
            raise CommandError("--extra-requests-scale must not be negative")
        started = time.monotonic()
        try:
            counts = build_demo_ledger(path, seed=seed, scale=scale, now_ms=now, replace=replace,
                                       progress=options["verbosity"] > 0,
                                       extra_requests_scale=extra_requests_scale,
                                       live=live)  # fmt: skip
        except LedgerExists as error:
            raise CommandError(str(error)) from error
        summary = ", ".join(f"{table} {count:,}" for table, count in counts.items())
        self.stdout.write(f"{path}: {summary} ({time.monotonic() - started:.1f} s)")
