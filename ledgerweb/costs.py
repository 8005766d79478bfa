"""Costs as pages show them: one turn's, or a sum over many with the unpriced ones counted apart.

A cost is either exact (the turn's billed usage is known: the optional turn_usage table) or an
estimate, marked "≈": the ledger's prompt tokens (the context of the turn's last model call)
priced as uncached input for one call, plus the completion tokens. A model without a known
price is never $0: it is counted ("12 turns of 2 unpriced models").
"""

from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal

from ledgerweb import prices
from ledgerweb.html_parts import escape
from ledgerweb.prices import TokenUsage

ESTIMATE_NOTE = (
    "≈ estimate: prompt tokens (the context of the turn's last model call) priced as uncached "
    "input of one call, plus completion tokens; cache reads and writes are not in the ledger"
)

CENT = Decimal("0.01")
EXACT_NOTE = (
    "What the turn's model calls billed (input with cache reads and writes at their own rates, "
    "and output), at the model's prices on the turn's date"
)
UNPRICED_NOTE = (
    "No known price for {model}: its tokens are counted apart, not as $0 (add it to MODEL_PRICES)"
)


# Token counts at or above this are junk, not usage (and would overflow SQLite when summed).
MAX_TOKENS = 10**12
# The one rule for a token count, on every page, chart and sum (issue 26): said where a page sums.
UNREADABLE_COUNT = "not a whole number from 0 below 10¹² (a fraction, text, negative or huge)"


def token_count(value) -> int:
    """A token count as the ledger may hold it: a whole number in [1, MAX_TOKENS); anything
    else (NULL, 0, a fraction, text, negative, huge, NaN) adds 0. token_count_sql() is its SQL
    twin: sums over many rows must equal the sum of the rows."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)  # a whole REAL (SQLite stores those in INTEGER columns as integers)
    if isinstance(value, bool) or not isinstance(value, int):
        return 0
    return value if 0 < value < MAX_TOKENS else 0


def unreadable_count(value) -> bool:
    """A count the ledger holds but that is no token count (UNREADABLE_COUNT): left out of
    every sum, and counted so that the page can say so. NULL is no count at all."""
    return value is not None and token_count(value) == 0 and value != 0


def readable_count(value) -> bool:
    """A token count that is there and readable (0 included)."""
    return value is not None and not unreadable_count(value)


def token_count_sql(column: str) -> str:
    """SQL for token_count(): a REAL in an INTEGER column is a fraction or beyond 64 bits."""
    return (
        f"(CASE WHEN typeof({column}) = 'integer' AND {column} > 0"
        f" AND {column} < {MAX_TOKENS} THEN {column} ELSE 0 END)"
    )


def tier_band_sql(input_per_call: str) -> str:
    """SQL for the long-context band of a call's input: how many of the price data's tier
    thresholds it passes. Calls of one band pay the same tier of every model, so many of them of
    one model and hour are priced exactly as one sum (prices.price: tiers apply per call)."""
    starts = prices.tier_starts()
    if not starts:
        return "0"
    # CASE, not the comparison itself: SQLite adds 0/1, PostgreSQL cannot add booleans.
    passes = (f"(CASE WHEN {input_per_call} > {int(start)} THEN 1 ELSE 0 END)" for start in starts)
    return "(" + " + ".join(passes) + ")"


def estimated_usage(prompt_tokens, completion_tokens) -> TokenUsage | None:
    """The ≈ usage of a turn from the ledger's own columns; None when it has no token counts."""
    if prompt_tokens is None and completion_tokens is None:
        return None
    return TokenUsage(input=token_count(prompt_tokens), output=token_count(completion_tokens))


@dataclass(frozen=True)
class TurnCost:
    amount: Decimal | None  # None: the model has no price, or the turn no tokens
    estimated: bool
    model: str | None
    priced: bool  # False: tokens of a model without a known price

    @property
    def label(self) -> str:
        return format_cost(self.amount, self.estimated) if self.priced else "no price"

    @property
    def note(self) -> str:
        """What the figure is, for a tooltip."""
        if not self.priced:
            return UNPRICED_NOTE.format(model=short_name(self.model))
        if self.estimated:
            return ESTIMATE_NOTE
        return EXACT_NOTE


