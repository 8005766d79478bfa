"""Datasets (issue 31, item 4): chat and preference JSONL exported from the page (as each role,
streamed) and by `manage.py ledger_dataset`, read back by a JSONL reader and checked record by
record against a thread rebuilt here, independently, from the ledger's rows; what is left out is
said, with why; the ledger is byte-for-byte unchanged."""

import io
import json

import pytest
from builders import LEDGER_DB, T0, body_of, parse_html
from django.core.management import call_command
from ledger_fingerprint import ledger_fingerprint

from annotations.store import Marks, prefer, save_marks
from datasets.models import ExportRun

pytestmark = LEDGER_DB

BIG = "Ω" * 9_000 + " the end"  # longer than a record's first read: streamed in pieces
SCRIPTS = "Привет Γειά 안녕 こんにちは 你好 مرحبا שלום สวัสดี 🎉"


@pytest.fixture
def ledger_rows(ledger):
    """A conversation with a compaction, tool calls, a branch point of two answers and one of two
    edited prompts, and turns that cannot be exported (a cycle, a missing parent, no answer)."""
    s = ledger.session(id="S1", label="Trip")
    t = {}

    def turn(name, parent, prompt, answer, at, **fields):
        row = ledger.turn(s, t.get(parent), id=name, started_at=T0 + at * 100, **fields)
        if prompt is not None:
            ledger.message(row, 1, id=f"{name}-u", content=prompt, created_at=T0 + at * 100)
        if answer is not None:
            ledger.message(row, 9, role="assistant", id=f"{name}-a", content=answer,
                           created_at=T0 + at * 100 + 50)  # fmt: skip
        t[name] = row
        return row

    turn("T1", None, "Plan a trip to Lisbon", "Sure: when?", 1)
    turn("T2", "T1", "In May", "Booked nothing yet", 2)
    turn("T3", "T2", "Find flights", None, 3)
    ledger.tool_call(t["T3"], 1, id="C1", tool_name="flights", parameters='{"to": "LIS"}',
                     result='{"found": 3}', started_at=T0 + 310, completed_at=T0 + 320)  # fmt: skip
    ledger.tool_call(t["T3"], 2, id="C2", tool_name="hotels", parameters="", result=None,
                     error="timeout", status="failed", started_at=T0 + 311,
                     completed_at=T0 + 330)  # fmt: skip
    ledger.message(t["T3"], 3, role="assistant", id="T3-a", content="Three flights",
                   created_at=T0 + 340)  # fmt: skip
    turn("TC", "T3", None, "Summary: a May trip to Lisbon, flights found", 4)
    ledger.compaction(t["TC"], "Summary: a May trip to Lisbon, flights found",
                      summarized=["T1", "T2"], kept=["T3"])  # fmt: skip
    turn("T4", "TC", "Which is cheapest? " + SCRIPTS, "The 7am one. " + BIG, 5)
    # A branch point at T4: two answers to one prompt, and two edited prompts below T2.
    turn("A1", "T4", "Book it", "Booked the 7am", 6)
    turn("A2", "T4", "Book it", "I cannot book flights", 7)
    turn("E1", "T2", "In June", "June is busy", 8)
    turn("E2", "T2", 'In July; "quoted"\n<b>!</b>', "July is hot", 9)
    # What cannot be exported.
    turn("P1", "T4", "Still there?", None, 10, status="pending")
    ledger.conn.execute("INSERT INTO turns (id, session_id, parent_turn_id, status, started_at)"
                        " VALUES ('X1', 'S1', 'X2', 'completed', 1), ('X2', 'S1', 'X1',"
                        " 'completed', 2)")  # fmt: skip
    ledger.message({"id": "X1", "started_at": T0}, 1, id="X1-u", content="loop")
    turn("O1", None, "orphan", "answer", 11, parent_turn_id="nowhere")
    ledger.set_head(s, t["T1"], t["A1"])
    return t


@pytest.fixture
def marked(ledger_rows, viewer, operator):
    for turn_id in ("T4", "A1", "E1", "T2", "P1", "X1", "O1", "GONE"):
        save_marks(viewer, "S1", turn_id, Marks(thumb=1))
    save_marks(operator, "S1", "A2", Marks(thumb=-1, labels=["wrong-tool"]))
    save_marks(operator, "S1", "T3", Marks(labels=["wrong-tool"], score=2))
    save_marks(operator, "S1", "T4", Marks(labels=["good-example"], score=5))
    prefer(viewer, "S1", "T4", ["A1"], ["A2"])
    prefer(operator, "S1", "T4", ["A1"], ["A2"])
    prefer(viewer, "S1", "T2", ["E2"], ["E1"])
    prefer(viewer, "S1", "T1", ["T2"], ["GONE"])
    return ledger_rows


