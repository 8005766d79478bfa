"""Two turns side by side from the point where their threads part."""

from dataclasses import dataclass, field

from ledgerweb.costs import CostSum
from sessions.detail import TurnInfo, add_aggregates, sum_costs
from sessions.thread import ancestor_path


@dataclass
class Side:
    turn_id: str
    turns: list[TurnInfo] = field(default_factory=list)  # after the fork point, in order
    problems: list[str] = field(default_factory=list)

    @property
    def tokens(self) -> int:
        return sum(t.total_tokens for t in self.turns if isinstance(t.total_tokens, int))

    @property
    def tool_calls(self) -> int:
        return sum(t.tool_calls for t in self.turns)

    @property
    def cost(self) -> CostSum:
        return sum_costs(self.turns)

    @property
    def failed(self) -> int:
        return sum(1 for t in self.turns if t.status == "failed")


@dataclass
class Comparison:
    fork_point: TurnInfo | None  # None: the two turns share no ancestor
    shared_turns: int
    a: Side
    b: Side

    @property
    def sides(self) -> list[tuple[str, Side]]:
        return [("A", self.a), ("B", self.b)]


def compare(a_id: str, b_id: str) -> Comparison:
    path_a, problems_a = ancestor_path(a_id)
    path_b, problems_b = ancestor_path(b_id)
    shared = 0
    while shared < min(len(path_a), len(path_b)) and path_a[shared].id == path_b[shared].id:
        shared += 1
    fork_point = path_a[shared - 1] if shared else None
    # Previews and tool-call counts for the turns shown: one batch, whatever the path lengths.
    shown = path_a[shared:] + path_b[shared:] + ([fork_point] if fork_point else [])
    add_aggregates({t.id: t for t in shown})
    a = Side(a_id, path_a[shared:], problems_a or ([] if path_a else [f"no turn {a_id}"]))
    b = Side(b_id, path_b[shared:], problems_b or ([] if path_b else [f"no turn {b_id}"]))
    return Comparison(fork_point, shared, a, b)
