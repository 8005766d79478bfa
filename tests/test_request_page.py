"""The failed-request page tells one story: every stage card agrees with the waterfall (ran,
failed here, not reached, running, skipped), the failing hook is named, and a request still
processing says it is running and since when."""

import json
import re

import pytest
from builders import LEDGER_DB, T0, parse_html
from django.urls import reverse

from ledgerfacts.timestamps import now_ms
from pipeline.stages import STAGES

pytestmark = LEDGER_DB

CARDS = {  # card title → its stage
    "Identity": "resolveIdentity",
    "Access": "resolveAccess",
    "Hooks": "executeTriggers",
    "Agent": "runAgent",
    "Delivery": "deliverResponse",
}
# What each stage writes when it runs (seeds/002), so a row holds exactly what it reached.
WRITES = {
    "resolveIdentity": {"principal_id": "mom", "principal_type": "person", "principal_is_user": 0},
    "resolveAccess": {"access_decision": "allow", "access_policy": "family", "session_key": "k"},
    "executeTriggers": {"hooks_matched": '["spam-filter"]', "hooks_fired": '["spam-filter"]',
                        "hooks_handled": 0},
    "runAgent": {"agent_model": "sonnet", "agent_tokens_total": 900},
    "deliverResponse": {"delivery_channel": "imessage", "delivery_success": 1},
}  # fmt: skip


def reached_row(upto: str, **fields) -> dict:
    """The columns and timings of a request that ran every stage before `upto`."""
    before = STAGES[: STAGES.index(upto)]
    row = {"stage_timings": json.dumps(dict.fromkeys(before, 5))}
    for stage in before:
        row |= WRITES.get(stage, {})
    return row | fields


def card_texts(page: str) -> dict[str, str]:
    """Each stage card's text, whitespace folded, keyed by its title."""
    tree = parse_html(page)
    texts = {}
    for section in tree.iter("section"):
        if "stage-card" in section.get("class", ""):
            text = " ".join(" ".join(section.itertext()).split())
            texts[text.split()[0]] = text
    return texts


def failed_at(ledger, stage: str, **fields) -> dict:
    fields = {"error_message": f"{stage} blew up"} | fields
    return ledger.request(
        id=f"F-{stage}", status="failed", stage=stage, error_stage=stage,
        **reached_row(stage, **fields),
    )  # fmt: skip


@pytest.mark.parametrize("failed_stage", STAGES)
def test_every_card_agrees_with_the_stage_that_failed(viewer_client, ledger, failed_stage):
    failed_at(ledger, failed_stage)
    cards = card_texts(viewer_client.get(f"/pipeline/requests/F-{failed_stage}/").content.decode())
    assert set(cards) == set(CARDS)
    failed_index = STAGES.index(failed_stage)
    for title, stage in CARDS.items():
        text = cards[title]
        index = STAGES.index(stage)
        if index < failed_index:
            assert f"{stage} · ran" in text, text
            assert f"{stage} · not reached" not in text and "failed" not in text, text
        elif index == failed_index:
            assert f"{stage} · failed here" in text and "This stage failed." in text, text
        else:
            assert f"{stage} · not reached" in text, text
            assert f"Not reached: the request failed at {failed_stage} before this stage." in text
            # Nothing a stage that never ran would have decided: no "none", no "no".
            assert " none" not in text and "passed to the agent" not in text, text


def test_a_failed_trigger_names_its_hook_and_does_not_pass_to_the_agent(viewer_client, ledger):
    ledger.request(
        id="HOOK", status="failed", stage="executeTriggers", error_stage="executeTriggers",
        error_message="Hook script exited with code 1: legacy-forwarder-v0",
        hooks_matched='["spam-filter"]', hooks_fired='["spam-filter"]', hooks_handled=0,
        **{k: v for k, v in reached_row("executeTriggers").items() if not k.startswith("hooks")},
    )  # fmt: skip
    page = viewer_client.get("/pipeline/requests/HOOK/").content.decode()
    cards = card_texts(page)
    hooks = cards["Hooks"]
    assert "failing hook legacy-forwarder-v0 (named by the error; in neither list below)" in hooks
    assert "handled — the stage failed before the hooks could decide" in hooks
    assert "passed to the agent" not in page
    assert "runAgent · not reached" in cards["Agent"]
    data = viewer_client.get("/pipeline/requests/HOOK/?format=json").json()
    assert data["failing_hook"] == "legacy-forwarder-v0"
    assert data["stage_cards"]["executeTriggers"]["state"] == "failed here"


