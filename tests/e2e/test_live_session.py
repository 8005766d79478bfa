"""Watching a session while its agent works (issue 29, journey 6), in a real browser: what the
writer commits shows within 2 s of the commit, and the reader keeps their place — the selected
turn and its open panel, the tree's scroll position, the find marks, the keyboard's row."""

import re
import time

import pytest
from builders import T0
from playwright.sync_api import expect

from ledgerfacts.timestamps import now_ms

pytestmark = pytest.mark.django_db(transaction=True, databases="__all__")

# From the ledger commit to the screen (issue 29).
ON_SCREEN_MS = 2_000


@pytest.fixture
def working_session(ledger):
    """A comb: a main line of 30 turns, each but the last with a side answer (no straight
    stretch to fold: 59 rows, more than the tree shows at once), and the agent at work on R, a
    pending turn after the head."""
    s = ledger.session(id="S1", label="Deploy the release")
    parent = None
    for i in range(30):
        main = ledger.turn(s, parent, id=f"M{i:02d}", started_at=T0 + 10 * i)
        word = "deploy" if i % 5 == 0 else "check"
        ledger.message(main, 1, content=f"Step {i}: {word} the service")
        if i < 29:
            side = ledger.turn(s, main, id=f"X{i:02d}", started_at=T0 + 10 * i + 1)
            ledger.message(side, 1, content=f"Side question {i}")
        parent = main
    running = ledger.turn(s, parent, id="R", status="pending", started_at=now_ms() - 1000,
                          completed_at=None, total_tokens=None)  # fmt: skip
    ledger.message(running, 1, content="Roll the release out to the second region")
    ledger.set_head(s, {"id": "M00"}, running)
    return s


def place(page) -> dict:
    """What the reader has: selection, panel, keyboard row, find marks, scroll positions."""
    return page.evaluate(
        """() => {
        const tree = document.querySelector('.tree');
        const ids = (sel) => Array.from(document.querySelectorAll(sel)).map(r => r.dataset.turn);
        return {
          selected: ids('.tree-row.selected'),
          cursor: ids('.tree-row.cursor'),
          found: ids('.tree-row.find-hit'),
          panel: document.querySelector('#panel [data-panel-turn]').dataset.panelTurn,
          treeTop: tree.scrollTop,
          pageTop: window.scrollY,
          open: Array.from(document.querySelectorAll('#panel details[open]')).map(
            d => (d.closest('[id]') || {}).id),
        };
    }"""
    )


def commit_and_see(write, locator, check: str, *args) -> None:
    """Commit `write` (the builder commits at once), then expect `check` of the locator to hold
    within 2 s."""
    write()
    getattr(expect(locator), check)(*args, timeout=ON_SCREEN_MS)


