"""Nexus Ledger rows: one request per event, traced through the eight pipeline stages.

Requests come in two streams: one per agent turn (written in the same loop as the turn, so the
request's turn, session key, persona, model and tokens are the turn's), and extra requests that
never reached an agent (hooks, denials, early failures, timers and webhooks) filling the daily
rhythm of the last 30 days.
"""

import json
import random
from dataclasses import dataclass

from ledgerfacts.ulid import UlidFactory

from .errors import DELIVERY_ERRORS, stage_error
from .personas import Address, new_address
from .sink import COLUMNS, RowSink
from .timeline import HISTORY, MINUTE, SECOND, SNAPSHOT_RETENTION, rhythmic_time

STAGES = (
    "receiveEvent", "resolveIdentity", "resolveAccess", "executeTriggers",
    "assembleContext", "runAgent", "deliverResponse", "finalize",
)  # fmt: skip
BEFORE_AGENT = STAGES[:5]
HOOK_HANDLED_PATH = (*STAGES[:4], "finalize")
DENIED_PATH = (*STAGES[:3], "finalize")
NO_REPLY_PATH = (*STAGES[:5], "finalize")
# Typical duration of each stage (median ms, lognormal sigma); runAgent comes from the turn.
STAGE_MS = {
    "receiveEvent": (8, 0.5), "resolveIdentity": (15, 0.8), "resolveAccess": (4, 0.5),
    "executeTriggers": (25, 0.9), "assembleContext": (120, 0.6), "runAgent": (6000, 0.9),
    "deliverResponse": (450, 0.6), "finalize": (6, 0.5),
}  # fmt: skip
JSON_FIELDS = (
    "permissions", "hooks_matched", "hooks_fired", "hooks_context", "agent_tool_calls",
    "delivery_message_ids", "stage_timings",
)  # fmt: skip
# One encoder for every row: json.dumps(..., ensure_ascii=False) builds a new one per call.
to_json = json.JSONEncoder(ensure_ascii=False).encode

# Hooks the runtime knows, and a few leftovers nobody documented (the dashboard must cope).
MESSAGE_HOOKS = ("otp-autofill", "spam-filter", "newsletter-digest", "calendar-invite-parser",
                 "mute-after-midnight", "auto-reply-ooo")  # fmt: skip
UNKNOWN_HOOKS = ("legacy-forwarder-v0", "tmp-test-hook", "zapier-bridge")
TIMER_HOOKS = ("daily-briefing", "inbox-zero-sweep", "backup-ledger")
WEBHOOK_HOOKS = {"github": ("github-pr-notifier",), "stripe": ("stripe-receipt-filer",)}

PERMISSIONS = {
    "owner-full": {"tools": {"allow": ["*"]}, "credentials": ["gmail", "calendar", "imessage"]},
    "family-trusted": {"tools": {"allow": ["*"], "deny": ["run_terminal_command_v2"]},
                       "credentials": ["calendar"]},
    "friends-default": {"tools": {"allow": ["web_search", "calendar_list"]}, "credentials": []},
    "coworkers": {"tools": {"allow": ["calendar_list", "gog"]}, "credentials": ["calendar"]},
    "known-businesses": {"tools": {"allow": ["calendar_list"]}, "credentials": []},
    "work-email": {"tools": {"allow": ["gog", "calendar_list", "memory_search"]},
                   "credentials": ["gmail"]},
    "discord-guild-members": {"tools": {"allow": ["web_search", "web_fetch", "memory_search"]},
                              "credentials": []},
    "system-timers": {"tools": {"allow": ["*"]}, "credentials": ["gmail", "calendar"]},
    "webhooks-signed": {"tools": {"allow": []}, "credentials": []},
}  # fmt: skip

EXTRA_KINDS = (
    ("no_reply", 30), ("hook_handled", 24), ("denied", 10), ("failed_early", 11),
    ("timer", 15), ("webhook", 10),
)  # fmt: skip


