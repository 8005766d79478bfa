"""A Codex call_id pasted in the search box opens its tool call (issue 26, item 4).

Codex names each tool call by a `call_id` (in its rollouts and in the logs a person debugs
from); the ledger's tool call has an id derived from its rollout line, so the import keeps the
call_id beside it (the optional tool_call_source_ids table, docs/decisions.md "A Codex call_id
is kept beside the tool call's derived id"). The expected calls come from a plain reading of
the rollouts here, not from the importer. Runs on the SQLite and PostgreSQL ledger passes.
"""

import json
from collections import defaultdict
from pathlib import Path

from builders import LEDGER_DB, T0
from importing import IMPORT_FIXTURES, plain_reading, run_import

from importers.bundle import ImportReport, SessionBundle
from importers.writer import write
from ledgerfacts import schema

pytestmark = LEDGER_DB
URL = "/search/"
CODEX = IMPORT_FIXTURES / "codex"
SAMPLE = IMPORT_FIXTURES / "samples" / "codex" / "small.jsonl"  # a real rollout's records
ROLLOUTS = [
    SAMPLE,
    next(CODEX.glob("rollout-*.jsonl")),  # today's envelope layout
    *sorted((CODEX / "layouts").glob("rollout-*")),  # the flat layout and the first CLI's JSON
    *sorted((CODEX / "lineage").rglob("rollout-*.jsonl")),  # a parent, its subagent, a fork
]
# What the previous version of ledger_import wrote for those rollouts (before call_ids were
# kept): made by main at 1c7bee1, as importers.writer bundles in the order it wrote them.
IMPORTED_BEFORE = CODEX / "imported-before-call-ids.json"
SOURCE_IDS = "tool_call_source_ids"
# A rollout item's input and output, by type (the Codex CLI's response items).
INPUT_KEY = {
    "function_call": "arguments",
    "custom_tool_call": "input",
    "local_shell_call": "action",
    "tool_search_call": "arguments",
    "web_search_call": "action",
    "image_generation_call": "revised_prompt",
}
OUTPUT_KEY = {
    "function_call_output": "output",
    "custom_tool_call_output": "output",
    "tool_search_output": "tools",
}


def decoded(value):
    """A JSON value with the JSON text inside strings read too (Codex writes a function's
    arguments as JSON text; the ledger keeps them as JSON)."""
    while isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            break
    return value


def calls_by_call_id(*paths: Path) -> dict[str, list[dict]]:
    """call_id → the calls that carry it: their session, input and output (None when the
    rollout has no output for it), read plainly from the rollouts. An output answers the latest
    call of its call_id still waiting for one."""
    found = defaultdict(list)
    for path in paths:
        reading = plain_reading(path)
        waiting = defaultdict(list)
        for item in reading["items"]:
            call_id = item.get("call_id")
            if item.get("type") in INPUT_KEY and isinstance(call_id, str):
                call = {
                    "session_id": reading["meta"]["id"],
                    "input": item.get(INPUT_KEY[item["type"]]),
                    "output": None,
                }
                found[call_id].append(call)
                waiting[call_id].append(call)
            elif item.get("type") in OUTPUT_KEY and waiting.get(call_id):
                waiting[call_id].pop()["output"] = item.get(OUTPUT_KEY[item["type"]])
    return dict(found)


def pasteable(call_id: str) -> bool:
    """What a person can paste as one id (search/ids.py): up to 300 characters and no spaces
    (the sample's call_ids are trimmed to "[trimmed for fixture]": words, not an id); and
    what PostgreSQL's text holds (no NUL)."""
    return 0 < len(call_id) <= 300 and not any(c.isspace() or c == "\x00" for c in call_id)


def stored_call(ledger, call_id: str) -> dict:
    ((parameters, result, error),) = ledger.conn.execute(
        "SELECT parameters, result, error FROM tool_calls WHERE id = ?", (call_id,)
    ).fetchall()
    return {"parameters": parameters, "result": result, "error": error}


