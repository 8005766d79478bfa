"""Prices and context windows come from genai-prices' data and the operator's MODEL_PRICES; the
figures here are computed by hand from the providers' published rates (USD per million tokens)."""

import json
import subprocess
import sys
from datetime import UTC, datetime
from decimal import Decimal

import genai_prices
import pytest
from django.core.exceptions import ImproperlyConfigured
from importing import query, run_import
from test_settings import PROJECT, environment, load_settings

from ledgerweb import prices
from ledgerweb.costs import CostSum, format_cost, turn_cost
from ledgerweb.prices import TokenUsage, parse_price_overrides


def ms(year, month, day, hour=12) -> int:
    return int(datetime(year, month, day, hour, tzinfo=UTC).timestamp() * 1000)


SEPT_2025 = ms(2025, 9, 1)


def test_a_claude_turn_costs_its_prompt_and_completion_at_anthropics_rates():
    # claude-sonnet-4: $3 input, $15 output: 1,250 × 3 + 87 × 15 = 5,055 µ$.
    cost = prices.cost("claude-sonnet-4-20250514", SEPT_2025, TokenUsage(1250, 87))
    assert cost == Decimal("0.005055")


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("gpt-5", Decimal("0.0225")),  # $1.25 / $10: 10,000 × 1.25 + 1,000 × 10
        ("opus-4-1", Decimal("0.225")),  # bare family name → claude-opus-4-1: $15 / $75
        ("anthropic/claude-opus-4-1", Decimal("0.225")),  # provider/model
        ("Claude-Opus-4-1 ", Decimal("0.225")),  # case and blanks
    ],
)
def test_the_names_ledgers_write_are_matched_to_their_model(name, expected):
    assert prices.cost(name, SEPT_2025, TokenUsage(10_000, 1_000)) == expected


def test_a_turn_is_priced_at_the_rates_of_its_own_day():
    # xAI's grok-4.20 went from $2 / $6 to $1.25 / $2.50 on 2026-04-30.
    usage = TokenUsage(100_000, 100_000)
    before = prices.cost("grok-4.20", ms(2026, 4, 29), usage)
    after = prices.cost("grok-4.20", ms(2026, 4, 30), usage)
    assert (before, after) == (Decimal("0.8"), Decimal("0.375"))


def test_a_call_past_the_long_context_threshold_is_priced_at_the_higher_tier():
    # grok-4.20 after 2026-04-30: above 199,999 input tokens a call costs $2.50 / $5.
    one_long_call = prices.cost("grok-4.20", ms(2026, 5, 1), TokenUsage(300_000, 0))
    two_short_calls = prices.cost("grok-4.20", ms(2026, 5, 1), TokenUsage(300_000, 0, calls=2))
    assert (one_long_call, two_short_calls) == (Decimal("0.75"), Decimal("0.375"))


def test_cache_reads_and_writes_are_priced_at_their_own_rates():
    # claude-sonnet-4: cache read $0.30, cache write $3.75; 2,000 plain input at $3.
    usage = TokenUsage(input=32_000, output=0, cache_read=20_000, cache_write=10_000)
    assert prices.cost("claude-sonnet-4-20250514", SEPT_2025, usage) == Decimal("0.0495")


def test_our_arithmetic_agrees_with_genai_prices_own():
    usage = TokenUsage(input=250_000, output=4_000, cache_read=180_000, cache_write=30_000)
    theirs = genai_prices.calc_price(
        genai_prices.Usage(
            input_tokens=250_000,
            output_tokens=4_000,
            cache_read_tokens=180_000,
            cache_write_tokens=30_000,
        ),
        "claude-sonnet-4-5-20250929",
        genai_request_timestamp=datetime(2025, 10, 1, 12, tzinfo=UTC),
    )
    ours = prices.cost("claude-sonnet-4-5-20250929", ms(2025, 10, 1), usage)
    assert ours == theirs.total_price


