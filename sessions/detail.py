"""Everything the session page shows, loaded in a fixed number of queries whatever the tree size."""

import operator
import time
from dataclasses import dataclass, field, replace
from functools import cached_property

from django.conf import settings

from ledgerfacts.timestamps import elapsed_ms, now_ms
from ledgerweb import sqlite
from ledgerweb.costs import CostSum, TurnCost, readable_count, token_count, unreadable_count
from ledgerweb.db import ledger_identity
from ledgerweb.prices import TokenUsage
from ledgerweb.text import plain_words
from sessions import tree
from sessions.alternatives import Alternative, alternatives_of
from sessions.forking import fork_point_of, forks_by_point
from sessions.kinds import FORK, SUBAGENT, RoutingKey, children_prefix
from sessions.models import Session
from sessions.usage import billed_usage, cost_of_turn

FAILED = "failed"
KNOWN_TURN_STATUSES = {"pending", "streaming", "completed", FAILED}
# A turn still being written: it says since when, and that it stalled once it has written
# nothing for settings.STALLED_AFTER_S (live pages redraw both as time passes: static/js/live.js).
RUNNING_STATUSES = {"pending", "streaming"}
# A fork inherits its origin's thread; show at most this many inherited turns above it.
INHERITED_LIMIT = 10_000
# A turn's prompt as the tree keeps it: a row shows what fits its width (60 characters at
# 1280 px, more in a wider window), its hover the rest.
PROMPT_CHARS = 300


# Slots: a big session makes thousands of these per page, and each __dict__ is one more object
# for the garbage collector to walk.
@dataclass(slots=True)
class TurnInfo:
    """The columns of a turn the tree draws, plus per-turn aggregates."""

    id: str
    session_id: str
    parent_turn_id: str | None
    status: str
    started_at: object
    completed_at: object
    prompt_tokens: object
    completion_tokens: object
    total_tokens: object
    model: str | None
    source_event_id: str | None = None
    tool_calls: int = 0
    failed_tool_calls: int = 0
    preview: str = ""
    compaction_summary: str | None = None
    inherited: bool = False  # a turn of the origin session, above a fork's own turns
    # Its first assistant message (or tool call) in words: read with the tree for turns with
    # siblings, for the others with the window of rows that shows them (the rows' hover).
    answer: str = ""
    answer_read: int = 0  # how many characters of it were read (0: not read)
    # Where the row's text (its answer, or its prompt) leaves its siblings' (alternatives.py).
    differs_at: int = 0
    billed: TokenUsage | None = None  # what its calls billed (optional turn_usage table)
    cost: TurnCost | None = None  # None: no tokens to price
    # A running turn's newest message or tool call time (read for running turns only).
    last_write_at: object = None
    # Its counts, prompt and cost were read (add_aggregates): a tree brought up to date reads
    # those of its new and changed turns only.
    aggregated: bool = False

    @property
    def duration_ms(self) -> int | None:
        return elapsed_ms(self.started_at, self.completed_at)

    @property
    def is_compaction(self) -> bool:
        return self.compaction_summary is not None

    @property
    def status_known(self) -> bool:
        return self.status in KNOWN_TURN_STATUSES

    @property
    def is_running(self) -> bool:
        return self.status in RUNNING_STATUSES

    @property
    def last_write_ms(self) -> int | float | None:
        """When a running turn last wrote anything: its newest message or tool call, else its
        start (times that are not numbers say nothing)."""
        times = [t for t in (self.started_at, self.last_write_at) if _is_time(t)]
        return max(times) if times else None

    @property
    def stalled(self) -> bool:
        """Running, and nothing written for longer than settings.STALLED_AFTER_S."""
        last = self.last_write_ms
        return (
            self.is_running
            and last is not None
            and now_ms() - last > settings.STALLED_AFTER_S * 1000
        )


