"""The background process for this ledger (what `make serve` starts beside gunicorn): the chart
summaries, the health checks and every other registered job, each in bounded steps, as long as it
runs (see background/__init__.py)."""

import math

from django.core.management.base import BaseCommand, CommandError

from background import jobs, runner


class Command(BaseCommand):
    help = "Run this ledger's background jobs (summaries, health checks, …) as long as it runs."

    def add_arguments(self, parser):
        parser.add_argument("--days", type=int, default=30,
                            help="how far back the summaries go (default 30)")  # fmt: skip
        parser.add_argument(
            "--every",
            type=float,
            default=30.0,
            help="seconds between checks once every job is done (default 30)",
        )
        parser.add_argument("--rounds", type=int, default=0,
                            help="stop after this many rounds (0: never)")  # fmt: skip
        parser.add_argument(
            "--only",
            default="",
            help="comma-separated job names to run instead of the default ones",
        )

    def handle(self, *args, **options):
        if options["days"] < 1:
            raise CommandError("--days must be at least 1")
        try:
            chosen = self.chosen(options["only"])
        except KeyError as unknown:
            names = ", ".join(job.name for job in jobs.registered())
            raise CommandError(f"No such job: {unknown.args[0]} (known: {names})") from None
        self.run(chosen, options)

    @staticmethod
    def chosen(only: str) -> list[jobs.Job]:
        if only.strip():
            return jobs.named([n.strip() for n in only.split(",") if n.strip()])
        return [job for job in jobs.registered() if job.default]

    def run(self, chosen: list[jobs.Job], options: dict) -> None:
        runner.run(
            chosen,
            {"days": options["days"], "every": options["every"]},
            say=lambda line: self._said(self.stdout, line),
            warn=lambda line: self._said(self.stderr, line),
            every=options["every"],
            rounds=options["rounds"] or math.inf,
        )

    @staticmethod
    def _said(stream, line: str) -> None:
        """A line of a long-running process's log, out at once: into a pipe or a file (make
        serve's terminal, a service's log) Python would keep it in its buffer for minutes."""
        stream.write(line)
        stream.flush()
