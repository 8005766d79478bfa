-- Agents Ledger for PostgreSQL: ledgerweb/sql/agents_ledger.sql translated column for column.
-- INTEGER is BIGINT (SQLite's INTEGER holds 64 bits: Unix ms do not fit in 32); the FOREIGN KEY
-- clauses are left out: they name tables that live elsewhere (events) or point both ways
-- (sessions <-> turns), and SQLite does not enforce them either (PRAGMA foreign_keys is off).
-- tests/test_schema_drift.py checks this file against its SQLite twin.

CREATE TABLE sessions (
    id TEXT PRIMARY KEY,              -- ULID
    persona TEXT NOT NULL,            -- Which agent persona

    -- Session routing
    routing_key TEXT NOT NULL,        -- IAM-assigned session key
    label TEXT,                       -- Human-friendly label

    -- Tree navigation
    root_turn_id TEXT,                -- First turn in session
    current_turn_id TEXT,             -- Active leaf turn

    -- Timing
    created_at BIGINT  NOT NULL,      -- Unix ms
    updated_at BIGINT  NOT NULL,      -- Last activity

    -- Status
    status TEXT NOT NULL DEFAULT 'active',  -- 'active', 'archived', 'deleted'

    -- Source event that created session
    source_event_id TEXT             -- FK to events.id
);

CREATE INDEX idx_sessions_persona ON sessions(persona);
CREATE INDEX idx_sessions_routing_key ON sessions(routing_key);
CREATE INDEX idx_sessions_updated ON sessions(updated_at DESC);

CREATE TABLE turns (
    id TEXT PRIMARY KEY,              -- ULID
    session_id TEXT NOT NULL,         -- Parent session

    -- Tree structure (enables forking)
    parent_turn_id TEXT,              -- Previous turn (null for root)

    -- Status
    status TEXT NOT NULL DEFAULT 'pending',  -- 'pending', 'streaming', 'completed', 'failed'

    -- Timing
    started_at BIGINT  NOT NULL,      -- When turn began
    completed_at BIGINT,             -- When turn finished

    -- Token usage
    prompt_tokens BIGINT,
    completion_tokens BIGINT,
    total_tokens BIGINT,

    -- Model info
    model TEXT,                       -- Model used

    -- Source
    source_event_id TEXT             -- Event that triggered this turn
);

CREATE INDEX idx_turns_session ON turns(session_id);
CREATE INDEX idx_turns_parent ON turns(parent_turn_id);
CREATE INDEX idx_turns_started ON turns(started_at DESC);

CREATE TABLE messages (
    id TEXT PRIMARY KEY,              -- ULID
    turn_id TEXT NOT NULL,            -- Parent turn

    -- Content
    role TEXT NOT NULL,               -- 'user', 'assistant', 'system'
    content TEXT NOT NULL,            -- Message content

    -- Ordering
    sequence BIGINT  NOT NULL,        -- Order within turn

    -- Timing
    created_at BIGINT  NOT NULL
);

CREATE INDEX idx_messages_turn ON messages(turn_id, sequence);

CREATE TABLE tool_calls (
    id TEXT PRIMARY KEY,              -- ULID
    turn_id TEXT NOT NULL,            -- Parent turn

    -- Tool info
    tool_name TEXT NOT NULL,
    parameters TEXT NOT NULL,         -- JSON

    -- Result
    result TEXT,                      -- JSON
    error TEXT,                       -- Error message if failed

    -- Status
    status TEXT NOT NULL DEFAULT 'pending',  -- 'pending', 'completed', 'failed'

    -- Timing
    started_at BIGINT  NOT NULL,
    completed_at BIGINT,

    -- Ordering
    sequence BIGINT  NOT NULL        -- Order within turn
);

CREATE INDEX idx_tool_calls_turn ON tool_calls(turn_id, sequence);
CREATE INDEX idx_tool_calls_tool ON tool_calls(tool_name);

