"""Real branching conversations in a ledger: the 100 OpenAssistant message trees of
tests/fixtures/oasst/ (see its README), one session each.

A tree there alternates a person's message and the assistant's answers: a prompt may have several
answers (which people ranked), and an answer several follow-up prompts. In the Agents Ledger a turn
is a prompt and its answer, so each (prompt, answer) pair becomes a turn, the answers to one prompt
sibling turns (regenerations: same prompt, different answers), and a follow-up prompt's turns the
children of the answer's turn. A prompt nobody answered is left out (it has no turn to be). The
head follows the best-ranked answers down, as a chat UI keeps the preferred branch.
"""

import gzip
import json
from dataclasses import dataclass, field
from pathlib import Path

from builders import T0, LedgerBuilder

FIXTURE = Path(__file__).parent / "fixtures" / "oasst" / "en_100_tree.jsonl.gz"


@dataclass
class RealConversation:
    session: dict
    turns: dict[str, dict] = field(default_factory=dict)  # turn id → its row
    answers: dict[str, str] = field(default_factory=dict)  # turn id → the whole answer
    prompts: dict[str, str] = field(default_factory=dict)  # turn id → the whole prompt

    def siblings(self) -> list[list[str]]:
        """Groups of two or more turns with the same parent (roots count as siblings)."""
        groups: dict[object, list[str]] = {}
        for turn in self.turns.values():
            groups.setdefault(turn["parent_turn_id"], []).append(turn["id"])
        return [ids for ids in groups.values() if len(ids) > 1]


def trees() -> list[dict]:
    with gzip.open(FIXTURE, "rt", encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def write_conversations(ledger: LedgerBuilder, limit: int | None = None) -> list[RealConversation]:
    clock = iter(range(T0, T0 + 10**12, 30_000))
    written = []
    for tree in trees()[:limit]:
        convo = RealConversation(
            ledger.session(
                id=tree["message_tree_id"],
                label=" ".join(tree["prompt"]["text"].split())[:80],
                persona="open-assistant",
                routing_key="oasst:en:" + tree["message_tree_id"],
            )
        )
        roots = _write_answers(ledger, convo, tree["prompt"], None, clock)
        if not roots:
            continue
        head = _best_leaf(tree["prompt"])
        ledger.set_head(convo.session, convo.turns[roots[0]], convo.turns[head])
        written.append(convo)
    return written


def _write_answers(ledger, convo, prompt: dict, parent: dict | None, clock) -> list[str]:
    """The turns of one prompt: one per answer, each followed by its follow-ups' turns."""
    made = []
    for answer in _answers(prompt):
        start = next(clock)
        turn = ledger.turn(
            convo.session,
            parent,
            id=answer["message_id"],
            started_at=start,
            completed_at=start + 2_000 + len(answer["text"]) * 20,
            prompt_tokens=len(prompt["text"]) // 4 + 20,
            completion_tokens=len(answer["text"]) // 4 + 1,
            total_tokens=(len(prompt["text"]) + len(answer["text"])) // 4 + 21,
            model=answer.get("model_name") or "human-written",
        )
        ledger.message(turn, 1, content=prompt["text"])
        ledger.message(turn, 2, role="assistant", content=answer["text"])
        convo.turns[turn["id"]] = turn
        convo.prompts[turn["id"]], convo.answers[turn["id"]] = prompt["text"], answer["text"]
        made.append(turn["id"])
        for follow_up in answer.get("replies", []):
            if follow_up["role"] == "prompter":
                _write_answers(ledger, convo, follow_up, turn, clock)
    return made


def _answers(prompt: dict) -> list[dict]:
    return [r for r in prompt.get("replies", []) if r["role"] == "assistant"]


def _best_leaf(prompt: dict) -> str:
    """The turn at the end of the best-ranked answers (rank 0 first, unranked last)."""
    best = None
    while True:
        answers = sorted(_answers(prompt), key=lambda a: (a.get("rank") is None, a.get("rank")))
        if not answers:
            return best
        best = answers[0]["message_id"]
        follow_ups = [r for r in answers[0].get("replies", []) if _answers(r)]
        if not follow_ups:
            return best
        prompt = follow_ups[0]
