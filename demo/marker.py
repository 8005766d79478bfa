"""The mark of a ledger `ledger_demo` built: SQLite's header has a 32-bit application_id for
"which program's file is this" (PRAGMA application_id), 0 in every other ledger. The background
process keeps a marked ledger's in-flight requests from going stale (demo/live.py), and keeps the
one `make demo` serves moving (demo/live_writer.py: `ledger_demo --live` marks it so)."""

DEMO_APPLICATION_ID = 0x4C57_444D  # "LWDM": ledgerweb demo
DEMO_LIVE_APPLICATION_ID = 0x4C57_444C  # "LWDL": ledgerweb demo, written live
DEMO_MARKS = (DEMO_APPLICATION_ID, DEMO_LIVE_APPLICATION_ID)
