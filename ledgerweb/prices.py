"""What a model's tokens cost, and how large its context window is, from maintained data.

Prices come from genai-prices (the Pydantic team's price data, pinned in pyproject.toml): it
knows each model's rates for input, output, cache reads and cache writes, and the dates on which
they changed, so a turn is priced at the rates of its own day (and hour: some providers have
off-peak rates). Its bundled data is used as shipped; nothing is fetched at run time.

The operator's own prices (self-hosted or negotiated models) come from settings.MODEL_PRICES
(the MODEL_PRICES variable or MODEL_PRICES_FILE, see README.md), checked at start-up by
parse_price_overrides(); they win over the library. A model neither knows is "unpriced": its
tokens are counted apart, never as $0.

Rates are USD per million tokens. Costs are Decimals (exact sums of exact rates).
"""

import re
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from decimal import Decimal, InvalidOperation
from functools import lru_cache

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from genai_prices import data_snapshot, types

HOUR_MS = 3_600_000
MILLION = Decimal(1_000_000)
RATE_KEYS = ("input", "output", "cache_read", "cache_write")
# genai-prices' names of the four rates we use.
LIBRARY_KEYS = {
    "input": "input_mtok",
    "output": "output_mtok",
    "cache_read": "cache_read_mtok",
    "cache_write": "cache_write_mtok",
}
# Names ledgers use without the vendor's prefix ("opus-4-1", "sonnet-4"): tried with it.
BARE_FAMILIES = {"opus": "claude-", "sonnet": "claude-", "haiku": "claude-"}
_PROVIDER_PREFIX = re.compile(r"^(?P<provider>[a-z0-9-]+)[/:](?P<model>.+)$")


# -- Rates ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Tiered:
    """A rate that rises for requests whose input passes a threshold (long-context pricing):
    `tiers` are (threshold, rate), ascending; the whole request takes the highest rate passed."""

    base: Decimal
    tiers: tuple[tuple[int, Decimal], ...]

    def at(self, input_per_call: int) -> Decimal:
        rate = self.base
        for start, tier_rate in self.tiers:
            if input_per_call > start:
                rate = tier_rate
        return rate


Rate = Decimal | Tiered


@dataclass(frozen=True)
class Rates:
    """One model's rates at one moment, USD per million tokens, and where they come from.

    A missing cache rate means the provider bills cache tokens as plain input."""

    input: Rate
    output: Rate
    cache_read: Rate | None = None
    cache_write: Rate | None = None
    source: str = ""  # "genai-prices: anthropic claude-sonnet-4-0" or "MODEL_PRICES"


@dataclass(frozen=True)
class TokenUsage:
    """Tokens to price. `input` is all input billed, cache reads and writes included (they are
    priced at their own rates when the model has them); `calls` is how many model calls the
    input was spread over (long-context tiers apply per call)."""

    input: int
    output: int
    cache_read: int = 0
    cache_write: int = 0
    calls: int = 1


def _rate_value(rate: Rate | None, input_per_call: int) -> Decimal | None:
    if rate is None:
        return None
    return rate.at(input_per_call) if isinstance(rate, Tiered) else rate


def price(rates: Rates, usage: TokenUsage) -> Decimal:
    """USD for `usage` at `rates`: cache reads and writes at their rates (or as input when the
    model has none), the rest of the input at the input rate, output at the output rate."""
    per_call = usage.input // max(usage.calls, 1)
    input_rate = _rate_value(rates.input, per_call)
    read_rate = _rate_value(rates.cache_read, per_call)
    write_rate = _rate_value(rates.cache_write, per_call)
    cache_read = max(usage.cache_read, 0)
    cache_write = max(usage.cache_write, 0)
    plain = max(usage.input - cache_read - cache_write, 0)
    total = (
        plain * input_rate
        + cache_read * (input_rate if read_rate is None else read_rate)
        + cache_write * (input_rate if write_rate is None else write_rate)
        + max(usage.output, 0) * _rate_value(rates.output, per_call)
    )
    return total / MILLION


# -- The operator's prices ------------------------------------------------------------------------


@dataclass(frozen=True)
class OverridePrice:
    since: date | None  # None: from the beginning
    rates: Rates


@dataclass(frozen=True, eq=False)  # compared and hashed by identity: a cache key
class Overrides:
    """settings.MODEL_PRICES, checked: model name (lower case) → prices by start date, or → the
    name of a model the library knows ("opus-4-1": "claude-opus-4-1")."""

    prices: dict[str, tuple[OverridePrice, ...]] = field(default_factory=dict)
    aliases: dict[str, str] = field(default_factory=dict)


