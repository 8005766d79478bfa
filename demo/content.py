"""What the demo's people and agents say: user messages, Markdown answers, summaries.

Texts are assembled once per build into pools (from the seeded generator) and then picked per row:
formatting a fresh text for each of millions of messages would dominate a large build.
"""

import random

POOL_SIZE = 160

USER_MESSAGES = {
    "atlas": (
        "What's the 2FA code from Amazon?",
        "Can you move my dentist appointment to next Thursday afternoon?",
        "Remind Mom about Sunday dinner at 6",
        "Did Alex reply about the {thing}?",
        "Summarise my unread email from today, skip newsletters",
        "What's on my calendar tomorrow?",
        "Text Jordan that I'm running 10 minutes late",
        "Find the receipt for the {thing} and forward it to accounting",
        "When is the {thing} due?",
        "Why does `<img src=x onerror=alert(1)>` show up in my inbox preview?",
        "ok thanks 🙏",
        "Book a table for 4 on Friday, somewhere near the office",
    ),
    "echo": (
        "The {thing} test is flaky on CI, can you find out why?",
        "Add keyset pagination to the {thing} view",
        "Refactor {thing} into smaller functions, keep behaviour identical",
        "Run the test suite and fix whatever fails",
        "Why is `{thing}` so slow on a 2 GB ledger?",
        "Write a migration note for the {thing} change",
        "Review this diff and tell me what could break",
        "Rename `{thing}` everywhere and update the docs",
        "Can you add type hints to {thing}?",
        "That broke the build — revert the last edit and try another approach",
    ),
    "sage": (
        "Find recent papers on {thing} and summarise the main results",
        "Compare the three best-known approaches to {thing} in a table",
        "What does the literature say about {thing}? Cite sources",
        "Draft a one-page brief on {thing} for the reading group",
        "Is the claim in this thread about {thing} actually true?",
        "Collect benchmark numbers for {thing} from the last two years",
    ),
}
THINGS = {
    "atlas": ("lease renewal", "flight change", "invoice 4471", "school forms", "board deck"),
    "echo": ("turn_tree", "request_list", "stage_timings", "ledger_import", "retention_policy",
             "session_fork", "health_check", "keyset_paginator"),
    "sage": ("retrieval-augmented generation", "speculative decoding", "context compaction",
             "agent memory", "tool-use evaluation", "long-context benchmarks"),
}  # fmt: skip
STATUSES = ("ok", "slow", "✗")
LANGUAGES = {"atlas": "text", "echo": "python", "sage": "markdown"}

OPENERS = (
    "Here's what I found.", "Done — summary below.", "Short answer: yes, with one caveat.",
    "I checked the sources and here is the picture.", "Good catch; this needs a fix.",
    "All set.", "There are two options, each with a trade-off.",
)  # fmt: skip
HEADINGS = ("Summary", "What I changed", "Findings", "Next steps", "Details", "Why it failed")
BULLETS = (
    "The failure only happens when the ledger is in rollback-journal mode",
    "Two sources agree, the third uses an older dataset",
    "Moved the appointment; the office confirmed by email",
    "Added a regression test that reproduces the race",
    "The slow query scans `nexus_requests` without the `started_at` index",
    "No action needed from you",
    "Costs roughly 1.2k tokens per call",
    "Kept the public API unchanged",
)  # fmt: skip
CODE = {
    "python": (
        "def keyset_page(qs, after=None, size=50):\n"
        "    if after:\n"
        "        qs = qs.filter(started_at__lt=after)\n"
        "    return list(qs.order_by('-started_at', '-id')[:size])\n"
    ),
    "text": "Thu 14:30  Dentist — Dr. Lee (moved from Tue)\nFri 19:00  Dinner, 4 people\n",
    "markdown": "| paper | year | gain |\n|---|---|---|\n| FlashAttention-3 | 2024 | 1.5–2.0× |\n",
}
INTERIM = (
    "Let me look at the relevant files first.", "Checking the logs.", "Running the tests now.",
    "Searching for sources.", "Let me check your calendar.", "Reading the thread.",
    "That didn't work; trying another way.", "Updating the todo list.",
)  # fmt: skip
FAILURE_NOTES = (
    "⚠️ I hit an error before I could finish. Retrying might help.",
    "Sorry — the model provider returned an error mid-answer.",
)
SYSTEM_PROMPTS = {
    "atlas": "You are Atlas, a personal assistant with access to iMessage, Gmail and Calendar. "
    "Be brief. Never send a message without confirmation unless the user asked explicitly.",
    "echo": "You are Echo, a coding agent working in the user's Cursor workspace. Make small, "
    "tested changes. Run the test suite before declaring success.",
    "sage": "You are Sage, a research assistant. Cite every claim. Prefer primary sources.",
}


