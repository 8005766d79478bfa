"""Importers: other ledgers and agent transcripts, written as Agents Ledger rows.

`python manage.py ledger_import FORMAT PATH...` picks a format module from FORMATS; each exposes
FORMAT and read(paths, report) (see importers/bundle.py), and importers/writer.py writes what it
reads, one session per transaction. The package is a Django app only for that command
(importers/management/commands/); the readers and the writer use no Django.
"""

from importlib import import_module

# Command-line name -> module, imported only when asked for.
FORMATS = {
    "aix": "importers.aix",
    "agentos": "importers.agentos",
    "claude-code": "importers.claude_code",
    "codex": "importers.codex",
    "otlp": "importers.otlp",
    "chatgpt": "importers.chatgpt",
    "claude-ai": "importers.claude_ai",
}


def format_module(name: str):
    """The module reading FORMAT `name` (a KeyError names an unknown format)."""
    return import_module(FORMATS[name])
