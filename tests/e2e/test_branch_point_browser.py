"""Every answer at a branch point in the browser (issue 28, journey 2b): "3 answers" on a row
opens the branches side by side; a person picks two and compares them, opens a thread, with the
keyboard, by clicks without JavaScript, and by touch on a phone."""

import pytest
from contexts import NO_SCRIPT, PHONE, signed_in
from test_branch_point import branched

pytestmark = pytest.mark.django_db(transaction=True, databases="__all__")


@pytest.fixture
def three_answers(ledger):
    branched(ledger)


def test_the_answers_badge_opens_them_and_keys_compare_two(
    page, live_server, viewer, three_answers, sign_in
):
    page.set_viewport_size({"width": 1280, "height": 900})
    sign_in("vera", next_url="/sessions/S1/")
    page.locator('.tree-row[data-turn="R"] .mark-branch').click()
    page.wait_for_url("**/sessions/S1/turns/R/branches/")
    cards = page.locator(".branch-card")
    assert cards.count() == 3
    tops = [cards.nth(n).bounding_box()["y"] for n in range(3)]
    assert max(tops) - min(tops) < 2  # side by side
    assert "3 turns" in cards.nth(0).inner_text().replace("\n", " ").replace("turns 3", "3 turns")
    page.keyboard.press("j")  # the second card (C)
    page.keyboard.press("a")
    page.keyboard.press("j")  # the third (B, the head's)
    page.keyboard.press("b")
    page.keyboard.press("c")
    page.wait_for_url("**/compare/**")
    assert "a=C" in page.url and "b=B" in page.url


def test_t_opens_the_thread_where_a_branch_ended(page, live_server, viewer, three_answers,
                                                sign_in):  # fmt: skip
    sign_in("vera", next_url="/sessions/S1/turns/R/branches/")
    page.keyboard.press("t")  # the first card: A, which ended at the failed A2
    page.wait_for_url("**/turns/A2/thread/")


def test_a_key_from_the_tree_and_the_panels_button(page, live_server, viewer, three_answers,
                                                  sign_in):  # fmt: skip
    sign_in("vera", next_url="/sessions/S1/turns/C/")
    page.keyboard.press("a")  # on a sibling: its branch point's answers
    page.wait_for_url("**/turns/R/branches/")


def test_without_javascript_the_button_and_the_form_work(browser, live_server, viewer,
                                                         three_answers):  # fmt: skip
    context, page = signed_in(browser, live_server, "/sessions/S1/turns/R/", NO_SCRIPT)
    with page.expect_navigation():
        page.locator("[data-answers]").click()
    assert page.url.endswith("/sessions/S1/turns/R/branches/")
    page.locator('.branch-card[data-turn="B"] input[name=a]').check()
    page.locator('.branch-card[data-turn="A"] input[name=b]').check()
    with page.expect_navigation():
        page.locator(".branch-submit button").click()
    assert "a=B" in page.url and "b=A" in page.url
    context.close()


def test_a_phone_reads_the_branches_one_above_the_other(browser, live_server, viewer,
                                                        three_answers):  # fmt: skip
    context, page = signed_in(browser, live_server, "/sessions/S1/", PHONE)
    page.locator('.tree-row[data-turn="R"] .mark-branch').tap()
    page.wait_for_url("**/turns/R/branches/")
    cards = page.locator(".branch-card")
    boxes = [cards.nth(n).bounding_box() for n in range(3)]
    assert boxes[0]["y"] < boxes[1]["y"] < boxes[2]["y"]
    assert all(b["x"] >= 0 and b["x"] + b["width"] <= 390 for b in boxes)
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    cards.nth(1).locator("input[name=a]").tap()
    cards.nth(2).locator("input[name=b]").tap()
    page.locator(".branch-submit button").tap()
    page.wait_for_url("**/compare/**")
    context.close()
