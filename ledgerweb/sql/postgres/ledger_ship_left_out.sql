-- Defined by ledgerweb (not the seeds), in a central PostgreSQL ledger only: the sessions and
-- requests of a host's SQLite ledger that `manage.py ledger_ship` could not write (a value
-- PostgreSQL's typed columns cannot hold unchanged, an id collision). Every run tries them again
-- and drops a row here once it goes in; one still left out is listed as such, not as new.
-- Created by ledger_ship when missing.

CREATE TABLE ledger_ship_left_out (
    host TEXT NOT NULL,               -- The agent host (ledger_ship --host)
    source TEXT NOT NULL,             -- The SQLite ledger's path on that host
    kind TEXT NOT NULL,               -- 'session' or 'request'
    item_id TEXT NOT NULL,            -- The session's or request's id in the source
    why TEXT NOT NULL,                -- What the last try said
    first_left_out_at BIGINT NOT NULL, -- Unix ms: the run that first left it out
    last_tried_at BIGINT NOT NULL,    -- Unix ms: the last run that tried it
    PRIMARY KEY (host, source, kind, item_id)
);
