-- Optional compactions table for PostgreSQL: ledgerweb/sql/compactions.sql translated.
-- INTEGER is BIGINT (SQLite's INTEGER holds 64 bits: Unix ms do not fit in 32); the FOREIGN KEY
-- clauses are left out: they name tables that live elsewhere (events) or point both ways
-- (sessions <-> turns), and SQLite does not enforce them either (PRAGMA foreign_keys is off).
-- tests/test_schema_drift.py checks this file against its SQLite twin.

-- Optional: metadata of compaction turns (ontology, seeds/004 "Compaction"; ARCHITECTURE.md §2).
-- A compaction IS a turn; this row says what it summarised. Ledgers without this table still work.

CREATE TABLE compactions (
    turn_id TEXT PRIMARY KEY NOT NULL,  -- The compaction turn
    summary TEXT NOT NULL,              -- LLM summary of the summarised turns
    summarized_turn_ids TEXT NOT NULL,  -- JSON array of turn ids folded into the summary
    kept_turn_ids TEXT NOT NULL,        -- JSON array of turn ids kept verbatim
    model TEXT,                         -- Model that wrote the summary
    tokens_before BIGINT,              -- Context size before compaction
    tokens_after BIGINT,               -- Context size after compaction
    duration_ms BIGINT,
    trigger_reason TEXT,                -- 'context_limit', 'manual', ...
    created_at BIGINT  NOT NULL        -- Unix ms
);
