"""What the rows written where a designer looks for them cost (issue 20, step 5): the session and
request list pages (50 rows each, rows in their Jinja2 templates since issue 33), and the
two lists kept in Python (sessions/rows_html.py): the 5,000-turn tree's rows, the 600-call turn's
tool calls.

    .venv/bin/python -m bench.list_rows_bench [--runs 40] [--save DIR] [--fstrings-from COMMIT]

On the demo ledger at scale 13 (var/bench/sessions.sqlite3, bench.sessions_bench's, built with
ledger_demo when missing): its largest session has ~5,000 turns. Django's test client in this
process, a superuser, DEBUG off (static URLs without the manifest); medians over --runs.
`--save DIR` writes each page's HTML (for a before/after comparison) to DIR.

With --fstrings-from, the rows alone two ways, taken in turns so both see the same load: each
list's Jinja2 template, and the Python f-string builders the lists had at COMMIT
(sessions/list_rows.py and pipeline/list_rows.py, read with git show).
"""

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench.inprocess import bench_env, signed_in_client

ROOT = Path(__file__).resolve().parent.parent
LEDGER = ROOT / "var" / "bench" / "sessions.sqlite3"
DJANGO_DB = ROOT / "var" / "bench" / "list-rows-django.sqlite3"
ENV = bench_env(LEDGER, DJANGO_DB)
PAGES = {
    "sessions": "/sessions/?status=all",
    "requests": "/pipeline/requests/",
}


def median_ms(action, runs: int) -> float:
    action()  # warm-up
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def ensure_ledger() -> None:
    if not LEDGER.exists():
        LEDGER.parent.mkdir(parents=True, exist_ok=True)
        manage = [sys.executable, str(ROOT / "manage.py"), "ledger_demo", str(LEDGER)]
        subprocess.run([*manage, "--scale", "13"], check=True, env=os.environ | ENV)


def median_ms_in_turns(actions: dict, runs: int) -> dict[str, float]:
    """Each action's median, the actions taken one after the other in every run."""
    times = {name: [] for name in actions}
    for _ in range(runs + 1):  # the first run warms up
        for name, action in actions.items():
            start = time.perf_counter()
            action()
            times[name].append((time.perf_counter() - start) * 1000)
    return {name: statistics.median(t[1:]) for name, t in times.items()}


def module_at(commit: str, path: str):
    """A module as it was at `commit`, imported under a name of its own."""
    source = subprocess.run(
        ["git", "show", f"{commit}:{path}"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout
    spec = importlib.util.spec_from_loader(f"at_{commit}_{path.replace('/', '_')}", loader=None)
    module = importlib.util.module_from_spec(spec)
    exec(compile(source, f"{commit}:{path}", "exec"), module.__dict__)  # noqa: S102 (our own code)
    return module


def rows_in_turns(commit: str, runs: int) -> None:
    from django.http import QueryDict

    from pipeline.filters import RequestFilters
    from pipeline.listing import request_page
    from pipeline.rows_html import list_rows_html as request_rows
    from sessions.listing import SessionFilters, session_page
    from sessions.rows_html import list_rows_html as session_rows

    sessions = session_page(SessionFilters.from_query(QueryDict("status=all")))
    request_filters = RequestFilters.from_query(QueryDict(""))
    requests = request_page(request_filters)
    old_sessions = module_at(commit, "sessions/list_rows.py").session_rows_html
    old_requests = module_at(commit, "pipeline/list_rows.py").request_rows_html
    # Both lists' rows are Jinja2 templates of their own (ledgerweb/jinja.py).
    for name, page, loop, old in [
        ("sessions", sessions, lambda: session_rows(sessions.rows),
         lambda: old_sessions(sessions.rows)),
        ("requests", requests, lambda: request_rows(requests.rows, request_filters),
         lambda: old_requests(requests.rows)),
    ]:  # fmt: skip
        ms = median_ms_in_turns({"template": loop, "fstrings": old}, runs)
        print(
            f"{name} rows ({len(page.rows)}): template {ms['template']:.2f} ms,"
            f" f-strings at {commit} {ms['fstrings']:.2f} ms"
        )


def tree_items(session_id: str):
    """Every row of the session's tree, unfolded, as one page (the pages cap a window at 1,000
    rows; here the rows' own cost is wanted)."""
    from sessions import page
    from sessions.detail import load_tree
    from sessions.models import Session

    session_tree = load_tree(Session.objects.get(id=session_id))
    page.PAGE_ROWS, page.PAGE_BYTES = 10**6, 10**12
    return page.tree_page(session_tree, None, unfold=True).items


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--save", type=Path)
    parser.add_argument("--fstrings-from", metavar="COMMIT")
    args = parser.parse_args()
    ensure_ledger()
    client = signed_in_client(ENV)
    from ledgerweb.sqlite import rows
    from sessions.models import Session
    from sessions.rows_html import tool_calls_html, tree_rows_html
    from sessions.turn_detail import load_turn_detail

    for name, url in PAGES.items():
        response = client.get(url)
        assert response.status_code == 200, (url, response.status_code)
        shown = response.content.count(b"<tr") - 2  # the head's row and "next page"
        ms = median_ms(lambda url=url: client.get(url), args.runs)
        print(f"{name} list page ({shown} rows): {ms:.1f} ms")
        if args.save:
            args.save.mkdir(parents=True, exist_ok=True)
            (args.save / f"{name}.html").write_bytes(response.content)
    ((session_id,),) = rows(
        "SELECT session_id FROM turns GROUP BY 1 ORDER BY count(*) DESC LIMIT 1"
    )
    ((call_session_id, turn_id),) = rows(
        "SELECT t.session_id, t.id FROM tool_calls c JOIN turns t ON t.id = c.turn_id"
        " GROUP BY t.id ORDER BY count(*) DESC LIMIT 1"
    )
    if args.fstrings_from:
        rows_in_turns(args.fstrings_from, args.runs * 5)
    items = tree_items(session_id)
    ms = median_ms(lambda: tree_rows_html(items, session_id), max(5, args.runs // 4))
    print(f"tree rows ({len(items)} rows, sessions/rows_html.py): {ms:.1f} ms")
    calls = load_turn_detail(call_session_id, turn_id).tool_calls
    session = Session.objects.get(id=call_session_id)
    ms = median_ms(lambda: tool_calls_html(calls, session, turn_id), max(5, args.runs // 4))
    print(f"tool calls ({len(calls)} calls, sessions/rows_html.py): {ms:.1f} ms")


if __name__ == "__main__":
    main()
