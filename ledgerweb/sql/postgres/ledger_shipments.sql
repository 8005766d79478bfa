-- Defined by ledgerweb (not the seeds), in a central PostgreSQL ledger only: one row per agent
-- host's SQLite ledger that `manage.py ledger_ship` copies in. It says where the next run starts
-- and, on the overview, which hosts shipped and how long ago. Created by ledger_ship when missing.

CREATE TABLE ledger_shipments (
    host TEXT NOT NULL,               -- The agent host (ledger_ship --host; its hostname by default)
    source TEXT NOT NULL,             -- The SQLite ledger's path on that host
    watermark BIGINT NOT NULL,        -- Unix ms: the newest activity shipped; the next run starts here less an overlap
    shipped_at BIGINT NOT NULL,       -- Unix ms: when the last complete run ended
    rows_added BIGINT NOT NULL,       -- Rows the last run added
    problems BIGINT NOT NULL,         -- Sessions and requests left out (newly or still) and collisions in the last run
    PRIMARY KEY (host, source)
);
