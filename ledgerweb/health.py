"""The ledger's health: the invariants of seeds 000 and 002, checked with bounded SQL.

Each check is one or two statements that read an index or scan one table once; counts stop at
COUNT_CAP and each finding keeps a few examples. Used by `manage.py ledger_check` (for cron: it
exits non-zero on errors) and by the staff page /health/.
"""

from collections.abc import Callable
from dataclasses import asdict, dataclass, field

from django.urls import NoReverseMatch, reverse

from ledgerfacts import schema
from ledgerfacts.timestamps import now_ms
from ledgerweb import dialect, long_values, prices, sqlite
from ledgerweb.db import LEDGER, ledger_identity, ledger_path_of, ledger_place
from ledgerweb.pg_schema import ROWIDS_FIX

# The summariser (ledger_rollup --follow) runs the checks this often and keeps the report.
EVERY_S = 3600
COUNT_CAP = 10_000
EXAMPLES = 5
STUCK_AFTER_MS = 15 * 60_000  # a request still 'processing' after this long is stuck

ERROR, WARNING, INFO = "error", "warning", "info"


@dataclass
class Example:
    label: str
    url: str | None = None


@dataclass
class Finding:
    """One check's result: a problem it found (`passed` False), or that it found none."""

    check: str
    severity: str  # how bad a violation of this check is; info for plain facts
    message: str
    count: sqlite.CappedCount
    examples: list[Example] = field(default_factory=list)
    passed: bool = False

    @property
    def is_problem(self) -> bool:
        return not self.passed and self.severity != INFO


NONE_FOUND = sqlite.CappedCount(0, False)


def _url(name: str, *args) -> str | None:
    try:
        return reverse(name, args=args)
    except NoReverseMatch:
        return None


def _turn_example(turn_id, session_id) -> Example:
    return Example(f"turn {turn_id}", _url("sessions:turn", session_id, turn_id))


def _session_example(session_id) -> Example:
    return Example(f"session {session_id}", _url("sessions:detail", session_id))


def _request_example(request_id) -> Example:
    return Example(f"request {request_id}", _url("pipeline:request", request_id))


def _violations(check, severity, message, sql, params, example) -> Finding:
    """Count the rows `sql` selects (at most COUNT_CAP) and keep the first few as examples."""
    rows = sqlite.rows(f"{sql} LIMIT %s", [*params, COUNT_CAP + 1])
    if not rows:
        return Finding(check, severity, message, NONE_FOUND, passed=True)
    count = sqlite.CappedCount(min(len(rows), COUNT_CAP), len(rows) > COUNT_CAP)
    return Finding(check, severity, message, count, [example(*r) for r in rows[:EXAMPLES]])


# -- Agents Ledger (seed 000) --------------------------------------------------------------------


def orphan_turns():
    return _violations(
        "tree integrity", ERROR, "turns whose parent turn does not exist",
        """SELECT t.id, t.session_id FROM turns t WHERE t.parent_turn_id IS NOT NULL
           AND NOT EXISTS (SELECT 1 FROM turns p WHERE p.id = t.parent_turn_id)""",
        [], _turn_example,
    )  # fmt: skip


def turns_in_cycles():
    # A turn in (or below) a cycle cannot be reached from any root: walk down from the roots
    # (UNION drops repeats, so the walk ends) and report what it never reached.
    return _violations(
        "tree integrity", ERROR, "turns whose chain of parents loops (a cycle)",
        """WITH RECURSIVE reached(id) AS (
               SELECT t.id FROM turns t WHERE t.parent_turn_id IS NULL
                  OR NOT EXISTS (SELECT 1 FROM turns p WHERE p.id = t.parent_turn_id)
               UNION
               SELECT c.id FROM turns c JOIN reached r ON c.parent_turn_id = r.id)
           SELECT t.id, t.session_id FROM turns t WHERE t.id NOT IN (SELECT id FROM reached)""",
        [], _turn_example,
    )  # fmt: skip


def missing_heads():
    return _violations(
        "session pointers", ERROR, "sessions whose head (current_turn_id) does not exist",
        """SELECT s.id FROM sessions s WHERE s.current_turn_id IS NOT NULL
           AND NOT EXISTS (SELECT 1 FROM turns t WHERE t.id = s.current_turn_id)""",
        [], _session_example,
    )  # fmt: skip


def heads_not_leaves():
    # Within its own session the head has no later turn (a fresh fork's head may have children
    # in the origin session: ARCHITECTURE.md §2).
    return _violations(
        "session pointers", ERROR, "sessions whose head is not a leaf (it has later turns)",
        """SELECT s.id FROM sessions s WHERE s.current_turn_id IS NOT NULL AND EXISTS (
               SELECT 1 FROM turns c WHERE c.parent_turn_id = s.current_turn_id
               AND c.session_id = s.id)""",
        [], _session_example,
    )  # fmt: skip


