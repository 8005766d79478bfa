"""Every answer at a branch point (issue 28): a turn's children — regenerations of one prompt, or
branches of edited prompts — side by side, each with its answer and what happened below it:
where it ended (its leaves, their status, whether the head is there), how many turns, tokens,
cost, failures and time. From the tree kept in memory (sessions/detail.py): no query but the
siblings' answers, which the tree has read already."""

from dataclasses import dataclass

from ledgerweb.costs import CostSum, token_count
from sessions.alternatives import add_answers
from sessions.detail import FAILED, SessionTree, TurnInfo, sum_costs
from sessions.tree import Row, subtree_end


@dataclass
class Branch:
    turn: TurnInfo
    position: int  # 1-based, as the tree draws them (the head's branch last)
    count: int
    same_prompt: bool  # another sibling asks the same: this is another answer to it
    turns: int  # the turn and all below it
    tokens: int
    cost: CostSum
    failed: int  # failed turns in the branch
    duration_ms: int  # the turns' own durations, summed
    leaves: int
    ended: TurnInfo  # where it ends: the head if it is here, else its latest leaf
    holds_head: bool

    @property
    def ended_status(self) -> str:
        return self.ended.status


@dataclass
class BranchPoint:
    parent: TurnInfo | None  # None: the session's first turns (several roots)
    branches: list[Branch]

    @property
    def shared_prompt(self) -> str | None:
        """The prompt every branch answers, when they all answer one (regenerations)."""
        prompts = {b.turn.preview for b in self.branches}
        return prompts.pop() if len(prompts) == 1 else None

    @property
    def label(self) -> str:
        same = all(b.same_prompt for b in self.branches)
        return f"{len(self.branches)} answers" if same else f"{len(self.branches)} branches"


def branch_point(session_tree: SessionTree, turn_id: str | None) -> BranchPoint | None:
    """The branches below `turn_id` (its children), or below the session's start when None (its
    roots); None when there are fewer than two."""
    layout = session_tree.layout
    if turn_id is None:
        parent = None
        starts = [r for r in layout.rows if r.is_root and not r.node.data.inherited]
    else:
        row = layout.by_id.get(turn_id)
        if row is None:
            return None
        parent = row.node.data
        starts = [layout.by_id[k] for k in row.child_ids if k in layout.by_id]
    if len(starts) < 2:
        return None
    add_answers({r.node.id: r.node.data for r in starts})
    prompts = [r.node.data.preview for r in starts]
    head = session_tree.session.current_turn_id
    branches = []
    for position, start in enumerate(starts, start=1):
        below = layout.rows[start.index : subtree_end(layout, start) + 1]
        branches.append(_branch(start, below, position, len(starts), prompts, head))
    return BranchPoint(parent, branches)


def _branch(start: Row, below: list[Row], position: int, count: int, prompts, head) -> Branch:
    turns = [r.node.data for r in below]
    leaves = [r for r in below if not r.has_children]
    holds_head = any(t.id == head for t in turns)
    if holds_head:
        ended = next(t for t in turns if t.id == head)
    else:
        ended = max((r.node.data for r in leaves), key=_started, default=start.node.data)
    return Branch(
        turn=start.node.data,
        position=position,
        count=count,
        same_prompt=prompts.count(start.node.data.preview) > 1,
        turns=len(turns),
        tokens=sum(token_count(t.total_tokens) for t in turns),
        cost=sum_costs(turns),
        failed=sum(1 for t in turns if t.status == FAILED),
        duration_ms=sum(t.duration_ms or 0 for t in turns),
        leaves=len(leaves),
        ended=ended,
        holds_head=holds_head,
    )


def _started(turn: TurnInfo) -> float:
    return turn.started_at if isinstance(turn.started_at, int | float) else float("-inf")


def as_json(point: BranchPoint) -> dict:
    return {
        "parent_turn_id": point.parent.id if point.parent else None,
        "label": point.label,
        "branches": [
            {
                "turn_id": b.turn.id,
                "position": b.position,
                "count": b.count,
                "prompt": b.turn.preview,
                "answer": b.turn.answer,
                "same_prompt": b.same_prompt,
                "turns": b.turns,
                "tokens": b.tokens,
                "cost": b.cost.as_json(),
                "failed_turns": b.failed,
                "duration_ms": b.duration_ms,
                "leaves": b.leaves,
                "ended_turn_id": b.ended.id,
                "ended_status": b.ended.status,
                "holds_head": b.holds_head,
            }
            for b in point.branches
        ],
    }
