"""What turns billed, from the optional turn_usage table (ledgerweb/sql/turn_usage.sql).

Importers fill it where a transcript has the figures (Claude Code, Codex); a ledger without it,
or a turn without a row, falls back to the ≈ estimate from the turn's own token columns.
"""

from ledgerweb import sqlite
from ledgerweb.costs import TurnCost, estimated_usage, token_count, turn_cost
from ledgerweb.prices import TokenUsage

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
