"""Deliberately broken ledgers for the hostile crawl (tests/test_hostile_ledger.py) and the
browser check that no payload runs (tests/e2e/test_hostile_browser.py).

- `build_broken_ledger`: small, and wrong in every way a ledger can be wrong: invalid JSON,
  cycles, orphans, bad heads, seconds instead of milliseconds, unknown statuses and stages, and
  an HTML/JavaScript payload in every text column.
- `build_huge_ledger`: the sizes users reach: a 10 MB message and a 10 MB tool result, a
  20,000-deep linear thread and a 50,000-turn session with a thousand branches. Written with
  bulk SQL (a recursive CTE counts), so it costs seconds, once per module.
"""

import json
import sqlite3
from pathlib import Path

from builders import T0, LedgerBuilder

from ledgerfacts import schema

SCRIPT = "<script>alert('x')</script>"
IMG = '<img src=x onerror="alert(1)">'
JS_LINK = "[click](javascript:alert(1))"
JS_HREF = '<a href="javascript:alert(1)">click</a>'
# Every payload class at once, for columns where one value is all there is.
PAYLOAD = f"{SCRIPT}{IMG}{JS_HREF} {JS_LINK}"
WEIRD = "\u202eevil\u202c \x07bell \U0001f600 " + PAYLOAD
BAD_JSON = "{'not': json,"
T0_SECONDS = T0 // 1000  # what a runtime that writes seconds writes