@dataclass(frozen=True)
class AgentTurn:
    """What the pipeline needs to know about the turn an agent ran for a request."""

    id: str
    status: str  # completed, failed, pending, streaming
    started_at: int
    completed_at: int | None
    model: str
    prompt_tokens: int | None
    completion_tokens: int | None
    total_tokens: int | None
    tool_names: list[str]
    event_id: str
    delivering: bool = False  # a just-finished head whose reply is still being delivered


class RequestFactory:
    def __init__(self, rng: random.Random, ulid: UlidFactory, sink: RowSink, now: int):
        self.rng = rng
        self.ulid = ulid
        self.sink = sink
        self.now = now
        self.snapshot_cutoff = now - SNAPSHOT_RETENTION
        self.recent_addresses: list[tuple[Address, str]] = []  # (address, persona) for extras

    # ----- the two streams -------------------------------------------------------------

    def for_turn(self, address: Address, persona: str, turn: AgentTurn) -> None:
        rng = self.rng
        timings = {stage: self._stage_ms(stage) for stage in BEFORE_AGENT}
        started = turn.started_at - sum(timings.values()) - 1
        row = self._event_row(address, turn.event_id, started)
        self._identity(row, address)
        self._access(row, address, persona)
        self._hooks(row, handled=False)
        self._agent(row, turn)
        if turn.status in ("pending", "streaming"):
            return self._write(row, timings, "processing", "runAgent")
        timings["runAgent"] = turn.completed_at - turn.started_at
        if turn.status == "failed":
            return self._fail(row, timings, "runAgent", address.channel)
        if turn.delivering:
            return self._write(row, timings, "processing", "deliverResponse")
        timings["deliverResponse"] = self._stage_ms("deliverResponse")
        if address.channel in DELIVERY_ERRORS and rng.random() < 0.03:
            self._delivery(row, address, success=False)
            return self._fail(row, timings, "deliverResponse", address.channel)
        self._delivery(row, address, success=True)
        timings["finalize"] = self._stage_ms("finalize")
        if rng.random() < 0.003:
            return self._fail(row, timings, "finalize", address.channel)
        return self._write(row, timings, "completed", "finalize")

    def extra(self, kind: str, started: int) -> None:
        getattr(self, f"_extra_{kind}")(started)

    def recent_processing(self, started: int) -> None:
        """A request still on its way through the stages before the agent."""
        address, persona = self._known_address()
        stage = self.rng.choice(BEFORE_AGENT)
        reached = BEFORE_AGENT[: BEFORE_AGENT.index(stage)]
        row = self._event_row(address, address.event_id(self.rng, started), started)
        self._fill_until(row, address, persona, reached)
        self._write(row, {s: self._stage_ms(s) for s in reached}, "processing", stage)

    def remember(self, address: Address, persona: str) -> None:
        """Keep a bounded sample of real addresses, for extra requests to come from."""
        if len(self.recent_addresses) < 500:
            self.recent_addresses.append((address, persona))
        else:
            self.recent_addresses[self.rng.randrange(500)] = (address, persona)

    # ----- extra requests (no agent turn) ------------------------------------------------

    def _extra_no_reply(self, started: int) -> None:
        """A group message not addressed to the persona: context updated, no agent run."""
        address, persona = self._known_address()
        row = self._event_row(address, address.event_id(self.rng, started), started)
        self._fill_until(row, address, persona, NO_REPLY_PATH)
        row["hooks_context"] = {"reply": False, "reason": "not addressed to the persona"}
        self._write(row, self._timings(NO_REPLY_PATH), "completed", "finalize")

    def _extra_hook_handled(self, started: int) -> None:
        address, persona = self._known_address()
        row = self._event_row(address, address.event_id(self.rng, started), started)
        self._fill_until(row, address, persona, HOOK_HANDLED_PATH[:3])
        self._hooks(row, handled=True)
        self._write(row, self._timings(HOOK_HANDLED_PATH), "skipped", "finalize")

    def _extra_denied(self, started: int) -> None:
        address = new_address(self.rng, self.rng.choice(("imessage", "gmail", "discord")),
                              self.ulid)  # fmt: skip
        row = self._event_row(address, address.event_id(self.rng, started), started)
        row.update(principal_id=None, principal_type="unknown", principal_is_user=0,
                   access_decision="deny", access_policy="unknown-sender-deny")  # fmt: skip
        self._write(row, self._timings(DENIED_PATH), "skipped", "finalize")

    def _extra_failed_early(self, started: int) -> None:
        address, persona = self._known_address()
        stage = self.rng.choice(BEFORE_AGENT)
        reached = BEFORE_AGENT[: BEFORE_AGENT.index(stage) + 1]
        row = self._event_row(address, address.event_id(self.rng, started), started)
        self._fill_until(row, address, persona, reached[:-1])
        self._fail(row, self._timings(reached), stage, address.channel)

    def _extra_timer(self, started: int) -> None:
        hook = self.rng.choice(TIMER_HOOKS)
        event = f"timer:{hook}/{started // 1000}"
        self._system_event(started, "timer", "timer", event, (hook,), "system-timers")

    def _extra_webhook(self, started: int) -> None:
        source = self.rng.choice(tuple(WEBHOOK_HOOKS))
        event = f"{source}:delivery-{self.rng.getrandbits(48):012x}"
        self._system_event(started, "webhook", source, event, WEBHOOK_HOOKS[source],
                           "webhooks-signed")  # fmt: skip

    def _system_event(self, started, event_type, source, event_id, hooks, policy) -> None:
        """Timers and webhooks: handled by a hook, sometimes failing in it (or unsigned)."""
        row = self._row(event_id, event_type, source, started)
        row.update(principal_id=f"system:{source}", principal_type="system", principal_is_user=0)
        if source != "timer" and self.rng.random() < 0.1:
            row.update(access_decision="deny", access_policy="unsigned-webhook")
            return self._write(row, self._timings(DENIED_PATH), "skipped", "finalize")
        row.update(access_decision="allow", access_policy=policy, session_key=f"{source}:system",
                   session_persona="atlas", permissions=PERMISSIONS[policy])  # fmt: skip
        matched = list(hooks) + (["tmp-test-hook"] if self.rng.random() < 0.1 else [])
        row.update(hooks_matched=matched, hooks_fired=list(hooks))
        if self.rng.random() < 0.12:
            row["hooks_handled"] = 0
            return self._fail(row, self._timings(STAGES[:4]), "executeTriggers", None)
        row.update(hooks_handled=1, hooks_context={"handled_by": hooks[0], "actions": 1})
        self._write(row, self._timings(HOOK_HANDLED_PATH), "skipped", "finalize")

    # ----- stage fields ------------------------------------------------------------------

    def _known_address(self) -> tuple[Address, str]:
        return self.rng.choice(self.recent_addresses)

    def _event_row(self, address: Address, event_id: str, started: int) -> dict:
        return self._row(event_id, address.event_type, address.channel, started)

    def _row(self, event_id: str, event_type: str, source: str, started: int) -> dict:
        row = dict.fromkeys(COLUMNS["nexus_requests"])
        row.update(id=self.ulid.new(started), event_id=event_id, event_type=event_type,
                   event_source=source, started_at=started)  # fmt: skip
        return row

    def _fill_until(self, row: dict, address: Address, persona: str, reached) -> None:
        if "resolveIdentity" in reached:
            self._identity(row, address)
        if "resolveAccess" in reached:
            self._access(row, address, persona)
        if "executeTriggers" in reached:
            self._hooks(row, handled=False)

    def _identity(self, row: dict, address: Address) -> None:
        row.update(principal_id=address.principal_id, principal_type=address.principal_type,
                   principal_is_user=int(address.principal_is_user))  # fmt: skip

    def _access(self, row: dict, address: Address, persona: str) -> None:
        row.update(access_decision="allow", access_policy=address.policy,
                   session_key=address.routing_key, session_persona=persona,
                   permissions=PERMISSIONS[address.policy])  # fmt: skip

    def _hooks(self, row: dict, *, handled: bool) -> None:
        """Matched hooks; fired is a subset (a hook's own filter may decline to run)."""
        rng = self.rng
        if not handled and rng.random() < 0.55:
            row.update(hooks_matched=[], hooks_fired=[], hooks_handled=0, hooks_context={})
            return
        pool = MESSAGE_HOOKS + UNKNOWN_HOOKS if rng.random() < 0.08 else MESSAGE_HOOKS
        matched = rng.sample(pool, rng.randint(1, 3))
        fired = [hook for hook in matched if rng.random() < 0.7] or matched[:1]
        context = {"handled_by": fired[0], "otp": "847291"} if handled else {"tags": fired}
        row.update(hooks_matched=matched, hooks_fired=fired, hooks_handled=int(handled),
                   hooks_context=context)  # fmt: skip

    def _agent(self, row: dict, turn: AgentTurn) -> None:
        row.update(
            turn_id=turn.id,
            agent_model=turn.model,
            agent_tokens_prompt=turn.prompt_tokens,
            agent_tokens_completion=turn.completion_tokens,
            agent_tokens_total=turn.total_tokens,
            agent_tool_calls=turn.tool_names,
        )

    def _delivery(self, row: dict, address: Address, *, success: bool) -> None:
        ids = [f"{address.channel}-msg-{self.rng.getrandbits(40):010x}"] if success else []
        row.update(delivery_channel=address.channel, delivery_message_ids=ids,
                   delivery_success=int(success))  # fmt: skip

    # ----- timings, errors, writing --------------------------------------------------------

    def _stage_ms(self, stage: str) -> int:
        median, sigma = STAGE_MS[stage]
        return max(1, int(median * self.rng.lognormvariate(0, sigma)))

    def _timings(self, stages) -> dict[str, int]:
        return {stage: self._stage_ms(stage) for stage in stages}

    def _fail(self, row: dict, timings: dict, stage: str, channel: str | None) -> None:
        message, stack = stage_error(self.rng, stage, channel)
        row.update(error_stage=stage, error_message=message, error_stack=stack)
        if stage == "deliverResponse":
            row["delivery_error"] = message
        self._write(row, timings, "failed", stage)

    def _write(self, row: dict, timings: dict, status: str, stage: str) -> None:
        row.update(status=status, stage=stage, stage_timings=timings)
        if status != "processing":
            row["completed_at"] = row["started_at"] + sum(timings.values())
            if row["started_at"] >= self.snapshot_cutoff:
                row["request_snapshot"] = to_json({k: v for k, v in row.items() if v is not None})
        for field in JSON_FIELDS:
            if row[field] is not None:
                row[field] = to_json(row[field])
        self.sink.add("nexus_requests", tuple(row.values()))


def write_extra_requests(factory: RequestFactory, rng: random.Random, count: int, now: int,
                         progress) -> None:  # fmt: skip
    """Requests that never ran an agent, spread over the last 30 days by the daily rhythm."""
    kinds, weights = zip(*EXTRA_KINDS, strict=True)
    start = now - HISTORY + MINUTE
    for i in range(count):
        factory.extra(rng.choices(kinds, weights)[0], rhythmic_time(rng, start, now - MINUTE))
        if i % 1000 == 999:
            progress.update(1000)
    progress.update(count % 1000)


def write_processing_requests(factory: RequestFactory, rng: random.Random, count: int,
                              now: int) -> None:  # fmt: skip
    """A few requests received in the last two minutes and still in flight."""
    for _ in range(count):
        factory.recent_processing(now - rng.randrange(2 * SECOND, 2 * MINUTE))
