-- Optional, defined by ledgerweb (not the seeds): what a turn's model calls billed, where an
-- importer knows it (Claude Code and Codex transcripts). turns.prompt_tokens keeps the seeds'
-- meaning (the context of the turn's last call); this row adds the input billed over all of the
-- turn's calls, with the cache reads and writes priced at their own rates. Ledgers without this
-- table still work: costs are then estimated from prompt and completion tokens.

CREATE TABLE turn_usage (
    turn_id TEXT PRIMARY KEY NOT NULL,   -- The turn (turns.id)
    model_calls INTEGER NOT NULL,        -- Model calls (API responses) the turn made
    input_tokens INTEGER NOT NULL,       -- Input billed over those calls, cache reads and writes included
    cache_read_tokens INTEGER NOT NULL,  -- Of which read from the prompt cache
    cache_write_tokens INTEGER NOT NULL, -- Of which written to the prompt cache
    output_tokens INTEGER NOT NULL,      -- Output over those calls (reasoning included)

    FOREIGN KEY (turn_id) REFERENCES turns(id)
);