def read_jsonl(data: bytes) -> list[dict]:
    """Read as JSONL readers do: one JSON value per line, UTF-8, each line an object."""
    lines = data.decode("utf-8").split("\n")
    assert lines[-1] == "", "the file ends with a line break"
    records = [json.loads(line) for line in lines[:-1]]
    assert all(isinstance(r, dict) for r in records)
    return records


# -- The thread, rebuilt here from the ledger's rows (not from ledgerweb's code) -----------------


class Rebuilt:
    """Reads the ledger through the test's own connection (sqlite3, or psycopg on the
    PostgreSQL pass), never through ledgerweb."""

    def __init__(self, ledger):
        self.db = ledger.conn

    def path(self, turn_id: str) -> list[str]:
        path, seen = [], set()
        current = turn_id
        while current is not None:
            assert current not in seen, "a cycle: such a turn must have been left out"
            seen.add(current)
            row = self.db.execute(
                "SELECT parent_turn_id FROM turns WHERE id = ?", (current,)
            ).fetchone()
            assert row is not None, "a missing parent: such a turn must have been left out"
            path.append(current)
            current = row[0]
        return path[::-1]

    def session_of(self, turn_id: str) -> str:
        return self.db.execute("SELECT session_id FROM turns WHERE id = ?", (turn_id,)).fetchone()[
            0
        ]

    def messages_of(self, turn_id: str) -> list[tuple[dict, dict]]:
        """(chat message, its ledger row) of a turn: its messages and calls merged by time
        (a message first at equal times), parallel calls as one assistant message."""
        items = [
            (created, 0, seq, {"role": role, "content": content}, {"message_id": mid})
            for mid, role, content, seq, created in self.db.execute(
                "SELECT id, role, content, sequence, created_at FROM messages WHERE turn_id = ?",
                (turn_id,),
            )
        ]
        calls = list(
            self.db.execute(
                "SELECT id, tool_name, parameters, result, error, status, sequence, started_at,"
                " completed_at FROM tool_calls WHERE turn_id = ? ORDER BY sequence",
                (turn_id,),
            )
        )
        out, batch, first_end = [], [], None
        for call in calls:
            if batch and call[7] < first_end:
                batch.append(call)
            else:
                if batch:
                    items.append((batch[0][7], 1, batch[0][6], batch, None))
                batch, first_end = [call], call[8]
            first_end = min(first_end, call[8])
        if batch:
            items.append((batch[0][7], 1, batch[0][6], batch, None))
        for _, kind, _, item, ref in sorted(items, key=lambda i: (i[0], i[1], i[2])):
            if kind == 0:
                out.append(
                    (item, {"turn_id": turn_id, "session_id": self.session_of(turn_id)} | ref)
                )
                continue
            calls_message = {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": c[0],
                        "type": "function",
                        "function": {"name": c[1], "arguments": c[2] or "{}"},
                    }  # fmt: skip
                    for c in item
                ],
            }
            out.append(
                (calls_message, {"turn_id": turn_id, "session_id": self.session_of(turn_id)})
            )
            for c in item:
                content = c[3] if c[4] is None else "Error: " + c[4]
                out.append(
                    (
                        {"role": "tool", "tool_call_id": c[0], "content": content},
                        {
                            "turn_id": turn_id,
                            "session_id": self.session_of(turn_id),
                            "tool_call_id": c[0],
                            "status": c[5],
                        },  # fmt: skip
                    )
                )
        return out

    def resumed(self, path: list[str]) -> tuple[list[dict], list[str]]:
        """The context before the last turn of `path`, compactions applied, and its turns."""
        context_turns = path[:-1]
        compactions = {
            row[0]: row
            for row in self.db.execute(
                f"SELECT turn_id, summary, kept_turn_ids FROM compactions WHERE turn_id IN"
                f" ({','.join('?' * len(context_turns))})",
                context_turns,
            )
        }
        messages, turns = [], []
        latest = max((context_turns.index(c) for c in compactions), default=None)
        if latest is not None:
            _, summary, kept = compactions[context_turns[latest]]
            messages.append({"role": "system", "content": summary})
            keep = set(json.loads(kept))
            context_turns = [
                t for i, t in enumerate(context_turns) if (i < latest and t in keep) or i > latest
            ]
        for turn_id in context_turns:
            messages += [m for m, _ in self.messages_of(turn_id)]
            turns.append(turn_id)
        return messages, turns


