"""The thread at a turn: the turn and all its ancestors, which is what an agent resuming from that
turn remembers (seeds/004: "a turn viewed with all its ancestry")."""

from dataclasses import dataclass, field

from ledgerfacts.timestamps import now_ms
from ledgerweb import dialect, prices, sqlite
from ledgerweb.costs import (
    CostSum,
    TurnCost,
    readable_count,
    token_count,
    turn_cost,
    unreadable_count,
)
from ledgerweb.prices import TokenUsage
from ledgerweb.text import parse_json, plain_preview
from sessions.detail import TURN_COLUMNS, TurnInfo, add_aggregates, add_costs, sum_costs

# The thread page shows message previews; the export carries whole messages.
THREAD_PREVIEW_CHARS = 4_000
MAX_DEPTH = 100_000


@dataclass
class ThreadMessage:
    id: str
    turn_id: str
    role: str
    sequence: object
    created_at: object
    content: str
    length: int


@dataclass
class ThreadToolCall:
    id: str
    turn_id: str
    tool_name: str
    status: str
    sequence: object
    parameters: str | None
    result: str | None
    error: str | None


@dataclass
class ThreadStep:
    turn: TurnInfo
    cumulative_tokens: int
    messages: list[ThreadMessage] = field(default_factory=list)
    tool_calls: list[ThreadToolCall] = field(default_factory=list)
    in_context: bool = True  # False: folded into a compaction's summary
    hidden: bool = False  # on another page of the thread


@dataclass
class Compacted:
    turn_id: str
    summary: str
    kept_turn_ids: list[str]
    summarized_count: int
    tokens_before: object
    tokens_after: object


@dataclass
class Thread:
    steps: list[ThreadStep]
    problems: list[str]
    compaction: Compacted | None  # the latest compaction on the path, if any
    page: int = 1  # pages of the path from the root, the last one ending at the turn
    pages: int = 1
    start: int = 0  # the page's steps are steps[start:end]; the others are hidden
    end: int | None = None

    @property
    def remembered(self) -> int:
        """The turns an agent resuming here has in its context: those a compaction did not fold
        into its summary."""
        return sum(1 for step in self.steps if step.in_context)

    @property
    def page_steps(self) -> list[ThreadStep]:
        return self.steps[self.start : self.end]

    @property
    def turn(self) -> TurnInfo:
        return self.steps[-1].turn

    @property
    def total_tokens(self) -> int:
        return self.steps[-1].cumulative_tokens if self.steps else 0

    @property
    def unreadable_token_counts(self) -> int:
        """Turns of the whole thread whose token count is junk: their tokens are not summed."""
        return sum(unreadable_count(step.turn.total_tokens) for step in self.steps)

    @property
    def measured_turn(self) -> TurnInfo | None:
        """The latest turn of the thread with a token count (a pending head has none yet)."""
        for step in reversed(self.steps):
            if readable_count(step.turn.prompt_tokens) or readable_count(step.turn.total_tokens):
                return step.turn
        return None

    @property
    def context_tokens(self) -> int | None:
        """What the agent holds after the measured turn: its prompt plus its answer (its total
        when its prompt count is missing or junk)."""
        t = self.measured_turn
        if t is None:
            return None
        if readable_count(t.prompt_tokens):
            return token_count(t.prompt_tokens) + token_count(t.completion_tokens)
        return token_count(t.total_tokens)

    @property
    def spent(self) -> CostSum:
        """What the thread's turns cost, root to this turn."""
        return sum_costs(step.turn for step in self.steps)

    @property
    def spent_tokens(self) -> int:
        """The tokens `spent` is priced from, root to this turn: each turn's billed input (cache
        reads and writes included, over all its model calls) and output where the ledger has them
        (turn_usage), else its prompt and completion tokens (what the ≈ estimate prices). Not
        the sum of the turns' totals: a turn's total counts the context of its last call only."""
        total = 0
        for step in self.steps:
            turn = step.turn
            if turn.billed is not None:
                total += turn.billed.input + turn.billed.output
            else:
                total += token_count(turn.prompt_tokens) + token_count(turn.completion_tokens)
        return total

    @property
    def unreadable_spent_counts(self) -> int:
        """Counts spent_tokens could not read (junk prompt or completion counts of turns without
        billed usage): they add nothing, and the page says how many."""
        unbilled = [step.turn for step in self.steps if step.turn.billed is None]
        return sum(
            unreadable_count(t.prompt_tokens) + unreadable_count(t.completion_tokens)
            for t in unbilled
        )

    def resume_cost(self, *, cached: bool) -> TurnCost | None:
        """What sending this context again costs for one call of the measured turn's model at
        today's prices: as plain input, or (`cached`) read from the prompt cache."""
        t = self.measured_turn
        tokens = self.context_tokens
        if t is None or not tokens:
            return None
        usage = TokenUsage(input=tokens, output=0, cache_read=tokens if cached else 0)
        return turn_cost(t.model, now_ms(), usage, exact=False)

    @property
    def groups(self) -> list[tuple[str, list[ThreadStep]]]:
        """Steps in order; runs of turns folded into a compaction summary, and of turns on
        earlier or later pages, grouped together."""
        groups: list[tuple[str, list[ThreadStep]]] = []
        for position, step in enumerate(self.steps):
            if step.hidden:
                kind = "earlier" if position < self.start else "later"
            else:
                kind = "step" if step.in_context else "folded"
            if kind != "step" and groups and groups[-1][0] == kind:
                groups[-1][1].append(step)
            else:
                groups.append((kind, [step]))
        return groups

    @property
    def context_window(self) -> int | None:
        measured = self.measured_turn
        return context_window_of(measured.model) if measured else None

    @property
    def context_ratio(self) -> float | None:
        if self.context_tokens is None or not self.context_window:
            return None
        return self.context_tokens / self.context_window


