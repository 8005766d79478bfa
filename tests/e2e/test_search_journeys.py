"""Search in a real browser: the header box, a hit followed to its turn, find in a session."""

import re
from io import StringIO
from pathlib import Path

import pytest
from builders import T0
from django.conf import settings
from django.core.management import call_command
from playwright.sync_api import expect

from sessions.turn_detail import INLINE_CALLS

pytestmark = pytest.mark.django_db(transaction=True, databases="__all__")
IMPORT_FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "import"


@pytest.fixture
def story(ledger):
    s = ledger.session(id="S1", label="Cleanup")
    root = ledger.turn(s, id="T1", started_at=T0)
    ledger.message(root, 1, content="Please prune the stale kumquat branches")
    failed = ledger.turn(s, root, id="T2", started_at=T0 + 1, status="failed")
    ledger.message(failed, 1, content="something unrelated")
    head = ledger.turn(s, failed, id="T3", started_at=T0 + 2)
    ledger.message(head, 1, content="the kumquat branch is gone")
    # A long list of calls, which start closed; the last one is what an id jump opens.
    for i in range(INLINE_CALLS + 2):
        ledger.tool_call(head, i, id=f"C{i}", result=f'{{"line": "output {i}"}}')
    ledger.set_head(s, root, head)
    return s


def test_a_tool_call_id_in_the_header_box_opens_that_call(
    page, live_server, viewer, story, sign_in
):
    sign_in("vera")
    last = f"C{INLINE_CALLS + 1}"
    page.get_by_role("searchbox", name="Search the ledger or paste an id").fill(last)
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(rf"/sessions/S1/turns/T3/#call-{last}$"))
    call = page.locator(f"#call-{last} details")
    expect(call).to_have_attribute("open", "")
    expect(call).to_contain_text(f"output {INLINE_CALLS + 1}")
    expect(page.locator("#call-C0 details")).not_to_have_attribute("open", "")


def test_a_search_hit_leads_to_its_turn(page, live_server, viewer, story, sign_in):
    sign_in("vera")
    page.get_by_role("searchbox", name="Search the ledger or paste an id").fill("kumquat")
    page.keyboard.press("Enter")
    expect(page.locator(".hit")).to_have_count(2)
    expect(page.locator(".hit mark").first).to_have_text("kumquat")
    page.locator(".hit a").first.click()  # newest first: the head's message
    expect(page).to_have_url(re.compile(r"/sessions/S1/turns/T3/#message-"))
    expect(page.locator("#panel")).to_contain_text("the kumquat branch is gone")


def test_find_in_a_session_marks_and_walks_matches_and_failures(
    page, live_server, viewer, story, sign_in
):
    sign_in("vera", next_url="/sessions/S1/")
    page.get_by_role("searchbox", name="Find in this session").fill("kumquat")
    page.keyboard.press("Enter")
    expect(page.locator(".tree-row.find-hit")).to_have_count(2)
    expect(page.locator("#turn-T1")).to_have_class(re.compile("selected"))  # the first match
    expect(page.locator("#panel")).to_contain_text("stale kumquat")
    expect(page.locator(".find-status")).to_have_text("match 1 of 2 · n / N")
    page.keyboard.press("n")
    expect(page.locator("#turn-T3")).to_have_class(re.compile("selected"))
    page.keyboard.press("N")
    expect(page.locator("#turn-T1")).to_have_class(re.compile("selected"))
    page.keyboard.press("f")
    expect(page.locator("#turn-T2")).to_have_class(re.compile("selected"))
    expect(page.locator(".find-status")).to_have_text("failure 1 of 1 (1 failed turn) · f / F")


def test_a_codex_call_id_in_the_header_box_opens_that_call(page, live_server, viewer, sign_in):
    """A Codex call_id from one's logs (issue 26, item 4): the real sample's `call-2` opens that
    call (its output, not call-1's); the spawn call a fork repeats lists both copies."""
    rollouts = [IMPORT_FIXTURES / "samples" / "codex", IMPORT_FIXTURES / "codex" / "lineage"]
    call_command("ledger_import", "codex", *map(str, rollouts), ledger=str(settings.LEDGER_DB),
                 stdout=StringIO(), stderr=StringIO())  # fmt: skip
    sign_in("vera")
    box = page.get_by_role("searchbox", name="Search the ledger or paste an id")
    box.fill("call-2")
    box.press("Enter")
    expect(page).to_have_url(re.compile(r"/sessions/019fc8be-[^/]+/turns/[^/]+/#call-\w{26}$"))
    call = page.locator(f"#{page.url.partition('#')[2]} details")
    expect(call).to_have_attribute("open", "")
    expect(call).to_contain_text("image_url")  # call-2's output; call-1's has b.txt instead
    expect(call).not_to_contain_text("b.txt")

    box = page.get_by_role("searchbox", name="Search the ledger or paste an id")
    box.fill("call_Sp4wn1")
    box.press("Enter")
    listed = page.locator(".id-jumps a")
    expect(listed).to_have_count(2)
    expect(page.locator(".id-jumps")).to_contain_text("019a4410-3333-7aaa-8bbb-000000000003")
    fork_copy = page.locator(".id-jumps li", has_text="000000000003").locator("a")
    fork_copy.click()
    expect(page).to_have_url(re.compile(r"/sessions/019a4410-3333-[^/]+/turns/[^/]+/#call-\w{26}$"))
    expect(page.locator(f"#{page.url.partition('#')[2]}")).to_contain_text("spawn_agent")
