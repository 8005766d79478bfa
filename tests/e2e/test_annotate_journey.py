"""Journey 8, annotate and build a dataset, in Chromium at 1280 and 390 px: label a turn, give it
a 👎 and a note, mark the better answer at a branch point, start a review queue of this week's
failed turns and walk it with the keyboard, a colleague goes on where it stopped, then export
the 👍 turns and the choices as JSONL whose every record names its ledger turn."""

import json
import re
import time

import pytest
from ledger_fingerprint import ledger_fingerprint
from playwright.sync_api import expect

from annotations.models import Annotation, Preference
from ledgerfacts.timestamps import now_ms
from review.models import Item

pytestmark = pytest.mark.django_db(transaction=True, databases="__all__")
HOUR = 3_600_000


@pytest.fixture
def ledger_rows(ledger):
    now = now_ms()
    s = ledger.session(id="S1", persona="atlas", label="Inbox watch", updated_at=now)
    root = ledger.turn(s, id="R", started_at=now - 30 * HOUR)
    ledger.message(root, 1, content="Watch my inbox for the bank's code")
    ledger.message(root, 2, role="assistant", content="Watching.", created_at=now - 30 * HOUR)
    for n, answer in enumerate(["The code is 4412.", "I could not read the inbox."], start=1):
        kid = ledger.turn(s, root, id=f"A{n}", started_at=now - (20 - n) * HOUR)
        ledger.message(kid, 1, content="What is the code?", created_at=now - (20 - n) * HOUR)
        ledger.message(kid, 2, role="assistant", content=answer, created_at=now - (20 - n) * HOUR)
    for n in range(1, 4):
        failed = ledger.turn(s, {"id": "A1"}, id=f"F{n}", status="failed",
                             started_at=now - n * HOUR)  # fmt: skip
        ledger.message(failed, 1, content=f"Try the bank again ({n})", created_at=now - n * HOUR)
        ledger.tool_call(failed, 1, status="failed", error="gmail: 401 expired")
    ledger.set_head(s, root, {"id": "F1"})
    return s


def stored_marks(user, turn_id: str, seconds: float = 5.0) -> Annotation:
    """The person's annotation once the server has it (the browser moves on as it answers)."""
    deadline = time.monotonic() + seconds
    while True:
        found = Annotation.objects.filter(user=user, turn_id=turn_id, thumb__isnull=False).first()
        if found is not None or time.monotonic() > deadline:
            return found or Annotation.objects.get(user=user, turn_id=turn_id)
        time.sleep(0.1)


def keys_ready(page) -> None:
    """The item's keys work once its script has run (a person sees the page first)."""
    expect(page.locator("[data-review-item][data-keys=ready]")).to_have_count(1)


def wait_for_block(page, text: str) -> None:
    expect(page.locator("#turn-annotations")).to_contain_text(text)


