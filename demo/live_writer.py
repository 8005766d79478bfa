"""The demo's live writer: keeps a session and its requests moving, so that `make demo` shows the
live pages at work (issue 29). A background job (`demo-live-writer`, demo/apps.py) that writes
only to a ledger `ledger_demo --live` built: such a ledger carries DEMO_LIVE_APPLICATION_ID in
its header (demo/marker.py), which no real ledger does (nor a benchmark's ledger, built without
--live), and the job does nothing anywhere else.

Each step is one short write transaction, as an agent runtime commits: a request goes through the
pipeline a stage per step; at runAgent a turn begins (pending, its prompt), streams a tool call or
two (each pending, then completed or failed), answers and completes, with its tokens; the session's
head follows it; every seventh turn is a regeneration beside the one before (a branch point). A
quick request (a hook, a timer) comes now and then besides. What to do next is read from the ledger
itself, so a restart (or two processes taking turns) picks up where the last step left off.
"""

import json
import random
import sqlite3
import time
from contextlib import closing
from pathlib import Path

from background.jobs import Job, Step
from ledgerfacts.dbapi import write_transaction
from ledgerfacts.ulid import UlidFactory

from .content import ContentPools
from .marker import DEMO_LIVE_APPLICATION_ID
from .pipeline import STAGES
from .tools import ToolPools

EVERY_S = 1.5
PERSONA = "echo"
ROUTING_KEY = "cursor:ledgerweb:live-demo"
LABEL = "Live demo — an agent at work (written as you watch)"
MODEL = "claude-sonnet-4-20250514"
TOOLS = ("read_file", "grep", "run_terminal_command_v2", "edit_file", "web_search")
TURNS_PER_SESSION = 150  # then a new live session begins, so the tree stays a readable size
REGENERATE_EVERY = 7
QUICK_REQUEST_EVERY = 3  # steps
FAILURE_RATE = 0.12
QUICK_REQUESTS = (("imessage", "otp-autofill"), ("gmail", "spam-filter"),
                  ("timer", "daily-briefing"), ("github", "github-pr-notifier"))  # fmt: skip


def now_ms() -> int:
    return int(time.time() * 1000)


def is_live_demo(path: Path) -> bool:
    """Whether the file is a demo ledger built for the live demo (never a real ledger)."""
    if not path.is_file():
        return False
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
        ((application_id,),) = conn.execute("PRAGMA application_id").fetchall()
    return application_id == DEMO_LIVE_APPLICATION_ID


