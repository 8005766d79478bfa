"""OpenTelemetry out: the ledger as OTLP traces, sent to a trace backend or written as files.

`python manage.py ledger_otel_export --endpoint URL` (or `--to-dir DIR`) sends what is new or
finished since its last run to that destination: spans.py turns ledger rows into spans following
the GenAI semantic conventions (names in ledgerfacts/otel_attributes.py), reader.py reads the
ledger in batches, export.py sends each batch through OpenTelemetry's own exporters and keeps
the watermark (models.py) in ledgerweb's database. The OTLP importer is importers/otlp.py.
"""