def landings(client, pasted: str) -> list[tuple[str, str]]:
    """Where pasting `pasted` in the search box leads, as a person (with and without htmx) and a
    script (the JSON twin) get there: (session id, tool call id) of each call it opens, each
    checked to be on the page it links to, at its anchor."""
    twin = client.get(URL, {"q": pasted, "format": "json"})
    assert twin.status_code == 200
    urls = [jump["url"] for jump in twin.json()["ids"] if jump["kind"] == "tool call"]
    page = client.get(URL, {"q": pasted})
    htmx = client.get(URL, {"q": pasted}, headers={"HX-Request": "true"})
    if len(urls) == 1:  # one call: the page opens it
        assert page.status_code == 302 and page["Location"] == urls[0]
        assert htmx["HX-Redirect"] == urls[0]
    else:  # several: the page lists each
        assert page.status_code == 200 and htmx.status_code == 200
        for url in urls:
            assert f'href="{url}"' in page.content.decode()
            assert f'href="{url}"' in htmx.content.decode()
    landed = []
    for url in urls:
        path, _, anchor = url.partition("#")
        turn_page = client.get(path)
        assert turn_page.status_code == 200
        assert f'id="{anchor}"' in turn_page.content.decode()
        session_id = path.split("/")[2]
        landed.append((session_id, anchor.removeprefix("call-")))
    return landed


def assert_each_call_id_opens_its_calls(client, ledger, expected: dict[str, list[dict]]):
    for call_id, calls in expected.items():
        landed = landings(client, call_id)
        assert sorted(s for s, _ in landed) == sorted(c["session_id"] for c in calls), call_id
        for call in calls:
            # The call landed on in its session holds this call_id's input and output.
            stored = [stored_call(ledger, c) for s, c in landed if s == call["session_id"]]
            assert any(
                decoded(row["parameters"]) == decoded(call["input"])
                and (call["output"] is None or row["result"] is not None or row["error"])
                and (row["result"] is None or decoded(row["result"]) == decoded(call["output"]))
                for row in stored
            ), (call_id, call, stored)


def pasteable_calls(*paths: Path) -> dict[str, list[dict]]:
    return {k: v for k, v in calls_by_call_id(*paths).items() if pasteable(k)}


def test_each_call_id_of_the_real_sample_opens_its_tool_call(viewer_client, ledger):
    run_import("codex", SAMPLE)
    expected = pasteable_calls(SAMPLE)
    assert sorted(expected) == ["call-1", "call-2", "call-3"]  # the sample's calls with ids
    assert_each_call_id_opens_its_calls(viewer_client, ledger, expected)


def test_each_call_id_of_every_layout_and_lineage_opens_its_tool_calls(viewer_client, ledger):
    """The fork's rollout repeats its origin's history, call_ids too: such an id lists both
    calls (each at its place), the origin's and the fork's copy."""
    run_import("codex", *ROLLOUTS)
    expected = pasteable_calls(*ROLLOUTS)
    assert len(expected["call_Sp4wn1"]) == 2  # the spawn call, in the parent and in the fork
    assert_each_call_id_opens_its_calls(viewer_client, ledger, expected)


def test_a_call_id_in_capitals_finds_its_call(viewer_client, ledger):
    """As any pasted id (search/ids.py): as written, in capitals or in small letters."""
    run_import("codex", SAMPLE)
    (call,) = calls_by_call_id(SAMPLE)["call-2"]
    assert [s for s, _ in landings(viewer_client, "CALL-2")] == [call["session_id"]]


def counts(ledger) -> dict[str, int]:
    tables = (*schema.AGENTS_TABLES, "compactions", "turn_usage")
    return {t: ledger.conn.execute(f"SELECT count(*) FROM {t}").fetchall()[0][0] for t in tables}


def write_imported_before(ledger) -> None:
    """The ledger as the previous version of ledger_import left it: its rows, and no
    tool_call_source_ids table (it did not exist)."""
    ledger.conn.execute(f"DROP TABLE IF EXISTS {SOURCE_IDS}")
    conn = getattr(ledger.conn, "conn", ledger.conn)  # psycopg under the PostgreSQL builder
    report = ImportReport()
    for rows in json.loads(IMPORTED_BEFORE.read_text())["sessions"]:
        where = rows.pop("where")
        write(conn, SessionBundle(where=where, session=rows.pop("sessions")[0], **rows), report)
    assert not report.failed_sessions and not report.collisions