def test_turns_calls_and_statuses_appear_as_written_and_the_reader_keeps_their_place(
    page, live_server, viewer, ledger, working_session, sign_in
):
    sign_in("vera", next_url="/sessions/S1/turns/R/")
    expect(page.locator("#live-bar")).to_contain_text("Following live")
    expect(page.locator("#turn-R .running")).to_contain_text("s")  # running for a few seconds
    # The reader finds "deploy" (the find walk opens the first match's panel), goes back to the
    # running turn's panel, moves the keyboard two rows up and scrolls the tree a little.
    page.fill("form.find-in-session input[name=q]", "deploy")
    page.keyboard.press("Enter")
    expect(page.locator(".tree-row.find-hit")).to_have_count(6)
    expect(page.locator("#panel")).to_contain_text("Step 0: deploy")  # the first match's panel
    page.locator("#turn-R").click()
    expect(page.locator("#panel")).to_contain_text("Roll the release out")
    page.keyboard.press("k")
    page.keyboard.press("k")
    page.evaluate("() => { document.querySelector('.tree').scrollTop -= 120; }")
    before = place(page)
    assert before["selected"] == ["R"] and before["panel"] == "R"
    assert len(before["found"]) == 6 and len(before["cursor"]) == 1 and before["treeTop"] > 0

    def a_call():
        ledger.tool_call({"id": "R", "started_at": now_ms()}, 1, id="C-deploy",
                         tool_name="kubectl_rollout", status="pending",
                         completed_at=None)  # fmt: skip

    commit_and_see(a_call, page.locator("#call-C-deploy"), "to_be_visible")
    expect(page.locator("#turn-R .calls")).to_contain_text("1 tool")

    commit_and_see(
        lambda: ledger.conn.execute(
            "UPDATE tool_calls SET status = 'completed', result = '{\"ok\": true}'"
            " WHERE id = 'C-deploy'"
        ),
        page.locator("#call-C-deploy .status"),
        "to_have_text",
        "completed",
    )
    commit_and_see(
        lambda: ledger.message(
            {"id": "R", "started_at": now_ms()},
            2,
            role="assistant",
            content="Region two is serving the new release.",
        ),  # fmt: skip
        page.locator("#panel"),
        "to_contain_text",
        "Region two is serving",
    )
    commit_and_see(
        lambda: ledger.conn.execute(
            "UPDATE turns SET status = 'completed', completed_at = ?, total_tokens = 4200"
            " WHERE id = 'R'",
            (now_ms(),),
        ),
        page.locator("#panel .panel-head .status"),
        "to_have_text",
        "completed",
    )
    expect(page.locator("#turn-R .mark-pending")).to_have_count(0)

    def a_new_turn():
        new = ledger.turn(working_session, {"id": "R"}, id="N1", status="pending",
                          started_at=now_ms(), completed_at=None)  # fmt: skip
        ledger.message(new, 1, content="Now the third region")
        ledger.conn.execute("UPDATE sessions SET current_turn_id = 'N1' WHERE id = 'S1'")

    commit_and_see(a_new_turn, page.locator("#turn-N1"), "to_be_attached")
    expect(page.locator("#turn-N1 .mark-head")).to_have_count(1)
    expect(page.locator(".tree-row .mark-head")).to_have_count(1)  # the head moved
    # The new turn is below the rows in view: counted, not scrolled to.
    expect(page.locator("#live-bar [data-live-news]")).to_have_text("1 new turn ↓")

    after = place(page)
    assert after["selected"] == ["R"] and after["panel"] == "R"
    assert after["cursor"] == before["cursor"]
    assert after["found"] == before["found"]
    assert abs(after["treeTop"] - before["treeTop"]) <= 1
    assert after["pageTop"] == before["pageTop"]
    assert "call-C-deploy" in after["open"]  # the reader's open call stays open
    # The count leads to the new turn.
    page.locator("#live-bar [data-live-news]").click()
    expect(page.locator("#turn-N1")).to_be_in_viewport()
    expect(page.locator("#live-bar [data-live-news]")).to_be_hidden()


def test_new_turns_outside_the_window_are_counted_and_lead_there(
    page, live_server, viewer, ledger, working_session, sign_in, monkeypatch
):
    from sessions import page as tree_pages

    monkeypatch.setattr(tree_pages, "PAGE_ROWS", 20)  # a window of 20 lines of the 60
    sign_in("vera", next_url="/sessions/S1/turns/M03/")
    expect(page.locator(".tree-row")).to_have_count(20)
    rows_before = page.locator(".tree-row").count()
    for n in (1, 2, 3):
        ledger.turn(working_session, {"id": "R" if n == 1 else f"N{n - 1}"}, id=f"N{n}",
                    started_at=now_ms())  # fmt: skip
    news = page.locator("#live-bar [data-live-news]")
    expect(news).to_have_text("3 new turns ↓", timeout=ON_SCREEN_MS + 1000)
    assert page.locator(".tree-row").count() == rows_before  # nothing inserted under the eyes
    expect(page.locator("#turn-N3")).to_have_count(0)
    news.click()
    expect(page).to_have_url(re.compile(r"/sessions/S1/turns/N3/$"))
    expect(page.locator("#turn-N3")).to_have_class(re.compile("selected"))


