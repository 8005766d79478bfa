-- Optional tool_call_source_ids table for PostgreSQL: ledgerweb/sql/tool_call_source_ids.sql
-- translated (the FOREIGN KEY clause left out, as everywhere: SQLite does not enforce it
-- either). tests/test_schema_drift.py checks this file against its SQLite twin.

-- Optional, defined by ledgerweb (not the seeds): the id a tool call has in the transcript it
-- was imported from, where the ledger's id is another. Codex names a call by its `call_id`,
-- which is unique only within its rollout (a fork's rollout repeats its origin's calls, a
-- sample numbers them call-1, call-2…): ledger_import derives the ledger's id from the rollout
-- line and keeps the call_id here, so a call_id pasted in the search box opens its call
-- (search/ids.py). One source id may name several tool calls. Ledgers without this table
-- still work: their call_ids are just not found.

CREATE TABLE tool_call_source_ids (
    tool_call_id TEXT PRIMARY KEY NOT NULL,  -- The tool call (tool_calls.id)
    source_id TEXT NOT NULL                  -- Its id in the transcript (Codex's call_id)
);

CREATE INDEX idx_tool_call_source_ids_source ON tool_call_source_ids(source_id);