def build_broken_ledger(ledger: LedgerBuilder) -> None:
    """Sessions S1–S4, turns T1, T2, T3, C1, C2, ORPHAN, requests R1–R4."""
    s = ledger.session(
        id="S1",
        label=WEIRD,
        persona=PAYLOAD,
        routing_key=f"{PAYLOAD}:{SCRIPT}",
        status="exploded",
        created_at=T0_SECONDS,
        updated_at=T0_SECONDS,
        source_event_id=PAYLOAD,
    )
    root = ledger.turn(s, id="T1", model=PAYLOAD, status="mystery", source_event_id=PAYLOAD)
    child = ledger.turn(s, root, id="T2", total_tokens="many", started_at="yesterday")
    # A turn written by a runtime that counts seconds, with its message and tool call.
    seconds = ledger.turn(s, child, id="T3", started_at=T0_SECONDS, completed_at=T0_SECONDS + 5)
    ledger.message(seconds, 1, content="written in seconds", created_at=T0_SECONDS)
    ledger.tool_call(seconds, 1, started_at=T0_SECONDS + 1, completed_at=T0_SECONDS + 3)
    ledger.turn(s, id="C1", parent_turn_id="C2")  # a cycle
    ledger.turn(s, id="C2", parent_turn_id="C1")
    ledger.turn(s, id="ORPHAN", parent_turn_id="nowhere")
    ledger.set_head(s, root, root)  # the head is not a leaf
    for turn in (root, child):
        ledger.message(turn, 1, content=f"{PAYLOAD} {WEIRD}", created_at=T0)
        ledger.message(turn, 1, role=PAYLOAD, content="x" * 1_000_000, created_at=T0)  # dup, 1 MB
        ledger.tool_call(turn, 1, tool_name=PAYLOAD, parameters=BAD_JSON, result=BAD_JSON,
                         error=PAYLOAD, status=PAYLOAD)  # fmt: skip
        # Valid JSON whose keys and values are payloads: shown pretty, still inert.
        ledger.tool_call(turn, 2, id=f"V{turn['id']}", tool_name=SCRIPT,
                         parameters=json.dumps({PAYLOAD: [PAYLOAD]}),
                         result=json.dumps({PAYLOAD: PAYLOAD}), error=None)  # fmt: skip
    ledger.session(id="S2", current_turn_id="ghost", routing_key=f"subagent:S1:{PAYLOAD}")
    ledger.session(id="S3", routing_key="fork:missing:S3", current_turn_id="T2")
    # A subagent whose parent and tool call exist, so the links both ways carry payload text.
    ledger.session(id="S4", routing_key="subagent:S1:VT1", label=PAYLOAD)
    ledger.conn.execute(
        "INSERT INTO compactions (turn_id, summary, summarized_turn_ids, kept_turn_ids, model,"
        " trigger_reason, created_at) VALUES ('T2', ?, ?, ?, ?, ?, 0)",
        (PAYLOAD, BAD_JSON, "[1, 2]", PAYLOAD, PAYLOAD),
    )
    hooks = json.dumps([PAYLOAD, SCRIPT, IMG, JS_HREF])
    payload_columns = {
        "event_id": PAYLOAD, "event_type": PAYLOAD, "event_source": PAYLOAD,
        "principal_id": PAYLOAD, "principal_type": PAYLOAD, "access_decision": PAYLOAD,
        "access_policy": PAYLOAD, "session_key": WEIRD, "session_persona": PAYLOAD,
        "agent_model": PAYLOAD, "delivery_channel": PAYLOAD, "delivery_error": PAYLOAD,
        "error_message": PAYLOAD, "error_stack": PAYLOAD * 50,
    }  # fmt: skip
    broken_json = {"hooks_matched": BAD_JSON, "hooks_fired": '{"a": 1}', "permissions": BAD_JSON,
                   "hooks_context": BAD_JSON, "agent_tool_calls": "[1, {}]",
                   "delivery_message_ids": BAD_JSON}  # fmt: skip
    payload_json = {
        "hooks_matched": hooks, "hooks_fired": hooks, "permissions": hooks,
        "hooks_context": json.dumps({PAYLOAD: PAYLOAD}), "agent_tool_calls": hooks,
        "delivery_message_ids": hooks,
        # Snapshot keys as well as values: the request page shows the snapshot as a tree.
        "request_snapshot": json.dumps({k: {PAYLOAD: v} for k, v in
                                        (("<script>", SCRIPT), ("<img>", IMG), ("js", JS_HREF))}),
    }  # fmt: skip
    ledger.request(id="R1", status="failed", stage="warpDrive", error_stage=SCRIPT,
                   turn_id="missing-turn",
                   stage_timings='{"runAgent": -5, "teleport": "slow", "finalize": 1e400}',
                   **payload_columns | {"error_message": None}, **broken_json)  # fmt: skip
    ledger.request(id="R2", status="weird", stage="finalize", stage_timings="[1, 2, 3]",
                   started_at=T0_SECONDS, completed_at=T0_SECONDS + 2, **payload_columns,
                   **broken_json)  # fmt: skip
    ledger.request(id="R3", status="failed", stage="runAgent", error_stage="runAgent",
                   stage_timings=BAD_JSON, turn_id="T1",
                   **payload_columns | {"error_message": WEIRD}, **broken_json)  # fmt: skip
    ledger.request(id="R4", status="failed", stage="deliverResponse",
                   error_stage="deliverResponse", turn_id="T2",
                   stage_timings=json.dumps({"receiveEvent": 3, "runAgent": 900}),
                   **payload_columns, **payload_json)  # fmt: skip
    # Odd values other programs write: a REAL start (SQLite keeps 0.5 in an INTEGER column), an
    # ISO-text start, '' beside NULL in every key a chart groups by, 2 and 'true' as booleans.
    odd_keys = {"event_source": "", "principal_id": None, "agent_model": None,
                "delivery_channel": "", "error_stage": None, "session_persona": ""}  # fmt: skip
    ledger.request(id="R5", status="", started_at=T0 + 0.5, delivery_success=2, hooks_handled=2,
                   hooks_fired='["h"]', **odd_keys)  # fmt: skip
    ledger.request(id="R6", status="failed", started_at="2025-11-24T16:00:00Z",
                   delivery_success="true", **odd_keys | {"agent_model": ""})  # fmt: skip