def test_importing_again_over_an_import_made_before_keeps_every_row_and_adds_the_call_ids(
    viewer_client, ledger
):
    write_imported_before(ledger)
    before = counts(ledger)
    assert before["tool_calls"] == 18
    summary = run_import("codex", *ROLLOUTS)
    assert counts(ledger) == before  # no tool call (nor anything else) a second time
    assert "collision" not in summary.lower()
    assert f"tool_calls: 0 added, {before['tool_calls']} already there" in summary
    calls_with_ids = sum(len(calls) for calls in pasteable_calls(*ROLLOUTS).values())
    assert f"{SOURCE_IDS}: {calls_with_ids} added" in summary
    assert_each_call_id_opens_its_calls(viewer_client, ledger, pasteable_calls(*ROLLOUTS))
    again = run_import("codex", *ROLLOUTS)
    assert f"{SOURCE_IDS}: 0 added, {calls_with_ids} already there" in again


def odd_rollout(folder: Path) -> Path:
    """A rollout whose calls carry every odd call_id: none, empty, very long, with quotes and
    markup, a newline, a NUL, in other scripts, and one id given to two calls."""
    session = "019a5555-0000-7000-8000-00000000odd1"
    call_ids = {
        "missing": None,
        "empty": "",
        "long": "call_" + "x" * 5000,
        "quotes": "call_\"q'uo;te<b>&amp;",
        "newline": "call_two\nlines",
        "nul": "call_nul\x00after",
        "scripts": "вызов_呼び出し_🔧",
        "twice": "call_dup",
        "twice again": "call_dup",
    }
    lines = [
        {"type": "session_meta", "payload": {"id": session, "cwd": "/tmp/odd"}},
        {"type": "response_item", "payload": {
            "type": "message", "role": "user",
            "content": [{"type": "input_text", "text": "Run the odd tools"}],
        }},
    ]  # fmt: skip
    for n, (what, call_id) in enumerate(call_ids.items()):
        call = {"type": "function_call", "name": "shell", "arguments": json.dumps({"what": what})}
        if call_id is not None:
            call["call_id"] = call_id
        lines.append({"type": "response_item", "payload": call})
        output = {"type": "function_call_output", "output": f"output of {what} ({n})"}
        if call_id is not None:
            output["call_id"] = call_id
            lines.append({"type": "response_item", "payload": output})
    path = folder / f"rollout-2025-11-03T10-00-00-{session}.jsonl"
    with path.open("w") as file:
        for n, line in enumerate(lines):
            file.write(json.dumps({"timestamp": f"2025-11-03T10:00:{n:02d}.000Z", **line}) + "\n")
    return path


def test_odd_call_ids_are_found_when_pasteable_and_never_stop_the_import(
    viewer_client, ledger, tmp_path
):
    rollout = odd_rollout(tmp_path)
    summary = run_import("codex", rollout)  # exits 0: nothing left out, on PostgreSQL too
    assert "tool_calls: 9 added" in summary
    # Kept: what can be pasted as an id. Not kept, and said: a call_id too long to be an id or
    # holding what PostgreSQL text cannot (NUL) or a person cannot paste (a line break).
    assert f"{SOURCE_IDS}: 4 added" in summary
    assert "Codex call_ids that cannot be pasted as an id" in summary
    expected = pasteable_calls(rollout)
    assert sorted(expected) == sorted(["call_\"q'uo;te<b>&amp;", "вызов_呼び出し_🔧", "call_dup"])
    assert_each_call_id_opens_its_calls(viewer_client, ledger, expected)
    for pasted in ("call_" + "x" * 5000, "call_two\nlines"):  # searched as text: no error
        assert viewer_client.get(URL, {"q": pasted}).status_code == 200


def test_an_id_many_calls_carry_lists_the_newest_few(viewer_client, ledger):
    """A call_id is unique only within its rollout (the sample numbers its calls call-1,
    call-2…): the list stops at 20 calls, newest first, as an event id shared by many
    requests does."""
    session = ledger.session(id="S1")
    for n in range(25):
        turn = ledger.turn(session, id=f"T{n:02d}", started_at=T0 + n)
        ledger.tool_call(turn, 1, id=f"C{n:02d}", started_at=T0 + n)
        ledger.conn.execute(
            f"INSERT INTO {SOURCE_IDS} (tool_call_id, source_id) VALUES (?, 'call-1')",
            (f"C{n:02d}",),
        )
    jumps = viewer_client.get(URL, {"q": "call-1", "format": "json"}).json()["ids"]
    assert [j["id"] for j in jumps] == [f"C{n:02d}" for n in range(24, 4, -1)]
    assert all(j["url"].endswith(f"#call-{j['id']}") for j in jumps)
