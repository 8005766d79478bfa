"""Agents Ledger rows: sessions, their turn trees, messages, tool calls, compactions.

A primary session is planned (plan.py), scheduled backwards from its newest turn (timeline.py)
and written turn by turn; each turn an agent ran for an inbound event gets its Nexus request in
the same step. Task tool calls spawn subagent sessions on the spot, and some sessions are forked
once they are written. Nothing but the session being written is held in memory.
"""

import json
from dataclasses import dataclass, field

from ledgerfacts.ulid import decode_time

from .content import SYSTEM_PROMPTS
from .context import DemoContext
from .personas import Address, Persona, new_address, weighted
from .pipeline import AgentTurn
from .plan import SYSTEM_TOKENS, PlanOptions, Script, TurnPlan, plan_turns
from .timeline import MINUTE, SECOND, schedule
from .tools import task_parameters, task_result

FORK_LABELS = (
    "Try the SQL approach instead", "Before the big refactor", "Retry without the cache",
    "Alternative: keep the old API", "Explore option B", "What if we skip the migration?",
)  # fmt: skip
RUNNING = ("pending", "streaming")


@dataclass(frozen=True)
class SessionInfo:
    id: str
    persona: Persona
    routing_key: str
    event_prefix: str
    address: Address | None = None  # set when the pipeline routes events to it (primary)
    first_prompt: str | None = None  # a subagent's first message is its Task prompt

    def event_id(self, ctx: DemoContext, t: int) -> str:
        if self.address:
            return self.address.event_id(ctx.rng, t)
        return f"{self.event_prefix}/{t}"


@dataclass
class PrimarySpec:
    """A session the runtime created for a channel conversation."""

    persona: Persona
    n_turns: int
    last_start: int  # when its newest turn starts (running heads: seconds ago)
    status: str = "active"
    head_state: str | None = None  # pending, streaming or delivering for a live head
    address: Address | None = None
    script: Script = field(default_factory=Script)
    fork_own_turns: tuple[int, ...] = ()  # one fork per entry, with that many turns of its own
    long_answer_rate: float = 0.0


@dataclass(frozen=True)
class TurnRecord:
    id: str
    status: str
    finished_at: int
    is_compaction: bool


def write_primary_session(ctx: DemoContext, spec: PrimarySpec, floor: int) -> None:
    rng = ctx.rng
    persona = spec.persona
    address = spec.address or _new_address(ctx, persona)
    options = PlanOptions(
        persona, weighted(rng, persona.models), spec.n_turns, spec.long_answer_rate,
        heavy_turns=persona.name == "echo", subagents=persona.spawns_subagents,
        script=spec.script,
    )  # fmt: skip
    plans = plan_turns(rng, options)
    last_start = spec.last_start
    if spec.head_state == "delivering":  # the reply just finished: it must end before now
        last_start = ctx.now - plans[-1].duration - 2 * SECOND
    times = schedule(rng, [p.duration for p in plans], last_start=last_start, floor=floor)
    session = SessionInfo(
        ctx.ulid.new(times[0][0] - rng.randint(1, 5000)), persona, address.routing_key,
        address.channel, address,
    )  # fmt: skip
    records = _write_turns(ctx, session, plans, times, head_state=spec.head_state)
    _write_session(ctx, session, address.label, records, spec.status, records[0].id,
                   source_event_id=address.event_id(rng, times[0][0]))  # fmt: skip
    ctx.requests.remember(address, persona.name)
    for own_turns in spec.fork_own_turns:
        _write_fork(ctx, session, records, own_turns)


def _new_address(ctx: DemoContext, persona: Persona) -> Address:
    return new_address(ctx.rng, weighted(ctx.rng, persona.channels), ctx.ulid)


def _write_session(ctx: DemoContext, session: SessionInfo, label, records, status, root_id,
                   *, source_event_id=None, created_at=None, head=None) -> None:  # fmt: skip
    head = head or records[-1]
    created = created_at if created_at is not None else decode_time(session.id)
    updated = max(created, head.finished_at)
    ctx.sink.add(
        "sessions",
        (
            session.id,
            session.persona.name,
            session.routing_key,
            label,
            root_id,
            head.id,
            created,
            updated,
            status,
            source_event_id,
        ),
    )


# ----- turns ---------------------------------------------------------------------------------


def _write_turns(ctx: DemoContext, session: SessionInfo, plans: list[TurnPlan], times,
                 *, attach_to: str | None = None, head_state: str | None = None):  # fmt: skip
    """Write every planned turn; the first plan without a parent hangs from attach_to."""
    ids: list[str] = []
    records: list[TurnRecord] = []
    last = len(plans) - 1
    for i, (plan, (start, end)) in enumerate(zip(plans, times, strict=True)):
        turn_id = ctx.ulid.new(start)
        ids.append(turn_id)
        parent_id = ids[plan.parent] if plan.parent is not None else attach_to
        if plan.retry_of is not None:
            plan.prompt = plans[plan.retry_of].prompt
        state = head_state if (i == last and head_state) else plan.status
        if plan.compaction:
            record = _write_compaction(ctx, session, plan, turn_id, parent_id, start, end, ids)
        else:
            is_root = parent_id is None
            record = _write_turn(ctx, session, plan, turn_id, parent_id, start, end, state, is_root)
        records.append(record)
    return records


