"""Who talks to whom: the demo personas and the channels their sessions live on.

A session's routing key follows each channel's convention (ARCHITECTURE.md §2):
`imessage:+15551234567:default`, `discord:guild-<id>:channel-<id>`, `gmail:thread-<id>` or
`gmail:<address>:inbox`, `cursor:<workspace>:<n>`.
"""

import random
from dataclasses import dataclass


@dataclass(frozen=True)
class Persona:
    name: str
    channels: tuple[tuple[str, int], ...]  # (channel, weight)
    models: tuple[tuple[str, int], ...]  # (model, weight)
    tools: tuple[tuple[str, int], ...]  # (tool name, weight)
    mean_tool_calls: float
    spawns_subagents: bool


PERSONAS = (
    Persona(
        "atlas",
        channels=(("imessage", 5), ("gmail", 3), ("discord", 2)),
        models=(("claude-sonnet-4-20250514", 6), ("gpt-5", 2), ("claude-opus-4-1-20250805", 1)),
        tools=(
            ("gog", 30), ("imsg_send", 20), ("calendar_list", 15), ("memory_search", 15),
            ("web_search", 10), ("web_fetch", 5),
        ),
        mean_tool_calls=1.6,
        spawns_subagents=False,
    ),
    Persona(
        "echo",
        channels=(("cursor", 1),),
        models=(("claude-sonnet-4-20250514", 6), ("claude-opus-4-1-20250805", 2), ("gpt-5", 2)),
        tools=(
            ("read_file", 25), ("grep", 12), ("edit_file", 12), ("run_terminal_command_v2", 14),
            ("glob_file_search", 6), ("todo_write", 5), ("apply_patch", 6), ("write", 4),
            ("read_lints", 6), ("web_search", 2), ("web_fetch", 1), ("memory_search", 1),
        ),
        mean_tool_calls=6.0,
        spawns_subagents=True,
    ),
    Persona(
        "sage",
        channels=(("discord", 3), ("gmail", 2), ("imessage", 1)),
        models=(("gemini-2.5-pro", 4), ("claude-opus-4-1-20250805", 3), ("gpt-5", 2)),
        tools=(
            ("web_search", 35), ("web_fetch", 30), ("memory_search", 10), ("write", 8),
            ("read_file", 5), ("gog", 5),
        ),
        mean_tool_calls=3.5,
        spawns_subagents=True,
    ),
)  # fmt: skip
PERSONA_WEIGHTS = (45, 35, 20)
COMPACTION_MODEL = "claude-haiku-4-5"


def weighted(rng: random.Random, pairs: tuple[tuple[str, int], ...]) -> str:
    names, weights = zip(*pairs, strict=True)
    return rng.choices(names, weights)[0]


@dataclass(frozen=True)
class Address:
    """Where a session lives: its routing key, its label and who is on the other side."""

    channel: str  # imessage, gmail, discord, cursor, ...
    event_type: str  # the Nexus event type of its inbound events
    routing_key: str
    label: str | None
    principal_id: str
    principal_type: str  # person, persona, system, unknown
    principal_is_user: bool
    policy: str  # the access policy that admits its events

    def event_id(self, rng: random.Random, t: int) -> str:
        return (
            f"{self.channel}:{self.routing_key.split(':')[1]}/{t // 1000}{rng.randrange(1000):03d}"
        )


CONTACTS = (
    ("Mom - General", "family-trusted", False),
    ("Dad", "family-trusted", False),
    ("Priya (sister)", "family-trusted", False),
    ("Alex - work", "coworkers", False),
    ("Jordan", "friends-default", False),
    ("Sam — climbing", "friends-default", False),
    ("Dentist office", "known-businesses", False),
    ("Me (notes to self)", "owner-full", True),
)
GUILDS = (
    ("Homelab", ("general", "k8s-help", "show-and-tell")),
    ("Paper Club", ("reading-list", "weekly-discussion")),
    ("Indie Hackers SF", ("launches", "feedback")),
    ("ledgerweb dev", ("bugs", "release-planning")),
)
MAIL_THREADS = (
    "Q3 board deck review", "Lease renewal — 418 Oak St", "Flight change: SFO → JFK",
    "Invoice #4471 overdue", "Kindergarten enrollment forms", "Re: contract redlines v3",
    "Conference talk proposal", "Your Amazon order has shipped", "Weekly metrics digest",
)  # fmt: skip
WORKSPACES = ("ledgerweb", "nexus-runtime", "mobile-app", "infra-terraform", "blog")
CURSOR_TASKS = (
    "Fix flaky turn-tree test", "Add keyset pagination to request list", "Refactor stage timings",
    "Migrate to Django 6.1", "Investigate 529 retries", "Dark mode for the dashboard",
    "Speed up ledger import", "Write the retention command", None,
)  # fmt: skip


def new_address(rng: random.Random, channel: str, ulid) -> Address:
    """A fresh address on a channel; about one label in ten is left empty (NULL)."""
    address = _ADDRESS_MAKERS[channel](rng, ulid)
    if rng.random() < 0.1:
        return Address(**{**address.__dict__, "label": None})
    return address


def _imessage(rng: random.Random, ulid) -> Address:
    label, policy, is_user = rng.choice(CONTACTS)
    phone = f"+1555{rng.randrange(10**7):07d}"
    return Address("imessage", "message", f"imessage:{phone}:default", label,
                   _entity(rng, ulid), "person", is_user, policy)  # fmt: skip


def _gmail(rng: random.Random, ulid) -> Address:
    subject = rng.choice(MAIL_THREADS)
    if rng.random() < 0.3:
        mailbox = rng.choice(("me@example.com", "work@acme.example", "family@example.org"))
        return Address("gmail", "email", f"gmail:{mailbox}:inbox", f"Inbox — {mailbox}",
                       _entity(rng, ulid), "person", True, "owner-full")  # fmt: skip
    thread = f"{rng.getrandbits(64):016x}"
    return Address("gmail", "email", f"gmail:thread-{thread}", subject,
                   _entity(rng, ulid), "person", False, "work-email")  # fmt: skip


def _discord(rng: random.Random, ulid) -> Address:
    guild, channels = rng.choice(GUILDS)
    channel = rng.choice(channels)
    key = f"discord:guild-{rng.randrange(10**17, 10**18)}:channel-{rng.randrange(10**17, 10**18)}"
    return Address(
        "discord",
        "message",
        key,
        f"#{channel} in {guild}",
        _entity(rng, ulid),
        "person",
        rng.random() < 0.3,
        "discord-guild-members",
    )


def _cursor(rng: random.Random, ulid) -> Address:
    workspace = rng.choice(WORKSPACES)
    return Address("cursor", "message", f"cursor:{workspace}:{rng.randrange(1, 400)}",
                   rng.choice(CURSOR_TASKS), "owner", "person", True, "owner-full")  # fmt: skip


def _entity(rng: random.Random, ulid) -> str:
    return "ent_" + ulid.new(1_700_000_000_000 + rng.randrange(10**10))[10:]


_ADDRESS_MAKERS = {"imessage": _imessage, "gmail": _gmail, "discord": _discord, "cursor": _cursor}