def without_weights(messages: list[dict]) -> list[dict]:
    return [{k: v for k, v in m.items() if k != "weight"} for m in messages]


def check_chat_record(record: dict, rebuilt: Rebuilt) -> None:
    ledger = record["ledger"]
    path = rebuilt.path(ledger["turn_id"])
    context, turns = rebuilt.resumed(path)
    own = rebuilt.messages_of(ledger["turn_id"])
    assert ledger["thread_turn_ids"] == [*turns, ledger["turn_id"]]
    assert without_weights(record["messages"]) == context + [m for m, _ in own]
    answer_at = ledger["answer_starts_at"]
    assert record["messages"][answer_at]["role"] != "user"
    for at, message in enumerate(record["messages"]):
        if message["role"] == "assistant":  # trained on the answer only
            assert message["weight"] == (1 if at >= answer_at else 0)
    own_refs = [ref for _, ref in own]
    assert ledger["messages"][-len(own_refs) :] == own_refs


# -- Chat --------------------------------------------------------------------------------------


def test_a_viewer_exports_the_thumbs_up_turns_as_chat_records(viewer_client, ledger, marked):
    before = ledger_fingerprint(ledger)
    response = viewer_client.get("/datasets/export.jsonl", {"kind": "chat", "thumb": "up"})
    assert response.status_code == 200 and response.streaming
    assert response["Content-Type"] == "application/jsonl"
    assert "attachment" in response["Content-Disposition"]
    records = read_jsonl(body_of(response))
    assert [r["ledger"]["turn_id"] for r in records] == ["A1", "E1", "T2", "T4"]
    rebuilt = Rebuilt(ledger)
    for record in records:
        check_chat_record(record, rebuilt)
    t4 = next(r for r in records if r["ledger"]["turn_id"] == "T4")
    # The compaction's summary, the one turn it kept (T3, with its calls), then T4.
    assert t4["messages"][0] == {
        "role": "system",
        "content": "Summary: a May trip to Lisbon, flights found",
    }
    assert t4["ledger"]["thread_turn_ids"] == ["T3", "T4"]
    assert t4["ledger"]["compaction_turn_id"] == "TC"
    assert t4["messages"][-1]["content"] == "The 7am one. " + BIG  # streamed whole
    assert SCRIPTS in t4["messages"][-2]["content"]
    assert t4["annotations"] == {
        "labels": ["good-example"],
        "thumbs_up": 1,
        "thumbs_down": 0,
        "scores": [5],
        "annotated_by": ["otto", "vera"],
    }
    assert ledger_fingerprint(ledger) == before

    run = ExportRun.objects.get()
    assert run.records == 4 and run.finished_at is not None
    assert run.report["left_out"] == 4
    reasons = {item["what"]: item["reason"] for item in run.report["left_out_named"]}
    assert reasons["turn GONE"].startswith("gone")
    assert reasons["turn P1"].startswith("no answer")
    assert "loops" in reasons["turn X1"]
    assert "does not exist" in reasons["turn O1"]


def test_the_export_page_says_what_was_left_out_and_why(viewer_client, marked):
    body_of(viewer_client.get("/datasets/export.jsonl", {"kind": "chat"}))
    page = viewer_client.get("/datasets/").content.decode()
    parse_html(page)
    run = ExportRun.objects.get()
    assert f'href="/datasets/runs/{run.pk}/"' in page
    detail = viewer_client.get(f"/datasets/runs/{run.pk}/").content.decode()
    parse_html(detail)
    assert "4 left out" in detail and "the chain of parents loops" in detail
    assert "by vera" in detail
    twin = viewer_client.get(f"/datasets/runs/{run.pk}/?format=json").json()
    assert twin["records"] == 4 and twin["report"]["left_out_by_reason"]["no answer"] == 1


