"""Reading next to a live writer: the runtime appends and updates while pages are served."""

import sqlite3
import threading
import time

import pytest
from builders import T0

# The writer must see committed rows and the pages must see the writer's: no test transaction.
pytestmark = pytest.mark.django_db(transaction=True, databases="__all__")


def write_continuously(path, stop: threading.Event, written: list[int]) -> None:
    """Append turns and requests and move a session's head, in short transactions, as a busy
    agent runtime would."""
    conn = sqlite3.connect(path, timeout=5, isolation_level=None)
    parent, i = "T0", 0
    while not stop.is_set():
        i += 1
        conn.execute("BEGIN IMMEDIATE")
        conn.execute(
            "INSERT INTO turns (id, session_id, parent_turn_id, status, started_at)"
            " VALUES (?, 'S1', ?, 'streaming', ?)",
            (f"T{i}", parent, T0 + i),
        )
        conn.execute(
            "INSERT INTO messages (id, turn_id, role, content, sequence, created_at)"
            " VALUES (?, ?, 'user', 'still typing', 1, ?)",
            (f"M{i}", f"T{i}", T0 + i),
        )
        conn.execute("UPDATE sessions SET current_turn_id = ?, updated_at = ? WHERE id = 'S1'",
                     (f"T{i}", T0 + i))  # fmt: skip
        conn.execute(
            "INSERT INTO nexus_requests (id, event_id, event_type, event_source, stage, status,"
            " started_at) VALUES (?, 'e', 'message', 'imessage', 'runAgent', 'processing', ?)",
            (f"R{i}", T0 + i),
        )
        conn.execute("COMMIT")
        parent = f"T{i}"
        written.append(i)
        time.sleep(0.002)
    conn.close()


def test_pages_stay_correct_while_the_ledger_is_written(viewer_client, ledger):
    s = ledger.session(id="S1")
    root = ledger.turn(s, id="T0")
    ledger.set_head(s, root, root)
    stop, written = threading.Event(), []
    writer = threading.Thread(target=write_continuously, args=(ledger.path, stop, written))
    writer.start()
    try:
        statuses, views = [], []
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            for url in ("/", "/sessions/", "/sessions/S1/", "/pipeline/requests/",
                        "/pipeline/requests/?format=json", "/healthz"):  # fmt: skip
                statuses.append(viewer_client.get(url).status_code)
            views.append(viewer_client.get("/sessions/S1/?format=json").json())
    finally:
        stop.set()
        writer.join()
    assert len(written) > 50  # the writer was never blocked for long
    assert set(statuses) == {200}
    # Each page read one consistent snapshot: its head is a leaf among the turns it lists, and
    # it reports no problem that only a half-seen write could produce.
    for view in views:
        turns = {t["id"]: t for t in view["turns"]}
        head = view["session"]["current_turn_id"]
        assert head in turns and turns[head]["is_leaf"]
        assert view["problems"] == []


# -- The soak, short form (`make soak` runs it for minutes) ---------------------------------------


@pytest.mark.django_db(databases=[])  # everything runs in gunicorn and in a writer process
def test_a_writer_and_browsers_through_gunicorn_never_see_a_5xx_or_a_lock():
    from tools import soak

    # 5 s of the writer alone, then 5 s with three signed-in clients walking every page.
    result = soak.run(5, clients=3, journal="wal", settings="ledgerweb.settings_test")
    print(soak.summary(result))
    assert result.alone and result.with_readers  # the writer committed in both phases
    assert result.writer_errors == []
    assert result.fivexx == 0, result.tally.failures[:5]
    assert result.locked == 0
    assert result.server_log_errors == []
    every_page = {pattern for pattern, _, _ in soak.pages({"session": "s", "turn": "t",
                                                          "request": "r"})}  # fmt: skip
    assert every_page | {"sessions json", "requests json"} == result.tally.pages
    assert result.health_says == ""  # in WAL mode there is nothing to warn about
