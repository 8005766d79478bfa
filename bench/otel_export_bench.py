"""OpenTelemetry export (issue 32): ledger_otel_export on the large bench ledger, rows per second
and memory as it goes.

    .venv/bin/python -m bench.otel_export_bench --write-doc [--ledger PATH] [--seconds 90]

1. Reads the bench ledger (default var/bench/scale.sqlite3, which `make bench`'s first step
   builds; the export only reads it) with a fresh Django database for the watermark.
2. Sends it over OTLP/HTTP (protobuf) to a loopback receiver that reads each request whole and
   answers 200, so the figures are ledgerweb's reading, span building and encoding, not a
   backend's storing: first the sessions (turns with their tool calls), then the pipeline
   (requests with their stages), each for --seconds (the whole ledger is ~14 million spans).
3. Samples the process's resident memory after every batch: a bounded export holds one batch
   at a time, so it stays flat however far it goes.
4. Runs again where the first stopped for a few batches, to show the watermark resumes there.
5. Writes its section of docs/benchmarks.md (--write-doc).
"""

import argparse
import contextlib
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent / "var" / "bench"
HEADING = "# Benchmarks: the OpenTelemetry export of the scale ledger (issue 32)"


class Discard(BaseHTTPRequestHandler):
    received = 0  # bytes

    def do_POST(self):
        Discard.received += len(self.rfile.read(int(self.headers["Content-Length"])))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


class Enough(Exception):
    """The time for one phase is up."""


def rss_mb() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def phase(endpoint: str, only: tuple[str, ...], seconds: float) -> dict:
    from otel.export import Run, endpoint_destination

    samples, started = [], time.monotonic()

    def progress(report):
        samples.append((time.monotonic() - started, report.spans, rss_mb()))
        if time.monotonic() - started > seconds:
            raise Enough

    run = Run(endpoint_destination(endpoint), progress=progress, tables=only)
    with contextlib.suppress(Enough):
        run.run()
    elapsed = time.monotonic() - started
    return {"report": run.report, "elapsed": elapsed, "samples": samples}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ledger", type=Path, default=BENCH / "scale.sqlite3")
    parser.add_argument("--seconds", type=float, default=90)
    parser.add_argument("--write-doc", action="store_true")
    args = parser.parse_args()
    if not args.ledger.exists():
        raise SystemExit(f"{args.ledger} is missing: `make bench` builds it (bench.scale_bench)")
    django_db = BENCH / "otel-django.sqlite3"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{django_db}{suffix}").unlink(missing_ok=True)
    os.environ.update(
        SECRET_KEY="bench", DEBUG="1", LEDGER_DB=str(args.ledger), DJANGO_DB=str(django_db),
        DJANGO_SETTINGS_MODULE="ledgerweb.settings",
    )  # fmt: skip
    import django

    django.setup()
    from django.core.management import call_command

    from ledgerweb import sqlite

    call_command("migrate", verbosity=0)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Discard)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    endpoint = f"http://127.0.0.1:{server.server_port}"
    counts = {
        t: sqlite.rows(f"SELECT max(rowid) FROM {t}")[0][0] for t in ("turns", "nexus_requests")
    }
    load = os.getloadavg()[0]

    lines = [
        HEADING,
        "",
        f"`.venv/bin/python -m bench.otel_export_bench --write-doc --seconds {args.seconds:g}` on "
        f"`{args.ledger.name}` ({counts['turns']:,} turns, {counts['nexus_requests']:,} requests), "
        f"to a loopback OTLP/HTTP receiver that discards (load average {load:.1f} at the start, "
        "2 cores shared with other developers' work).",
        "",
        "| what | rows read | spans sent | time | rows/s | spans/s | MB sent"
        " | memory (RSS) first batch → max |",
        "|---|---|---|---|---|---|---|---|",
    ]  # fmt: skip
    for name, only, rows_of in (
        ("sessions: turns + their tool calls", ("turns",), ("turn", "tool call")),
        ("pipeline: requests + their stages", ("nexus_requests",), ("request", "stage")),
    ):
        before = Discard.received
        result = phase(endpoint, only, args.seconds)
        report, elapsed, samples = result["report"], result["elapsed"], result["samples"]
        rows = sum(report.sent[k] for k in rows_of)
        memory = [mb for _, _, mb in samples]
        lines.append(
            f"| {name} | {rows:,} | {report.spans:,} | {elapsed:.0f} s | {rows / elapsed:,.0f} |"
            f" {report.spans / elapsed:,.0f} | {(Discard.received - before) / 2**20:,.0f} |"
            f" {memory[0]:.0f} → {max(memory):.0f} MB ({len(samples)} batches) |"
        )
    resumed = phase(endpoint, ("turns",), 5)
    from otel.models import ExportMark

    mark = ExportMark.objects.get()
    lines += [
        "",
        f"A second run went on from the watermark (turn rowid {mark.turns_rowid:,} after it): "
        f"{resumed['report'].sent['turn']:,} more turns in {resumed['elapsed']:.0f} s, starting "
        "past the rows the first run had read. Memory is the whole process's (Django, the "
        "OpenTelemetry SDK, one batch of 500 turns or requests with their spans): it stays "
        "where the first batches put it.",
    ]
    text = "\n".join(lines) + "\n"
    from tools.docfile import publish

    publish(HEADING, text, args.write_doc)
    server.shutdown()


if __name__ == "__main__":
    main()
