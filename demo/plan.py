"""The shape of a session before it has ids or times: a turn tree with statuses and tokens.

Planning works on indices so a whole session (at most a few thousand small records) can be laid
out, scheduled backwards from its newest turn, and only then written row by row.

The tree follows how people use agents: mostly linear; a failed turn is retried from its parent
(a new branch); sometimes the user rewinds a few turns and tries again; long branches get a
compaction turn about every 30 turns.
"""

import random
from dataclasses import dataclass, field

from .personas import COMPACTION_MODEL, Persona, weighted

REWIND_RATE = 0.025
FAILURE_RATE = 0.04
RETRY_FAILURE_RATE = 0.25  # a retry of a failed turn fails more often (same flaky cause)
HEAVY_TURN_RATE = 0.0025  # turns with hundreds of tool calls (big refactors)
SUBAGENT_RATE = 0.03
CONTEXT_LIMIT = 120_000
MAX_PROMPT = 198_000
SYSTEM_TOKENS = {"atlas": 2_400, "echo": 5_200, "sage": 3_100}


@dataclass(slots=True)
class Script:
    """Turns a session must have whatever the dice say (so every page has something to show)."""

    fail_at: tuple[int, ...] = ()
    tool_calls_at: dict[int, int] = field(default_factory=dict)
    long_answer_at: int | None = None


@dataclass(slots=True)
class TurnPlan:
    parent: int | None  # index of the parent plan; None for the root (or a fork's first turn)
    depth: int
    segment: int  # turns since the last compaction on this branch
    status: str = "completed"
    model: str = ""
    n_tools: int = 0
    task_ms: int = 0  # time of a Task call that runs a subagent (0: no subagent)
    long_answer: bool = False
    two_user_messages: bool = False
    own_tokens: int = 0  # what this turn adds to the context of its children
    history_tokens: int = 0  # context passed on to its children
    prompt_tokens: int = 0
    completion_tokens: int = 0
    duration: int = 0
    compaction: tuple[list[int], list[int], str] | None = None  # summarised, kept, trigger
    retry_of: int | None = None  # the failed turn this one retries (it re-sends its prompt)
    prompt: str = ""  # the user's message, once written (a retry starts with the failed one's)


@dataclass(frozen=True)
class PlanOptions:
    persona: Persona
    model: str
    n_turns: int
    long_answer_rate: float
    compactions: bool = True
    rewinds: bool = True
    heavy_turns: bool = False
    subagents: bool = False
    script: Script = field(default_factory=Script)


def plan_turns(rng: random.Random, options: PlanOptions) -> list[TurnPlan]:
    plans: list[TurnPlan] = []
    threshold = rng.randint(26, 34)
    for k in range(options.n_turns):
        retry_of = len(plans) - 1 if plans and plans[-1].status == "failed" else None
        parent = _choose_parent(rng, plans, options.rewinds)
        plan = _normal_turn(rng, options, plans, parent, k)
        plan.retry_of = retry_of
        plans.append(plan)
        is_last = k == options.n_turns - 1
        long_branch = plan.segment >= threshold or (
            plan.segment >= 12 and plan.history_tokens > CONTEXT_LIMIT
        )
        if options.compactions and plan.status == "completed" and long_branch and not is_last:
            plans.append(_compaction(rng, plans, options.persona.name))
            threshold = rng.randint(26, 34)
    return plans


def _choose_parent(rng: random.Random, plans: list[TurnPlan], rewinds: bool) -> int | None:
    if not plans:
        return None
    last = len(plans) - 1
    if plans[last].status == "failed":
        return plans[last].parent  # retry from the failed turn's parent: a new branch
    if rewinds and plans[last].depth >= 3 and rng.random() < REWIND_RATE:
        node = last
        for _ in range(rng.randint(1, 4)):  # the user goes back a few turns on this branch
            if plans[node].parent is None:
                break
            node = plans[node].parent
        return node
    return last