def context_window_of(model: str | None) -> int | None:
    """The context window of a model: MODEL_CONTEXT_WINDOWS, else genai-prices' model data."""
    return prices.context_window_of(model)


def ancestor_path(turn_id: str) -> tuple[list[TurnInfo], list[str]]:
    """The turns from the root down to `turn_id`, and what is wrong with the chain if anything."""
    rows = sqlite.rows(
        f"""WITH RECURSIVE up(id) AS (
                SELECT %s
                UNION
                SELECT t.parent_turn_id FROM turns t JOIN up ON t.id = up.id
                WHERE t.parent_turn_id IS NOT NULL
            )
            SELECT {TURN_COLUMNS} FROM turns WHERE id IN (SELECT id FROM up LIMIT %s)""",
        [turn_id, MAX_DEPTH],
    )
    by_id = {row[0]: TurnInfo(*row) for row in rows}
    path, seen, problems = [], set(), []
    current = turn_id
    while current is not None:
        if current in seen:
            problems.append(f"the chain of parents loops back to {current}: cut there")
            break
        if current not in by_id:
            if path:
                problems.append(
                    f"turn {path[-1].id} names a parent {current} that does not exist: "
                    "the thread starts below it"
                )
            break
        seen.add(current)
        path.append(by_id[current])
        current = by_id[current].parent_turn_id
    path.reverse()
    return path, problems


