"""Picking two rows of the tree and comparing them, without typing an id (issue 16)."""

import re

import pytest
from branching import chat_ui_conversation
from playwright.sync_api import expect

pytestmark = pytest.mark.django_db(transaction=True, databases="__all__")


@pytest.fixture
def convo(ledger):
    return chat_ui_conversation(ledger, seed=7)


def regenerations(convo) -> tuple[str, str]:
    """Two answers to one prompt (not the first one) that both answered in words."""
    parents = {t["id"]: t["parent_turn_id"] for t in convo.turns}
    for group in convo.siblings():
        if parents[group[0]] is None:
            continue
        same_prompt = len({convo.prompts[t] for t in group}) == 1
        worded = [t for t in group if t not in convo.tool_only and same_prompt]
        if len(worded) >= 2:
            return worded[0], worded[1]
    raise AssertionError("the conversation has regenerations")


def test_shift_click_on_a_second_row_compares_it_with_the_selected_one(
    page, live_server, viewer, convo, sign_in
):
    a, b = regenerations(convo)
    sign_in("vera", next_url=f"/sessions/{convo.session['id']}/?unfold=all")
    page.locator(f"#turn-{a}").click()
    expect(page.locator("#panel")).to_contain_text(convo.prompts[a])
    page.locator(f"#turn-{b}").click(modifiers=["Shift"])
    expect(page).to_have_url(re.compile(rf"/compare/\?a={a}&b={b}$"))
    expect(page.locator(".compare-ancestor")).to_contain_text("They share")
    answers = page.locator(".compare-answer")
    expect(answers.nth(0)).to_contain_text(convo.answers[a].split(" (")[0].split(" ", 1)[1])
    expect(answers.nth(1)).to_contain_text(convo.answers[b].split(" (")[0].split(" ", 1)[1])


def test_compare_with_lists_the_branches_to_pick_from(page, live_server, viewer, convo, sign_in):
    a, b = regenerations(convo)
    sign_in("vera", next_url=f"/sessions/{convo.session['id']}/turns/{a}/")
    page.get_by_role("link", name="Compare with…").click()
    expect(page.locator(".compare-pick h2")).to_contain_text(f"Compare {a} with…")
    page.locator(".pick-list a", has_text=b).click()
    expect(page).to_have_url(re.compile(rf"\?a={a}&b={b}$"))
    expect(page.locator(".compare-answer")).to_have_count(2)


@pytest.mark.parametrize("width", [1280, 390])
def test_the_two_turn_fields_are_as_wide_as_each_other(
    page, live_server, viewer, convo, sign_in, width
):
    page.set_viewport_size({"width": width, "height": 900})
    sign_in("vera", next_url=f"/sessions/{convo.session['id']}/compare/")
    a, b = page.locator("#cmp-a").bounding_box(), page.locator("#cmp-b").bounding_box()
    assert abs(a["width"] - b["width"]) < 1 and a["width"] > 150  # (sub-pixel rounding)
    assert page.evaluate("document.documentElement.scrollWidth") <= width
