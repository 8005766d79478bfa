"""What a session's routing key says about it (ARCHITECTURE.md §2).

- subagent:<parent_session_id>:<tool_call_id>  a session spawned by a tool call
- fork:<origin_session_id>:<new_session_id>     a session forked from a turn of another
- anything else: a main session; its channel is the part before the first colon
"""

from dataclasses import dataclass

SUBAGENT = "subagent"
FORK = "fork"
MAIN = "main"
KINDS = (MAIN, SUBAGENT, FORK)


@dataclass(frozen=True)
class RoutingKey:
    raw: str

    @property
    def parts(self) -> list[str]:
        return (self.raw or "").split(":")

    @property
    def kind(self) -> str:
        head = self.parts[0]
        if head in (SUBAGENT, FORK) and len(self.parts) >= 3:
            return head
        return MAIN

    @property
    def channel(self) -> str:
        return self.parts[0] if ":" in (self.raw or "") else ""

    @property
    def parent_session_id(self) -> str | None:
        """The spawning session of a subagent, or the origin of a fork."""
        return self.parts[1] if self.kind != MAIN else None

    @property
    def tool_call_id(self) -> str | None:
        return ":".join(self.parts[2:]) if self.kind == SUBAGENT else None


def children_prefix(kind: str, session_id: str) -> tuple[str, str]:
    """The routing-key range [low, high) of the sessions spawned or forked from a session, for a
    range query on the routing_key index."""
    low = f"{kind}:{session_id}:"
    return low, low[:-1] + ";"  # ';' sorts right after ':'
