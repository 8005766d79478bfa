"""A NUL inside a value is exported and downloaded whole (docs/decisions.md, "A NUL inside a
value is read as bytes"): SQLite's substr() and length() of a TEXT stop at its first NUL, so a
message "before\\x00after" was exported as "before", and a tool result holding a NUL past the
export's first read lost everything after it. Each export and download is read back here and
must hold the whole value, the NUL written as JSON's \\u0000.

A PostgreSQL ledger's text cannot hold a NUL (ledger_ship leaves such a row out): there the
builders skip a test whose session cannot be stored, and the request tests are listed in
pg_ledger's NOT_RUN_ON_POSTGRES, as other values only SQLite holds. The same SQL runs on
PostgreSQL in the export, download and page tests of its pass (tests/test_turn_and_thread.py,
test_downloads.py, test_datasets.py, test_request_page.py).
"""

import json
import re

import pytest
from builders import LEDGER_DB, T0, body_of
from django.urls import reverse

from annotations.store import Marks, save_marks
from sessions.export import HEAD_CHARS

pytestmark = LEDGER_DB

MESSAGE = "before\x00after"
# A NUL past the export's first read (HEAD_CHARS characters), with characters of many bytes on
# both sides of it and of the first read's end, so a read in bytes that split one would show.
RESULT = "é" * (HEAD_CHARS - 3) + "Ω✓" + "\x00" + "안녕 🎉 " * 2_000 + "the end"
PARAMETERS = '{"q": "a\x00b"}'
ERROR_LONG = "x" * 10 + "\x00" + "Ж" * (HEAD_CHARS * 2) + " last"
ANSWER = "\x00 first, then " + "日本" * 3_000


@pytest.fixture
def nul_turn(ledger):
    s = ledger.session(id="S1")
    t = ledger.turn(s, id="T1")
    ledger.message(t, 1, id="M1", content=MESSAGE, created_at=T0 + 1)
    ledger.tool_call(t, 2, id="C1", parameters=PARAMETERS, result=RESULT,
                     started_at=T0 + 2, completed_at=T0 + 3)  # fmt: skip
    ledger.tool_call(t, 3, id="C2", parameters="{}", error=ERROR_LONG, status="failed",
                     started_at=T0 + 4, completed_at=T0 + 5)  # fmt: skip
    ledger.message(t, 4, role="assistant", id="M2", content=ANSWER, created_at=T0 + 6)
    ledger.set_head(s, t, t)
    return t


def check_messages(messages: list[dict]) -> None:
    user = [m["content"] for m in messages if m["role"] == "user"]
    assert user == [MESSAGE]
    calls = [m["tool_calls"] for m in messages if m.get("tool_calls")]
    assert [c["function"]["arguments"] for batch in calls for c in batch] == [PARAMETERS, "{}"]
    tools = {m["tool_call_id"]: m["content"] for m in messages if m["role"] == "tool"}
    assert tools == {"C1": RESULT, "C2": "Error: " + ERROR_LONG}
    assert messages[-1]["content"] == ANSWER


def test_export_json_holds_every_value_whole_past_a_nul(viewer_client, nul_turn):
    response = viewer_client.get("/sessions/S1/turns/T1/export.json?download=1")
    assert response.status_code == 200 and response.streaming
    assert "attachment" in response["Content-Disposition"]
    raw = body_of(response)
    assert b"before\\u0000after" in raw  # a NUL is JSON's escape, never a raw byte
    assert b"\x00" not in raw
    check_messages(json.loads(raw)["messages"])


def test_the_dataset_export_holds_every_value_whole_past_a_nul(
    viewer_client, viewer, nul_turn, tmp_path
):
    from django.core.management import call_command

    save_marks(viewer, "S1", "T1", Marks(thumb=1))
    response = viewer_client.get("/datasets/export.jsonl", {"kind": "chat", "thumb": "up"})
    assert response.status_code == 200
    from_page = body_of(response)
    (record,) = [json.loads(line) for line in from_page.decode().splitlines()]
    check_messages(record["messages"])
    out = tmp_path / "chat.jsonl"
    call_command("ledger_dataset", "chat", "--form", "prompt-completion", "--out", str(out))
    (record,) = [json.loads(line) for line in out.read_text().splitlines()]
    check_messages(record["prompt"] + record["completion"])


def payload_url(kind: str, item: str) -> str:
    return reverse("sessions:payload", args=["S1", "T1", kind, item])


