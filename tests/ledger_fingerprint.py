"""Proof that a feature never wrote the ledger: the file's bytes (SQLite), or every row of every
ledger table (a PostgreSQL ledger, which has no file)."""

import hashlib
from pathlib import Path

from ledgerweb.db import is_postgres_url

TABLES = ("sessions", "turns", "messages", "tool_calls", "compactions", "nexus_requests")


def ledger_fingerprint(builder) -> str:
    """Byte for byte: equal before and after means the ledger is unchanged."""
    if not is_postgres_url(builder.path):
        return hashlib.sha256(Path(builder.path).read_bytes()).hexdigest()
    digest = hashlib.sha256()
    for table in TABLES:
        for row in builder.conn.execute(f"SELECT * FROM {table} ORDER BY 1"):
            digest.update(repr(row).encode())
    return digest.hexdigest()
