"""What a pipeline request's agent run cost, from its agent_tokens_* columns and agent_model.

The Nexus Ledger has prompt and completion tokens per request, no cache tokens: every request's
cost is an ≈ estimate (prompt priced as uncached input of one call). The cost chart sums the
same figures from the hourly rollups (pipeline/rollups.py, fact "usage"), with the same rule for
which token counts are usable (ledgerweb.costs.token_count, the one rule of every page), so a
bar equals the sum of the requests its link lists.
"""

from ledgerweb.costs import TurnCost, token_count, turn_cost
from ledgerweb.prices import TokenUsage


def request_cost(r) -> TurnCost | None:
    """The ≈ cost of one request's agent run (a NexusRequest); None when it used no tokens."""
    usage = TokenUsage(
        input=token_count(r.agent_tokens_prompt), output=token_count(r.agent_tokens_completion)
    )
    if not usage.input and not usage.output:
        return None
    return turn_cost(r.agent_model, r.started_at, usage, exact=False)
