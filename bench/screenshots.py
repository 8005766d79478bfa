"""Retake docs/screenshots/ from the demo ledger served by a running ledgerweb.

    SECRET_KEY=x DEBUG=1 .venv/bin/python manage.py ledger_demo var/demo-ledger.sqlite3
    .venv/bin/python manage.py ledger_rollup        # the dashboard without "not summarised yet"
    .venv/bin/python manage.py ledger_import claude-code \\
        tests/fixtures/import/samples/claude-code --ledger var/demo-ledger.sqlite3  # a real one
    make serve PORT=8600 &                          # or gunicorn on any port
    .venv/bin/python -m bench.screenshots --url http://127.0.0.1:8600 --user admin \\
        --password "$PASSWORD" [overview thread ...]  # names: only these

The failure inbox's shots read the hours the summaries hold: run `ledger_rollup` first. The
live-session shot is the session the demo's live writer keeps moving: a ledger built with
`ledger_demo --live`, served with its background process running (`make serve` starts it). The
annotations, the preference and the review queue the shots show are made through the pages by
the signed-in user (issue 31), once: a second run finds them.
Desktop shots are 1280 px wide, phone shots (`*-phone.png`) 390 px at twice the pixel density;
each is cropped to its first screens so it stays at about 400 KB at most. The pages shown are
chosen by SQL on the ledger (read-only), so a rebuilt demo ledger gives the same kind of page. The
import-claude-code-* shots show a real imported Claude Code turn whose texts and tool calls
interleave (issue 27): without an imported transcript in the ledger they are left out, said so.
"""

import argparse
import sqlite3
from pathlib import Path

from playwright.sync_api import sync_playwright

OUT = Path(__file__).resolve().parent.parent / "docs" / "screenshots"
CHROMIUM = "/usr/bin/chromium"

# A mid-sized session with branches, failed turns and a compaction.
SESSION_SQL = """SELECT s.id FROM sessions s JOIN turns t ON t.session_id = s.id GROUP BY s.id
  HAVING count(*) BETWEEN 20 AND 60 AND sum(t.status = 'failed') > 0
     AND (SELECT count(*) FROM compactions c JOIN turns ct ON ct.id = c.turn_id
          WHERE ct.session_id = s.id) > 0
  ORDER BY sum((SELECT count(*) FROM turns c WHERE c.parent_turn_id = t.id) > 1) DESC,
           sum(t.status = 'failed') DESC, s.id LIMIT 1"""
# Its failed turn with the most failed tool calls (the panel says why it failed).
FAILED_TURN_SQL = """SELECT t.id FROM turns t WHERE t.session_id = ? AND t.status = 'failed'
  ORDER BY (SELECT count(*) FROM tool_calls c WHERE c.turn_id = t.id AND c.status = 'failed')
           DESC, t.id LIMIT 1"""
# The newest turn below its compaction: the thread page shows the compaction applied.
THREAD_TURN_SQL = """WITH RECURSIVE below(id, started_at) AS (
    SELECT t.id, t.started_at FROM turns t JOIN compactions c ON c.turn_id = t.id
    WHERE t.session_id = ?
    UNION ALL SELECT t.id, t.started_at FROM turns t JOIN below b ON t.parent_turn_id = b.id)
  SELECT id FROM below ORDER BY started_at DESC LIMIT 1"""
# A turn of an imported Claude Code transcript whose texts and tool calls interleave (a text
# written after a call), the one with the most calls: its panel shows them as they happened.
IMPORTED_TURN_SQL = """SELECT t.session_id, t.id FROM turns t JOIN sessions s ON s.id = t.session_id
  WHERE s.persona = 'claude-code' AND s.routing_key NOT LIKE 'fork:%'
    AND EXISTS (SELECT 1 FROM messages m WHERE m.turn_id = t.id AND m.created_at >
                (SELECT min(c.started_at) FROM tool_calls c WHERE c.turn_id = t.id))
  ORDER BY (SELECT count(*) FROM tool_calls c WHERE c.turn_id = t.id) DESC, t.id LIMIT 1"""
