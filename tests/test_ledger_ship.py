"""ledger_ship copies a host's SQLite ledger into a central PostgreSQL ledger: only what is new
or changed, safe to repeat and to kill, collisions reported and never overwritten."""

import threading
from io import StringIO

import psycopg
import pytest
from builders import T0, LedgerBuilder, parse_html, use_ledger
from django.conf import settings
from django.core.management import CommandError, call_command
from importing import IMPORT_FIXTURES, run_import
from importing import comparable_rows as rows

from importers import ship as ship_module
from ledgerfacts import schema
from ledgerweb.pg_schema import create_postgres_ledger

SHIPPED = ("sessions", "turns", "messages", "tool_calls", "nexus_requests")


@pytest.fixture
def host_ledger(tmp_path) -> LedgerBuilder:
    """A host's SQLite ledger with two sessions and, an hour later, two requests (one still in
    progress): the newest activity is the requests'."""
    path = tmp_path / "host.sqlite3"
    schema.create_ledger(path)
    builder = LedgerBuilder(path)
    for n in range(2):
        at = T0 + n * 60_000
        session = builder.session(routing_key=f"r:{n}", created_at=at, updated_at=at)
        root = builder.turn(session, started_at=at)
        builder.message(root, 0)
        builder.message(root, 1, role="assistant", content="<b>123456</b>")
        builder.tool_call(root, 0)
        builder.set_head(session, root, root)
    later = T0 + 3_600_000
    builder.request(turn_id=root["id"], started_at=later)
    builder.request(status="processing", stage="runAgent", started_at=later, completed_at=None)
    yield builder
    builder.conn.close()


def run_ship(source, url: str, *more, problems: str | None = None, err=None) -> str:
    """ledger_ship's summary; `problems`: the error it must end with; `err`: gets stderr."""
    out, err = StringIO(), err or StringIO()
    args = ("ledger_ship", str(source), "--to", url, "--host", "agent-1", *more)
    if problems is None:
        call_command(*args, stdout=out, stderr=err)
    else:
        with pytest.raises(CommandError, match=problems):
            call_command(*args, stdout=out, stderr=err)
    return out.getvalue()


def section(summary: str, title: str) -> str:
    """The summary's lines under `title` (indented), which must be there."""
    lines = summary.splitlines()
    assert title in lines, summary
    after = lines[lines.index(title) + 1 :]
    indented = [line.startswith("  ") for line in after] + [False]
    return "\n".join(after[: indented.index(False)])


def central(url: str):
    return psycopg.connect(url, autocommit=True)


def test_the_first_run_copies_every_row_and_a_second_adds_nothing(host_ledger, postgres_database):
    first = run_ship(host_ledger.path, postgres_database)
    assert "Created the ledger's tables in the central database" in first
    assert "sessions: 2 added, 0 already there" in first
    assert "nexus_requests: 2 added, 0 already there" in first
    with central(postgres_database) as pg:
        for table in SHIPPED:
            assert rows(pg, table) == rows(host_ledger.conn, table), table
        before = {table: rows(pg, table) for table in SHIPPED}

    second = run_ship(host_ledger.path, postgres_database)
    assert "0 session(s) and 2 request(s) looked at" in second  # nothing changed: none read
    assert "nexus_requests: 0 added, 2 already there" in second
    assert "Created" not in second
    full = run_ship(host_ledger.path, postgres_database, "--full")
    assert "sessions: 0 added, 2 already there" in full
    assert "turns: 0 added, 2 already there" in full
    with central(postgres_database) as pg:
        assert {table: rows(pg, table) for table in SHIPPED} == before


