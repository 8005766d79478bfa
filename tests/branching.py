"""Branching conversations written the way chat UIs write them (issue 16).

ChatGPT, LibreChat or SillyTavern keep one tree per conversation: "regenerate" adds a sibling
with the same prompt and a new answer, "edit" adds a sibling with another prompt (and answers of
its own), and a user may regenerate deep in a thread or regenerate the very first answer (which,
in a ledger of turns, makes another root of the session). `chat_ui_conversation` replays a
random sequence of those actions with a seed, so a test gets many differently shaped trees
without a downloaded dataset.
"""

import random
from dataclasses import dataclass, field

from builders import T0, LedgerBuilder

TOPICS = (
    "What is my little pony about?",
    "How do I reset my router?",
    "Summarise the lease renewal email",
    "Write a haiku about the sea",
    "Why is the build slow on CI?",
)
OPENERS = ("Sure!", "Good question.", "Here is what I found:", "Let me check.", "In short,")
CLAIMS = (
    "it follows a group of friends in Equestria",
    "hold the reset button for ten seconds",
    "the rent goes up by 3 percent in March",
    "waves fold into the grey morning",
    "the cache is cold on every run",
    "it is about friendship and its magic",
    "unplug it for a minute, then plug it back in",
    "the landlord wants an answer by Friday",
)


@dataclass
class Conversation:
    session: dict
    turns: list[dict] = field(default_factory=list)
    prompts: dict[str, str] = field(default_factory=dict)  # turn id → its prompt
    answers: dict[str, str] = field(default_factory=dict)  # turn id → its answer
    tool_only: set[str] = field(default_factory=set)  # turns that answered with a tool call
    head: dict | None = None

    def siblings(self) -> list[list[str]]:
        """Groups of turn ids with the same parent (roots count as siblings), 2 or more."""
        groups: dict[object, list[str]] = {}
        for turn in self.turns:
            groups.setdefault(turn["parent_turn_id"], []).append(turn["id"])
        return [ids for ids in groups.values() if len(ids) > 1]


def chat_ui_conversation(ledger: LedgerBuilder, seed: int, depth: int = 6) -> Conversation:
    """One conversation: a thread `depth` turns deep, with regenerations (some of the first
    answer), an edited prompt with answers of its own, and a regeneration deep in the thread.
    The head is the last answer the user kept, like the UI's selected branch."""
    rng = random.Random(seed)
    convo = Conversation(ledger.session(label=f"chat {seed}"))
    clock = iter(range(T0 + seed * 10_000_000, T0 + (seed + 1) * 10_000_000, 60_000))

    def say(parent: dict | None, prompt: str) -> dict:
        answer = f"{rng.choice(OPENERS)} {rng.choice(CLAIMS)} ({rng.randrange(10**6)})."
        start = next(clock)
        turn = ledger.turn(convo.session, parent, started_at=start, completed_at=start + 4000)
        ledger.message(turn, 1, content=prompt)
        if rng.random() < 0.25:  # an agent answers with a tool call first, sometimes only that
            ledger.tool_call(turn, 2, tool_name="web_search", parameters=f'{{"q": "{answer}"}}')
            convo.tool_only.add(turn["id"])
        else:
            ledger.message(turn, 2, role="assistant", content=answer)
        convo.turns.append(turn)
        convo.prompts[turn["id"]], convo.answers[turn["id"]] = prompt, answer
        return turn

    def regenerate(turn: dict) -> dict:
        parent = next((t for t in convo.turns if t["id"] == turn["parent_turn_id"]), None)
        return say(parent, convo.prompts[turn["id"]])

    topic = rng.choice(TOPICS)
    thread = [say(None, topic)]
    for _ in range(rng.randint(1, 2)):  # the first answer regenerated: roots of one session
        regenerate(thread[0])
    for step in range(1, depth):
        thread.append(say(thread[-1], f"{topic} (follow-up {step})"))
    for _ in range(rng.randint(2, 3)):  # regenerations in the middle: "2 / 3" in a chat UI
        regenerate(thread[2])
    edited = say(thread[1], f"{topic} — but answer briefly (edited)")
    regenerate(edited)  # the edited prompt's own answers
    say(edited, "Thanks! One more detail?")
    kept = regenerate(thread[-1])  # a regeneration deep in the thread, kept as the head
    convo.head = kept
    ledger.set_head(convo.session, thread[0], kept)
    return convo