# Pages of the contract over the broken ledger: every area, every problem, every JSON twin.
BROKEN_WINDOW = f"since={T0_SECONDS - 10}&until={T0 + 86_400_000}"
CHARTS = ("throughput", "failures", "stage-timings", "hooks", "sources", "tokens", "delivery")
BROKEN_PAGES = [
    "/", "/?format=json", "/sessions/", "/sessions/?format=json&status=all",
    "/sessions/?status=all", "/sessions/?q=%3Cscript%3E&status=all",
    "/sessions/S1/", "/sessions/S1/?unfold=all", "/sessions/S1/?format=json",
    "/sessions/S2/", "/sessions/S3/", "/sessions/S4/",
    "/sessions/S1/turns/T1/", "/sessions/S1/turns/T2/", "/sessions/S1/turns/T3/",
    "/sessions/S1/turns/C1/", "/sessions/S1/turns/T1/?format=json",
    "/sessions/S1/turns/T2/thread/", "/sessions/S1/turns/T3/thread/",
    "/sessions/S1/turns/C2/thread/", "/sessions/S1/turns/ORPHAN/thread/?format=json",
    "/sessions/S1/turns/T2/export.json", "/sessions/S1/compare/?a=T2&b=C1",
    "/sessions/S1/compare/?a=T3&b=T1",
    "/pipeline/requests/", "/pipeline/requests/?format=json",
    "/pipeline/requests/?status=failed", "/pipeline/requests/R1/", "/pipeline/requests/R2/",
    "/pipeline/requests/R3/", "/pipeline/requests/R4/", "/pipeline/requests/R1/?format=json",
    "/pipeline/requests/R5/", "/pipeline/requests/R6/", "/admin/pipeline/nexusrequest/R5/change/",
    "/pipeline/requests/?source__exact=&principal__isnull=1", "/pipeline/requests/?delivered=yes",
    f"/pipeline/?{BROKEN_WINDOW}",
    *[f"/pipeline/charts/{c}/?{BROKEN_WINDOW}" for c in CHARTS],
    "/health/",
    "/admin/conversations/session/", "/admin/conversations/session/S1/change/",
    "/admin/conversations/turn/", "/admin/conversations/message/",
    "/admin/conversations/toolcall/", "/admin/pipeline/nexusrequest/",
    "/admin/pipeline/nexusrequest/R4/change/",
]  # fmt: skip


# -- The huge ledger ---------------------------------------------------------------------------

DEEP_TURNS = 20_000
WIDE_TURNS = 50_000
BIG_BYTES = 10 * 1024 * 1024
# Session ids and the turns worth opening in each.
DEEP, WIDE, BIG = "DEEP", "WIDE", "BIG"
DEEP_HEAD, DEEP_MIDDLE = f"D{DEEP_TURNS - 1:05d}", f"D{DEEP_TURNS // 2:05d}"
WIDE_HEAD, WIDE_BRANCH_TIP = f"W{WIDE_TURNS - 1:05d}", f"W{WIDE_TURNS // 2 - 1:05d}"
BIG_TURN = "B1"


def _numbered_turns(prefix: str, session: str, count: int, parent_sql: str) -> str:
    """An INSERT of `count` turns named prefix00000…, one second apart; `parent_sql` computes
    each turn's parent from its number n."""
    return f"""
        WITH RECURSIVE n(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM n WHERE n < {count - 1})
        INSERT INTO turns (id, session_id, parent_turn_id, status, started_at, completed_at,
                           prompt_tokens, completion_tokens, total_tokens, model)
        SELECT printf('{prefix}%05d', n), '{session}', {parent_sql},
               CASE WHEN n % 97 = 0 THEN 'failed' ELSE 'completed' END,
               {T0} + n * 1000, {T0} + n * 1000 + 500, 1000 + n, 50, 1050 + n,
               'claude-sonnet-4-20250514'
        FROM n"""


def _messages_for(prefix: str) -> str:
    """A user and an assistant message for every turn whose id starts with `prefix`."""
    return f"""
        INSERT INTO messages (id, turn_id, role, content, sequence, created_at)
        SELECT 'M' || id || '-' || s.seq, id, s.role, s.role || ' says ' || id, s.seq,
               started_at + s.seq
        FROM turns, (SELECT 1 AS seq, 'user' AS role UNION ALL SELECT 2, 'assistant') AS s
        WHERE id GLOB '{prefix}[0-9]*'"""