def test_a_model_without_a_known_price_is_unpriced_not_free():
    assert prices.cost("llama3:8b", SEPT_2025, TokenUsage(1000, 100)) is None
    assert prices.is_priced("llama3:8b") is False
    total = CostSum()
    for model in ("claude-sonnet-4-20250514", "llama3:8b", "llama3:8b", "my-finetune"):
        total.add(turn_cost(model, SEPT_2025, TokenUsage(1250, 87), exact=False))
    assert total.label == "≈ $0.00506"
    assert total.unpriced_note == (
        "3 turns of 2 unpriced models (llama3:8b, my-finetune) not counted"
    )
    assert total.as_json()["usd"] == "0.005055"


def test_junk_model_names_and_timestamps_do_not_fail():
    for model in (None, "", 3, "   "):
        assert prices.cost(model, SEPT_2025, TokenUsage(1, 1)) is None
    for at in (None, "yesterday", 10**30, -5, True):
        assert prices.cost("gpt-5", at, TokenUsage(1000, 0)) == Decimal("0.00125")


def test_operator_prices_add_a_model_and_override_the_library(settings):
    settings.MODEL_PRICES = parse_price_overrides(
        {
            "my-llama": {"input": 0.2, "output": 0.6},
            "gpt-5": {"input": 1, "output": 8},  # a negotiated rate
            "house-model": "claude-opus-4-1",  # priced as a model the library knows
        },
        "MODEL_PRICES",
    )
    usage = TokenUsage(1_000_000, 1_000_000)
    assert prices.cost("my-llama", SEPT_2025, usage) == Decimal("0.8")
    assert prices.cost("gpt-5", SEPT_2025, usage) == Decimal("9")
    assert prices.cost("house-model", SEPT_2025, usage) == Decimal("90")
    assert prices.rates_at("my-llama", SEPT_2025).source == "MODEL_PRICES"


def test_operator_prices_change_on_the_dates_given(settings):
    settings.MODEL_PRICES = parse_price_overrides(
        {"acme": [{"from": "2026-06-01", "input": 3, "output": 12}, {"input": 4, "output": 16}]},
        "MODEL_PRICES",
    )
    usage = TokenUsage(1_000_000, 0)
    assert prices.cost("acme", ms(2026, 5, 31), usage) == Decimal("4")
    assert prices.cost("acme", ms(2026, 6, 1), usage) == Decimal("3")


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ([], "must be a JSON object"),
        ({"m": {"input": 1}}, "needs an 'output' price"),
        ({"m": {"input": -1, "output": 1}}, "must be a finite price of 0 or more"),
        ({"m": {"input": "cheap", "output": 1}}, "is not a number"),
        ({"m": {"input": 1, "output": 1, "cached": 1}}, "unknown key(s) cached"),
        ({"m": {"from": "June", "input": 1, "output": 1}}, "is not a date (YYYY-MM-DD)"),
        ({"m": []}, "empty list"),
        ({"m": [{"input": 1, "output": 1}, {"input": 2, "output": 2}]}, "same day"),
    ],
)
def test_a_wrong_price_entry_is_refused_with_what_is_wrong(raw, message):
    with pytest.raises(ImproperlyConfigured, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_price_overrides(raw, "MODEL_PRICES")


def test_a_wrong_model_prices_variable_stops_the_start():
    result = load_settings(DEBUG="1", MODEL_PRICES=json.dumps({"m": {"input": 1}}))
    assert result.returncode != 0
    assert "MODEL_PRICES / MODEL_PRICES_FILE['m'][0] needs an 'output' price" in result.stderr


def test_model_prices_can_come_from_a_file(tmp_path):
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"m": {"input": 1, "output": "x"}}))
    result = load_settings(DEBUG="1", MODEL_PRICES_FILE=str(path))
    assert result.returncode != 0 and "output='x' is not a number" in result.stderr
    path.write_text(json.dumps({"m": {"input": 1, "output": 2}}))
    assert load_settings(DEBUG="1", MODEL_PRICES_FILE=str(path)).returncode == 0


def test_context_windows_come_from_the_library_and_the_variable_overrides_them(settings):
    assert prices.context_window_of("gpt-5") == 400_000
    assert prices.context_window_of("claude-sonnet-4-20250514") == 200_000
    assert prices.context_window_of("llama3:8b") is None
    settings.MODEL_CONTEXT_WINDOWS = {"llama3": 8192, "gpt-5": 272_000}
    assert prices.context_window_of("llama3:8b") == 8192
    assert prices.context_window_of("gpt-5") == 272_000