def test_a_failing_hook_the_row_lists_is_named_without_the_aside(viewer_client, ledger):
    failed_at(
        ledger, "executeTriggers", hooks_matched='["calendar-invite-parser"]', hooks_fired="[]",
        error_message="Hook 'calendar-invite-parser' raised KeyError: 'DTSTART'",
    )  # fmt: skip
    hooks = card_texts(viewer_client.get("/pipeline/requests/F-executeTriggers/").content.decode())
    assert "failing hook calendar-invite-parser matched" in hooks["Hooks"]


def test_a_request_still_processing_says_it_is_running_and_since_when(viewer_client, ledger):
    started = now_ms() - 90_000
    ledger.request(id="RUN", status="processing", stage="resolveAccess", started_at=started,
                   completed_at=None, **reached_row("resolveAccess"))  # fmt: skip
    page = viewer_client.get("/pipeline/requests/RUN/").content.decode()
    head = " ".join(page.split('class="meta muted"')[1].split("</p>")[0].split())
    assert "still running at resolveAccess</strong>, since" in head and "minute" in head
    assert "started" not in head  # said once: running since
    assert "not completed" not in page and "total" not in head
    cards = card_texts(page)
    assert "resolveIdentity · ran" in cards["Identity"]
    assert "resolveAccess · running" in cards["Access"] and "Running now" in cards["Access"]
    for title in ("Hooks", "Agent", "Delivery"):
        assert "Not reached yet: the request is still at resolveAccess." in cards[title]
    assert "still processing" not in page  # not stuck: started a minute and a half ago


def test_a_request_processing_for_an_hour_is_called_probably_stuck(viewer_client, ledger):
    ledger.request(id="OLD", status="processing", stage="runAgent", started_at=now_ms() - 3_600_000,
                   completed_at=None, **reached_row("runAgent"))  # fmt: skip
    page = viewer_client.get("/pipeline/requests/OLD/").content.decode()
    assert "still processing 60 minutes after it started" in page


def test_a_skipped_request_says_why_its_later_stages_did_not_run(viewer_client, ledger):
    timings = json.dumps(dict.fromkeys((*STAGES[:3], "finalize"), 3))
    ledger.request(id="DENY", status="skipped", stage="finalize", access_decision="deny",
                   stage_timings=timings)  # fmt: skip
    cards = card_texts(viewer_client.get("/pipeline/requests/DENY/").content.decode())
    assert "resolveAccess · ran" in cards["Access"]
    for title in ("Hooks", "Agent", "Delivery"):
        assert "· skipped Skipped: access was denied." in cards[title], cards[title]


def test_values_a_stage_that_never_ran_holds_are_still_shown(viewer_client, ledger):
    failed_at(ledger, "resolveIdentity", agent_model="ghost-model")
    agent = card_texts(viewer_client.get("/pipeline/requests/F-resolveIdentity/").content.decode())[
        "Agent"
    ]
    assert "Yet the row holds values for it" in agent and "ghost-model" in agent


@pytest.mark.parametrize("value", [2, "true"])
def test_a_boolean_column_holding_something_else_shows_it_as_stored(viewer_client, ledger, value):
    ledger.request(id="ODD", delivery_success=value, delivery_channel="imessage", started_at=T0)
    delivery = card_texts(viewer_client.get("/pipeline/requests/ODD/").content.decode())["Delivery"]
    assert f"delivered {value} (not a boolean)" in delivery


@pytest.mark.parametrize(
    ("handled", "says", "skipped_because"),
    [
        (2, "yes — a hook handled the event (the ledger holds 2)", "a hook handled the event"),
        ("true", "'true' (not a boolean", "the request finished without this stage"),
    ],
)
def test_the_hooks_card_reads_an_odd_handled_flag_as_the_charts_do(
    viewer_client, ledger, handled, says, skipped_because
):
    """2 is true for SQLite, the charts and ?hook_state=handled; 'true' is unreadable there."""
    timings = json.dumps(dict.fromkeys((*STAGES[:4], "finalize"), 3))
    ledger.request(id="ODD", status="skipped", stage="finalize", hooks_handled=handled,
                   hooks_fired='["otp"]', stage_timings=timings)  # fmt: skip
    cards = card_texts(viewer_client.get("/pipeline/requests/ODD/").content.decode())
    assert says in cards["Hooks"]
    assert f"Skipped: {skipped_because}." in cards["Agent"]


@pytest.fixture
def short_page(monkeypatch):
    """Pages show 1,000 characters of a value and downloads read 300 at a time, so a few KB
    behave like a runtime's 50 MB snapshot."""
    monkeypatch.setattr("ledgerweb.downloads.PAGE_CHARS", 1_000)
    monkeypatch.setattr("ledgerweb.downloads.PIECE_BYTES", 300)


