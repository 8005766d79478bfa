"""Raw SQL reaches a database through one door, ledgerweb/sqlite.py's rows(): that is where the
time limit applies and where PostgreSQL's variants will sit. No view or query module opens a
cursor of its own (read from the modules' source, so a new one fails here at once)."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# tools/: the soak writer and the doc writer shared by tests and the bench, never served.
NOT_THE_APP = {"tests", "bench", "tools", "docs", "static", "templates", "var"}
CURSOR_CALLS = {"cursor", "execute", "executemany", "executescript"}

# Modules that may still run SQL themselves, and why.
MAY_RUN_SQL = {
    # The one door.
    "ledgerweb/sqlite.py": "rows() itself",
    # ledgerweb's own database, not the ledger: writers in bulk and their engine-specific SQL,
    # each the one module of its concern (ARCHITECTURE §10: one engine per job, in one module).
    "search/engine.py": "the search index: FTS5 tables written and read in ledgerweb's database",
    "pipeline/rollups.py": "the chart rollups: bulk upserts into ledgerweb's database",
    "background/lock.py": "the background process's lock: PostgreSQL advisory locks",
    "search/engine_postgres.py": "the search index on PostgreSQL: tsvector tables, its time limit",
    # Writers with a writable sqlite3 connection of their own (never the read-only alias):
    # new ledgers, imports, retention and the demo write files the browsing path must not.
    "ledgerfacts/schema.py": "creates a ledger from the DDL and inspects a connection it is given",
    "ledgerfacts/dbapi.py": "a write transaction on a connection it is given (writer, retention)",
    "ledgerweb/management/commands/ledger_init.py": "creates a ledger file",
    "demo/build.py": "writes the demo ledger",
    "demo/sink.py": "writes the demo ledger",
    "demo/live_writer.py": "keeps the live demo's ledger moving (make demo)",
    "demo/live.py": "finishes the demo ledger's in-flight requests and turns as time passes",
    "pipeline/retention.py": "moves old requests to an archive ledger, batch by batch",
    "pipeline/retention_db.py": "retention's connections: a SQLite file or a PostgreSQL database",
    "importers/writer.py": "writes imported sessions in one transaction",
    "importers/target.py": "the writer's connection: a SQLite file or a PostgreSQL ledger",
    "importers/ship.py": "reads a host's ledger file and writes the central one (ledger_ship)",
    "importers/postgres_ledger.py": "creates (or takes back) the tables of a PostgreSQL ledger "
    "being imported into",
    "ledgerweb/pg_schema.py": "inspects a PostgreSQL ledger's catalogue on a connection given",
    "importers/sqlite_source.py": "reads a foreign ledger file being imported",
    "importers/aix.py": "reads a foreign ledger file being imported",
    "importers/agentos.py": "reads a foreign ledger file being imported",
}


def app_modules() -> list[Path]:
    return [
        path
        for path in ROOT.glob("*/**/*.py")
        if path.relative_to(ROOT).parts[0] not in NOT_THE_APP
        and not path.relative_to(ROOT).parts[0].startswith(".")
        and "migrations" not in path.parts
    ]


def cursor_calls(path: Path) -> list[str]:
    """Where a module calls .cursor() or .execute…() on anything: `line: call`."""
    tree = ast.parse(path.read_text(), filename=str(path))
    return [
        f"{node.lineno}: .{node.func.attr}()"
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in CURSOR_CALLS
    ]


def test_no_module_opens_a_cursor_outside_the_one_door():
    found = {}
    for path in app_modules():
        name = path.relative_to(ROOT).as_posix()
        if name not in MAY_RUN_SQL and (calls := cursor_calls(path)):
            found[name] = calls
    assert found == {}, "run raw SQL through ledgerweb.sqlite.rows()"


def test_the_walk_reads_the_view_modules(tmp_path):
    # The walk must see the modules it guards, and see a cursor where one is opened.
    names = {p.relative_to(ROOT).as_posix() for p in app_modules()}
    assert {"sessions/views.py", "pipeline/views.py", "ledgerweb/views.py"} <= names
    module = tmp_path / "m.py"
    module.write_text("with connection.cursor() as c:\n    c.execute('SELECT 1')\n")
    assert cursor_calls(module) == ["1: .cursor()", "2: .execute()"]