@pytest.mark.parametrize("width", [1280, 390])
def test_journey_8_annotate_review_and_export(
    page, browser, live_server, viewer, operator, ledger, ledger_rows, sign_in, width, tmp_path
):
    page.set_viewport_size({"width": width, "height": 900})
    before = ledger_fingerprint(ledger)

    # 1. Reading a session: label a turn wrong-tool, give it 👎 and a note (htmx, in the panel).
    sign_in("vera", next_url="/sessions/S1/turns/A2/")
    block = page.locator("#turn-annotations")
    block.locator("summary").click()
    block.locator("input[name=labels]").fill("wrong-tool")
    block.locator("input[name=thumb][value=down]").check()
    block.locator("textarea[name=note]").fill("Should have **retried** the inbox.")
    block.get_by_role("button", name="Save").click()
    wait_for_block(page, "wrong-tool")
    expect(block.locator(".annotation .note strong")).to_have_text("retried")
    expect(page).to_have_url(re.compile(r"/sessions/S1/turns/A2/$"))  # the page stayed
    stored = Annotation.objects.get(user=viewer, turn_id="A2")
    assert stored.thumb == -1 and stored.note == "Should have **retried** the inbox."

    # At the branch point, mark the better answer.
    page.goto(f"{live_server.url}/sessions/S1/turns/R/")
    point = page.locator("#branch-point")
    expect(point).to_contain_text("2 answers here: which is better?")
    point.locator("li", has_text="The code is 4412.").get_by_role(
        "button", name="This one is better"
    ).click()
    expect(point).to_contain_text("vera (you): 1/2 A1 over 2/2 A2")
    assert {(p.chosen_turn_id, p.rejected_turn_id) for p in Preference.objects.all()} == {
        ("A1", "A2")
    }

    # 2. Start a review queue of this week's failed turns, walk it with the keyboard.
    page.get_by_role("link", name="Review").click()
    page.select_option("#r-source", "failed")
    page.select_option("#r-window", "7d")
    page.get_by_role("button", name="Make the queue").click()
    expect(page.locator(".review-progress")).to_contain_text("0 of 3 done")
    page.get_by_role("button", name="Start reviewing").click()
    expect(page.locator(".review-step.current")).to_contain_text("Try the bank again (1)")
    keys_ready(page)
    page.keyboard.press("d")
    page.keyboard.press("2")
    page.keyboard.press("l")
    page.keyboard.type("expired-token")
    page.keyboard.press("Escape")
    page.keyboard.press("n")
    expect(page.locator(".review-step.current")).to_contain_text("Try the bank again (2)")
    keys_ready(page)
    expect(page.locator(".review-progress")).to_contain_text("1 of 3 done")
    first = stored_marks(viewer, "F1")
    assert (first.thumb, first.score) == (-1, 2)
    assert list(first.labels.values_list("name", flat=True)) == ["expired-token"]
    page.keyboard.press("u")
    page.keyboard.press("n")  # item 2 done with a 👍
    expect(page.locator(".review-step.current")).to_contain_text("Try the bank again (3)")
    keys_ready(page)
    queue_url = page.locator("nav.crumbs a").nth(1).get_attribute("href")

    # A colleague goes on where it stopped: vera holds item 3, otto is given nothing of hers.
    other = browser.new_context(viewport={"width": width, "height": 900})
    otto = other.new_page()
    otto.goto(f"{live_server.url}/accounts/login/?next={queue_url}")
    otto.fill("#id_username", "otto")
    otto.fill("#id_password", "pw")
    otto.click("button[type=submit]")
    expect(otto.locator(".review-progress")).to_contain_text("2 of 3 done")
    expect(otto.locator(".review-progress")).to_contain_text("vera is on 1")
    otto.get_by_role("button", name="Continue reviewing").click()
    expect(otto.locator(".messages")).to_contain_text("Nothing left to review")
    other.close()
    page.keyboard.press("s")  # vera skips the last one
    expect(page.locator(".review-progress")).to_contain_text("2 of 3 done · 1 skipped")
    assert Item.objects.filter(state="skipped").count() == 1

    # 3. Export the 👍 turns as chat JSONL and the choices as preference pairs.
    page.get_by_role("link", name="Datasets").click()
    with page.expect_download() as chat:
        page.get_by_role("button", name="Export chat JSONL").click()
    chat_path = tmp_path / "chat.jsonl"
    chat.value.save_as(chat_path)
    records = [json.loads(line) for line in chat_path.read_text().splitlines()]
    assert [r["ledger"]["turn_id"] for r in records] == ["F2"]
    assert records[0]["messages"][-1]["role"] in ("assistant", "tool")  # its answer
    with page.expect_download() as prefs:
        page.get_by_role("button", name="Export preference JSONL").click()
    prefs_path = tmp_path / "prefs.jsonl"
    prefs.value.save_as(prefs_path)
    (pair,) = [json.loads(line) for line in prefs_path.read_text().splitlines()]
    assert pair["ledger"]["chosen_turn_id"] == "A1" and pair["ledger"]["rejected_turn_id"] == "A2"
    assert pair["chosen"] == [{"role": "assistant", "content": "The code is 4412."}]
    page.reload()
    expect(page.locator("table.runs")).to_contain_text("preferences")
    assert ledger_fingerprint(ledger) == before  # none of it wrote the ledger