def build_huge_ledger(path: Path) -> None:
    """Sessions DEEP (a 20,000-deep linear thread), WIDE (50,000 turns: a trunk with a
    25-turn side branch every 50 turns) and BIG (one turn with a 10 MB message and a
    10 MB tool result), each turn with two messages."""
    schema.create_ledger(path)
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN")
    for sid, label, head, root in ((DEEP, "20,000 deep", DEEP_HEAD, "D00000"),
                                   (WIDE, "50,000 turns", WIDE_HEAD, "W00000"),
                                   (BIG, "10 MB payloads", BIG_TURN, BIG_TURN)):  # fmt: skip
        conn.execute(
            "INSERT INTO sessions (id, persona, routing_key, label, root_turn_id,"
            " current_turn_id, created_at, updated_at) VALUES (?, 'atlas', ?, ?, ?, ?, ?, ?)",
            (sid, f"test:{sid}", label, root, head, T0, T0 + 86_400_000),
        )
    conn.execute(
        _numbered_turns(
            "D", DEEP, DEEP_TURNS, "CASE WHEN n = 0 THEN NULL ELSE printf('D%05d', n - 1) END"
        )
    )
    # Turn 50k (k ≥ 1) forks from 50k − 25, so turns 50k − 24 … 50k − 1 are a dead side branch.
    wide_parent = """CASE WHEN n = 0 THEN NULL WHEN n % 50 = 0 THEN printf('W%05d', n - 25)
                     ELSE printf('W%05d', n - 1) END"""
    conn.execute(_numbered_turns("W", WIDE, WIDE_TURNS, wide_parent))
    conn.execute(_messages_for("D"))
    conn.execute(_messages_for("W"))
    conn.execute(
        "INSERT INTO turns (id, session_id, status, started_at, completed_at, model)"
        " VALUES (?, ?, 'completed', ?, ?, 'claude-sonnet-4-20250514')",
        (BIG_TURN, BIG, T0, T0 + 60_000),
    )
    big_text = ("A long line of a huge message. " * 32 + "\n") * (BIG_BYTES // 1025)
    conn.execute(
        "INSERT INTO messages (id, turn_id, role, content, sequence, created_at)"
        " VALUES ('MB1', ?, 'user', ?, 1, ?)",
        (BIG_TURN, big_text, T0),
    )
    big_result = json.dumps({"rows": [{"i": i, "text": PAYLOAD} for i in range(BIG_BYTES // 120)]})
    conn.execute(
        "INSERT INTO tool_calls (id, turn_id, tool_name, parameters, result, status,"
        " started_at, completed_at, sequence) VALUES ('CB1', ?, 'dump', '{}', ?, 'completed',"
        " ?, ?, 1)",
        (BIG_TURN, big_result, T0 + 1000, T0 + 2000),
    )
    conn.execute("COMMIT")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


HUGE_PAGES = [
    "/sessions/", "/",
    f"/sessions/{DEEP}/", f"/sessions/{DEEP}/?format=json",
    f"/sessions/{DEEP}/turns/{DEEP_HEAD}/", f"/sessions/{DEEP}/turns/{DEEP_HEAD}/thread/",
    f"/sessions/{DEEP}/turns/{DEEP_MIDDLE}/thread/",
    f"/sessions/{DEEP}/turns/{DEEP_HEAD}/export.json",
    f"/sessions/{WIDE}/", f"/sessions/{WIDE}/turns/{WIDE_HEAD}/thread/",  # ~25,000 deep
    f"/sessions/{WIDE}/compare/?a={WIDE_HEAD}&b={WIDE_BRANCH_TIP}",
    f"/sessions/{BIG}/", f"/sessions/{BIG}/turns/{BIG_TURN}/",
    f"/sessions/{BIG}/turns/{BIG_TURN}/?format=json",
    f"/sessions/{BIG}/turns/{BIG_TURN}/thread/",
    f"/sessions/{BIG}/turns/{BIG_TURN}/payload/message/MB1/",
    f"/sessions/{BIG}/turns/{BIG_TURN}/payload/result/CB1/",
    f"/sessions/{BIG}/turns/{BIG_TURN}/calls/CB1/",
    f"/sessions/{BIG}/turns/{BIG_TURN}/export.json",
    "/health/", "/admin/conversations/session/", "/admin/conversations/turn/",
    "/admin/conversations/message/", "/admin/conversations/message/MB1/change/",
    "/admin/conversations/toolcall/CB1/change/",
]  # fmt: skip
# Pages that repeat what the crawl above already proves, at seconds each: crawled only for
# docs/benchmarks.md (HOSTILE_CRAWL_DOC=1), to keep the test suite within its time budget.
SLOW_HUGE_PAGES = [
    f"/sessions/{DEEP}/turns/{DEEP_HEAD}/thread/?all=1",  # was all 20,000 steps: now page 1
    f"/sessions/{WIDE}/?unfold=all",  # a page of the 50,000 rows, every stretch unfolded
    f"/sessions/{WIDE}/turns/{WIDE_BRANCH_TIP}/",  # the WIDE session page, another turn open
    f"/sessions/{DEEP}/compare/?a={DEEP_HEAD}&b={DEEP_MIDDLE}",
]


# -- The odd-id ledger (issue 25) ----------------------------------------------------------------

# Ids as other programs write them: a line break (a header cannot hold one: a download was a
# 500), a NUL (SQLite's JSON ends a string there: the turn's twin was a 500), a quote and a
# semicolon that end a download's file name and start another (Chromium saved a script as
# evil.html), 3,000 characters (every turn link of the session was too long to follow).
ODD_IDS = {
    "newline": "odd\nline",
    "nul": "odd\x00nul",
    "quote": "x\"; filename*=UTF-8''evil.html; x=\"",
    "long": "L" * 3_000,
}
ODD_BIG_BYTES = 60 * 1024 * 1024  # one tool result of 60 MB, in the session HUGE-VALUE
ODD_BIG = ("HUGE-VALUE", "T-huge", "C-huge")


def build_odd_id_ledger(path: Path) -> None:
    """For each odd id X: session S<X> with turn T<X> (its head) holding message M<X> and tool
    call C<X>, a child turn, and request R<X> that ran T<X>, each long field past a page; and a
    session whose one tool result is ODD_BIG_BYTES of JSON."""
    schema.create_ledger(path)
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN")
    long_text = "a long field. " * 80_000  # 1.1 M characters: cut on its page, downloaded whole
    for n, odd in enumerate(ODD_IDS.values()):
        s, t, child = f"S{odd}", f"T{odd}", f"T2{odd}"
        conn.execute(
            "INSERT INTO sessions (id, persona, routing_key, label, root_turn_id,"
            " current_turn_id, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (s, f"persona {odd}", f"imessage:{odd}", f"label {odd}", t, child, T0, T0 + n),
        )
        for turn, parent, at in ((t, None, T0), (child, t, T0 + 1000)):
            conn.execute(
                "INSERT INTO turns (id, session_id, parent_turn_id, status, started_at,"
                " completed_at, model) VALUES (?, ?, ?, 'completed', ?, ?, 'claude-sonnet-4-5')",
                (turn, s, parent, at, at + 500),
            )
        conn.execute(
            "INSERT INTO messages (id, turn_id, role, content, sequence, created_at)"
            " VALUES (?, ?, 'user', ?, 1, ?)",
            (f"M{odd}", t, long_text, T0),
        )
        conn.execute(
            "INSERT INTO tool_calls (id, turn_id, tool_name, parameters, result, status,"
            " started_at, completed_at, sequence)"
            " VALUES (?, ?, 'dump', ?, ?, 'completed', ?, ?, 2)",
            (f"C{odd}", t, json.dumps({"q": long_text}), json.dumps({"r": long_text}), T0, T0 + 9),
        )
        conn.execute(
            "INSERT INTO nexus_requests (id, event_id, event_type, event_source, stage, status,"
            " started_at, completed_at, turn_id, principal_id, session_key, error_stage,"
            " error_message, error_stack, request_snapshot) VALUES (?, ?, 'message', 'imessage',"
            " 'runAgent', 'failed', ?, ?, ?, ?, ?, 'runAgent', ?, ?, ?)",
            (f"R{odd}", f"E{odd}", T0 + n, T0 + n + 900, t, f"principal {odd}", f"imessage:{odd}",
             f"boom {odd}", long_text, json.dumps({"snapshot": long_text})),
        )  # fmt: skip
    big_session, big_turn, big_call = ODD_BIG
    conn.execute(
        "INSERT INTO sessions (id, persona, routing_key, label, root_turn_id, current_turn_id,"
        " created_at, updated_at) VALUES (?, 'atlas', 'test:huge', '60 MB result', ?, ?, ?, ?)",
        (big_session, big_turn, big_turn, T0, T0 + 10),
    )
    conn.execute(
        "INSERT INTO turns (id, session_id, status, started_at, completed_at, model)"
        " VALUES (?, ?, 'completed', ?, ?, 'claude-sonnet-4-5')",
        (big_turn, big_session, T0, T0 + 60_000),
    )
    big = json.dumps({"rows": ["x" * 56] * (ODD_BIG_BYTES // 60 + 1)})  # 60 bytes a row
    conn.execute(
        "INSERT INTO tool_calls (id, turn_id, tool_name, parameters, result, status, started_at,"
        " completed_at, sequence) VALUES (?, ?, 'dump', '{}', ?, 'completed', ?, ?, 1)",
        (big_call, big_turn, big, T0 + 1000, T0 + 2000),
    )
    conn.execute("COMMIT")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