def test_a_run_after_live_writes_brings_only_the_new_and_the_finished(
    host_ledger, postgres_database
):
    run_ship(host_ledger.path, postgres_database)
    conn = host_ledger.conn
    session_id, head = conn.execute(
        "SELECT id, current_turn_id FROM sessions ORDER BY id LIMIT 1"
    ).fetchone()
    # The runtime goes on, two hours on: a new turn, still running, becomes the head ...
    now = T0 + 7_200_000
    new = host_ledger.turn({"id": session_id}, {"id": head}, status="pending",
                           completed_at=None, started_at=now)  # fmt: skip
    conn.execute(
        "UPDATE sessions SET current_turn_id = ?, updated_at = ? WHERE id = ?",
        (new["id"], now, session_id),
    )
    # ... and the request in progress finishes.
    conn.execute("UPDATE nexus_requests SET status = 'completed', stage = 'finalize',"
                 " completed_at = ? WHERE status = 'processing'", (T0 + 2000,))  # fmt: skip

    second = run_ship(host_ledger.path, postgres_database)
    assert "1 session(s) and 2 request(s) looked at" in second  # not the unchanged session
    assert "turns: 1 added, 1 already there" in second
    assert "nexus_requests: 0 added" in second and "1 brought up to date" in second
    with central(postgres_database) as pg:
        (head_there,) = pg.execute(
            "SELECT current_turn_id FROM sessions WHERE id = %s", [session_id]
        ).fetchone()
        assert head_there == new["id"]
        assert rows(pg, "nexus_requests") == rows(conn, "nexus_requests")

    # The turn finishes on the host: the next run brings the central copy up to date.
    conn.execute("UPDATE turns SET status = 'completed', completed_at = ? WHERE id = ?",
                 (T0 + 65_000, new["id"]))  # fmt: skip
    third = run_ship(host_ledger.path, postgres_database)
    assert "turns: 0 added" in third and "brought up to date" in third
    with central(postgres_database) as pg:
        assert rows(pg, "turns") == rows(conn, "turns")


def test_a_run_killed_midway_is_completed_by_the_next(host_ledger, postgres_database, monkeypatch):
    real_write = ship_module.write
    written = []

    def write_then_die(target, bundle, report):
        if written:
            raise KeyboardInterrupt  # killed after the first session
        written.append(bundle)
        real_write(target, bundle, report)

    monkeypatch.setattr(ship_module, "write", write_then_die)
    with pytest.raises(KeyboardInterrupt):
        run_ship(host_ledger.path, postgres_database)
    with central(postgres_database) as pg:
        assert len(rows(pg, "sessions")) == 1
        assert pg.execute("SELECT count(*) FROM ledger_shipments").fetchone() == (0,)

    monkeypatch.setattr(ship_module, "write", real_write)
    out = run_ship(host_ledger.path, postgres_database)
    assert "sessions: 1 added, 1 already there" in out
    with central(postgres_database) as pg:
        for table in SHIPPED:
            assert rows(pg, table) == rows(host_ledger.conn, table), table


def test_a_collision_is_reported_and_never_overwritten(tmp_path, postgres_database):
    ledgers = []
    for host, persona in (("a", "atlas"), ("b", "hermes")):
        path = tmp_path / f"{host}.sqlite3"
        schema.create_ledger(path)
        builder = LedgerBuilder(path)  # both hosts' builders count ids from S000001
        builder.session(persona=persona)
        ledgers.append(builder)
    run_ship(ledgers[0].path, postgres_database)

    out = run_ship(ledgers[1].path, postgres_database, problems="1 id collision")
    assert "Id collisions" in out
    assert "sessions S000001: other persona already" in out
    with central(postgres_database) as pg:
        assert pg.execute("SELECT persona FROM sessions").fetchall() == [("atlas",)]
        (problems,) = pg.execute(
            "SELECT problems FROM ledger_shipments WHERE source = %s", [str(ledgers[1].path)]
        ).fetchone()
        assert problems == 1


def test_the_call_ids_of_an_imported_codex_rollout_are_shipped_too(tmp_path, postgres_database):
    """A Codex call_id is kept beside its call (ledgerweb/sql/tool_call_source_ids.sql): it comes
    into a central ledger with its call, into one made before that table existed too."""
    host = tmp_path / "host.sqlite3"
    run_import("codex", IMPORT_FIXTURES / "samples" / "codex" / "small.jsonl", ledger=host)
    with central(postgres_database) as pg:
        create_postgres_ledger(pg)
        pg.execute("DROP TABLE tool_call_source_ids")
    out = run_ship(host, postgres_database)
    assert "tool_call_source_ids: 3 added, 0 already there" in out
    with central(postgres_database) as pg, LedgerBuilder(host).conn as lite:
        shipped = rows(pg, "tool_call_source_ids")
        assert shipped == rows(lite, "tool_call_source_ids")
        assert {source_id for _, source_id in shipped} == {"call-1", "call-2", "call-3"}