def _write_turn(ctx: DemoContext, session: SessionInfo, plan: TurnPlan, turn_id, parent_id,
                start, end, state, is_root) -> TurnRecord:  # fmt: skip
    running = state in RUNNING
    status = "completed" if state == "delivering" else state
    event_id = session.event_id(ctx, start)
    tool_names = _write_content(ctx, session, plan, turn_id, start,
                                ctx.now - SECOND if running else end, state, is_root)  # fmt: skip
    prompt, completion, total = _token_columns(plan, state)
    completed_at = None if running else end
    ctx.sink.add("turns", (turn_id, session.id, parent_id, status, start, completed_at,
                           prompt, completion, total, plan.model, event_id))  # fmt: skip
    if session.address:
        ctx.requests.for_turn(session.address, session.persona.name, AgentTurn(
            turn_id, status, start, completed_at, plan.model, prompt, completion, total,
            tool_names, event_id, delivering=state == "delivering"))  # fmt: skip
    return TurnRecord(turn_id, status, completed_at or start, False)


def _token_columns(plan: TurnPlan, state: str):
    if state == "pending":
        return None, None, None
    if state == "streaming":
        return plan.prompt_tokens, None, None
    return plan.prompt_tokens, plan.completion_tokens, plan.prompt_tokens + plan.completion_tokens


def _write_compaction(ctx: DemoContext, session: SessionInfo, plan: TurnPlan, turn_id,
                      parent_id, start, end, ids) -> TurnRecord:  # fmt: skip
    summarised, kept, trigger = plan.compaction
    summary = ctx.content.summary()
    before = plan.prompt_tokens
    after = min(SYSTEM_TOKENS[session.persona.name] + plan.history_tokens, int(before * 0.8))
    note = f"Context compacted ({trigger}): summarised {len(summarised)} turns, kept {len(kept)}."
    _message(ctx, turn_id, "system", note, 1, start)
    _message(ctx, turn_id, "assistant", summary, 2, end)
    ctx.sink.add("turns", (turn_id, session.id, parent_id, "completed", start, end, before,
                           plan.completion_tokens, before + plan.completion_tokens, plan.model,
                           f"system:compaction/{session.id}/{start}"))  # fmt: skip
    ctx.sink.add("compactions", (
        turn_id, summary, json.dumps([ids[i] for i in summarised]),
        json.dumps([ids[i] for i in kept]), plan.model, before, after, end - start, trigger, end,
    ))  # fmt: skip
    return TurnRecord(turn_id, "completed", end, True)


def _message(ctx: DemoContext, turn_id: str, role: str, content: str, sequence: int, t: int):
    ctx.sink.add("messages", (ctx.ulid.new(t), turn_id, role, content, sequence, t))


# ----- what happens inside a turn ------------------------------------------------------------


def _write_content(ctx: DemoContext, session: SessionInfo, plan: TurnPlan, turn_id, start, end,
                   state, is_root) -> list[str]:  # fmt: skip
    """Messages and tool calls of one turn, in time order; returns the tool names called."""
    rng = ctx.rng
    persona = session.persona.name
    if is_root and rng.random() < 0.4:
        _message(ctx, turn_id, "system", SYSTEM_PROMPTS[persona], 0, start)
    first = session.first_prompt if is_root and session.first_prompt else None
    drawn = first or ctx.content.user_message(persona)  # drawn even for a retry: same dice after
    plan.prompt = plan.prompt or drawn  # a retry re-sends the failed turn's prompt
    _message(ctx, turn_id, "user", plan.prompt, 1, start + 1)
    sequence = 2
    if plan.two_user_messages:
        _message(ctx, turn_id, "user", ctx.content.user_message(persona), 2, start + 2)
        sequence = 3
    if state == "pending":
        return []
    calls = _ToolCallWriter(ctx, session, turn_id, start, end, plan)
    sequence, last_t = calls.write(state, sequence)
    if state in ("completed", "delivering"):
        answer = ctx.content.long_document() if plan.long_answer else ctx.content.answer(persona)
        _message(ctx, turn_id, "assistant", answer, sequence, max(end, last_t + 1))
    elif state == "failed" and rng.random() < 0.3:
        _message(ctx, turn_id, "assistant", ctx.content.failure_note(), sequence,
                 max(end, last_t + 1))  # fmt: skip
    return calls.names


