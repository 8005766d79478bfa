"""A deliberately broken ledger, crawled page by page: every page answers (200, or a clear 404),
says what is wrong, and never lets a payload through as markup."""

import json
import re

import pytest
from builders import LEDGER_DB, T0, parse_html

pytestmark = LEDGER_DB

SCRIPT = "<script>alert('x')</script>"
IMG = '<img src=x onerror="alert(1)">'
JS_LINK = "[click](javascript:alert(1))"
WEIRD = "\u202eevil\u202c \x07bell \U0001f600 " + SCRIPT
BAD_JSON = "{'not': json,"


@pytest.fixture
def hostile(ledger):
    s = ledger.session(
        id="S1",
        label=WEIRD,
        persona=IMG,
        routing_key=f"{IMG}:{SCRIPT}",
        status="exploded",
        created_at=T0 // 1000,
        updated_at=T0 // 1000,
    )  # seconds
    root = ledger.turn(s, id="T1", model=SCRIPT, status="mystery")
    child = ledger.turn(s, root, id="T2", total_tokens="many", started_at="yesterday")
    ledger.turn(s, id="C1", parent_turn_id="C2")  # a cycle
    ledger.turn(s, id="C2", parent_turn_id="C1")
    ledger.turn(s, id="ORPHAN", parent_turn_id="nowhere")
    ledger.set_head(s, root, root)  # the head is not a leaf
    for turn in (root, child):
        ledger.message(turn, 1, content=f"{SCRIPT} {IMG} {JS_LINK} {WEIRD}", created_at=T0)
        ledger.message(turn, 1, role=SCRIPT, content="x" * 1_000_000, created_at=T0)  # dup, 1 MB
        ledger.tool_call(
            turn,
            1,
            tool_name=SCRIPT,
            parameters=BAD_JSON,
            result=BAD_JSON,
            error=IMG,
            status=SCRIPT,
        )
    ledger.session(id="S2", current_turn_id="ghost", routing_key=f"subagent:S1:{SCRIPT}")
    ledger.session(id="S3", routing_key="fork:missing:S3", current_turn_id="T2")
    ledger.conn.execute(
        "INSERT INTO compactions (turn_id, summary, summarized_turn_ids, kept_turn_ids,"
        " created_at) VALUES ('T2', ?, ?, ?, 0)",
        (SCRIPT, BAD_JSON, "[1, 2]"),
    )
    common = {"event_source": SCRIPT, "principal_id": IMG, "session_key": WEIRD,
              "hooks_matched": BAD_JSON, "hooks_fired": '{"a": 1}', "permissions": BAD_JSON,
              "hooks_context": BAD_JSON, "agent_tool_calls": "[1, {}]",
              "delivery_message_ids": BAD_JSON,
              "request_snapshot": json.dumps({SCRIPT: IMG})}  # fmt: skip
    ledger.request(id="R1", status="failed", stage="warpDrive", error_stage=SCRIPT,
                   error_message=None, error_stack=SCRIPT * 50, turn_id="missing-turn",
                   stage_timings='{"runAgent": -5, "teleport": "slow", "finalize": 1e400}',
                   **common)  # fmt: skip
    ledger.request(id="R2", status="weird", stage="finalize", stage_timings="[1, 2, 3]",
                   started_at=T0 // 1000, **common)  # fmt: skip
    ledger.request(id="R3", status="failed", stage="runAgent", error_stage="runAgent",
                   error_message=WEIRD, stage_timings=BAD_JSON, turn_id="T1", **common)  # fmt: skip
    return ledger


WINDOW = f"since={T0 // 1000 - 10}&until={T0 + 86_400_000}"
PAGES = [
    "/", "/?format=json", "/sessions/", "/sessions/?format=json&status=all",
    "/sessions/S1/", "/sessions/S1/?unfold=all", "/sessions/S1/?format=json",
    "/sessions/S2/", "/sessions/S3/",
    "/sessions/S1/turns/T1/", "/sessions/S1/turns/T2/", "/sessions/S1/turns/C1/",
    "/sessions/S1/turns/T1/?format=json", "/sessions/S1/turns/T2/thread/",
    "/sessions/S1/turns/C2/thread/", "/sessions/S1/turns/ORPHAN/thread/?format=json",
    "/sessions/S1/turns/T2/export.json", "/sessions/S1/compare/?a=T2&b=C1",
    "/pipeline/requests/", "/pipeline/requests/?format=json", "/pipeline/requests/R1/",
    "/pipeline/requests/R2/", "/pipeline/requests/R3/", "/pipeline/requests/R1/?format=json",
    f"/pipeline/?{WINDOW}",
    *[f"/pipeline/charts/{c}/?{WINDOW}" for c in
      ("throughput", "failures", "stage-timings", "hooks", "sources", "tokens", "delivery")],
    "/health/",
    "/admin/conversations/session/", "/admin/conversations/turn/",
    "/admin/conversations/toolcall/", "/admin/pipeline/nexusrequest/",
]  # fmt: skip
# A payload that got through as markup would appear with its tag and attributes intact.
LIVE_PAYLOAD = re.compile(r"<script>alert|<img src=x onerror|href=\"javascript:", re.I)


@pytest.mark.parametrize("url", PAGES)
def test_every_page_of_a_hostile_ledger_answers_and_stays_inert(admin_client, hostile, url):
    response = admin_client.get(url)
    assert response.status_code == 200, (url, response.status_code)
    body = response.content.decode()
    if response["Content-Type"].startswith("text/html"):
        assert not LIVE_PAYLOAD.search(body), url
        if "/charts/" not in url:
            parse_html(body)


def test_the_broken_session_says_what_is_wrong(admin_client, hostile):
    page = admin_client.get("/sessions/S1/").content.decode()
    for problem in ("loops back on itself", "does not exist", "the session head is not a leaf",
                    "unknown turn status", "(seconds?)"):  # fmt: skip
        assert problem in page, problem


def test_the_broken_request_says_what_is_wrong(admin_client, hostile):
    page = admin_client.get("/pipeline/requests/R1/").content.decode().replace("&#x27;", "'")
    for problem in (
        "unknown stage 'warpDrive'", "runAgent: -5 ms cannot be a duration",
        "teleport: 'slow' is not a number", "there is no error_message",
        "hooks_matched is not valid JSON", "turn_id missing-turn does not exist",
    ):  # fmt: skip
        assert problem in page, problem


def test_control_characters_are_shown_as_symbols(admin_client, hostile):
    page = admin_client.get("/sessions/").content.decode()
    assert "\x07" not in page and "␇bell" in page
    data = admin_client.get("/sessions/?format=json&status=all").json()
    assert any("\x07" in (s["label"] or "") for s in data["sessions"])  # JSON keeps the data