def test_odd_values_are_shipped_as_they_are_meant_or_reported(tmp_path, postgres_database):
    path = tmp_path / "odd.sqlite3"
    schema.create_ledger(path)
    builder = LedgerBuilder(path)
    fine = builder.session()
    builder.turn(fine, prompt_tokens=2.0)  # REAL where INTEGER is declared, a whole number
    builder.request(principal_is_user=1, hooks_handled=0)
    # ledgerweb reads text in a BOOLEAN as unreadable: stored as true it would read yes.
    odd_request = builder.request(hooks_handled="true")
    odd = builder.session()
    odd_turn = builder.turn(odd, prompt_tokens=1.5)  # no BIGINT holds this unchanged

    out = run_ship(
        path,
        postgres_database,
        problems=r"1 session\(s\) left out entirely; 1 request\(s\) left out",
    )
    # Each left-out item under its own kind: the session (named by its turn's value), the request.
    sessions = section(out, "Sessions left out entirely: 1")
    assert f"session {odd['id']}: ValueError: turns.prompt_tokens of {odd_turn['id']}" in sessions
    requests = section(out, "Requests left out: 1")
    assert f"nexus_requests {odd_request['id']}: ValueError" in requests
    assert "'true'" in requests
    with central(postgres_database) as pg:
        assert pg.execute("SELECT id, prompt_tokens FROM turns").fetchall() == [("T000002", 2)]
        assert pg.execute(
            "SELECT principal_is_user, hooks_handled FROM nexus_requests"
        ).fetchall() == [(True, False)]


@pytest.fixture
def browsing(postgres_database):
    """The ledger aliases on the central ledger for one test, then back where they were."""
    original = settings.LEDGER_DB
    use_ledger(postgres_database)
    yield
    use_ledger(original)


@pytest.mark.django_db(transaction=True, databases="__all__")
def test_the_overview_of_the_central_ledger_shows_which_hosts_shipped_and_when(
    host_ledger, postgres_database, viewer_client, browsing
):
    run_ship(host_ledger.path, postgres_database)
    page = viewer_client.get("/")
    assert page.status_code == 200
    card = parse_html(page.content).find(".//div[@id='shipments']")
    cells = [" ".join("".join(c.itertext()).split()) for c in card.iter() if c.tag in ("td", "th")]
    # host, when (the run's time, not the rows' of a year ago), rows added: 2 sessions, 2 turns,
    # 4 messages, 2 tool calls, 2 requests
    assert cells[-3:] == ["agent-1", "just now", "12"]
    assert "Other tables" not in page.content.decode()  # the shipments table is ledgerweb's own
    shipments = viewer_client.get("/?format=json").json()["shipments"]
    assert [(s["host"], s["source"], s["problems"]) for s in shipments] == [
        ("agent-1", str(host_ledger.path), 0)
    ]
    # What was shipped is browsed like any ledger.
    listed = viewer_client.get("/sessions/?format=json").json()
    ids = [s["id"] for s in listed["sessions"]]
    assert sorted(ids) == ["S000001", "S000006"]
    assert viewer_client.get(f"/sessions/{ids[0]}/").status_code == 200


def problems_recorded(url: str) -> int:
    """The problems the overview shows for the host's last run."""
    with central(url) as pg:
        return pg.execute("SELECT problems FROM ledger_shipments").fetchone()[0]


def test_what_was_left_out_is_tried_again_on_every_run_and_comes_in_once_fixed(
    tmp_path, postgres_database
):
    """Without --full and although the fix moves no timestamp; until then it is listed as still
    left out (the overview counts it) but not as a new problem: the run succeeds."""
    path = tmp_path / "odd.sqlite3"
    schema.create_ledger(path)
    builder = LedgerBuilder(path)
    odd = builder.session()
    odd_turn = builder.turn(odd, prompt_tokens=1.5)
    odd_request = builder.request(hooks_handled="true")
    fine = builder.session()
    builder.turn(fine)
    left_out = r"1 session\(s\) left out entirely; 1 request\(s\) left out"

    first = run_ship(path, postgres_database, problems=left_out)
    assert "Still left out" not in first
    assert problems_recorded(postgres_database) == 2

    second = run_ship(path, postgres_database)  # nothing new: no error, the two are listed
    assert "request(s) looked at, 2 of them left out before" in second
    still = section(second, next(line for line in second.splitlines() if "Still left out" in line))
    assert f"session {odd['id']} (since " in still and odd_turn["id"] in still
    assert f"nexus_requests {odd_request['id']} (since " in still and "'true'" in still
    assert "Sessions left out entirely" not in second and "Requests left out" not in second
    assert problems_recorded(postgres_database) == 2

    # The source is put right, with the same timestamps: the next run brings both in.
    builder.conn.execute("UPDATE turns SET prompt_tokens = 2 WHERE id = ?", (odd_turn["id"],))
    builder.conn.execute(
        "UPDATE nexus_requests SET hooks_handled = 1 WHERE id = ?", (odd_request["id"],)
    )
    third = run_ship(path, postgres_database)
    assert "sessions: 1 added" in third and "nexus_requests: 1 added" in third
    assert "left out" not in third.replace("left out before", "")
    assert problems_recorded(postgres_database) == 0
    with central(postgres_database) as pg:
        for table in SHIPPED:
            assert rows(pg, table) == rows(builder.conn, table), table
    fourth = run_ship(path, postgres_database)
    assert "left out before" not in fourth  # nothing left to try again
    builder.conn.close()


