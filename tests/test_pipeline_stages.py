"""Stage timings, the waterfall and error signatures: pure functions over hostile input."""

import pytest

from pipeline.signatures import signature
from pipeline.stages import STAGES, parse_timings, stage_problems, waterfall


def test_timings_come_back_in_pipeline_order_with_unknown_stages_last():
    t = parse_timings('{"runAgent": 900, "teleport": 3, "receiveEvent": 12, "finalize": 5}')
    assert list(t.ms) == ["receiveEvent", "runAgent", "finalize", "teleport"]
    assert t.total == 920
    assert t.problems == ["unknown stage: teleport"]


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        (None, "no stage timings were recorded"),
        ("{oops", "stage_timings is not valid JSON"),
        ("[1, 2]", "stage_timings is a JSON list, not an object"),
        ('{"runAgent": -5}', "runAgent: -5 ms cannot be a duration"),
        ('{"runAgent": "slow"}', "runAgent: 'slow' is not a number of milliseconds"),
        ('{"runAgent": true}', "runAgent: True is not a number of milliseconds"),
    ],
)
def test_bad_timings_are_explained_and_skipped(raw, problem):
    t = parse_timings(raw)
    assert t.ms == {}
    assert t.problems[0].startswith(problem)


def test_the_waterfall_places_stages_one_after_another():
    t = parse_timings('{"receiveEvent": 10, "resolveIdentity": 30, "runAgent": 60}')
    bars = waterfall(t, stage="runAgent", status="failed", error_stage="runAgent")
    by_stage = {b.stage: b for b in bars}
    assert [b.stage for b in bars] == list(STAGES)
    assert (by_stage["resolveIdentity"].offset, by_stage["resolveIdentity"].width) == (0.1, 0.3)
    assert by_stage["runAgent"].state == "failed" and by_stage["runAgent"].offset == 0.4
    assert by_stage["deliverResponse"].state == "not reached"
    assert by_stage["resolveAccess"].state == "no timing"  # reached, but nothing recorded


def test_a_processing_request_shows_its_current_stage_as_running():
    t = parse_timings('{"receiveEvent": 10}')
    bars = waterfall(t, stage="resolveIdentity", status="processing", error_stage=None)
    assert {b.stage: b.state for b in bars}["resolveIdentity"] == "running"


def test_unknown_stages_are_drawn_at_the_end_not_dropped():
    t = parse_timings('{"receiveEvent": 10, "warpDrive": 10}')
    bars = waterfall(t, stage="finalize", status="completed", error_stage=None)
    assert bars[-1].stage == "warpDrive" and bars[-1].state == "unknown stage"


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"status": "exploded", "stage": "finalize"}, "unknown status 'exploded'"),
        ({"status": "failed", "stage": "runAgent"}, "the request failed but names no error_stage"),
        ({"status": "failed", "stage": "runAgent", "error_stage": "runAgent"},
         "error_stage is runAgent but there is no error_message"),
        ({"status": "completed", "stage": "runAgent"},
         "status is completed but the stage is runAgent, not finalize"),
        ({"status": "processing", "stage": "warp"}, "unknown stage 'warp'"),
    ],
)  # fmt: skip
def test_rows_that_contradict_the_lifecycle_are_reported(fields, problem):
    args = {"error_stage": None, "error_message": None} | fields
    assert problem in stage_problems(**args)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Rate limited: 429 (retry after 31 s)", "Rate limited: 429 (retry after 7 s)"),
        ("timeout after 5012 ms for 01HQXYZ0000000000000000000",
         "timeout after 498 ms for 01HRABC1111111111111111111"),
        ("Hook 'quiet-hours' raised KeyError: 'sender'", "Hook 'vip' raised KeyError: 'to'"),
        ("user 3f2a9c1e-1b2c-4d5e-8f90-a1b2c3d4e5f6 not found",
         "user 00000000-0000-4000-8000-000000000000 not found"),
    ],
)  # fmt: skip
def test_messages_that_differ_only_in_values_share_a_signature(a, b):
    assert signature(a) == signature(b)


def test_names_with_digits_are_not_masked_and_only_the_first_line_counts():
    assert signature("run_terminal_command_v2 killed\n  at x.ts:12") == (
        "run_terminal_command_v2 killed"
    )
    assert signature(None) == signature("  ") == "(no message)"


@pytest.mark.parametrize(
    ("raw", "names"),
    [
        ('["2fa", "quiet", "2fa"]', {"2fa", "quiet"}),
        ('["ok", 5, null, {"a": 1}]', {"ok"}),  # only names (strings) are hooks
        ('{"2fa": true}', set()),
        ("not json", set()),
        (None, set()),
    ],
)
def test_hook_names_are_the_strings_of_a_valid_array(raw, names):
    from pipeline.rollups import hook_names

    assert hook_names(raw) == names