# Its branch point with the most branches (issue 28: every answer there side by side).
BRANCH_POINT_SQL = """SELECT parent_turn_id FROM turns WHERE session_id = ?
  AND parent_turn_id IS NOT NULL GROUP BY parent_turn_id HAVING count(*) > 1
  ORDER BY count(*) DESC, parent_turn_id LIMIT 1"""
# The session the demo's live writer keeps moving (demo/live_writer.py; `make demo` runs it).
LIVE_SESSION_SQL = """SELECT id FROM sessions WHERE routing_key = 'cursor:ledgerweb:live-demo'
  ORDER BY rowid DESC LIMIT 1"""
# The newest failed request that ran a turn.
REQUEST_SQL = """SELECT id FROM nexus_requests WHERE status = 'failed' AND turn_id IS NOT NULL
  ORDER BY started_at DESC LIMIT 1"""


# The issue with the most failures over the last 7 days, found through the inbox's JSON twin.
BUSIEST_ISSUE = "busiest issue"
# The first item of a review queue of the week's failed turns, made through the page (issue 31).
REVIEW_ITEM = "review item"


def busiest_issue(page, url: str) -> str:
    found = page.request.get(f"{url}/pipeline/issues/?window=7d&sort=count&format=json").json()
    return found["issues"][0]["url"] + "?window=7d"


def review_item(page, url: str) -> str:
    """Make a queue of the last 7 days' failed turns as a person does, and start it."""
    page.goto(f"{url}/review/")
    page.select_option("#r-source", "failed")
    page.select_option("#r-window", "7d")
    page.click("text=Make the queue")
    page.click("#start-review")
    page.wait_for_load_state()
    return page.url.removeprefix(url)


def annotate_for_shots(page, url: str, turn: str, point: str) -> None:
    """Annotations and a preference, made through the pages, for the shots to show (issue 31):
    the failed turn labelled and given a 👎 and a note, the best answer at the branch point."""
    page.goto(url + turn)
    block = page.locator("#turn-annotations")
    if block.locator(".annotation.mine").count():
        return  # made by an earlier run
    block.locator("summary").click()
    block.locator("input[name=labels]").fill("wrong-tool, needs-retry")
    block.locator("input[name=thumb][value=down]").check()
    block.locator("textarea[name=note]").fill("Called the calendar with an **expired token**.")
    block.get_by_role("button", name="Save").click()
    page.locator("#turn-annotations .annotation.mine").wait_for()
    page.goto(url + point)
    page.locator("button.prefer-button").first.click()
    page.wait_for_load_state()


def pages(ledger: Path) -> tuple[list, list]:
    """(desktop, phone) shots as (name, path, height in CSS pixels)."""
    db = sqlite3.connect(f"file:{ledger}?mode=ro", uri=True)

    def one(sql: str, *params) -> str:
        return db.execute(sql, params).fetchone()[0]

    session = one(SESSION_SQL)
    failed_turn = f"/sessions/{session}/turns/{one(FAILED_TURN_SQL, session)}/"
    thread = f"/sessions/{session}/turns/{one(THREAD_TURN_SQL, session)}/thread/"
    request = f"/pipeline/requests/{one(REQUEST_SQL)}/"
    point = one(BRANCH_POINT_SQL, session)
    failed_requests = "/pipeline/requests/?status=failed"
    imported = db.execute(IMPORTED_TURN_SQL).fetchone()
    imported_turn = f"/sessions/{imported[0]}/turns/{imported[1]}/" if imported else None
    if imported is None:
        print("No imported Claude Code turn in this ledger: import-claude-code-* left out")
    live = db.execute(LIVE_SESSION_SQL).fetchone()
    live_session = f"/sessions/{live[0]}/" if live else None
    if live is None:
        print("No live demo session (the demo's live writer has not run): live-session left out")
    desktop = [
        ("overview", "/", 900),
        ("session-list", "/sessions/", 900),
        ("session-tree", f"/sessions/{session}/", 1000),
        ("live-session", live_session, 900),
        ("branch-point", f"/sessions/{session}/turns/{point}/branches/", 900),
        ("session-tree-hoisted", f"/sessions/{session}/?hoist={point}", 1000),
        ("turn-panel", failed_turn, 1000),
        ("thread", thread, 1000),
        ("request-list", failed_requests, 900),
        ("failed-request", request, 1100),
        ("pipeline-dashboard", "/pipeline/", 1500),
        ("issues", "/pipeline/issues/?window=7d", 1100),
        ("issue", BUSIEST_ISSUE, 1300),
        ("import-claude-code-session", imported_turn, 1100),
        ("review-item", REVIEW_ITEM, 1300),
        ("datasets", "/datasets/", 900),
    ]
    phone = [
        ("session-tree-phone", failed_turn, 1400),
        ("failed-request-phone", request, 1400),
        ("request-list-phone", failed_requests, 1100),
        ("pipeline-dashboard-phone", "/pipeline/", 1400),
        ("issues-phone", "/pipeline/issues/?window=7d", 1400),
        ("issue-phone", BUSIEST_ISSUE, 1600),
        ("import-claude-code-session-phone", imported_turn, 1800),
        ("review-item-phone", REVIEW_ITEM, 1800),
    ]
    marks = (failed_turn, f"/sessions/{session}/turns/{point}/branches/")
    return [s for s in desktop if s[1]], [s for s in phone if s[1]], marks