class LiveWriter:
    """The runtime in another thread: a transaction (BEGIN IMMEDIATE or EXCLUSIVE) that writes a
    new session and holds its lock until release()."""

    def __init__(self, path, begin: str):
        self.path, self.begin = path, begin
        self.holding, self.released = threading.Event(), threading.Event()
        self.session: dict = {}
        self.thread = threading.Thread(target=self._write)

    def _write(self) -> None:
        builder = LedgerBuilder(self.path)
        builder._ids = iter(range(900, 999))  # ids the host's builder does not use
        builder.conn.execute(f"BEGIN {self.begin}")
        self.session = builder.session(updated_at=T0 + 9_000_000)
        builder.turn(self.session, started_at=T0 + 9_000_000)
        self.holding.set()
        self.released.wait(timeout=30)
        builder.conn.execute("COMMIT")
        builder.conn.close()

    def start(self) -> "LiveWriter":
        self.thread.start()
        assert self.holding.wait(timeout=10)
        return self

    def release(self) -> None:
        self.released.set()
        self.thread.join()


def use_rollback_journal(builder: LedgerBuilder) -> None:
    assert builder.conn.execute("PRAGMA journal_mode = DELETE").fetchone() == ("delete",)


def assert_shipped_everything(builder: LedgerBuilder, url: str) -> None:
    with central(url) as pg:
        for table in SHIPPED:
            assert rows(pg, table) == rows(builder.conn, table), table


def test_a_writer_in_wal_mode_holds_nothing_up_and_its_commit_comes_with_the_next_run(
    host_ledger, postgres_database
):
    writer = LiveWriter(host_ledger.path, "IMMEDIATE").start()
    err = StringIO()
    try:
        first = run_ship(host_ledger.path, postgres_database, err=err)
        assert "sessions: 2 added" in first  # what was committed, not the open transaction
        assert "locked" not in err.getvalue()
    finally:
        writer.release()
    second = run_ship(host_ledger.path, postgres_database)
    assert "sessions: 1 added" in second
    assert_shipped_everything(host_ledger, postgres_database)


def test_a_writer_holding_the_rollback_journal_lock_makes_the_run_wait_and_say_so(
    host_ledger, postgres_database
):
    use_rollback_journal(host_ledger)
    writer = LiveWriter(host_ledger.path, "EXCLUSIVE").start()
    threading.Timer(1.5, writer.release).start()  # the runtime commits a moment later
    err = StringIO()
    out = run_ship(host_ledger.path, postgres_database, err=err)
    assert f"{host_ledger.path} is locked by its writer: waiting (up to 60 s)" in err.getvalue()
    assert "sessions: 3 added" in out  # the writer's session too: read once it committed
    assert_shipped_everything(host_ledger, postgres_database)


def test_a_lock_held_longer_than_the_wait_stops_the_run_and_the_next_ships_the_rest(
    host_ledger, postgres_database, monkeypatch
):
    """The runtime locks the source after the first session was shipped and keeps it locked:
    the run stops saying so, keeps what it wrote, does not move the watermark."""
    use_rollback_journal(host_ledger)
    real_write, writers = ship_module.write, []

    def write_then_lock(target, bundle, report):
        real_write(target, bundle, report)
        if not writers:
            writers.append(LiveWriter(host_ledger.path, "EXCLUSIVE").start())

    monkeypatch.setattr(ship_module, "write", write_then_lock)
    try:
        out = run_ship(
            host_ledger.path, postgres_database, "--wait", "1",
            problems="stayed locked by its writer for 1 s: stopped before the end; nothing "
            "written is lost and the next run ships the rest",
        )  # fmt: skip
    finally:
        writers[0].release()
    assert "What was written so far:" in out and "sessions: 1 added" in out
    with central(postgres_database) as pg:
        assert len(rows(pg, "sessions")) == 1
        assert pg.execute("SELECT count(*) FROM ledger_shipments").fetchone() == (0,)

    monkeypatch.setattr(ship_module, "write", real_write)
    again = run_ship(host_ledger.path, postgres_database)
    assert "sessions: 2 added, 1 already there" in again  # the rest and the writer's session
    assert_shipped_everything(host_ledger, postgres_database)