def load_thread(
    turn_id: str, *, full_text: bool = False, page_size: int | None = None, page: int | None = None
) -> Thread | None:
    """The thread at a turn. With full_text (the export) every turn's whole messages and tool
    calls; for the page, message previews of the turns still in context, and only a one-line
    preview of the turns a compaction folded away (a 5,000-turn thread stays light). With
    `page_size`, the path from the root comes in pages of that many turns, the last one (the
    default `page`) ending at the turn: only the page's turns are loaded, the others are counted
    (tokens included), so a 20,000-deep thread is still a page."""
    path, problems = ancestor_path(turn_id)
    if not path:
        return None
    ids_sql, ids = sqlite.in_list(t.id for t in path)
    steps, running = [], 0
    for turn in path:
        running += token_count(turn.total_tokens)
        steps.append(ThreadStep(turn, running))
    compaction = _latest_compaction(steps, ids_sql, ids, problems)

    thread = Thread(steps, problems, compaction)
    if page_size:
        thread.page, thread.pages, thread.start, thread.end = _window(len(steps), page_size, page)
        for step in steps[: thread.start] + steps[thread.end :]:
            step.hidden = True
    on_page = thread.page_steps
    shown = [s for s in on_page if full_text or s.in_context]
    folded = {s.turn.id: s.turn for s in on_page if not (full_text or s.in_context)}
    add_aggregates(folded)  # previews, tool-call counts and costs in four queries
    if not full_text:  # the export (full_text) says nothing of costs
        # Every turn's cost, off the page too: the thread's total spent is theirs (one query).
        add_costs({s.turn.id: s.turn for s in steps if s.turn.id not in folded})
    _add_contents([s.turn.id for s in shown], {s.turn.id: s for s in shown}, full_text)
    for step in shown:
        first_user = next((m for m in step.messages if m.role == "user"), None)
        step.turn.preview = plain_preview(first_user.content if first_user else "", 140)
    return thread


def _window(count: int, size: int, page: int | None) -> tuple[int, int, int, int]:
    """(page, pages, start, end) of `count` steps in pages of `size` counted back from the last
    step, so the last page is always whole; page None or past the end is the last page."""
    pages = max(1, -(-count // size))
    page = pages if page is None else min(max(page, 1), pages)
    end = count - (pages - page) * size
    return page, pages, max(0, end - size), end


def _add_contents(turn_ids: list[str], steps: dict[str, ThreadStep], full_text: bool) -> None:
    if not turn_ids:
        return
    ids_sql, ids = sqlite.in_list(turn_ids)
    limit = 1_000_000_000 if full_text else THREAD_PREVIEW_CHARS
    content = dialect.whole("content")  # past a NUL too: SQLite's substr() stops at one
    for row in sqlite.rows(
        f"""SELECT id, turn_id, role, sequence, created_at, substr({content}, 1, %s),
                   length({content})
            FROM messages WHERE turn_id IN {ids_sql} ORDER BY sequence, created_at, id""",
        [limit, *ids],
    ):
        steps[row[1]].messages.append(ThreadMessage(*row))
    # The page shows only names and statuses: not reading the payload columns (and error, which
    # is stored after them) keeps SQLite off the overflow pages of big results.
    payload = "parameters, result, error" if full_text else "NULL, NULL, NULL"
    for row in sqlite.rows(
        f"""SELECT id, turn_id, tool_name, status, sequence, {payload}
            FROM tool_calls WHERE turn_id IN {ids_sql} ORDER BY sequence, started_at, id""",
        ids,
    ):
        steps[row[1]].tool_calls.append(ThreadToolCall(*row))


def _latest_compaction(steps, ids_sql, ids, problems) -> Compacted | None:
    """Apply the latest compaction on the path: the agent resuming here sees its summary, the turns
    it kept, and the turns after it (seeds/004, "Compaction")."""
    if "compactions" not in sqlite.table_names():
        return None
    rows = sqlite.rows(
        f"""SELECT turn_id, summary, summarized_turn_ids, kept_turn_ids, tokens_before,
                   tokens_after FROM compactions WHERE turn_id IN {ids_sql}""",
        ids,
    )
    if not rows:
        return None
    position = {step.turn.id: i for i, step in enumerate(steps)}
    turn_id, summary, summarized, kept, before, after = max(rows, key=lambda r: position[r[0]])
    summarized_ids = parse_json(summarized, None)
    kept_ids = parse_json(kept, None)
    if not isinstance(summarized_ids, list) or not isinstance(kept_ids, list):
        problems.append(
            f"compaction {turn_id} has invalid summarized_turn_ids or kept_turn_ids JSON: "
            "the whole thread is shown as context"
        )
        return None
    kept_set = {str(k) for k in kept_ids}
    at = position[turn_id]
    for step in steps[:at]:
        step.in_context = step.turn.id in kept_set
    steps[at].turn.compaction_summary = steps[at].turn.compaction_summary or summary
    return Compacted(
        turn_id, summary or "", [str(k) for k in kept_ids], len(summarized_ids), before, after
    )