class LiveWriter:
    """One step of the demo's agent at a time, on its own connection to the ledger file."""

    def __init__(self, path: Path, rng: random.Random | None = None,
                 turns_per_session: int = TURNS_PER_SESSION):  # fmt: skip
        self.path = path
        self.rng = rng or random.Random()
        self.turns_per_session = turns_per_session
        self.ids = UlidFactory(self.rng)
        self.content = ContentPools(self.rng)
        self.tools = ToolPools(self.rng)
        self.steps = 0

    def step(self, conn: sqlite3.Connection | None = None) -> str:
        """One write transaction; on `conn` if given (a writer that commits often keeps one)."""
        self.steps += 1
        own = conn is None
        conn = conn or sqlite3.connect(self.path, timeout=5, isolation_level=None)
        try:
            with write_transaction(conn):
                said = self._advance(conn)
                if self.steps % QUICK_REQUEST_EVERY == 0:
                    self._quick_request(conn)
        finally:
            if own:
                conn.close()
        return said

    # -- What comes next, read from the ledger --------------------------------------------------

    def _advance(self, conn) -> str:
        session = self._session(conn)
        request = conn.execute(
            "SELECT id, stage, status, stage_timings, turn_id FROM nexus_requests"
            " WHERE session_key = ? ORDER BY rowid DESC LIMIT 1",
            (ROUTING_KEY,),
        ).fetchone()
        if request is None or request[2] != "processing":
            return self._new_request(conn, session)
        request_id, stage, _, timings, turn_id = request
        if stage in STAGES[:4]:
            return self._next_stage(conn, request_id, stage, timings)
        if stage == "assembleContext":
            return self._begin_turn(conn, session, request_id, timings)
        if stage == "runAgent":
            return self._work_on_turn(conn, session, request_id, turn_id, timings)
        return self._finish_request(conn, request_id, timings)

    def _session(self, conn) -> str:
        found = conn.execute(
            "SELECT id, (SELECT count(*) FROM turns WHERE session_id = sessions.id) FROM sessions"
            " WHERE routing_key = ? ORDER BY rowid DESC LIMIT 1",
            (ROUTING_KEY,),
        ).fetchone()
        if found and found[1] < self.turns_per_session:
            return found[0]
        return self._new_session(conn)

    def _new_session(self, conn) -> str:
        now = now_ms()
        session = self.ids.new(now)
        conn.execute(
            "INSERT INTO sessions (id, persona, routing_key, label, created_at, updated_at,"
            " status) VALUES (?, ?, ?, ?, ?, ?, 'active')",
            (session, PERSONA, ROUTING_KEY, LABEL, now, now),
        )
        # A first turn, answered: the agent's next ones follow it.
        first = self._insert_turn(conn, session, None, now - 60_000, "completed", now - 52_000)
        self._message(conn, first, 1, "user", "Let's watch the live view: what are you doing?",
                      now - 60_000)  # fmt: skip
        self._message(conn, first, 2, "assistant", "Working on the task list below.", now - 52_000)
        self._set_head(conn, session, first, first, now)
        return session

    def _new_request(self, conn, session: str) -> str:
        now = now_ms()
        request = self.ids.new(now)
        conn.execute(
            "INSERT INTO nexus_requests (id, event_id, event_type, event_source, stage, status,"
            " principal_id, principal_type, principal_is_user, session_key, session_persona,"
            " stage_timings, started_at) VALUES (?, ?, 'message', 'cursor', 'receiveEvent',"
            " 'processing', 'owner', 'person', 1, ?, ?, ?, ?)",
            (request, f"cursor:live-demo/{request}", ROUTING_KEY, PERSONA,
             json.dumps({"receiveEvent": self._ms(8)}), now),
        )  # fmt: skip
        return f"request {request} received"

    def _next_stage(self, conn, request: str, stage: str, timings: str) -> str:
        following = STAGES[STAGES.index(stage) + 1]
        conn.execute(
            "UPDATE nexus_requests SET stage = ?, stage_timings = ? WHERE id = ?",
            (following, self._timed(timings, following, 40), request),
        )
        return f"request {request} at {following}"

    def _begin_turn(self, conn, session: str, request: str, timings: str) -> str:
        now = now_ms()
        head = conn.execute("SELECT current_turn_id FROM sessions WHERE id = ?", (session,))
        (head,) = head.fetchone()
        count = conn.execute("SELECT count(*) FROM turns WHERE session_id = ?", (session,))
        (count,) = count.fetchone()
        parent, text = head, self.content.user_message(PERSONA)
        (grandparent,) = conn.execute(
            "SELECT parent_turn_id FROM turns WHERE id = ?", (head,)
        ).fetchone()
        if count % REGENERATE_EVERY == 0 and grandparent is not None:
            # Asked again: a sibling of the head, with the same prompt (a branch point).
            parent = grandparent
            prompt = conn.execute(
                "SELECT content FROM messages WHERE turn_id = ? AND role = 'user'"
                " ORDER BY sequence LIMIT 1",
                (head,),
            ).fetchone()
            text = prompt[0] if prompt else text
        turn = self._insert_turn(conn, session, parent, now, "pending", None)
        self._message(conn, turn, 1, "user", text, now)
        self._set_head(conn, session, None, turn, now)
        conn.execute(
            "UPDATE nexus_requests SET stage = 'runAgent', turn_id = ?, agent_model = ?,"
            " stage_timings = ? WHERE id = ?",
            (turn, MODEL, self._timed(timings, "assembleContext", 120), request),
        )
        return f"turn {turn} began"

    def _work_on_turn(self, conn, session, request, turn, timings) -> str:
        now = now_ms()
        status, started = conn.execute(
            "SELECT status, started_at FROM turns WHERE id = ?", (turn,)
        ).fetchone()
        calls = conn.execute(
            "SELECT id, status, tool_name FROM tool_calls WHERE turn_id = ? ORDER BY sequence",
            (turn,),
        ).fetchall()
        planned = 1 + int(turn[-1], 36) % 3  # one to three calls, fixed by the turn's id
        if status == "pending":
            conn.execute("UPDATE turns SET status = 'streaming' WHERE id = ?", (turn,))
            self._message(conn, turn, 2, "assistant", self.content.interim(), now)
            return f"turn {turn} streaming"
        if calls and calls[-1][1] == "pending":
            call, _, tool = calls[-1]
            parameters, result, error, outcome = self.tools.call(tool)
            conn.execute(
                "UPDATE tool_calls SET status = ?, result = ?, error = ?, completed_at = ?"
                " WHERE id = ?",
                (outcome, result, error, now, call),
            )
            return f"tool call {call} {outcome}"
        if len(calls) < planned:
            tool = self.rng.choice(TOOLS)
            parameters, _, _, _ = self.tools.call(tool)
            conn.execute(
                "INSERT INTO tool_calls (id, turn_id, tool_name, parameters, status, started_at,"
                " sequence) VALUES (?, ?, ?, ?, 'pending', ?, ?)",
                (self.ids.new(now), turn, tool, parameters, now, len(calls) + 1),
            )
            return f"turn {turn} calls {tool}"
        failed = self.rng.random() < FAILURE_RATE / 2
        prompt_tokens, completion = self.rng.randint(2_000, 30_000), self.rng.randint(80, 1_500)
        answer = self.content.failure_note() if failed else self.content.answer(PERSONA)
        self._message(conn, turn, 3, "assistant", answer, now)
        conn.execute(
            "UPDATE turns SET status = ?, completed_at = ?, prompt_tokens = ?,"
            " completion_tokens = ?, total_tokens = ?, model = ? WHERE id = ?",
            ("failed" if failed else "completed", now, prompt_tokens, completion,
             prompt_tokens + completion, MODEL, turn),
        )  # fmt: skip
        conn.execute("UPDATE sessions SET updated_at = ? WHERE id = ?", (now, session))
        conn.execute(
            "UPDATE nexus_requests SET stage = 'deliverResponse', stage_timings = ?,"
            " agent_tokens_prompt = ?, agent_tokens_completion = ?, agent_tokens_total = ?"
            " WHERE id = ?",
            (self._timed(timings, "runAgent", max(1, now - (started or now))), prompt_tokens,
             completion, prompt_tokens + completion, request),
        )  # fmt: skip
        if failed:
            conn.execute(
                "UPDATE nexus_requests SET status = 'failed', error_stage = 'runAgent',"
                " error_message = 'Model provider returned 529: overloaded', completed_at = ?"
                " WHERE id = ?",
                (now, request),
            )
        return f"turn {turn} {'failed' if failed else 'completed'}"

    def _finish_request(self, conn, request: str, timings: str) -> str:
        now = now_ms()
        failed = self.rng.random() < FAILURE_RATE / 2
        timings = self._timed(self._timed(timings, "deliverResponse", 450), "finalize", 6)
        conn.execute(
            "UPDATE nexus_requests SET stage = 'finalize', status = ?, stage_timings = ?,"
            " delivery_channel = 'cursor', delivery_success = ?, completed_at = ?,"
            " error_stage = ?, error_message = ?, delivery_error = ? WHERE id = ?",
            ("failed" if failed else "completed", timings, 0 if failed else 1, now,
             "deliverResponse" if failed else None,
             "Delivery failed: workspace closed" if failed else None,
             "workspace closed" if failed else None, request),
        )  # fmt: skip
        return f"request {request} {'failed' if failed else 'completed'}"

    def _quick_request(self, conn) -> None:
        """A request that runs no agent (a hook handles it, a timer fires): written whole."""
        now = now_ms()
        source, hook = self.rng.choice(QUICK_REQUESTS)
        timings = {stage: self._ms(10) for stage in (*STAGES[:4], "finalize")}
        conn.execute(
            "INSERT INTO nexus_requests (id, event_id, event_type, event_source, stage, status,"
            " hooks_matched, hooks_fired, hooks_handled, stage_timings, started_at,"
            " completed_at) VALUES (?, ?, 'message', ?, 'finalize', 'completed', ?, ?, 1, ?, ?,"
            " ?)",
            (self.ids.new(now), f"{source}:live-demo/{now}", source, json.dumps([hook]),
             json.dumps([hook]), json.dumps(timings), now - 40, now),
        )  # fmt: skip

    # -- Rows ----------------------------------------------------------------------------------

    def _insert_turn(self, conn, session, parent, started, status, completed) -> str:
        turn = self.ids.new(started)
        conn.execute(
            "INSERT INTO turns (id, session_id, parent_turn_id, status, started_at,"
            " completed_at, model) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (turn, session, parent, status, started, completed, MODEL),
        )
        return turn

    def _message(self, conn, turn, sequence, role, content, at) -> None:
        conn.execute(
            "INSERT INTO messages (id, turn_id, role, content, sequence, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (self.ids.new(at), turn, role, content, sequence, at),
        )

    def _set_head(self, conn, session, root, head, at) -> None:
        conn.execute(
            "UPDATE sessions SET root_turn_id = coalesce(root_turn_id, ?), current_turn_id = ?,"
            " updated_at = ? WHERE id = ?",
            (root or head, head, at, session),
        )

    def _ms(self, median: float) -> float:
        return round(self.rng.lognormvariate(0, 0.5) * median, 1)

    def _timed(self, timings: str | None, stage: str, median: float) -> str:
        try:
            found = json.loads(timings or "{}")
        except ValueError:
            found = {}
        return json.dumps(found | {stage: self._ms(median)})


# -- The background job ---------------------------------------------------------------------------

_writers: dict[Path, LiveWriter] = {}


def step(**options) -> Step:
    from ledgerweb.db import ledger_is_postgres, ledger_path_of

    if ledger_is_postgres():
        return Step("")  # the demo is a file: a PostgreSQL ledger is never the demo's
    path = ledger_path_of()
    if not is_live_demo(path):
        return Step("")  # a real ledger: nothing written, nothing said
    writer = _writers.get(path) or _writers.setdefault(path, LiveWriter(path))
    return Step(writer.step())


JOB = Job("demo-live-writer", every_s=EVERY_S, step=step)