def parse_price_overrides(raw: object, where: str) -> Overrides:
    """MODEL_PRICES as written by the operator, checked; ImproperlyConfigured names what is wrong.

    {"my-llama": {"input": 0.2, "output": 0.6},
     "acme-large": [{"input": 4, "output": 16}, {"from": "2026-06-01", "input": 3, "output": 12}],
     "opus-4-1": "claude-opus-4-1"}"""
    if not isinstance(raw, dict):
        raise ImproperlyConfigured(f"{where} must be a JSON object of model name → prices")
    prices, aliases = {}, {}
    for name, value in raw.items():
        what = f"{where}[{name!r}]"
        if not isinstance(name, str) or not name.strip():
            raise ImproperlyConfigured(f"{where} has an empty model name")
        if isinstance(value, str):
            if not value.strip():
                raise ImproperlyConfigured(f"{what} names no model to price it as")
            aliases[name.strip().lower()] = value.strip()
            continue
        entries = value if isinstance(value, list) else [value]
        if not entries:
            raise ImproperlyConfigured(f"{what} is an empty list: give at least one price")
        parsed = [_parse_override_entry(entry, f"{what}[{i}]") for i, entry in enumerate(entries)]
        starts = [p.since or date.min for p in parsed]
        if len(set(starts)) != len(starts):
            raise ImproperlyConfigured(f"{what} has two prices starting on the same day")
        prices[name.strip().lower()] = tuple(sorted(parsed, key=lambda p: p.since or date.min))
    return Overrides(prices, aliases)


def _parse_override_entry(entry: object, what: str) -> OverridePrice:
    if not isinstance(entry, dict):
        raise ImproperlyConfigured(
            f'{what} must be an object like {{"input": 3, "output": 15}} (USD per million '
            "tokens) or the name of a known model"
        )
    unknown = set(entry) - {"from", *RATE_KEYS}
    if unknown:
        raise ImproperlyConfigured(
            f"{what} has unknown key(s) {', '.join(sorted(unknown))}: use "
            f"from, {', '.join(RATE_KEYS)}"
        )
    for required in ("input", "output"):
        if required not in entry:
            raise ImproperlyConfigured(f"{what} needs an {required!r} price (USD per million)")
    rates = {key: _parse_rate(entry[key], f"{what}.{key}") for key in RATE_KEYS if key in entry}
    since = None
    if "from" in entry:
        try:
            since = date.fromisoformat(str(entry["from"]))
        except ValueError:
            raise ImproperlyConfigured(
                f"{what}.from={entry['from']!r} is not a date (YYYY-MM-DD)"
            ) from None
    return OverridePrice(since, Rates(**rates, source="MODEL_PRICES"))


def _parse_rate(value: object, what: str) -> Decimal:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ImproperlyConfigured(f"{what}={value!r} is not a number (USD per million tokens)")
    try:
        rate = Decimal(str(value))
    except InvalidOperation:
        raise ImproperlyConfigured(f"{what}={value!r} is not a number") from None
    if not rate.is_finite() or rate < 0:
        raise ImproperlyConfigured(f"{what}={value!r} must be a finite price of 0 or more")
    return rate


def _override_at(entries: tuple[OverridePrice, ...], day: date) -> Rates | None:
    current = None
    for entry in entries:  # sorted by start
        if entry.since is None or entry.since <= day:
            current = entry.rates
    return current


# -- Matching ledger model names to the library ---------------------------------------------------


@lru_cache(maxsize=4096)
def _library_model(name: str) -> tuple[types.Provider, types.ModelInfo] | None:
    """genai-prices' model for a ledger's model name, trying the forms ledgers write: as is
    ("claude-sonnet-4-20250514", "gpt-5"), "provider/model" or "provider:model", and bare
    Claude family names ("opus-4-1")."""
    snapshot = data_snapshot.get_snapshot()
    candidates: list[tuple[str, str | None]] = [(name, None)]
    if found := _PROVIDER_PREFIX.match(name):
        candidates.append((found["model"], found["provider"]))
        candidates.append((found["model"], None))
    for ref, _ in list(candidates):
        for family, prefix in BARE_FAMILIES.items():
            if ref.startswith(family):
                candidates.append((prefix + ref, None))
    for ref, provider in candidates:
        try:
            return snapshot.find_provider_model(ref, None, provider, None)
        except LookupError:
            continue
    return None


