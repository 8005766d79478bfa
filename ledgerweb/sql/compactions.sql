-- Optional: metadata of compaction turns (ontology, seeds/004 "Compaction"; ARCHITECTURE.md §2).
-- A compaction IS a turn; this row says what it summarised. Ledgers without this table still work.

CREATE TABLE compactions (
    turn_id TEXT PRIMARY KEY NOT NULL,  -- The compaction turn
    summary TEXT NOT NULL,              -- LLM summary of the summarised turns
    summarized_turn_ids TEXT NOT NULL,  -- JSON array of turn ids folded into the summary
    kept_turn_ids TEXT NOT NULL,        -- JSON array of turn ids kept verbatim
    model TEXT,                         -- Model that wrote the summary
    tokens_before INTEGER,              -- Context size before compaction
    tokens_after INTEGER,               -- Context size after compaction
    duration_ms INTEGER,
    trigger_reason TEXT,                -- 'context_limit', 'manual', ...
    created_at INTEGER NOT NULL,        -- Unix ms

    FOREIGN KEY (turn_id) REFERENCES turns(id)
);
