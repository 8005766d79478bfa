"""What turns billed, from the optional turn_usage table (ledgerweb/sql/turn_usage.sql).

Importers fill it where a transcript has the figures (Claude Code, Codex); a ledger without it,
or a turn without a row, falls back to the ≈ estimate from the turn's own token columns.
"""

from ledgerweb import sqlite
from ledgerweb.costs import (
    CostSum,
    TurnCost,
    estimated_usage,
    tier_band_sql,
    token_count,
    token_count_sql,
    turn_cost,
)
from ledgerweb.prices import HOUR_MS, TokenUsage

TABLE = "turn_usage"


def billed_usage(turn_ids, tables: set[str] | None = None) -> dict[str, TokenUsage]:
    """turn id → its billed usage, for the turns that have a turn_usage row (one query).
    `tables`: the ledger's table names when the caller has them already."""
    ids = list(turn_ids)
    if not ids or TABLE not in (sqlite.table_names() if tables is None else tables):
        return {}
    ids_sql, params = sqlite.in_list(ids)
    rows = sqlite.rows(
        f"""SELECT turn_id, model_calls, input_tokens, cache_read_tokens, cache_write_tokens,
                   output_tokens
            FROM {TABLE} WHERE turn_id IN {ids_sql}""",
        params,
    )
    return {
        turn_id: TokenUsage(
            input=token_count(input_tokens),
            output=token_count(output),
            cache_read=token_count(cache_read),
            cache_write=token_count(cache_write),
            calls=max(token_count(calls), 1),
        )
        for turn_id, calls, input_tokens, cache_read, cache_write, output in rows
        if isinstance(turn_id, str)
    }


def cost_of_turn(turn, billed: dict[str, TokenUsage]) -> TurnCost | None:
    """A turn's cost (anything with id, model, started_at, prompt_tokens, completion_tokens):
    exact from its billed usage when known, else the ≈ estimate."""
    usage = billed.get(turn.id)
    if usage is not None:
        return turn_cost(turn.model, turn.started_at, usage, exact=True)
    estimate = estimated_usage(turn.prompt_tokens, turn.completion_tokens)
    return turn_cost(turn.model, turn.started_at, estimate, exact=False)


# A turn's usage in SQL, as billed_usage() and cost_of_turn() read it: its turn_usage row when
# there is one (u), else the ≈ estimate from its own columns (t), as one call.
_EXACT = "u.turn_id IS NOT NULL"
_CALLS = f"CASE WHEN {_EXACT} THEN max({token_count_sql('u.model_calls')}, 1) ELSE 1 END"
_INPUT = (
    f"CASE WHEN {_EXACT} THEN {token_count_sql('u.input_tokens')}"
    f" ELSE {token_count_sql('t.prompt_tokens')} END"
)
_OUTPUT = (
    f"CASE WHEN {_EXACT} THEN {token_count_sql('u.output_tokens')}"
    f" ELSE {token_count_sql('t.completion_tokens')} END"
)
_CACHE_READ = f"CASE WHEN {_EXACT} THEN {token_count_sql('u.cache_read_tokens')} ELSE 0 END"
_CACHE_WRITE = f"CASE WHEN {_EXACT} THEN {token_count_sql('u.cache_write_tokens')} ELSE 0 END"
_HAS_TOKENS = "(t.prompt_tokens IS NOT NULL OR t.completion_tokens IS NOT NULL OR {exact})"


def session_costs(session_ids) -> dict[str, CostSum]:
    """What each session's own turns cost, as the session page sums them, in one grouped query:
    turns of one session, model, hour, long-context band and kind (exact or ≈) are priced as
    one sum, which is exact (prices change on whole hours; within a band, one tier)."""
    ids = list(session_ids)
    if not ids:
        return {}
    ids_sql, params = sqlite.in_list(ids)
    return _priced(ids, "t.session_id", "", f"t.session_id IN {ids_sql}", params)


def grouped_costs(keys, pairs_sql: str, params: list) -> dict[str, CostSum]:
    """What groups of turns cost, priced as session_costs prices a session's: `pairs_sql`
    selects (sid, id) rows, a group's key and one of its turns (a fork's inherited turns)."""
    join = f"JOIN ({pairs_sql}) AS g ON g.id = t.id"
    return _priced(list(keys), "g.sid", join, "1 = 1", params)


def _priced(keys: list, key_sql: str, join: str, where: str, params: list) -> dict[str, CostSum]:
    rows = sqlite.rows(
        f"""SELECT {key_sql}, t.model, {_hour_sql()}, {_EXACT},
                   {tier_band_sql(f"(({_INPUT}) / ({_CALLS}))")}, count(*), sum({_CALLS}),
                   sum({_INPUT}), sum({_CACHE_READ}), sum({_CACHE_WRITE}), sum({_OUTPUT})
            FROM turns t {join} LEFT JOIN {_usage_table()} u ON u.turn_id = t.id
            WHERE {where} AND {_HAS_TOKENS.format(exact=_EXACT)}
            GROUP BY 1, 2, 3, 4, 5""",
        params,
    )
    totals = {key: CostSum() for key in keys}
    for key, model, hour, is_exact, _, turns, calls_n, inp, read, write, out in rows:
        usage = TokenUsage(inp, out, cache_read=read, cache_write=write, calls=calls_n)
        at_ms = hour * HOUR_MS if isinstance(hour, int) else None
        totals[key].add(turn_cost(model, at_ms, usage, exact=bool(is_exact)), turns)
    return totals


# A ledger without the optional table joins an empty stand-in with its columns: every turn is
# then an estimate, and the query names the same columns either way.
_NO_USAGE = (
    "(SELECT CAST(NULL AS TEXT) AS turn_id, CAST(NULL AS BIGINT) AS model_calls,"
    " CAST(NULL AS BIGINT) AS input_tokens, CAST(NULL AS BIGINT) AS cache_read_tokens,"
    " CAST(NULL AS BIGINT) AS cache_write_tokens, CAST(NULL AS BIGINT) AS output_tokens"
    " WHERE 1 = 0)"  # typed: PostgreSQL compares these with numbers
)


def _usage_table() -> str:
    return TABLE if TABLE in sqlite.table_names() else _NO_USAGE


def _hour_sql() -> str:
    """The hour of a turn's started_at (NULL when it is not a number: priced at today's rates,
    as prices.rates_at does)."""
    return (
        f"CASE WHEN typeof(t.started_at) IN ('integer', 'real')"
        f" THEN CAST(t.started_at AS BIGINT) / {HOUR_MS} END"
    )