@lru_cache(maxsize=4096)
def _match(name: str, overrides: Overrides) -> tuple[str, object] | None:
    """("override", entries) or ("library", (provider, model)) for a lower-cased name."""
    if name in overrides.prices:
        return "override", overrides.prices[name]
    found = _library_model(overrides.aliases.get(name, name))
    return ("library", found) if found else None


def overrides() -> Overrides:
    return settings.MODEL_PRICES


def normalised(model) -> str | None:
    """The name a model is looked up by: text, stripped, lower case; None for no usable name."""
    if not isinstance(model, str) or not model.strip():
        return None
    return model.strip().lower()


def is_priced(model) -> bool:
    name = normalised(model)
    return name is not None and _match(name, overrides()) is not None


def rates_at(model, at_ms) -> Rates | None:
    """The model's rates at a ledger timestamp (ms; junk: now), or None when it has no price."""
    name = normalised(model)
    if name is None:
        return None
    hour = None  # junk (text, NULL, NaN): today's rates
    if isinstance(at_ms, int | float) and not isinstance(at_ms, bool) and abs(at_ms) < 1e15:
        hour = int(at_ms) // HOUR_MS
    return _rates_at_hour(name, hour, overrides())


@lru_cache(maxsize=16384)
def _rates_at_hour(name: str, hour: int | None, the_overrides: Overrides) -> Rates | None:
    """Rates within one hour are one price: the library's changes fall on dates and whole
    hours (off-peak windows), so a chart's hourly rollups price exactly."""
    matched = _match(name, the_overrides)
    if matched is None:
        return None
    when = _hour_datetime(hour)
    kind, found = matched
    if kind == "override":
        return _override_at(found, when.date())
    provider, model = found
    return _library_rates(provider, model, model.get_prices(when))


def _hour_datetime(hour: int | None) -> datetime:
    if hour is None:
        return datetime.now(tz=UTC)
    try:
        return datetime.fromtimestamp(hour * 3600, tz=UTC)
    except (OverflowError, OSError, ValueError):
        return datetime.now(tz=UTC)


def _library_rates(provider, model, model_price) -> Rates | None:
    rates = {key: _from_library(getattr(model_price, LIBRARY_KEYS[key])) for key in RATE_KEYS}
    if rates["input"] is None or rates["output"] is None:
        return None  # priced per image, second or request only: not a token price we can use
    return Rates(**rates, source=f"genai-prices: {provider.id} {model.id}")


def _from_library(value) -> Rate | None:
    if value is None:
        return None
    if isinstance(value, types.TieredPrices):
        return Tiered(value.base, tuple((tier.start, tier.price) for tier in value.tiers))
    return Decimal(value)


def cost(model, at_ms, usage: TokenUsage) -> Decimal | None:
    """USD for `usage` of `model` at `at_ms`, or None when the model has no known price."""
    rates = rates_at(model, at_ms)
    return None if rates is None else price(rates, usage)


@lru_cache(maxsize=1)
def tier_starts() -> tuple[int, ...]:
    """Every long-context threshold in the price data, ascending (the operator's prices have
    none): between two of them, every model charges one tier."""
    starts = set()
    for provider in data_snapshot.get_snapshot().providers:
        for model in provider.models:
            variants = (
                [model.prices]
                if isinstance(model.prices, types.ModelPrice)
                else [conditional.prices for conditional in model.prices]
            )
            for model_price in variants:
                for key in LIBRARY_KEYS.values():
                    value = getattr(model_price, key)
                    if isinstance(value, types.TieredPrices):
                        starts.update(tier.start for tier in value.tiers)
    return tuple(sorted(starts))


# -- Context windows ------------------------------------------------------------------------------


def context_window_of(model) -> int | None:
    """A model's context window in tokens: settings.MODEL_CONTEXT_WINDOWS first (exact name,
    then the longest name there that it starts with), else genai-prices' data."""
    if not isinstance(model, str) or not model.strip():
        return None
    windows = settings.MODEL_CONTEXT_WINDOWS
    if model in windows:
        return windows[model]
    prefixes = [name for name in windows if model.startswith(name)]
    if prefixes:
        return windows[max(prefixes, key=len)]
    name = normalised(model)
    library = _library_model(overrides().aliases.get(name, name))
    return library[1].context_window if library else None
