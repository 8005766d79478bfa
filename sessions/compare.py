"""Two turns side by side from the point where their threads part (issue 16).

The page shows the common ancestor, then each path from there with every turn's prompt and
answer, then the two chosen turns' answers in full with a word-level diff where they are alike,
and per side the totals a user weighs branches by. Bounded whatever the ledger: a side shows the
first and last turns of its path (the middle is counted), and the diff reads the first
RESPONSE_CHARS characters of each answer, saying when it was cut.
"""

import re
from dataclasses import dataclass, field
from difflib import SequenceMatcher

from ledgerweb import dialect, sqlite
from ledgerweb.costs import CostSum
from ledgerweb.text import as_text
from sessions.alternatives import add_answers
from sessions.detail import FAILED, TurnInfo, add_aggregates, add_costs, sum_costs, token_totals
from sessions.membership import turn_in_session
from sessions.models import Session
from sessions.thread import ancestor_path

RESPONSE_CHARS = 20_000
PROMPT_CHARS = 2_000  # of the prompt each side answers (the page shows 300)
EDGE_TURNS = 25  # turns shown at each end of a side's path
# Below this share of words in common passages, a word diff is noise. A passage is a run of at
# least MIN_RUN words: single common words (the, and, in the) match anywhere in two unrelated
# answers and made their diff a speckle of struck and underlined words.
SIMILAR_ENOUGH = 0.3
MIN_RUN = 3
NO_SUCH_TURN = "no such turn in this session"


@dataclass
class Response:
    """The chosen turn's answer: its assistant messages, in order, cut at RESPONSE_CHARS."""

    prompt: str  # the first PROMPT_CHARS characters of the turn's first user message
    text: str
    cut: bool
    prompt_chars: int = 0  # the whole prompt's length
    prompt_cut: bool = False
    # Word diff against the other side: (kind, words), kind "same", "del" (only on side A)
    # or "ins" (only on side B). Empty when the answers are too different to diff.
    diff: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class Side:
    turn_id: str
    problems: list[str] = field(default_factory=list)
    first_turns: list[TurnInfo] = field(default_factory=list)  # after the fork point, in order
    hidden_turns: int = 0  # between first_turns and last_turns, counted only
    last_turns: list[TurnInfo] = field(default_factory=list)
    # What the side adds after the fork point.
    totals: dict = field(default_factory=dict)
    cost: CostSum = field(default_factory=CostSum)  # of every turn after the fork point
    response: Response | None = None

    @property
    def found(self) -> bool:
        return NO_SUCH_TURN not in self.problems


@dataclass
class Comparison:
    fork_point: TurnInfo | None  # None: the two turns share no ancestor
    shared_turns: int
    a: Side
    b: Side

    @property
    def sides(self) -> list[tuple[str, Side]]:
        return [("A", self.a), ("B", self.b)]

    @property
    def both_found(self) -> bool:
        return self.a.found and self.b.found


def compare(session: Session, a_id: str, b_id: str) -> Comparison:
    path_a, a = _side(session, a_id)
    path_b, b = _side(session, b_id)
    shared = 0
    while shared < min(len(path_a), len(path_b)) and path_a[shared].id == path_b[shared].id:
        shared += 1
    fork_point = path_a[shared - 1] if shared else None
    # Costs of every turn after the fork point (one query), for the sides' totals.
    add_costs({t.id: t for path in (path_a, path_b) for t in path[shared:]})
    for side, path in ((a, path_a), (b, path_b)):
        _fill(side, path[shared:])
    # Previews, answers and tool-call counts of the turns shown: one batch for both sides.
    shown = {t.id: t for s in (a, b) for t in s.first_turns + s.last_turns}
    if fork_point:
        shown[fork_point.id] = fork_point
    add_aggregates(shown)
    add_answers(shown)
    if a.found and b.found:
        a.response, b.response = load_response(a_id), load_response(b_id)
        add_word_diff(a.response, b.response)
    return Comparison(fork_point, shared, a, b)


def _side(session: Session, turn_id: str) -> tuple[list[TurnInfo], Side]:
    """The turn's path from its root, if the turn is in this session's tree."""
    side = Side(turn_id)
    if not turn_in_session(session.id, session.current_turn_id, turn_id):
        side.problems.append(NO_SUCH_TURN)
        return [], side
    path, side.problems = ancestor_path(turn_id)
    return path, side