def duplicate_message_sequences():
    return _violations(
        "ordered messages", ERROR, "turns with two messages at the same sequence number",
        """SELECT m.turn_id, (SELECT t.session_id FROM turns t WHERE t.id = m.turn_id)
           FROM messages m GROUP BY m.turn_id, m.sequence HAVING count(*) > 1""",
        [], _turn_example,
    )  # fmt: skip


def unresolved_tool_calls():
    return _violations(
        "complete tool calls", ERROR, "completed turns with tool calls still pending",
        """SELECT DISTINCT t.id, t.session_id FROM tool_calls c JOIN turns t ON t.id = c.turn_id
           WHERE c.status = 'pending' AND t.status = 'completed'""",
        [], _turn_example,
    )  # fmt: skip


# -- Nexus Ledger (seed 002) ---------------------------------------------------------------------


def stuck_requests():
    return _violations(
        "always finalized", ERROR,
        f"requests still 'processing' {STUCK_AFTER_MS // 60_000} minutes after they started",
        "SELECT id FROM nexus_requests WHERE status = 'processing' AND started_at < %s",
        [now_ms() - STUCK_AFTER_MS], _request_example,
    )  # fmt: skip


def inconsistent_stages():
    return _violations(
        "stage progression", ERROR,
        "requests whose stage contradicts their status (finalized but not at finalize, or "
        "failed without naming the failed stage)",
        """SELECT id FROM nexus_requests
           WHERE (status IN ('completed', 'skipped') AND stage != 'finalize')
              OR (status = 'failed' AND (error_stage IS NULL OR error_stage != stage))""",
        [], _request_example,
    )  # fmt: skip


def early_snapshots():
    return _violations(
        "snapshot at end", WARNING, "requests still processing that already hold a snapshot",
        """SELECT id FROM nexus_requests
           WHERE status = 'processing' AND request_snapshot IS NOT NULL""",
        [], _request_example,
    )  # fmt: skip


KNOWN_STATUSES = {
    "turns": ("pending", "streaming", "completed", "failed"),
    "nexus_requests": ("processing", "completed", "failed", "skipped"),
}


def unknown_statuses(tables: set[str]) -> list[Finding]:
    findings = []
    for table, known in KNOWN_STATUSES.items():
        if table not in tables:
            continue
        marks = ", ".join(["%s"] * len(known))
        rows = sqlite.rows(
            f"SELECT status, count(*) FROM {table} WHERE status NOT IN ({marks}) GROUP BY 1",
            known,
        )
        total = sum(n for _, n in rows)
        findings.append(
            Finding(
                "known statuses", WARNING, f"{table} rows with a status the seeds do not name",
                sqlite.CappedCount(total, False),
                [Example(f"{status!r}: {n:,}") for status, n in rows[:EXAMPLES]],
                passed=not rows,
            )
        )  # fmt: skip
    return findings


# -- Prices --------------------------------------------------------------------------------------

# Model names are few; a ledger with more distinct ones than this is listed up to here.
LISTED_MODELS = 50


def unpriced_models(tables: set[str]) -> Finding:
    """Model names in the ledger that neither genai-prices nor MODEL_PRICES knows: their tokens
    are shown as "no price" and counted apart (ledgerweb/prices.py)."""
    counts: dict[str, list[int]] = {}
    for table, column in (("turns", "model"), ("nexus_requests", "agent_model")):
        if table in tables:
            for name, n in sqlite.rows(
                f"SELECT {column}, count(*) FROM {table} WHERE {column} IS NOT NULL GROUP BY 1"
            ):
                counts.setdefault(name, [0, 0])[table == "nexus_requests"] += n
    unmatched = sorted((name for name in counts if not prices.is_priced(name)), key=str)
    request_list = _url("pipeline:requests")
    examples = [
        Example(
            f"{name!r}: {turns:,} turn{'s' * (turns != 1)}, "
            f"{requests:,} request{'s' * (requests != 1)}",
            f"{request_list}?{long_values.query({'model': name})}"
            if requests and request_list
            else None,
        )
        for name in unmatched[:LISTED_MODELS]
        for turns, requests in [counts[name]]
    ]
    return Finding(
        "known prices", WARNING,
        "models without a known price: their tokens show \"no price\" and are counted apart, "
        "never as $0 (add them to MODEL_PRICES, see the README)",
        sqlite.CappedCount(len(unmatched), False), examples, passed=not unmatched,
    )  # fmt: skip


# -- The file ------------------------------------------------------------------------------------


def file_facts() -> list[Finding]:
    if dialect.on_postgres():
        return _database_facts()
    path = ledger_path_of(LEDGER)
    findings = []
    mode = sqlite.journal_mode()
    if mode != "wal":
        findings.append(
            Finding("journal mode", WARNING,
                    f"the ledger is in {mode} mode, not WAL: a live writer blocks readers",
                    sqlite.CappedCount(1, False))
        )  # fmt: skip
    else:
        findings.append(
            Finding("journal mode", WARNING, "the ledger is in WAL mode: readers and the writer"
                    " do not block each other", NONE_FOUND, passed=True)
        )  # fmt: skip
    (pages,) = sqlite.rows("PRAGMA page_count")[0]
    (page_size,) = sqlite.rows("PRAGMA page_size")[0]
    size = path.stat().st_size if path.exists() else 0
    facts = [f"{size:,} bytes", f"{pages:,} pages of {page_size:,} bytes", f"journal mode {mode}"]
    findings.append(
        Finding("file", INFO, "the ledger file", sqlite.CappedCount(1, False),
                [Example(fact) for fact in facts + _table_sizes()])
    )  # fmt: skip
    return findings


