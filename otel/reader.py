"""The ledger read for an export: turns and requests by rowid, a batch at a time.

Every query goes through ledgerweb.sqlite.rows() on the read-only ledger connection, and is a
primary-key or indexed look-up bounded by the batch: an export of a ledger of millions of rows
holds one batch in memory at a time. A PostgreSQL ledger has rowid as a column
(ledgerweb/sql/postgres/rowids.sql): the same SQL runs there.
"""

from ledgerweb import sqlite

from .spans import TurnRows

TURN_COLUMNS = """t.rowid AS rowid, t.id, t.session_id, t.parent_turn_id, t.status, t.started_at,
    t.completed_at, t.prompt_tokens, t.completion_tokens, t.total_tokens, t.model,
    t.source_event_id, s.persona, s.label, s.routing_key, s.status AS session_status,
    s.created_at AS session_created_at, s.current_turn_id AS head, s.root_turn_id AS root"""
TURNS_FROM = "turns t LEFT JOIN sessions s ON s.id = t.session_id"
TOOL_CALL_COLUMNS = "id, turn_id, tool_name, status, error, started_at, completed_at, sequence"


def tables() -> set[str]:
    return sqlite.table_names()


def max_rowid(table: str) -> int:
    return sqlite.rows(f"SELECT coalesce(max(rowid), 0) FROM {table}")[0][0]


def anchor() -> str:
    """The ledger's first turn (id and time), '' while it has none: a file replaced at the same
    path lacks it (the Agents Ledger is append-only, so it never leaves on its own)."""
    found = sqlite.rows("SELECT id, started_at FROM turns ORDER BY rowid LIMIT 1")
    return repr(tuple(found[0])) if found else ""


def turns_after(rowid: int, limit: int) -> list[dict]:
    return sqlite.rows(
        f"SELECT {TURN_COLUMNS} FROM {TURNS_FROM} WHERE t.rowid > %s ORDER BY t.rowid LIMIT %s",
        [rowid, limit],
        named=True,
    )


def turns_by_rowid(rowids: list[int]) -> list[dict]:
    sql, params = sqlite.in_list(rowids)
    return sqlite.rows(
        f"SELECT {TURN_COLUMNS} FROM {TURNS_FROM} WHERE t.rowid IN {sql}", params, named=True
    )


def requests_after(rowid: int, limit: int) -> list[dict]:
    return sqlite.rows(
        "SELECT rowid AS rowid, * FROM nexus_requests WHERE rowid > %s ORDER BY rowid LIMIT %s",
        [rowid, limit],
        named=True,
    )


def requests_by_rowid(rowids: list[int]) -> list[dict]:
    sql, params = sqlite.in_list(rowids)
    return sqlite.rows(
        f"SELECT rowid AS rowid, * FROM nexus_requests WHERE rowid IN {sql}", params, named=True
    )


def turn_rows(turns: list[dict], *, with_content: bool, ledger_tables: set[str]) -> list[TurnRows]:
    """Each finished turn with its tool calls, usage and (with_content) messages: one query per
    table for the whole batch."""
    if not turns:
        return []
    ids = [t["id"] for t in turns]
    columns = TOOL_CALL_COLUMNS + (", parameters, result" if with_content else "")
    calls = _by_turn(f"SELECT {columns} FROM tool_calls WHERE turn_id IN {{}}", ids)
    usage = {}
    if "turn_usage" in ledger_tables:
        for row in _rows_for(
            "SELECT turn_id, model_calls, input_tokens, cache_read_tokens, cache_write_tokens,"
            " output_tokens FROM turn_usage WHERE turn_id IN {}",
            ids,
        ):
            usage[row["turn_id"]] = row
    messages = (
        _by_turn(
            "SELECT id, turn_id, role, content, sequence FROM messages WHERE turn_id IN {}", ids
        )
        if with_content
        else {}
    )
    _find_spawning_turns(turns)
    return [
        TurnRows(
            turn,
            sorted(calls.get(turn["id"], []), key=_call_order),
            usage.get(turn["id"]),
            messages.get(turn["id"], []) if with_content else None,
        )
        for turn in turns
    ]


def _call_order(call: dict):
    sequence = call["sequence"]
    number = sequence if isinstance(sequence, int | float) and not isinstance(sequence, bool) else 0
    return (number, str(call["id"]))


def _rows_for(sql: str, ids: list) -> list[dict]:
    in_sql, params = sqlite.in_list(ids)
    return sqlite.rows(sql.format(in_sql), params, named=True)


def _by_turn(sql: str, ids: list) -> dict:
    found: dict = {}
    for row in _rows_for(sql, ids):
        found.setdefault(row["turn_id"], []).append(row)
    return found


def _find_spawning_turns(turns: list[dict]) -> None:
    """A subagent session's root turn links to the tool call that spawned it
    (routing_key subagent:<session>:<tool call>): that call's turn names its trace."""
    wanted = {}
    for turn in turns:
        key = turn.get("routing_key")
        if turn["parent_turn_id"] is None and isinstance(key, str) and key.startswith("subagent:"):
            parts = key.split(":", 2)
            if len(parts) == 3:
                wanted[turn["id"]] = parts[2]
    if not wanted:
        return
    calls = {
        row["id"]: row["turn_id"]
        for row in _rows_for(
            "SELECT id, turn_id FROM tool_calls WHERE id IN {}", list(wanted.values())
        )
    }
    for turn in turns:
        if turn["id"] in wanted:
            turn["spawning_turn_id"] = calls.get(wanted[turn["id"]])