def _fill(side: Side, after: list[TurnInfo]) -> None:
    """The side's turns after the fork point: the first and last EDGE_TURNS, and its totals."""
    if len(after) > 2 * EDGE_TURNS:
        side.first_turns, side.last_turns = after[:EDGE_TURNS], after[-EDGE_TURNS:]
        side.hidden_turns = len(after) - 2 * EDGE_TURNS
    else:
        side.first_turns = after
    durations = [t.duration_ms for t in after if t.duration_ms is not None]
    side.totals = {
        "turns": len(after),
        **token_totals(after),
        "failed_turns": sum(1 for t in after if t.status == FAILED),
        "duration_ms": sum(durations) if durations else None,
    }
    side.totals["tool_calls"], side.totals["failed_tool_calls"] = _call_counts(after)
    side.cost = sum_costs(after)


def _call_counts(turns: list[TurnInfo]) -> tuple[int, int]:
    """Tool calls of all the side's turns (not only those shown): one query."""
    if not turns:
        return 0, 0
    ids_sql, ids = sqlite.in_list(t.id for t in turns)
    ((calls, failed),) = sqlite.rows(
        "SELECT count(*), coalesce(sum(CASE WHEN status = 'failed' THEN 1 ELSE 0 END), 0)"
        f" FROM tool_calls WHERE turn_id IN {ids_sql}",
        ids,
    )
    return calls, failed


def load_response(turn_id: str) -> Response:
    """The turn's prompt and its answer (its assistant messages, in order), bounded."""
    prompt, prompt_chars, parts, size = None, 0, [], 0
    content_sql = dialect.whole("content")  # past a NUL too: SQLite's substr() stops at one
    for role, content, length in sqlite.rows(
        f"""SELECT role, substr({content_sql}, 1, %s), length({content_sql}) FROM messages
           WHERE turn_id = %s ORDER BY sequence, created_at, id LIMIT 200""",
        [RESPONSE_CHARS, turn_id],
    ):
        text = as_text(content)  # a BLOB, or a text holding a NUL, comes as bytes
        if role == "user" and not prompt:
            prompt, prompt_chars = text, length if isinstance(length, int) else len(text)
        elif role == "assistant" and size < RESPONSE_CHARS:
            parts.append(text)
            size += length if isinstance(length, int) else len(text)
    text = "\n\n".join(parts)
    prompt = prompt or ""
    return Response(
        prompt[:PROMPT_CHARS],
        text[:RESPONSE_CHARS],
        size > RESPONSE_CHARS,
        prompt_chars=prompt_chars if prompt else 0,
        prompt_cut=prompt_chars > PROMPT_CHARS,
    )


_WORDS = re.compile(r"\S+\s*|\s+")


def add_word_diff(a: Response, b: Response) -> None:
    """Mark the words only one answer has, when the answers are alike enough to read a diff."""
    words_a, words_b = _WORDS.findall(a.text), _WORDS.findall(b.text)
    if not words_a or not words_b or a.text == b.text:
        return
    matcher = SequenceMatcher(None, words_a, words_b, autojunk=False)
    in_passages = sum(b.size for b in matcher.get_matching_blocks() if b.size >= MIN_RUN)
    if 2 * in_passages / (len(words_a) + len(words_b)) < SIMILAR_ENOUGH:
        return
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            a.diff.append(("same", "".join(words_a[i1:i2])))
            b.diff.append(("same", "".join(words_b[j1:j2])))
            continue
        if i2 > i1:
            a.diff.append(("del", "".join(words_a[i1:i2])))
        if j2 > j1:
            b.diff.append(("ins", "".join(words_b[j1:j2])))


# Candidates offered by "compare with…": enough to choose from, bounded in any tree.
PICK_LIMIT = 100


def candidates(session_tree, exclude: str) -> list[TurnInfo]:
    """The session's leaves and branch points, newest first: where branches end and part."""
    rows = [
        r
        for r in session_tree.layout.rows
        if (r.is_leaf or len(r.child_ids) > 1) and r.node.id != exclude
    ]
    rows.sort(key=lambda r: (r.on_head_path, str(r.node.started_at)), reverse=True)
    picked = {r.node.id: r.node.data for r in rows[:PICK_LIMIT]}
    add_answers(picked)
    return list(picked.values())