def test_a_huge_snapshot_and_stack_are_shown_in_part_and_download_whole(
    viewer_client, ledger, short_page
):
    snapshot = json.dumps({"history": [f"message {i} — é" for i in range(400)]})
    stack = "".join(f"  at frame{i} (agent.js:{i})\n" for i in range(200))
    failed_at(ledger, "runAgent", request_snapshot=snapshot, error_stack=stack)
    url = reverse("pipeline:request", args=["F-runAgent"])
    got = viewer_client.get(url)
    page, tree = got.content.decode(), parse_html(got.content)
    assert len(page) < 20_000  # the cut parts, not the whole values
    notes = {" ".join("".join(p.itertext()).split()): p.find("a").get("href")
             for p in tree.iter("p") if "cut-note" in p.get("class", "")}  # fmt: skip
    assert notes == {
        f"Showing the first 1,000 of {len(stack):,} characters: too long for a page. "
        "Download the whole stack trace": url + "?download=error_stack",
        f"Showing the first 1,000 of {len(snapshot):,} characters: too long for a page. "
        "Download the whole snapshot": url + "?download=request_snapshot",
    }
    # Followed: each link gives the whole value as stored, as a file.
    got = viewer_client.get(notes[next(n for n in notes if "snapshot" in n)])
    assert got["Content-Disposition"] == 'attachment; filename="F-runAgent-request_snapshot.json"'
    assert b"".join(got.streaming_content) == snapshot.encode()
    got = viewer_client.get(url + "?download=error_stack")
    assert got["Content-Type"] == "text/plain; charset=utf-8"
    assert b"".join(got.streaming_content) == stack.encode()


def test_the_json_twin_says_which_fields_it_cut_and_where_to_get_them(
    viewer_client, ledger, short_page
):
    context = json.dumps({"k": "v" * 5_000})
    ledger.request(id="R1", status="completed", hooks_context=context)
    url = reverse("pipeline:request", args=["R1"])
    twin = viewer_client.get(url + "?format=json").json()
    assert len(twin["request"]["hooks_context"]) == 1_000
    assert twin["cut"] == {
        "hooks_context": {"total_chars": len(context), "download": url + "?download=hooks_context"}
    }


def test_a_download_of_a_field_that_is_not_long_or_of_a_missing_request_is_refused(
    viewer_client, ledger
):
    ledger.request(id="R1", status="completed")
    url = reverse("pipeline:request", args=["R1"])
    bad = viewer_client.get(url + "?download=event_id")
    assert bad.status_code == 400 and "download" in bad.content.decode()
    missing = viewer_client.get(
        reverse("pipeline:request", args=["R404"]) + "?download=error_stack"
    )
    assert missing.status_code == 404


@pytest.mark.parametrize("other_principal", [False, True])
def test_same_principal_and_same_session_key_are_one_list_when_they_hold_the_same_requests(
    viewer_client, ledger, other_principal
):
    """A principal that always writes through one session key made two identical lists."""
    for i in range(12):
        ledger.request(id=f"R{i:02d}", started_at=T0 + i, principal_id="mom", event_id=f"E{i}",
                       session_key="imessage:+1555:default")  # fmt: skip
    if other_principal:  # the key's lists differ from the principal's: both are shown
        ledger.request(id="DAD", started_at=T0 + 20, principal_id="dad",
                       session_key="imessage:+1555:default")  # fmt: skip
    page = viewer_client.get("/pipeline/requests/R00/").content.decode()
    parse_html(page)
    headings = re.findall(r"<h3>(Same [^<]*)</h3>", page)
    if other_principal:
        assert headings == ["Same event", "Same principal", "Same session key"]
    else:
        assert headings == ["Same event", "Same principal and session key"]
        assert page.count('href="/pipeline/requests/R11/"') == 1


@pytest.mark.parametrize("status", [" odd ", ""])
def test_the_status_link_lists_the_requests_of_that_status_as_stored(viewer_client, ledger, status):
    """The breadcrumb's status link wrote the status as typed text: " odd " was read as "odd",
    and '' was no filter at all."""
    ledger.request(id="R-this", status=status)
    ledger.request(id="R-other", status=status.strip() or "completed")
    page = parse_html(viewer_client.get("/pipeline/requests/R-this/").content)
    link = page.findall(".//nav[@class='crumbs']/a")[-1]
    listed = viewer_client.get(link.get("href") + "&format=json").json()
    assert [r["id"] for r in listed["requests"]] == ["R-this"]