def _database_facts() -> list[Finding]:
    """file_facts' twin for a PostgreSQL ledger: no journal mode to warn about (readers never
    block the writer there), the database's size and the tables' row counts."""
    ((size,),) = sqlite.rows("SELECT pg_database_size(current_database())")
    facts = [f"{size:,} bytes", f"database {ledger_place()}"]
    return [
        # The check the WAL warning stands for, passed by construction.
        Finding("journal mode", WARNING, "the ledger is in PostgreSQL: readers and the writer"
                " do not block each other", NONE_FOUND, passed=True),
        Finding("database", INFO, "the ledger database (PostgreSQL)", sqlite.CappedCount(1, False),
                [Example(fact) for fact in facts + _table_sizes()]),
        _rowids(),
    ]  # fmt: skip


def _rowids() -> Finding:
    """A PostgreSQL ledger made before its tables had the rowid column cannot be searched."""
    present = sqlite.table_names() & set(schema.LEDGER_TABLES)
    missing = sqlite.tables_without_rowid(present)
    if not missing:
        return Finding("rowid columns", WARNING, "every ledger table has the rowid column search"
                       " keys its rows by", NONE_FOUND, passed=True)  # fmt: skip
    return Finding(
        "rowid columns",
        WARNING,
        "search cannot index this ledger: the tables listed have no rowid column (the ledger"
        f" was made before it); add it with: {ROWIDS_FIX}",
        sqlite.CappedCount(len(missing), False),
        [Example(table) for table in missing],
    )


def _table_sizes() -> list[str]:
    tables = sqlite.table_names()
    return [
        f"{table}: {sqlite.capped_count(table, COUNT_CAP)} rows"
        for table in schema.LEDGER_TABLES
        if table in tables
    ]


AGENTS_CHECKS: list[Callable] = [
    orphan_turns, turns_in_cycles, missing_heads, heads_not_leaves,
    duplicate_message_sequences, unresolved_tool_calls,
]  # fmt: skip
NEXUS_CHECKS: list[Callable] = [stuck_requests, inconsistent_stages, early_snapshots]


AGENTS_TABLES = ("sessions", "turns", "messages", "tool_calls")


def _not_checked(check: str, missing: list[str]) -> Finding:
    tables = ", ".join(missing) + (" tables" if len(missing) > 1 else " table")
    message = f"not checked: the ledger has no {tables}"
    return Finding(check, INFO, message, NONE_FOUND)


def run_checks() -> list[Finding]:
    """Every check's result, problems first (errors, then warnings), then facts, then the
    checks that passed; a check whose tables are missing says it was not run."""
    tables = sqlite.table_names()
    findings = []
    if missing := [t for t in AGENTS_TABLES if t not in tables]:
        findings.append(_not_checked("Agents Ledger", missing))
    else:
        findings += [check() for check in AGENTS_CHECKS]
    if "nexus_requests" not in tables:
        findings.append(_not_checked("Nexus Ledger", ["nexus_requests"]))
    else:
        findings += [check() for check in NEXUS_CHECKS]
    findings += unknown_statuses(tables)
    findings.append(unpriced_models(tables))
    findings += file_facts()
    order = {ERROR: 0, WARNING: 1, INFO: 2}
    return sorted(findings, key=lambda f: (f.passed, order[f.severity]))


# -- The kept report -------------------------------------------------------------------------------


@dataclass
class Report:
    findings: list[Finding]
    checked_at: int  # Unix ms
    took_ms: int

    @property
    def problems(self) -> int:
        return sum(f.is_problem for f in self.findings)


def check_and_keep() -> Report:
    """Run every check now and keep the report for this ledger (the page shows it)."""
    from ledgerweb.models import HealthReport

    checked_at = now_ms()
    findings = run_checks()
    report = Report(findings, checked_at, now_ms() - checked_at)
    HealthReport.objects.update_or_create(
        ledger_path=ledger_identity(),
        defaults={
            "checked_at": report.checked_at,
            "took_ms": report.took_ms,
            "findings": [asdict(f) for f in findings],
        },
    )
    return report


def kept_report() -> Report | None:
    """The last report kept for this ledger, if any."""
    from ledgerweb.models import HealthReport

    kept = HealthReport.objects.filter(ledger_path=ledger_identity()).first()
    if kept is None:
        return None
    findings = [
        Finding(**(f | {"count": sqlite.CappedCount(**f["count"]),
                        "examples": [Example(**e) for e in f["examples"]]}))
        for f in kept.findings
    ]  # fmt: skip
    return Report(findings, kept.checked_at, kept.took_ms)