class ContentPools:
    """Per-persona pools of ready texts, built once per build from the seeded generator."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.user = {p: [_user_message(rng, p) for _ in range(POOL_SIZE)] for p in USER_MESSAGES}
        self.answers = {p: [_answer(rng, p) for _ in range(POOL_SIZE)] for p in USER_MESSAGES}
        self.summaries = [_summary(rng) for _ in range(POOL_SIZE // 4)]
        self.long_documents = [_long_document(rng, i) for i in range(4)]

    def user_message(self, persona: str) -> str:
        return self.rng.choice(self.user[persona])

    def answer(self, persona: str) -> str:
        return self.rng.choice(self.answers[persona])

    def interim(self) -> str:
        return self.rng.choice(INTERIM)

    def failure_note(self) -> str:
        return self.rng.choice(FAILURE_NOTES)

    def summary(self) -> str:
        return self.rng.choice(self.summaries)

    def long_document(self) -> str:
        return self.rng.choice(self.long_documents)


def _user_message(rng: random.Random, persona: str) -> str:
    return rng.choice(USER_MESSAGES[persona]).format(thing=rng.choice(THINGS[persona]))


def _answer(rng: random.Random, persona: str) -> str:
    """A Markdown answer: an opener and a few blocks (heading, list, table, code)."""
    blocks = [rng.choice(OPENERS)]
    for _ in range(rng.randint(0, 3)):
        blocks.append(rng.choice(_BLOCKS)(rng, persona))
    return "\n\n".join(blocks)


def _heading_block(rng: random.Random, persona: str) -> str:
    return f"## {rng.choice(HEADINGS)}\n\n{rng.choice(BULLETS)}."


def _list_block(rng: random.Random, persona: str) -> str:
    items = rng.sample(BULLETS, rng.randint(2, 4))
    marker = rng.choice(("-", "1."))
    return "\n".join(f"{marker} {item}" for item in items)


def _table_block(rng: random.Random, persona: str) -> str:
    rows = "\n".join(
        f"| {rng.choice(THINGS[persona])} | {rng.randint(1, 99)} | {rng.choice(STATUSES)} |"
        for _ in range(rng.randint(2, 5))
    )
    return f"| item | value | status |\n|---|---:|---|\n{rows}"


def _code_block(rng: random.Random, persona: str) -> str:
    language = LANGUAGES[persona]
    return f"```{language}\n{CODE[language]}```"


_BLOCKS = (_heading_block, _list_block, _table_block, _code_block)


def _summary(rng: random.Random) -> str:
    points = "\n".join(f"- {item}" for item in rng.sample(BULLETS, 4))
    return (
        "## Conversation summary\n\n"
        f"The user and the agent worked on {rng.choice(THINGS['echo'] + THINGS['atlas'])}.\n\n"
        f"### Decisions so far\n\n{points}\n\n"
        "### Open items\n\n- Confirm the fix on CI\n- Reply to the pending email"
    )


def _long_document(rng: random.Random, index: int) -> str:
    """A very long answer (tens of KB): a report with many sections, tables and code."""
    target = rng.randint(20_000, 60_000)
    parts = [f"# Full report #{index + 1}\n\nThis is the complete write-up you asked for."]
    size = len(parts[0])
    section = 0
    while size < target:
        section += 1
        persona = rng.choice(tuple(USER_MESSAGES))
        text = (
            f"## {section}. {rng.choice(HEADINGS)}\n\n"
            + "\n\n".join(block(rng, persona) for block in _BLOCKS)
            + "\n\n"
            + " ".join(rng.choice(BULLETS) + "." for _ in range(12))
        )
        parts.append(text)
        size += len(text)
    return "\n\n".join(parts)