def test_labelled_turns_in_prompt_completion_form(viewer_client, ledger, marked):
    response = viewer_client.get(
        "/datasets/export.jsonl",
        {"kind": "chat", "label": "wrong-tool", "form": "prompt-completion"},
    )
    records = read_jsonl(body_of(response))
    assert [r["ledger"]["turn_id"] for r in records] == ["A2", "T3"]
    rebuilt = Rebuilt(ledger)
    t3 = records[1]
    context, _ = rebuilt.resumed(rebuilt.path("T3"))
    own = rebuilt.messages_of("T3")
    assert t3["prompt"] == context + [own[0][0]]
    assert t3["completion"] == [m for m, _ in own[1:]]
    assert t3["completion"][0]["tool_calls"][1]["function"] == {"name": "hotels", "arguments": "{}"}
    assert t3["completion"][2]["content"] == "Error: timeout"
    assert t3["annotations"]["labels"] == ["wrong-tool"] and t3["annotations"]["scores"] == [2]


# -- Preferences -------------------------------------------------------------------------------


def test_branch_point_choices_export_as_preference_records(viewer_client, ledger, marked):
    records = read_jsonl(
        body_of(viewer_client.get("/datasets/export.jsonl", {"kind": "preferences"}))
    )
    pairs = {(r["ledger"]["chosen_turn_id"], r["ledger"]["rejected_turn_id"]): r for r in records}
    assert set(pairs) == {("A1", "A2"), ("E2", "E1")}
    rebuilt = Rebuilt(ledger)
    same = pairs[("A1", "A2")]
    context, turns = rebuilt.resumed(rebuilt.path("A1"))
    assert same["ledger"]["same_prompt"] is True
    assert same["prompt"] == context + [{"role": "user", "content": "Book it"}]
    assert same["chosen"] == [{"role": "assistant", "content": "Booked the 7am"}]
    assert same["rejected"] == [{"role": "assistant", "content": "I cannot book flights"}]
    assert same["annotations"]["chosen_by"] == ["otto", "vera"]
    assert same["annotations"]["rejected_labels"] == ["wrong-tool"]
    assert same["ledger"]["context_turn_ids"] == turns
    edited = pairs[("E2", "E1")]
    assert edited["ledger"]["same_prompt"] is False
    assert edited["chosen"] == [m for m, _ in rebuilt.messages_of("E2")]
    assert edited["chosen"][0]["content"] == 'In July; "quoted"\n<b>!</b>'
    assert edited["rejected"] == [m for m, _ in rebuilt.messages_of("E1")]
    run = ExportRun.objects.get()
    assert run.report["left_out"] == 1
    assert run.report["left_out_named"][0]["what"] == "pair T2 > GONE at T1"


# -- The command -------------------------------------------------------------------------------


def test_the_command_writes_the_same_records_and_reports_what_it_left_out(
    viewer_client, ledger, marked, tmp_path
):
    before = ledger_fingerprint(ledger)
    out, err = tmp_path / "good.jsonl", io.StringIO()
    call_command("ledger_dataset", "chat", "--out", str(out), stderr=err)
    from_page = body_of(viewer_client.get("/datasets/export.jsonl", {"kind": "chat"}))
    assert out.read_bytes() == from_page
    said = err.getvalue()
    assert "4 records of turns given a 👍 written to" in said
    assert "4 left out" in said and "turn X1 (session S1): unreadable thread" in said
    prefs = tmp_path / "prefs.jsonl"
    call_command("ledger_dataset", "preferences", "--out", str(prefs), stderr=io.StringIO())
    assert len(read_jsonl(prefs.read_bytes())) == 2
    assert ExportRun.objects.filter(by_command=True).count() == 2
    assert ledger_fingerprint(ledger) == before


def test_the_command_refuses_a_folder_and_a_form_of_another_kind(marked, tmp_path):
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="is a folder"):
        call_command("ledger_dataset", "chat", "--out", str(tmp_path))
    with pytest.raises(CommandError, match="not a form of preferences"):
        call_command("ledger_dataset", "preferences", "--out", "-", "--form", "messages")


def test_a_bad_parameter_is_a_400_that_names_it(viewer_client, marked):
    response = viewer_client.get("/datasets/export.jsonl", {"kind": "poems"})
    assert response.status_code == 400 and b"kind" in response.content
    assert not ExportRun.objects.exists()


def test_the_page_offers_the_labels_and_counts(viewer_client, marked):
    page = viewer_client.get("/datasets/").content.decode()
    assert '<option value="wrong-tool">wrong-tool (2)</option>' in page
    assert "8 turns with a 👍" in page and "4 pairs chosen so far" in page
    twin = viewer_client.get("/datasets/?format=json").json()
    assert twin["counts"] == {"thumbs_up_turns": 8, "preference_pairs": 4}
