"""What a pipeline request's agent run cost, from its agent_tokens_* columns and agent_model.

The Nexus Ledger has prompt and completion tokens per request, no cache tokens: every request's
cost is an ≈ estimate (prompt priced as uncached input of one call). The cost chart sums the
same figures from the hourly rollups (pipeline/rollups.py, fact "usage"), with the same rule for
which token counts are usable, so a bar equals the sum of the requests its link lists.
"""

from ledgerweb.costs import MAX_TOKENS, TurnCost, turn_cost
from ledgerweb.prices import TokenUsage


def usable_tokens_sql(column: str) -> str:
    """SQL for a token column as a count: whole numbers in [1, MAX_TOKENS); anything else
    (NULL, 12.5, text, negative, huge) 0, as the tokens chart reads agent_tokens_total.
    usable_tokens() is its Python twin."""
    return (
        f"(CASE WHEN typeof({column}) = 'integer' AND {column} > 0"
        f" AND {column} < {MAX_TOKENS} THEN {column} ELSE 0 END)"
    )


def usable_tokens(value) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        return 0
    return value if 0 < value < MAX_TOKENS else 0


def request_cost(r) -> TurnCost | None:
    """The ≈ cost of one request's agent run (a NexusRequest); None when it used no tokens."""
    usage = TokenUsage(
        input=usable_tokens(r.agent_tokens_prompt), output=usable_tokens(r.agent_tokens_completion)
    )
    if not usage.input and not usage.output:
        return None
    return turn_cost(r.agent_model, r.started_at, usage, exact=False)
