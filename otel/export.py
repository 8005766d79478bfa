"""One export run: what is new or finished since the last run to one destination, in batches.

Turns and requests are read past the destination's rowid watermark, a batch at a time. A
finished one becomes spans (spans.py); one still running is remembered as open and looked at
again on every run until it has finished: a span is sent once, when its row can no longer
change, because backends keep the first copy of a span (Phoenix) or show both (Jaeger). The
watermark moves only after the destination accepted the batch, so an interrupted or refused
run sends that batch again next time and nothing is lost; a batch accepted just before an
interruption may then arrive twice (span ids are derived from the ledger's ids, so it is the
same span twice, which most backends keep once).
"""

import hashlib
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from django.db import transaction
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from ledgerweb import sqlite
from ledgerweb.db import ledger_identity, ledger_place

from . import reader
from .models import ExportMark, OpenRow
from .spans import (
    FINISHED_REQUEST,
    FINISHED_TURN,
    Oddities,
    TurnRows,
    request_spans,
    resource,
    turn_spans,
)

BATCH = 500  # turns or requests per batch (each with its tool calls): one OTLP request
OPEN_BATCH = 500  # open rows looked at again per query
TRACES_PATH = "/v1/traces"


class ExportFailed(Exception):
    """The destination refused a batch or could not be reached: the watermark stays put."""


@dataclass
class Destination:
    """Where spans go: an OTLP/HTTP endpoint or a folder of OTLP JSON files."""

    key: str  # what the watermark is kept under (a hash: an address may carry a token)
    shown: str  # what the summary calls it (no query string, no user:password)
    make_exporter: Callable[[], SpanExporter]
    files: list[str] = field(default_factory=list)  # the files it wrote (a folder)


def endpoint_destination(
    endpoint: str, *, protocol: str = "http/protobuf", headers: dict | None = None, timeout=30
) -> Destination:
    """OTLP/HTTP: `endpoint` is the collector's base address (/v1/traces is added unless it is
    there already), as OTEL_EXPORTER_OTLP_ENDPOINT is read by OpenTelemetry's SDKs."""
    url = endpoint.rstrip("/")
    if not urlsplit(url).path.endswith(TRACES_PATH):
        url += TRACES_PATH
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{endpoint!r} is not an http(s) address")
    shown = urlunsplit((parts.scheme, parts.hostname + (f":{parts.port}" if parts.port else ""),
                        parts.path, "", ""))  # fmt: skip

    def make() -> SpanExporter:
        if protocol == "http/json":
            from opentelemetry.exporter.otlp.json.http.trace_exporter import OTLPSpanExporter
        else:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        return OTLPSpanExporter(endpoint=url, headers=headers, timeout=timeout)

    return Destination(_key(url), shown, make)


def folder_destination(folder: Path) -> Destination:
    """OTLP JSON files: each run that has something to send writes one file of JSON lines, one
    ExportTraceServiceRequest per batch (the OTLP file format the Collector's file exporter and
    receiver use)."""
    folder = folder.expanduser().resolve()

    def make() -> SpanExporter:
        from opentelemetry.exporter.otlp.json.file import FileSpanExporter

        folder.mkdir(parents=True, exist_ok=True)
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
        path = folder / f"ledgerweb-traces-{stamp}.jsonl"
        destination.files.append(str(path))
        return FileSpanExporter(path=path)

    destination = Destination(_key(f"file:{folder}"), str(folder), make)
    return destination