@pytest.mark.parametrize(
    ("kind", "item", "whole"),
    [
        ("message", "M1", MESSAGE),
        ("message", "M2", ANSWER),
        ("parameters", "C1", PARAMETERS),
        ("result", "C1", RESULT),
    ],
    ids=["short-message", "long-message", "parameters", "long-result"],
)
def test_a_payload_holding_a_nul_downloads_whole(viewer_client, nul_turn, kind, item, whole):
    got = viewer_client.get(payload_url(kind, item) + "?download=1")
    assert got.status_code == 200
    assert body_of(got) == whole.encode()


def test_a_long_payload_past_a_nul_is_shown_with_a_download_of_the_whole(
    viewer_client, nul_turn, monkeypatch
):
    """The page showed a result up to its NUL as if that were all, with no download."""
    monkeypatch.setattr("ledgerweb.downloads.PAGE_CHARS", 1_000)
    page = viewer_client.get(payload_url("result", "C1")).content.decode()
    assert "Download the whole result" in page
    short = viewer_client.get(payload_url("message", "M1")).content.decode()
    assert "after" in short and "Download the whole" not in short


def test_the_turn_panel_shows_the_text_after_a_nul(viewer_client, nul_turn):
    page = viewer_client.get(reverse("sessions:turn", args=["S1", "T1"])).content.decode()
    assert "after" in page
    twin = viewer_client.get(reverse("sessions:turn", args=["S1", "T1"]) + "?format=json")
    contents = [m["content"] for m in twin.json()["messages"]]
    assert contents[0] == MESSAGE


def test_a_request_field_holding_a_nul_downloads_whole(viewer_client, ledger):
    stack = "Traceback\x00" + "line é\n" * 200_000 + "end"
    ledger.request(id="R1", status="failed", error_stage="runAgent", error_message="a\x00b",
                   error_stack=stack)  # fmt: skip
    url = reverse("pipeline:request", args=["R1"])
    assert body_of(viewer_client.get(url + "?download=error_stack")) == stack.encode()
    assert body_of(viewer_client.get(url + "?download=error_message")) == b"a\x00b"


def test_the_thread_page_and_its_twin_show_the_text_after_a_nul(viewer_client, nul_turn):
    url = reverse("sessions:thread", args=["S1", "T1"])
    assert "after" in viewer_client.get(url).content.decode()
    (step,) = viewer_client.get(url + "?format=json").json()["steps"]
    assert step["messages"][0]["content"] == MESSAGE


def test_the_request_page_shows_a_field_past_its_nul_and_offers_the_whole(
    viewer_client, ledger, monkeypatch
):
    monkeypatch.setattr("ledgerweb.downloads.PAGE_CHARS", 1_000)
    stack = "Traceback\x00" + "line é\n" * 500 + "end"
    ledger.request(id="R1", status="failed", error_stage="runAgent", error_message="bad\x00tail",
                   error_stack=stack)  # fmt: skip
    url = reverse("pipeline:request", args=["R1"])
    page = viewer_client.get(url).content.decode()
    assert "line é" in page and "b&#x27;" not in page and "\\x" not in page
    assert "tail" in page
    assert f'href="{url}?download=error_stack"' in page


def test_compare_diffs_two_answers_past_their_nul(viewer_client, ledger):
    s = ledger.session(id="S1")
    root = ledger.turn(s, id="T1", started_at=T0)
    for n, (turn_id, tail) in enumerate((("A1", "six friends"), ("B1", "five ponies"))):
        t = ledger.turn(s, root, id=turn_id, started_at=T0 + 100 * (n + 1))
        ledger.message(t, 1, id=f"{turn_id}-u", content="Tell me", created_at=T0 + 100 * n + 1)
        ledger.message(t, 2, role="assistant", id=f"{turn_id}-a",
                       content=f"It follows\x00 {tail} in Equestria.",
                       created_at=T0 + 100 * n + 2)  # fmt: skip
    ledger.set_head(s, root, root)
    page = viewer_client.get("/sessions/S1/compare/?a=A1&b=B1").content.decode()
    a, b = re.findall(r'<div class="compare-answer">(.*?)</div>', page, re.S)
    # Shown whole, the NUL as a visible ␀ (before: each cut to "It follows").
    assert "It follows␀" in a and "six friends" in a and "in Equestria" in a
    assert "It follows␀" in b and "five ponies" in b and "in Equestria" in b
