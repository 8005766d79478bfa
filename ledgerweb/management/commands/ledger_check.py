"""Check the ledger's invariants; exit 1 when any error is found (for cron)."""

import time

from django.core.management.base import BaseCommand

from ledgerweb import health, sqlite


class Command(BaseCommand):
    help = "Check the ledger's invariants (seeds 000 and 002) and print what is wrong."

    def add_arguments(self, parser):
        parser.add_argument(
            "--time-limit", type=int, default=600_000,
            help="milliseconds any one check may run (default 600000)",
        )  # fmt: skip
        parser.add_argument(
            "--keep", action="store_true", help="keep the report: the /health/ page shows it"
        )

    def handle(self, *args, time_limit: int, **options):
        started = time.monotonic()
        with sqlite.longer_time_limit(time_limit):
            findings = health.check_and_keep().findings if options["keep"] else health.run_checks()
        errors = 0
        for f in findings:
            if f.passed:  # listed on request: cron mails only what needs a look
                if options["verbosity"] >= 2:
                    self.stdout.write(f"PASSED {f.check}: {f.message}")
                continue
            style = {"error": self.style.ERROR, "warning": self.style.WARNING}.get(f.severity, str)
            count = "" if f.severity == health.INFO else f" ({f.count})"
            self.stdout.write(style(f"{f.severity.upper()} {f.check}: {f.message}{count}"))
            for example in f.examples:
                self.stdout.write(f"    {example.label}")
            errors += f.severity == health.ERROR
        seconds = time.monotonic() - started
        summary = f"{errors} error finding(s) in {seconds:.1f} s"
        if errors:
            self.stderr.write(summary)
            raise SystemExit(1)
        self.stdout.write(self.style.SUCCESS(summary))