def _key(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


@dataclass
class ExportReport:
    sent: Counter = field(default_factory=Counter)  # span kind -> spans sent
    still_running: Counter = field(default_factory=Counter)  # table -> open rows left
    oddities: Oddities = field(default_factory=Oddities)
    started_afresh: str = ""  # why the watermark was reset, when it was

    @property
    def spans(self) -> int:
        return sum(self.sent.values())


class Run:
    """An export of the configured ledger to one destination."""

    def __init__(
        self,
        destination: Destination,
        *,
        with_content: bool = False,
        max_content: int = 65_536,
        batch: int = BATCH,
        progress: Callable[[ExportReport], None] = lambda report: None,
        tables: tuple[str, ...] = ("turns", "nexus_requests"),
    ):
        self.destination = destination
        self.max_content = max_content if with_content else None
        self.batch = batch
        self.progress = progress
        self.only = tables  # the Agents Ledger's turns, the Nexus Ledger's requests, or both
        self.report = ExportReport()
        self.exporter: SpanExporter | None = None
        self.resource = resource(Path(ledger_place()).name)

    def run(self) -> ExportReport:
        with sqlite.longer_time_limit(60_000):
            self.tables = reader.tables()
            keyed = {"turns", "nexus_requests"} & self.tables
            if missing := sqlite.tables_without_rowid(keyed):
                raise ExportFailed(
                    f"The ledger's {', '.join(missing)} table(s) have no rowid column to keep "
                    "the export's place by: add it with ledgerweb/sql/postgres/rowids.sql"
                )
            mark = self._mark()
            try:
                for table in ("turns", "nexus_requests"):
                    if table in self.tables and table in self.only:
                        self._open_rows(mark, table)
                        self._new_rows(mark, table)
            finally:
                if self.exporter is not None:
                    self.exporter.shutdown()
        for table in ("turns", "nexus_requests"):
            self.report.still_running[table] = mark.open_rows.filter(table=table).count()
        return self.report

    # ----- the watermark ----------------------------------------------------------------------

    def _mark(self) -> ExportMark:
        ledger = ledger_identity()
        anchor = _key(reader.anchor()) if "turns" in self.tables else ""
        mark, _ = ExportMark.objects.get_or_create(
            ledger=ledger,
            destination=self.destination.key,
            defaults={"shown": self.destination.shown, "anchor": anchor},
        )
        why = ""
        if mark.anchor and mark.anchor != anchor:
            why = "the ledger at this place is not the one exported before"
        elif mark.turns_rowid and (
            "turns" not in self.tables or reader.max_rowid("turns") < mark.turns_rowid
        ):
            why = "turns the last export had read are gone from the ledger"
        elif mark.requests_rowid and (
            "nexus_requests" not in self.tables
            or reader.max_rowid("nexus_requests") < mark.requests_rowid
        ):
            why = "requests the last export had read are gone from the ledger"
        if why:
            with transaction.atomic():
                mark.open_rows.all().delete()
                mark.turns_rowid = mark.requests_rowid = 0
                mark.anchor = anchor
                mark.save()
            self.report.started_afresh = why
        elif not mark.anchor and anchor:
            mark.anchor = anchor
            mark.save(update_fields=["anchor", "updated_at"])
        return mark

    # ----- reading and sending ----------------------------------------------------------------

    def _new_rows(self, mark: ExportMark, table: str) -> None:
        field_name = "turns_rowid" if table == "turns" else "requests_rowid"
        read = reader.turns_after if table == "turns" else reader.requests_after
        while found := read(getattr(mark, field_name), self.batch):
            finished, running = self._split(table, found)
            self._send(self._spans(table, finished))
            with transaction.atomic():
                setattr(mark, field_name, max(row["rowid"] for row in found))
                mark.spans_sent += self._batch_spans
                mark.save()
                OpenRow.objects.bulk_create(
                    [OpenRow(mark=mark, table=table, rowid=row["rowid"]) for row in running],
                    ignore_conflicts=True,
                )
            self.progress(self.report)
            if len(found) < self.batch:
                break

    def _open_rows(self, mark: ExportMark, table: str) -> None:
        """Rows read while still running: those finished now are sent, those gone forgotten."""
        read = reader.turns_by_rowid if table == "turns" else reader.requests_by_rowid
        after = 0
        while rowids := list(
            mark.open_rows.filter(table=table, rowid__gt=after)
            .order_by("rowid")
            .values_list("rowid", flat=True)[:OPEN_BATCH]
        ):
            after = rowids[-1]
            found = read(rowids)
            finished, _ = self._split(table, found)
            self._send(self._spans(table, finished))
            still_there = {row["rowid"] for row in found}
            done = {row["rowid"] for row in finished} | (set(rowids) - still_there)
            with transaction.atomic():
                mark.spans_sent += self._batch_spans
                mark.save()
                mark.open_rows.filter(table=table, rowid__in=done).delete()
            self.progress(self.report)

    def _split(self, table: str, found: list[dict]) -> tuple[list[dict], list[dict]]:
        final = FINISHED_TURN if table == "turns" else FINISHED_REQUEST
        finished = [row for row in found if row["status"] in final]
        return finished, [row for row in found if row["status"] not in final]

    def _spans(self, table: str, finished: list[dict]) -> list[ReadableSpan]:
        oddities = self.report.oddities
        if table == "nexus_requests":
            per_request = [request_spans(row, self.resource, oddities) for row in finished]
            sent = [spans for spans in per_request if spans]
            self.report.sent["request"] += len(sent)
            self.report.sent["stage"] += sum(len(spans) - 1 for spans in sent)
            return [span for spans in sent for span in spans]
        batch: list[TurnRows] = reader.turn_rows(
            finished, with_content=self.max_content is not None, ledger_tables=self.tables
        )
        per_turn = [
            turn_spans(rows, self.resource, oddities, max_content=self.max_content)
            for rows in batch
        ]
        sent = [spans for spans in per_turn if spans]
        self.report.sent["turn"] += len(sent)
        self.report.sent["tool call"] += sum(len(spans) - 1 for spans in sent)
        return [span for spans in sent for span in spans]

    def _send(self, spans: Sequence[ReadableSpan]) -> None:
        self._batch_spans = len(spans)
        if not spans:
            return
        if self.exporter is None:
            self.exporter = self.destination.make_exporter()
        if self.exporter.export(spans) is not SpanExportResult.SUCCESS:
            raise ExportFailed(
                f"{self.destination.shown} did not accept a batch of {len(spans)} spans (see the "
                "exporter's message above); what it accepted before is kept, the rest is sent "
                "by the next run"
            )
