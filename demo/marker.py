"""The mark of a ledger `ledger_demo` built: SQLite's header has a 32-bit application_id for
"which program's file is this" (PRAGMA application_id), 0 in every other ledger. The background
process keeps a marked ledger's in-flight requests from going stale (demo/live.py)."""

DEMO_APPLICATION_ID = 0x4C57_444D  # "LWDM": ledgerweb demo
