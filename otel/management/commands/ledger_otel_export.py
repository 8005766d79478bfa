"""Send the ledger to an OpenTelemetry backend as OTLP traces, or write OTLP JSON files."""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from otel.export import ExportFailed, Run, endpoint_destination, folder_destination


class Command(BaseCommand):
    help = (
        "Send what is new or finished in the ledger since the last run to an OTLP/HTTP endpoint "
        "(--endpoint) or write it as OTLP JSON files (--to-dir): sessions as conversations, "
        "turns as invoke_agent spans, tool calls as execute_tool spans, pipeline requests as "
        "traces of their stages (the GenAI semantic conventions). Safe to rerun from cron."
    )

    def add_arguments(self, parser):
        where = parser.add_mutually_exclusive_group(required=True)
        where.add_argument(
            "--endpoint",
            help="the OTLP/HTTP address, e.g. http://localhost:4318 (/v1/traces is added)",
        )
        where.add_argument("--to-dir", type=Path, help="a folder to write OTLP JSON files into")
        parser.add_argument(
            "--protocol",
            choices=["http/protobuf", "http/json"],
            default="http/protobuf",
            help="the OTLP/HTTP encoding (default http/protobuf)",
        )
        parser.add_argument(
            "--header",
            action="append",
            default=[],
            metavar="NAME=VALUE",
            help="an HTTP header for every request, e.g. 'Authorization=Basic …' (repeatable); "
            "without it OTEL_EXPORTER_OTLP_HEADERS is read",
        )
        parser.add_argument(
            "--with-content",
            action="store_true",
            help="include message text, tool arguments and results (left out by default, as "
            "the GenAI conventions advise)",
        )
        parser.add_argument(
            "--max-content",
            type=int,
            default=65_536,
            metavar="CHARS",
            help="with --with-content, cut each message or payload at this many characters",
        )
        parser.add_argument(
            "--only",
            choices=["sessions", "pipeline"],
            help="export only the Agents Ledger's sessions (turns and tool calls) or only the "
            "Nexus Ledger's pipeline requests (each keeps its own place)",
        )
        parser.add_argument("--batch", type=int, default=500, help="turns or requests per request")
        parser.add_argument("--timeout", type=float, default=30, help="seconds per OTLP request")

    def handle(self, *args, **options):
        destination = self._destination(options)
        if options["batch"] < 1 or options["max_content"] < 1:
            raise CommandError("--batch and --max-content must be at least 1")
        run = Run(
            destination,
            with_content=options["with_content"],
            max_content=options["max_content"],
            batch=options["batch"],
            progress=self._progress if self.stdout.isatty() else lambda report: None,
            tables={"sessions": ("turns",), "pipeline": ("nexus_requests",)}.get(
                options["only"], ("turns", "nexus_requests")
            ),
        )
        try:
            report = run.run()
        except ExportFailed as error:
            self._summary(run.report, destination)
            raise CommandError(str(error)) from None
        self._summary(report, destination)

    def _destination(self, options):
        if options["to_dir"] is not None:
            folder = options["to_dir"].expanduser()
            if folder.exists() and not folder.is_dir():
                raise CommandError(f"{folder} is not a folder")
            return folder_destination(folder)
        headers = {}
        for header in options["header"]:
            name, equals, value = header.partition("=")
            if not equals or not name.strip():
                raise CommandError(f"--header {header!r} is not NAME=VALUE")
            headers[name.strip()] = value.strip()
        try:
            return endpoint_destination(
                options["endpoint"],
                protocol=options["protocol"],
                headers=headers or None,
                timeout=options["timeout"],
            )
        except ValueError as error:
            raise CommandError(f"--endpoint: {error}") from None

    def _progress(self, report) -> None:
        self.stdout.write(f"\r{report.spans:,} spans sent…", ending="")
        self.stdout.flush()

    def _summary(self, report, destination) -> None:
        if self.stdout.isatty():
            self.stdout.write("")
        if report.started_afresh:
            self.stdout.write(f"Started afresh: {report.started_afresh}")
        self.stdout.write(f"Exported to {destination.shown}: {report.spans:,} spans")
        for kind in ("turn", "tool call", "request", "stage"):
            self.stdout.write(f"  {kind}s: {report.sent[kind]:,}")
        for path in destination.files:
            self.stdout.write(f"  wrote {path}")
        running = [f"{n:,} {table}" for table, n in report.still_running.items() if n]
        if running:
            self.stdout.write(
                "Still running, sent once finished (a later run): " + ", ".join(running)
            )
        if report.oddities.counts:
            self.stdout.write("Values left off their span (not what the column declares):")
            for what, n in sorted(report.oddities.counts.items()):
                self.stdout.write(f"  {what}: {n:,}")