def _is_time(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


TURN_COLUMNS = (
    "id, session_id, parent_turn_id, status, started_at, completed_at, prompt_tokens,"
    " completion_tokens, total_tokens, model, source_event_id"
)
TURN_FIELDS = tuple(name.strip() for name in TURN_COLUMNS.split(","))
_row_of = operator.attrgetter(*TURN_FIELDS)  # a TurnInfo's row, as read


@dataclass
class Related:
    """Sessions linked to this one by routing-key convention."""

    parent: Session | None = None  # the spawning session of a subagent, the origin of a fork
    parent_missing: bool = False
    tool_call: dict | None = None  # the tool call that spawned a subagent
    children: list[Session] = field(default_factory=list)  # subagents and forks of this one


@dataclass
class SessionTree:
    session: Session
    turns: dict[str, TurnInfo]
    layout: tree.Layout
    related: Related
    problems: list[tree.Problem]
    # Turns with siblings, and their place among them (sessions/alternatives.py).
    alternatives: dict[str, "Alternative"] = field(default_factory=dict)
    # Turns of this tree where forks were made, and those forks (oldest first).
    forks_at: dict[str, list[Session]] = field(default_factory=dict)
    # A fork's own fork point: the origin's turn it left from (drawn "fork point").
    fork_point: str | None = None
    # For the map (sessions/tree_map.py), found once per tree: the turns worth a mark and their
    # kinds, what "costliest" went by, and the views asked for so far (page.shown_lines).
    marked: dict[str, tuple[str, ...]] | None = None
    costly_by: str = "cost"
    views: dict = field(default_factory=dict)
    hoists: dict = field(default_factory=dict)  # page.hoisted: subtrees shown alone
    next_sibling: dict[str, str] | None = None  # each turn's next sibling branch (page.py)
    # The rowid marks it was read at (_rowid_marks), and when it was last read whole.
    marks: dict | None = None
    read_whole_at: float = 0.0
    # The sums of its own turns' _tally, once its totals were worked out.
    tallies: list[int] | None = None

    @property
    def routing(self) -> RoutingKey:
        return RoutingKey(self.session.routing_key)

    @property
    def own_turns(self) -> list[TurnInfo]:
        return [t for t in self.turns.values() if not t.inherited]

    # Kept with the tree (which is kept while the ledger is unchanged): a 50,000-turn session's
    # totals are ~0.3 s of Python, asked for twice a page. A tree brought up to date at a commit
    # has them from the kept tree's (brought_up_to_date), not from a pass over every turn.
    @cached_property
    def totals(self) -> dict[str, int]:
        own = self.own_turns
        if self.tallies is None:
            self.tallies = [sum(column) for column in zip(*map(_tally, own), strict=True)]
        tokens, unreadable, with_tokens, tool_calls, failed, compactions = self.tallies or [0] * 6
        return {
            "turns": len(own),
            # A fork's tree also shows the origin's turns it continues: own + inherited = rows.
            "inherited": len(self.turns) - len(own),
            "branches": branch_count(own),
            "tokens": tokens,
            "unreadable_token_counts": unreadable,
            # Turns with a token count: with none, the session's tokens are unknown, not 0.
            "turns_with_tokens": with_tokens,
            "tool_calls": tool_calls,
            "failed_turns": failed,
            "compactions": compactions,
        }

    @cached_property
    def cost(self) -> CostSum:
        """What the session's own turns cost (inherited ones are the origin's)."""
        return sum_costs(self.own_turns)

    def brought_up_to_date(self, stale: "SessionTree", read_again: list[TurnInfo]) -> None:
        """Take the totals and cost of `stale` (the tree this one brings up to date), where it
        worked them out, with the own turns that changed taken out and added back. `read_again`:
        this tree's turns that are not `stale`'s own objects (each other turn is: its row
        unchanged, _reuse_unchanged)."""
        gone = [stale.turns[t.id] for t in read_again if t.id in stale.turns]
        gone += [stale.turns[k] for k in stale.turns.keys() - self.turns.keys()]
        gone = [t for t in gone if not t.inherited]
        new = [t for t in read_again if not t.inherited]
        if stale.tallies is not None:
            tallies = stale.tallies or [0] * 6
            for turns, sign in ((gone, -1), (new, 1)):
                for tally in map(_tally, turns):
                    tallies = [a + sign * b for a, b in zip(tallies, tally, strict=True)]
            self.tallies = tallies
        if "cost" in vars(stale) and not any(t.cost and not t.cost.priced for t in gone):
            # An unpriced model is counted in a set, which cannot be taken from: such a turn
            # gone (rare: an edit in place) makes the sum be worked out afresh.
            cost = replace(stale.cost, unpriced_models=set(stale.cost.unpriced_models))
            for turn in gone:
                if turn.cost is not None:
                    cost.amount -= turn.cost.amount
                    cost.priced -= 1
                    cost.estimated -= 1 if turn.cost.estimated else 0
            for turn in new:
                cost.add(turn.cost)
            self.cost = cost


def _tally(turn: TurnInfo) -> tuple[int, int, int, int, int, int]:
    """What one own turn adds to a session's totals."""
    return (
        token_count(turn.total_tokens),
        unreadable_count(turn.total_tokens),
        1 if readable_count(turn.total_tokens) else 0,
        turn.tool_calls,
        1 if turn.status == FAILED else 0,
        1 if turn.is_compaction else 0,
    )


def branch_count(own: list[TurnInfo]) -> int:
    """A session's branches: its turns that none of its turns continues, as the session list
    counts them in SQL. Not the drawn tree's leaves: drawing a cycle breaks it, which makes a
    leaf the ledger does not have."""
    continued = {t.parent_turn_id for t in own}
    return sum(1 for t in own if t.id not in continued)


def token_totals(turns) -> dict[str, int]:
    """The turns' tokens, and how many of their counts could not be read (ledgerweb.costs'
    one rule: such a count adds nothing, and the page says how many)."""
    return {
        "tokens": sum(token_count(t.total_tokens) for t in turns),
        "unreadable_token_counts": sum(unreadable_count(t.total_tokens) for t in turns),
    }


def sum_costs(turns) -> CostSum:
    total = CostSum()
    for turn in turns:
        total.add(turn.cost)
    return total


# Trees a worker keeps while the ledger is unchanged (sqlite.ledger_version): moving around one
# session (another turn by URL, unfolding, back from its thread page) draws the same tree, and
# reading and laying out 5,000 turns costs ~150 ms. A tree bigger than TREE_KEPT_TURNS is not
# kept there: a few big trees would hold tens of megabytes in every worker. One of at most
# BIG_TREE_KEPT_TURNS is kept besides, because a huge session is read a page at a time, and each
# page would otherwise read and lay out the whole tree again (~0.6 s and ~55 MB for 50,000).
_trees = sqlite.WhileUnchanged(keep=4)
TREE_KEPT_TURNS = 20_000
_big_trees = sqlite.WhileUnchanged(keep=1)
BIG_TREE_KEPT_TURNS = 100_000
# The key of the big tree last seen, so that its pages ask one cache, not two (each asks the
# ledger's version: one more query a page).
_big_tree_key: list = [None]


def load_tree(session: Session) -> SessionTree:
    """The session's tree, as the ledger holds it now."""
    key = (ledger_identity(), session.id)

    def make(stale: SessionTree | None, limit: int) -> tuple[SessionTree, bool]:
        session_tree = _read_tree(session, stale)
        return session_tree, len(session_tree.turns) <= limit

    if key == _big_tree_key[0]:
        return _big_trees.update(key, lambda stale: make(stale, BIG_TREE_KEPT_TURNS))
    session_tree = _trees.update(key, lambda stale: make(stale, TREE_KEPT_TURNS))
    if TREE_KEPT_TURNS < len(session_tree.turns) <= BIG_TREE_KEPT_TURNS:
        _big_tree_key[0] = key
        _big_trees.get(key, lambda: (session_tree, True))
    return session_tree


# A session being written is read again at every commit (a live page redraws it each second).
# Its tree is then brought up to date from the one kept for the previous version, not read
# afresh (a 3,300-turn session: ~14 ms instead of ~85):
# - Of the turn rows, only those that may have changed are read again: the turns added since,
#   the kept tree's running and written-to turns, and the session's newest RECENT_TURNS (a turn
#   changes in place while it runs and just after: its tokens may come in a commit of their
#   own). Those are the turns a live page's poll watches (live/watches.py), so a page told that
#   its session changed is drawn from a tree that has the change.
# - A turn whose row is the same, that is not running and that no message, tool call,
#   compaction or usage row was added to since (rows above the kept tree's rowid marks) keeps
#   its counts, prompt and cost, most of a tree's cost.
# - An agent going on from its head has its new turns appended to the kept layout
#   (tree.extended).
# What only an edit in place could change (an older turn's row, a finished turn's messages or
# calls: the ledger appends them, and the poll does not see such an edit either) is read afresh
# at least every WHOLE_READ_EVERY_S, and whenever more than UPDATE_MAX_ROWS rows were added.
WHOLE_READ_EVERY_S = 30.0
UPDATE_MAX_ROWS = 20_000
RECENT_TURNS = 200
# The tables whose new rows change a turn's aggregates, each by its turn_id column; and those
# whose rowid marks a kept tree is read at.
AGGREGATED = ("messages", "tool_calls", "compactions", "turn_usage")
MARKED = ("turns", *AGGREGATED)


def _read_tree(session: Session, stale: SessionTree | None = None) -> SessionTree:
    present = sqlite.tables_and_rowids()
    marks = _rowid_marks(present)
    kept = _kept_turns(stale, marks)
    turns = _session_turns(session.id) if kept is None else _own_turns_now(session.id, stale, kept)
    problems: list[tree.Problem] = []
    _add_inherited_turns(session, turns, problems)
    if kept is None:
        add_aggregates(turns, set(present))
        read_whole_at = time.monotonic()
    else:
        turns = _reuse_unchanged(turns, kept)
        read_again = {k: t for k, t in turns.items() if not t.aggregated}
        add_aggregates(read_again, set(present))
        read_whole_at = stale.read_whole_at

    head = session.current_turn_id
    nodes = [tree.Node(t.id, t.parent_turn_id, t.started_at, t) for t in turns.values()]
    # An agent going on from its head: its new turns are appended to the kept layout.
    extended = kept is not None and tree.extended(stale.layout, nodes, head)
    layout = extended or tree.layout(nodes, head_id=head)
    problems += layout.problems
    problems += _structure_problems(session, turns, layout)
    related = _related(session)
    forks = [c for c in related.children if RoutingKey(c.routing_key).kind == FORK]
    forks_at = {
        turn_id: made for turn_id, made in forks_by_point(forks).items() if turn_id in turns
    }
    fork_point = fork_point_of(session) if RoutingKey(session.routing_key).kind == FORK else None
    session_tree = SessionTree(
        session,
        turns,
        layout,
        related,
        problems,
        alternatives_of(layout, *((stale.alternatives, stale.turns) if kept is not None else ())),
        forks_at,
        fork_point,
        marks=marks,
        read_whole_at=read_whole_at,
    )
    if kept is not None:
        session_tree.brought_up_to_date(stale, list(read_again.values()))
    return session_tree


def _rowid_marks(present: dict[str, bool]) -> dict[str, int] | None:
    """The largest rowid of each table a turn's aggregates come from (one query), or None where
    they cannot be told (a PostgreSQL ledger without rowid columns). `present`: the ledger's
    tables, each with whether it has a rowid (sqlite.tables_and_rowids)."""
    tables = [table for table in MARKED if table in present]
    if not all(present[table] for table in tables):
        return None
    if not tables:
        return {}
    (found,) = sqlite.rows("SELECT " + ", ".join(f"(SELECT max(rowid) FROM {t})" for t in tables))
    return {table: int(mark or 0) for table, mark in zip(tables, found, strict=True)}


def _kept_turns(stale: SessionTree | None, marks: dict | None) -> dict[str, "TurnInfo"] | None:
    """The stale tree's turns that still hold, by id (their aggregates unchanged since it was
    read), or None when the tree must be read whole."""
    if stale is None or marks is None or stale.marks is None or stale.marks.keys() != marks.keys():
        return None
    if time.monotonic() - stale.read_whole_at > WHOLE_READ_EVERY_S:
        return None
    if any(marks[t] < stale.marks[t] for t in marks):
        return None  # fewer rows than before: not the ledger the tree was read from
    if sum(marks[t] - stale.marks[t] for t in marks) > UPDATE_MAX_ROWS:
        return None
    touched = set()
    for table in AGGREGATED:
        if table in marks and marks[table] > stale.marks[table]:
            touched |= {
                turn_id
                for (turn_id,) in sqlite.rows(
                    f"SELECT DISTINCT turn_id FROM {table} WHERE rowid > %s AND rowid <= %s",
                    [stale.marks[table], marks[table]],
                )
            }
    return {
        turn_id: turn
        for turn_id, turn in stale.turns.items()
        if turn_id not in touched and not turn.is_running
    }


def _own_turns_now(session_id: str, stale: SessionTree, kept: dict) -> dict:
    """The session's own turns as the ledger holds them now, from the stale tree's: the rows
    that may have changed read again (see RECENT_TURNS), the others as they were. In the order a
    whole read gives (the order they were written), new turns last."""
    rows = sqlite.rows(
        f"SELECT {TURN_COLUMNS} FROM turns WHERE session_id = %s AND rowid > %s ORDER BY rowid",
        [session_id, stale.marks["turns"]],
    )
    rows += sqlite.rows(
        f"SELECT {TURN_COLUMNS} FROM turns WHERE session_id = %s ORDER BY rowid DESC LIMIT %s",
        [session_id, RECENT_TURNS],
    )
    stale_own = [t for t in stale.turns.values() if not t.inherited]
    if changed := [t.id for t in stale_own if t.id not in kept]:
        ids_sql, ids = sqlite.in_list(changed)
        rows += sqlite.rows(
            f"SELECT {TURN_COLUMNS} FROM turns WHERE session_id = %s AND id IN {ids_sql}",
            [session_id, *ids],
        )
    read = {row[0]: TurnInfo(*row) for row in rows}
    turns = {}
    for old in stale_own:
        turn = read.pop(old.id, None) or kept.get(old.id)
        if turn is not None:  # else no longer this session's: gone
            turns[old.id] = turn
    return turns | read  # what is left: the new turns, in the order they were written


def _reuse_unchanged(turns: dict[str, "TurnInfo"], kept: dict[str, "TurnInfo"]) -> dict:
    """`turns` as just read, each replaced by its kept self when its row is the same (the same
    values of the same types: 1 and 1.0 draw differently)."""
    updated = {}
    for turn_id, turn in turns.items():
        old = kept.get(turn_id)
        if old is not None and (
            old is turn  # not read again (_own_turns_now)
            or (old.inherited == turn.inherited and _same_row(old, turn))
        ):
            turn = old  # where it differs from its siblings is kept too (alternatives_of)
        updated[turn_id] = turn
    return updated


def _same_row(a: "TurnInfo", b: "TurnInfo") -> bool:
    row_a, row_b = _row_of(a), _row_of(b)
    return row_a == row_b and tuple(map(type, row_a)) == tuple(map(type, row_b))


def _session_turns(session_id: str) -> dict[str, TurnInfo]:
    rows = sqlite.rows(f"SELECT {TURN_COLUMNS} FROM turns WHERE session_id = %s", [session_id])
    return {row[0]: TurnInfo(*row) for row in rows}


def _add_inherited_turns(session: Session, turns: dict[str, TurnInfo], problems) -> None:
    """For a turn whose parent lives in another session (a fork's first turns, or a fresh fork's
    head), load that parent's ancestry so the tree shows the thread the session continues."""
    starts = {t.parent_turn_id for t in turns.values() if t.parent_turn_id not in turns}
    if session.current_turn_id and session.current_turn_id not in turns:
        starts.add(session.current_turn_id)
    starts.discard(None)
    if not starts:
        return
    starts_sql, starts_param = sqlite.in_list(starts)
    # UNION (not UNION ALL) drops repeated rows, so a cycle in parent_turn_id ends the walk.
    rows = sqlite.rows(
        f"""WITH RECURSIVE up(id) AS (
                SELECT id FROM turns WHERE id IN {starts_sql}
                UNION
                SELECT t.parent_turn_id FROM turns t JOIN up ON t.id = up.id
                WHERE t.parent_turn_id IS NOT NULL
            )
            SELECT {TURN_COLUMNS} FROM turns WHERE id IN (SELECT id FROM up LIMIT %s)""",
        [*starts_param, INHERITED_LIMIT],
    )
    found = set()
    for row in rows:
        info = TurnInfo(*row, inherited=True)
        found.add(info.id)
        turns.setdefault(info.id, info)
    for missing in starts - found:
        orphans = [t.id for t in turns.values() if t.parent_turn_id == missing]
        for turn_id in orphans:
            problems.append(tree.Problem(turn_id, f"its parent turn {missing} does not exist"))


def add_aggregates(turns: dict[str, TurnInfo], tables: set[str] | None = None) -> None:
    """Tool-call counts, the first user message, compaction summaries and costs, for all turns
    at once: four queries whatever the number of turns."""
    if not turns:
        return
    for turn in turns.values():
        turn.aggregated = True
    ids_sql, ids = sqlite.in_list(turns)
    tables = sqlite.table_names() if tables is None else tables
    add_costs(turns, tables)
    for turn_id, calls, failed in sqlite.rows(
        f"""SELECT turn_id, count(*), sum(CASE WHEN status = 'failed' THEN 1 ELSE 0 END)
            FROM tool_calls
            WHERE turn_id IN {ids_sql} GROUP BY turn_id""",
        ids,
    ):
        turns[turn_id].tool_calls, turns[turn_id].failed_tool_calls = calls, failed or 0
    # The query a turn answers: its first user message (else its first message of any role).
    # Each is a walk of idx_messages_turn (turn_id, sequence) in order that stops at the first
    # match; ordering by role first would sort each turn's messages in a temporary b-tree.
    for turn_id, content in sqlite.rows(
        f"""SELECT t.value, coalesce(
                (SELECT substr(m.content, 1, %s) FROM messages m
                 WHERE m.turn_id = t.value AND m.role = 'user' ORDER BY m.sequence LIMIT 1),
                (SELECT substr(m.content, 1, %s) FROM messages m
                 WHERE m.turn_id = t.value ORDER BY m.sequence LIMIT 1))
            FROM {ids_sql} AS t""",
        [PROMPT_CHARS * 2, PROMPT_CHARS * 2, *ids],
    ):
        if content is not None:
            turns[turn_id].preview = plain_words(content, PROMPT_CHARS)
    add_last_writes(turns)
    if "compactions" in tables:
        for turn_id, summary in sqlite.rows(
            f"SELECT turn_id, substr(summary, 1, %s) FROM compactions WHERE turn_id IN {ids_sql}",
            [PROMPT_CHARS * 2, *ids],
        ):
            turns[turn_id].compaction_summary = plain_words(summary, PROMPT_CHARS) or "(no summary)"


def add_last_writes(turns: dict[str, TurnInfo]) -> None:
    """When each running turn last wrote a message or a tool call (two queries, for the running
    turns only: most sessions have none)."""
    running = [t.id for t in turns.values() if t.is_running]
    if not running:
        return
    ids_sql, ids = sqlite.in_list(running)
    for sql in (
        "SELECT turn_id, max(created_at) FROM messages"
        f" WHERE turn_id IN {ids_sql} GROUP BY turn_id",
        "SELECT turn_id, max(coalesce(completed_at, started_at)) FROM tool_calls"
        f" WHERE turn_id IN {ids_sql} GROUP BY turn_id",
    ):
        for turn_id, at in sqlite.rows(sql, ids):
            turn = turns[turn_id]
            if _is_time(at) and not (_is_time(turn.last_write_at) and turn.last_write_at >= at):
                turn.last_write_at = at


def add_costs(turns: dict[str, TurnInfo], tables: set[str] | None = None) -> None:
    """Each turn's billed usage (the optional turn_usage table: one query) and cost."""
    billed = billed_usage(turns, tables)
    for turn in turns.values():
        turn.billed = billed.get(turn.id)
        turn.cost = cost_of_turn(turn, billed)


def _structure_problems(session: Session, turns, layout: tree.Layout) -> list[tree.Problem]:
    problems = []
    head = session.current_turn_id
    if head is None and turns:
        problems.append(tree.Problem("", "the session has no head (current_turn_id is empty)"))
    elif head is not None and head not in turns:
        problems.append(tree.Problem(head, "the session head points to a turn that does not exist"))
    elif head is not None:
        own_children = [c for c in turns.values() if c.parent_turn_id == head and not c.inherited]
        if own_children:
            problems.append(
                tree.Problem(head, "the session head is not a leaf: it has later turns")
            )
    root = session.root_turn_id
    if root is not None and root not in turns:
        problems.append(tree.Problem(root, "the session root points to a turn that does not exist"))
    for t in turns.values():
        if not t.status_known:
            problems.append(tree.Problem(t.id, f"unknown turn status {t.status!r}"))
    return problems


def _related(session: Session) -> Related:
    related = Related()
    routing = RoutingKey(session.routing_key)
    if routing.parent_session_id:
        related.parent = Session.objects.filter(id=routing.parent_session_id).first()
        related.parent_missing = related.parent is None
    if routing.tool_call_id:
        rows = sqlite.rows(
            "SELECT id, turn_id, tool_name FROM tool_calls WHERE id = %s", [routing.tool_call_id]
        )
        if rows:
            related.tool_call = dict(zip(("id", "turn_id", "tool_name"), rows[0], strict=True))
    for kind in (SUBAGENT, FORK):
        low, high = children_prefix(kind, session.id)
        related.children += list(
            Session.objects.filter(routing_key__gte=low, routing_key__lt=high).order_by(
                "created_at"
            )[:200]
        )
    return related


def turn_info(turn_id: str) -> TurnInfo | None:
    """One turn with its aggregates, for the panel opened beside an already drawn tree."""
    rows = sqlite.rows(f"SELECT {TURN_COLUMNS} FROM turns WHERE id = %s", [turn_id])
    if not rows:
        return None
    info = TurnInfo(*rows[0])
    add_aggregates({info.id: info})
    return info