@pytest.mark.parametrize(
    ("amount", "estimated", "text"),
    [
        ("1234.5", False, "$1,234.50"),
        ("0.5", True, "≈ $0.50"),
        ("0.010512", False, "$0.0105"),
        ("0.00004", False, "< $0.0001"),
        ("0", False, "$0"),
    ],
)
def test_costs_read_as_dollars(amount, estimated, text):
    assert format_cost(Decimal(amount), estimated) == text


# -- Cached tokens from an imported transcript ----------------------------------------------------


def claude_line(uuid, parent, kind, message, stamp) -> str:
    return json.dumps({
        "parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": "/home/ada/x",
        "sessionId": "5d0c1d2e-0000-4a5b-8c6d-7e8f9a0b1c2d", "version": "1.0.80", "type": kind,
        "message": message, "uuid": uuid, "timestamp": stamp,
    })  # fmt: skip


def answer(message_id, text, usage) -> dict:
    return {
        "id": message_id, "type": "message", "role": "assistant",
        "model": "claude-sonnet-4-20250514", "content": [{"type": "text", "text": text}],
        "usage": usage,
    }  # fmt: skip


def test_a_claude_code_turn_is_priced_with_its_cache_reads_and_writes(tmp_path):
    transcript = tmp_path / "cached.jsonl"
    first = {"input_tokens": 100, "cache_creation_input_tokens": 2000,
             "cache_read_input_tokens": 10000, "output_tokens": 300}  # fmt: skip
    second = {"input_tokens": 50, "cache_creation_input_tokens": 500,
              "cache_read_input_tokens": 12000, "output_tokens": 200}  # fmt: skip
    transcript.write_text("\n".join([
        claude_line("u1", None, "user", {"role": "user", "content": "Tidy the repo"},
                    "2025-07-01T10:00:00.000Z"),
        claude_line("a1", "u1", "assistant", answer("msg_1", "Looking", first),
                    "2025-07-01T10:00:05.000Z"),
        claude_line("a2", "a1", "assistant", answer("msg_2", "Done", second),
                    "2025-07-01T10:00:09.000Z"),
    ]) + "\n")  # fmt: skip
    dest = tmp_path / "ledger.sqlite3"
    run_import("claude-code", transcript, ledger=dest)
    ((turn_id, prompt, completion, started),) = query(
        dest, "SELECT id, prompt_tokens, completion_tokens, started_at FROM turns"
    )
    assert (prompt, completion) == (12_550, 500)  # the context of the last call, as before
    ((calls, billed, read, written, output),) = query(
        dest,
        "SELECT model_calls, input_tokens, cache_read_tokens, cache_write_tokens, output_tokens "
        "FROM turn_usage WHERE turn_id = ?",
        turn_id,
    )
    assert (calls, billed, read, written, output) == (2, 24_650, 22_000, 2_500, 500)
    usage = TokenUsage(billed, output, cache_read=read, cache_write=written, calls=calls)
    # 150 plain × $3 + 22,000 read × $0.30 + 2,500 written × $3.75 + 500 out × $15
    assert prices.cost("claude-sonnet-4-20250514", started, usage) == Decimal("0.023925")
    # The ≈ estimate from the ledger's columns alone would say $0.04515.
    assert prices.cost("claude-sonnet-4-20250514", started, TokenUsage(prompt, completion)) == (
        Decimal("0.04515")
    )


def test_prices_come_from_the_installed_package_without_any_network():
    """genai-prices can fetch newer prices; ledgerweb never asks it to: with every socket
    refused, a fresh process still prices a turn from the data the package ships."""
    code = (
        "import socket\n"
        "def refuse(*a, **k): raise OSError('no network')\n"
        "socket.socket.connect = refuse\n"
        "socket.create_connection = refuse\n"
        "import django; django.setup()\n"
        "from ledgerweb import prices\n"
        "from genai_prices import data_snapshot\n"
        "assert not data_snapshot.get_snapshot().from_auto_update\n"
        "print(prices.cost('gpt-5', 1764000000000, prices.TokenUsage(1000, 0)))\n"
    )
    env = environment(DJANGO_SETTINGS_MODULE="ledgerweb.settings", DEBUG="1")
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=PROJECT, env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "0.00125"