def test_a_window_sliding_as_the_agent_goes_on_moves_no_row(
    page, live_server, viewer, ledger, working_session, sign_in, monkeypatch
):
    """Each new turn, the new head, moves the window of rows (20 lines here) down by one: the
    rows that stay are left where they are. Moving each of them (as the merge once did) cost
    the reader's browser a long task at every redraw, once a second, on a big session."""
    from sessions import page as tree_pages

    monkeypatch.setattr(tree_pages, "PAGE_ROWS", 20)
    sign_in("vera", next_url="/sessions/S1/")  # the head selected, the window around it
    expect(page.locator(".tree-row")).to_have_count(20)
    page.evaluate(
        """() => {
        window.movedRows = 0;
        const tree = document.querySelector('.tree');
        tree.querySelectorAll('.tree-row').forEach(row => { row.wasThere = true; });
        const moved = records => records.forEach(record => record.addedNodes.forEach(
            node => { if (node.wasThere) window.movedRows += 1; }));
        new MutationObserver(moved).observe(tree, {childList: true});
    }"""
    )
    parent = "R"
    for n in (1, 2, 3):
        turn = ledger.turn(working_session, {"id": parent}, id=f"N{n}", started_at=now_ms() + n)
        ledger.set_head(working_session, {"id": "M00"}, turn)
        expect(page.locator(f"#turn-N{n}")).to_have_count(1, timeout=ON_SCREEN_MS + 1000)
        parent = turn["id"]
    expect(page.locator(".tree-row.selected")).to_have_attribute("data-turn", "N3")
    expect(page.locator(".tree-row")).to_have_count(20)
    assert page.evaluate("window.movedRows") == 0


def test_pause_holds_the_page_still_and_resume_catches_up_once(
    page, live_server, viewer, ledger, working_session, sign_in
):
    sign_in("vera", next_url="/sessions/S1/turns/R/")
    bar = page.locator("#live-bar")
    bar.get_by_role("button", name="pause").click()
    expect(page).to_have_url(re.compile(r"live=0"))
    ledger.tool_call({"id": "R", "started_at": now_ms()}, 1, id="C1", status="pending",
                     completed_at=None)  # fmt: skip
    ledger.turn(working_session, {"id": "R"}, id="N1", started_at=now_ms())
    expect(bar).to_contain_text("Paused · new activity", timeout=ON_SCREEN_MS + 1000)
    expect(page.locator("#call-C1")).to_have_count(0)
    expect(page.locator("#turn-N1")).to_have_count(0)
    bar.get_by_role("button", name="resume").click()
    expect(page.locator("#call-C1")).to_have_count(1, timeout=ON_SCREEN_MS)
    expect(page.locator("#turn-N1")).to_have_count(1)
    expect(page).not_to_have_url(re.compile(r"live=0"))
    # A paused address opens paused.
    page.goto(f"{live_server.url}/sessions/S1/?live=0")
    expect(bar).to_contain_text("Paused")


@pytest.mark.drops_connection
def test_a_dropped_connection_catches_up_without_missing_or_doubling(
    page, live_server, viewer, ledger, working_session, sign_in
):
    sign_in("vera", next_url="/sessions/S1/turns/R/")
    expect(page.locator("#live-bar")).to_contain_text("Following live")
    page.context.set_offline(True)
    expect(page.locator("#live-bar")).to_contain_text("Connection lost", timeout=5_000)
    parent = "R"
    for n in range(1, 5):  # turns, each with a call, while the reader is away
        turn = ledger.turn(working_session, {"id": parent}, id=f"N{n}", started_at=now_ms())
        ledger.tool_call(turn, 1, id=f"C{n}")
        parent = turn["id"]
    ledger.tool_call({"id": "R", "started_at": now_ms()}, 1, id="C-R")
    ledger.conn.execute("UPDATE turns SET status = 'failed' WHERE id = 'R'")
    time.sleep(1.5)  # the page keeps trying meanwhile
    page.context.set_offline(False)
    for n in range(1, 5):
        expect(page.locator(f'.tree-row[data-turn="N{n}"]')).to_have_count(1, timeout=35_000)
    expect(page.locator('#panel li[id="call-C-R"]')).to_have_count(1)
    expect(page.locator("#panel .panel-head .status")).to_have_text("failed")
    expect(page.locator("#live-bar")).to_contain_text("updated")
    # Nothing twice: every row and call once, and the next answers change nothing.
    time.sleep(2.5)
    ids = page.eval_on_selector_all(".tree-row[data-turn]", "rows => rows.map(r => r.dataset.turn)")
    assert len(ids) == len(set(ids)) == 64
    calls = page.eval_on_selector_all("#panel li.tool-call", "items => items.map(i => i.id)")
    assert calls == ["call-C-R"]


def test_a_turn_that_writes_nothing_for_a_while_is_marked_stalled(
    page, live_server, viewer, ledger, working_session, sign_in, settings
):
    settings.STALLED_AFTER_S = 5
    page.clock.install()
    sign_in("vera", next_url="/sessions/S1/turns/R/")
    stalled = page.locator("#turn-R .mark-stalled")
    expect(stalled).to_be_hidden()
    page.clock.run_for(20_000)  # no write for 20 s: the page says so without asking anyone
    expect(stalled).to_be_visible()
    expect(page.locator("#panel .running-turn .mark-stalled")).to_be_visible()