def _normal_turn(rng, options: PlanOptions, plans, parent: int | None, k: int) -> TurnPlan:
    above = plans[parent] if parent is not None else None
    plan = TurnPlan(
        parent=parent,
        depth=above.depth + 1 if above else 0,
        segment=above.segment + 1 if above else 1,
        status=_status(rng, options, plans, parent, k),
        model=options.model if rng.random() < 0.85 else weighted(rng, options.persona.models),
    )
    plan.n_tools = _tool_count(rng, options, k)
    plan.long_answer = k == options.script.long_answer_at or rng.random() < options.long_answer_rate
    plan.two_user_messages = rng.random() < 0.15
    if options.subagents and plan.n_tools and plan.status == "completed":
        plan.task_ms = rng.randint(60, 400) * 1000 if rng.random() < SUBAGENT_RATE else 0
    _tokens(rng, plan, above, options.persona.name)
    plan.duration = (
        (int(4000 * rng.lognormvariate(0, 0.7)) + plan.n_tools * rng.randint(400, 2500))
        + plan.task_ms
        + 1000
    )
    return plan


def _status(rng, options: PlanOptions, plans, parent: int | None, k: int) -> str:
    if parent is None:
        return "completed"  # a root never fails: a session has exactly one root
    if k in options.script.fail_at:
        return "failed"
    retry = plans[-1].status == "failed"
    return (
        "failed" if rng.random() < (RETRY_FAILURE_RATE if retry else FAILURE_RATE) else "completed"
    )


def _tool_count(rng: random.Random, options: PlanOptions, k: int) -> int:
    if k in options.script.tool_calls_at:
        return options.script.tool_calls_at[k]
    if options.heavy_turns and rng.random() < HEAVY_TURN_RATE:
        return rng.randint(120, 250)
    return int(rng.expovariate(1 / options.persona.mean_tool_calls))


def _tokens(rng: random.Random, plan: TurnPlan, above: TurnPlan | None, persona: str) -> None:
    """Prompt tokens grow with depth: the system prompt, the thread so far, this exchange."""
    user = rng.randint(15, 400) * (2 if plan.two_user_messages else 1)
    tool_results = min(60_000, plan.n_tools * rng.randint(150, 450))
    inherited = above.history_tokens if above else 0
    plan.prompt_tokens = min(MAX_PROMPT, SYSTEM_TOKENS[persona] + inherited + user + tool_results)
    plan.completion_tokens = min(16_000, rng.randint(40, 1500) + 20 * plan.n_tools)
    if plan.long_answer:
        plan.completion_tokens = 12_000
    if plan.status == "failed":
        plan.completion_tokens = rng.randint(0, plan.completion_tokens // 3)
    plan.own_tokens = user + plan.completion_tokens + tool_results // 4
    plan.history_tokens = inherited + plan.own_tokens


def _compaction(rng: random.Random, plans: list[TurnPlan], persona: str) -> TurnPlan:
    """A compaction turn after the newest turn: summarise its branch, keep the last few turns.

    The branch segment runs back to the previous compaction (included: summaries are recursive)
    or to the root, so every summarised and kept turn is an ancestor of the compaction.
    """
    last = len(plans) - 1
    branch = [last]
    while plans[branch[-1]].parent is not None and plans[branch[-1]].compaction is None:
        branch.append(plans[branch[-1]].parent)
    branch.reverse()
    keep = min(rng.randint(3, 5), len(branch) - 2)
    summarised, kept = branch[:-keep], branch[-keep:]
    summarised_tokens = sum(plans[i].own_tokens for i in summarised) + (
        plans[summarised[0]].history_tokens if plans[summarised[0]].compaction else 0
    )
    summary_tokens = max(50, min(rng.randint(600, 1800), summarised_tokens // 3))
    trigger = "manual" if rng.random() < 0.15 else "context_limit"
    history = summary_tokens + sum(plans[i].own_tokens for i in kept)
    newest = plans[last]
    return TurnPlan(
        parent=last,
        depth=newest.depth + 1,
        segment=len(kept),
        model=COMPACTION_MODEL,
        prompt_tokens=min(MAX_PROMPT, SYSTEM_TOKENS[persona] + newest.history_tokens),
        completion_tokens=summary_tokens,
        history_tokens=history,
        duration=rng.randint(3000, 25000),
        compaction=(summarised, kept, trigger),
    )