# A turn's panel scrolls inside its card beside the tree: the import shots show its list of
# messages and calls from the top (the panel's head and annotations are in turn-panel.png).
PANEL_TO_TIMELINE = """() => {
  const panel = document.querySelector('#panel');
  const list = panel && panel.querySelector('.timeline-count');
  if (list) panel.scrollTop += list.getBoundingClientRect().top - panel.getBoundingClientRect().top;
}"""


def shoot(page, url: str, name: str, height: int) -> None:
    window = page.viewport_size
    panel_shot = name.startswith("import-") and not name.endswith("-phone")
    if panel_shot:
        # The panel is as tall as the window (and a whole-page shot scrolls it back to its
        # top): a window as tall as the shot, its list scrolled to the panel's top.
        page.set_viewport_size({"width": window["width"], "height": height})
    page.goto(url)
    page.wait_for_load_state("networkidle")  # the dashboard's charts load after the page
    if panel_shot:
        page.evaluate(PANEL_TO_TIMELINE)
        page.screenshot(path=OUT / f"{name}.png")
        page.set_viewport_size(window)
        print(f"{name}.png ({(OUT / f'{name}.png').stat().st_size // 1024} KB)")
        return
    width = page.viewport_size["width"]
    full = page.evaluate("document.documentElement.scrollHeight")
    clip = {"x": 0, "y": 0, "width": width, "height": min(height, full)}
    page.screenshot(path=OUT / f"{name}.png", full_page=True, clip=clip)
    print(f"{name}.png ({(OUT / f'{name}.png').stat().st_size // 1024} KB)")


def take(browser, args, context_options: dict, shots: list, marks=None) -> None:
    context = browser.new_context(**context_options)
    page = context.new_page()
    page.goto(f"{args.url}/accounts/login/")
    page.fill("#id_username", args.user)
    page.fill("#id_password", args.password)
    page.click("button[type=submit]")
    page.wait_for_load_state()
    if marks:
        annotate_for_shots(page, args.url, *marks)
    for name, path, height in shots:
        if not args.names or name in args.names:
            if path == BUSIEST_ISSUE:
                path = busiest_issue(page, args.url)
            elif path == REVIEW_ITEM:
                path = review_item(page, args.url)
            shoot(page, args.url + path, name, height)
    context.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--url", default="http://127.0.0.1:8000")
    parser.add_argument("--ledger", type=Path, default=Path("var/demo-ledger.sqlite3"))
    parser.add_argument("--user", default="admin")
    parser.add_argument("--password", required=True)
    parser.add_argument("names", nargs="*", help="only these shots (e.g. thread request-list)")
    args = parser.parse_args()
    desktop, phone, marks = pages(args.ledger)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        take(browser, args, {"viewport": {"width": 1280, "height": 900}}, desktop, marks)
        phone_options = {"viewport": {"width": 390, "height": 844}, "device_scale_factor": 2}
        take(browser, args, phone_options | {"is_mobile": True, "has_touch": True}, phone)
        browser.close()


if __name__ == "__main__":
    main()
