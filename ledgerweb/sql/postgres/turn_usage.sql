-- Optional turn_usage table for PostgreSQL: ledgerweb/sql/turn_usage.sql translated.
-- INTEGER is BIGINT (SQLite's INTEGER holds 64 bits: Unix ms do not fit in 32); the FOREIGN KEY
-- clauses are left out: they name tables that live elsewhere (events) or point both ways
-- (sessions <-> turns), and SQLite does not enforce them either (PRAGMA foreign_keys is off).
-- tests/test_schema_drift.py checks this file against its SQLite twin.

-- Optional, defined by ledgerweb (not the seeds): what a turn's model calls billed, where an
-- importer knows it (Claude Code and Codex transcripts). turns.prompt_tokens keeps the seeds'
-- meaning (the context of the turn's last call); this row adds the input billed over all of the
-- turn's calls, with the cache reads and writes priced at their own rates. Ledgers without this
-- table still work: costs are then estimated from prompt and completion tokens.

CREATE TABLE turn_usage (
    turn_id TEXT PRIMARY KEY NOT NULL,   -- The turn (turns.id)
    model_calls BIGINT  NOT NULL,        -- Model calls (API responses) the turn made
    input_tokens BIGINT  NOT NULL,       -- Input billed over those calls, cache reads and writes included
    cache_read_tokens BIGINT  NOT NULL,  -- Of which read from the prompt cache
    cache_write_tokens BIGINT  NOT NULL, -- Of which written to the prompt cache
    output_tokens BIGINT  NOT NULL      -- Output over those calls (reasoning included)
);