class _ToolCallWriter:
    """Lays a turn's tool calls out between its first and last message, with a few interim
    assistant messages ("Let me check the tests.") between them, and a Task call at the end."""

    def __init__(self, ctx: DemoContext, session: SessionInfo, turn_id, start, end, plan):
        self.ctx, self.session, self.turn_id, self.plan = ctx, session, turn_id, plan
        span = max(1, end - start)
        margin = max(3, span // 20)
        self.task_ms = min(plan.task_ms, span // 2)
        self.first = start + margin
        self.last = max(self.first, end - margin - self.task_ms)
        self.end = end - margin
        tools, weights = zip(*session.persona.tools, strict=True)
        self.names = ctx.rng.choices(tools, weights, k=plan.n_tools)

    def write(self, state: str, sequence: int) -> tuple[int, int]:
        ctx, n = self.ctx, len(self.names)
        interim_every = max(3, n // 4) if n else 0
        done = n // 2 if state == "streaming" else n
        last_t = self.first
        for i in range(min(n, done + 1)):
            t0 = self.first + (self.last - self.first) * i // n
            t1 = max(t0, self.first + (self.last - self.first) * (i + 1) // n - 1)
            if i % interim_every == 0 and i:
                last_t = max(t0, last_t + 1)
                _message(ctx, self.turn_id, "assistant", ctx.content.interim(), sequence, last_t)
                sequence += 1
            if i == done:  # the call a streaming turn is waiting on
                self._add(self.names[i], "{}", None, None, "pending", t0, None, i + 1)
                del self.names[i + 1 :]
                return sequence, max(last_t, t0)
            params, result, error, status = ctx.tools.call(self.names[i])
            self._add(self.names[i], params, result, error, status, t0, t1, i + 1)
            last_t = max(last_t, t0)
        if self.task_ms and state == "completed":
            self._spawn_subagent(n + 1)
            last_t = self.end
        return sequence, last_t

    def _add(self, name, params, result, error, status, t0, t1, sequence) -> str:
        call_id = self.ctx.ulid.new(t0)
        self.ctx.sink.add("tool_calls", (call_id, self.turn_id, name, params, result, error,
                                         status, t0, t1, sequence))  # fmt: skip
        return call_id

    def _spawn_subagent(self, sequence: int) -> None:
        ctx = self.ctx
        description, prompt, kind = ctx.tools.task(self.session.persona.name)
        t0 = self.last + 1
        call_id = ctx.ulid.new(t0)
        child = SessionInfo(ctx.ulid.new(t0 + 1), self.session.persona,
                            f"subagent:{self.session.id}:{call_id}", f"subagent:{call_id}",
                            first_prompt=prompt)  # fmt: skip
        _write_subagent(ctx, child, description, t0 + 2, self.end - 1)
        ctx.sink.add("tool_calls", (
            call_id, self.turn_id, "Task", task_parameters(description, prompt, kind),
            task_result(child.id, f"Subagent session {child.id} finished: {description}."),
            None, "completed", t0, self.end, sequence,
        ))  # fmt: skip
        self.names.append("Task")


# ----- subagents and forks -------------------------------------------------------------------


def _write_subagent(ctx: DemoContext, child: SessionInfo, description: str, start, end) -> None:
    """A few turns of a worker session, all inside the Task call that runs it."""
    rng = ctx.rng
    options = PlanOptions(child.persona, weighted(rng, child.persona.models), rng.randint(2, 5),
                          0.0, compactions=False, rewinds=False)  # fmt: skip
    plans = plan_turns(rng, options)
    durations = _fit([p.duration for p in plans], int((end - start) * 0.7))
    times = schedule(rng, durations, last_start=end - durations[-1], floor=start, bursty=False)
    records = _write_turns(ctx, child, plans, times)
    _write_session(ctx, child, description, records, "active", records[0].id, created_at=start,
                   source_event_id=child.event_prefix)  # fmt: skip


def _fit(durations: list[int], budget: int) -> list[int]:
    total = sum(durations)
    if total <= budget:
        return durations
    return [max(50, d * budget // total) for d in durations]


def _write_fork(ctx: DemoContext, origin: SessionInfo, records: list[TurnRecord], own_turns):
    """A user forked the origin at one of its turns, maybe continued there for a few turns."""
    rng, now = ctx.rng, ctx.now
    candidates = [r for r in records if r.status == "completed" and not r.is_compaction]
    if not candidates:
        return
    point = rng.choice(candidates)
    plans = []
    if own_turns:
        options = PlanOptions(origin.persona, weighted(rng, origin.persona.models), own_turns,
                              0.0, compactions=False, rewinds=False)  # fmt: skip
        plans = plan_turns(rng, options)
    busy = sum(p.duration + 20 * SECOND for p in plans)
    latest = now - 2 * MINUTE - busy
    if latest <= point.finished_at + 5 * MINUTE:
        return
    created = rng.randint(point.finished_at + 5 * MINUTE, latest)
    fork_id = ctx.ulid.new(created)
    fork = SessionInfo(fork_id, origin.persona, f"fork:{origin.id}:{fork_id}",
                       f"dashboard:fork/{fork_id}")  # fmt: skip
    head = point
    if plans:
        durations = [p.duration for p in plans]
        last_start = created + busy - durations[-1]
        times = schedule(rng, durations, last_start=last_start, floor=created + SECOND,
                         bursty=False)  # fmt: skip
        head = _write_turns(ctx, fork, plans, times, attach_to=point.id)[-1]
    # A fork shares the origin's root: its thread starts where the origin's does.
    _write_session(ctx, fork, rng.choice(FORK_LABELS), [head], "active", records[0].id,
                   created_at=created)  # fmt: skip