def turn_cost(model, at_ms, usage: TokenUsage | None, *, exact: bool) -> TurnCost | None:
    """One turn's cost; None when the turn has no tokens to price."""
    if usage is None:
        return None
    amount = prices.cost(model, at_ms, usage)
    name = model if isinstance(model, str) else None
    return TurnCost(amount, not exact, name, amount is not None)


@dataclass
class CostSum:
    """The cost of many turns (or requests): priced ones summed, unpriced ones counted apart."""

    unit: str = "turn"  # what is counted: "turn" or "request"
    amount: Decimal = Decimal(0)
    priced: int = 0
    estimated: int = 0  # of the priced, how many are ≈ estimates
    unpriced: int = 0
    unpriced_models: set[str] = field(default_factory=set)

    def add(self, cost: TurnCost | None, count: int = 1) -> None:
        if cost is None:
            return
        if cost.priced:
            self.amount += cost.amount
            self.priced += count
            self.estimated += count if cost.estimated else 0
        else:
            self.unpriced += count
            self.unpriced_models.add(short_name(cost.model))

    @property
    def is_estimate(self) -> bool:
        return self.estimated > 0

    @property
    def label(self) -> str:
        """ "≈ $1.23", "$0.0042", or "no price" when nothing could be priced ("—": nothing to)."""
        if self.priced:
            return format_cost(self.amount, self.is_estimate)
        return "no price" if self.unpriced else "—"

    @property
    def unpriced_note(self) -> str:
        """ "12 turns of 2 unpriced models" (empty when all were priced)."""
        if not self.unpriced:
            return ""
        models = len(self.unpriced_models)
        names = ", ".join(sorted(self.unpriced_models)[:5]) + (", …" if models > 5 else "")
        return (
            f"{self.unpriced:,} {self.unit}{'s' * (self.unpriced != 1)} of {models} unpriced "
            f"model{'s' * (models != 1)} ({names}) not counted"
        )

    def as_json(self) -> dict:
        return {
            "usd": usd(self.amount) if self.priced else None,
            "estimated": self.is_estimate,
            "priced": self.priced,  # turns or requests
            "unpriced": self.unpriced,
            "unpriced_models": sorted(self.unpriced_models),
        }


def usd(amount: Decimal) -> str:
    """An exact amount as JSON text: plain digits, no exponent, no trailing zeros ("0.375")."""
    return format(amount.normalize(), "f") if amount else "0"


# A model name in a note or a list is cut here: a ledger may hold a 100 KB one on every turn.
NAME_CHARS = 80


def short_name(model) -> str:
    if not model:
        return "(no model)"
    return model if len(model) <= NAME_CHARS else model[: NAME_CHARS - 1] + "…"


def format_cost(amount: Decimal | None, estimated: bool = False) -> str:
    """US dollars for people: cents from $1 up, three significant digits below ($0.0105), and
    "< $0.0001" for less."""
    if amount is None:
        return "no price"
    prefix = "≈ " if estimated else ""
    if amount == 0:
        return f"{prefix}$0"
    if amount >= 1:
        return f"{prefix}${amount.quantize(CENT, ROUND_HALF_UP):,}"
    if amount < Decimal("0.0001"):
        return f"{prefix}< $0.0001"
    decimals = max(2, 2 - amount.adjusted())
    text = str(amount.quantize(Decimal(1).scaleb(-decimals), ROUND_HALF_UP))
    whole, _, fraction = text.partition(".")
    fraction = fraction.rstrip("0").ljust(2, "0")
    return f"{prefix}${whole}.{fraction}"


def cost_json(cost: TurnCost | None) -> dict | None:
    if cost is None:
        return None
    return {
        "usd": usd(cost.amount) if cost.priced else None,
        "estimated": cost.estimated,
        "priced": cost.priced,
        "model": cost.model,
    }


def cost_html(cost: TurnCost | None, tag: str = "span") -> str:
    """A cost as an HTML element for rows written in Python (tree rows, request rows): the
    figure, marked unpriced when there is no price, with what it is as its title."""
    if cost is None:
        return f'<{tag} class="num"></{tag}>' if tag == "td" else ""
    css = "num cost" if cost.priced else "num cost unpriced"
    return f'<{tag} class="{css}" title="{escape(cost.note)}">{escape(cost.label)}</{tag}>'