def test_new_turns_that_land_in_a_folded_stretch_are_counted(
    page, live_server, viewer, ledger, sign_in
):
    s = ledger.session(id="S2", label="A long straight run")
    parent = None
    for i in range(20):
        parent = ledger.turn(s, parent, id=f"T{i:02d}", started_at=T0 + i)
    ledger.set_head(s, {"id": "T00"}, parent)
    sign_in("vera", next_url="/sessions/S2/")
    expect(page.locator(".tree-row.fold")).to_have_count(1)
    ledger.turn(s, {"id": "T19"}, id="N1", started_at=now_ms())
    ledger.turn(s, {"id": "N1"}, id="N2", started_at=now_ms())
    ledger.turn(s, {"id": "N2"}, id="N3", status="pending", started_at=now_ms(),
                completed_at=None)  # fmt: skip
    ledger.conn.execute("UPDATE sessions SET current_turn_id = 'N3' WHERE id = 'S2'")
    expect(page.locator("#turn-N3 .mark-head")).to_have_count(1, timeout=ON_SCREEN_MS)
    # The stretch grew under its fold: the turn it swallowed is counted, not shown.
    expect(page.locator("#turn-N1")).to_have_count(0)
    news = page.locator("#live-bar [data-live-news]")
    expect(news).to_have_text("1 new turn ↓")
    news.click()
    expect(page).to_have_url(re.compile(r"/sessions/S2/turns/N1/$"))
    expect(page.locator("#turn-N1")).to_have_class(re.compile("selected"))


def _polls_of(page, pattern: str, handler) -> list:
    """Route the session's polls through `handler(route, n)` (n: the poll's number, from 0)."""
    asked: list = []

    def route(route):
        asked.append(time.monotonic())
        handler(route, len(asked) - 1)

    page.route(re.compile(pattern), route)
    return asked


def test_a_poll_answered_late_by_a_busy_server_does_not_delay_the_next_change(
    page, live_server, viewer, ledger, working_session, sign_in
):
    """The page waited 1.5 s for an answer (a queue in front of the workers, a loaded machine),
    but the server spent a few ms on it: the page keeps its pace, and the next change is on
    screen within 2 s of its commit (waiting 8 × 1.5 s would have kept it 12 s away)."""

    def late_first(route, n):
        if n == 0:
            time.sleep(1.5)
        route.continue_()

    sign_in("vera", next_url="/sessions/S1/turns/R/")
    asked = _polls_of(page, r"/live/sessions/", late_first)
    expect(page.locator("#live-bar")).to_contain_text("Following live")
    while not asked:
        page.wait_for_timeout(100)
    page.wait_for_timeout(1_700)  # the late answer is back
    commit_and_see(
        lambda: ledger.tool_call({"id": "R", "started_at": now_ms()}, 1, id="C-after-late"),
        page.locator("#call-C-after-late"),
        "to_be_visible",
    )


def test_a_costly_poll_and_redraw_back_off_no_further_than_the_promise(
    page, live_server, viewer, ledger, working_session, sign_in
):
    """The server says each poll and each redraw of the page held a worker for 5 s (a huge page
    on a slow server): the back-offs (8 × a poll's, 4 × a redraw's time) would make the page
    wait 40 s and 20 s; they stop at the gap that keeps the 2 s promise."""

    def costly(route, n):
        response = route.fetch()
        headers = response.headers | {"server-timing": "app;dur=5000, cpu;dur=5000"}
        route.fulfill(response=response, headers=headers)

    sign_in("vera", next_url="/sessions/S1/turns/R/")
    polls = _polls_of(page, r"/live/sessions/", costly)
    _polls_of(page, r"/sessions/S1/turns/R/$", costly)
    expect(page.locator("#live-bar")).to_contain_text("Following live")
    for n in range(1, 3):  # after a costly poll, then after a costly redraw
        page.wait_for_timeout(300)
        commit_and_see(
            lambda n=n: ledger.tool_call({"id": "R", "started_at": now_ms()}, n, id=f"C-cost{n}"),
            page.locator(f"#call-C-cost{n}"),
            "to_be_visible",
        )
    assert len(polls) >= 2
