"""What each stage card of the request page says, taken from the waterfall so the two agree.

A card shows what its stage wrote (seeds/002: each stage fills its own columns). Whether the
stage ran, failed, is running, was skipped or was never reached comes from the stage's bar in
the waterfall; a card never shows "none" or "no" for a stage that did not get to decide.
"""

import re
from dataclasses import dataclass

from pipeline.flags import flag_value
from pipeline.stages import Bar

# The columns each carded stage fills in (seeds/002, "populated at …").
CARD_FIELDS = {
    "resolveIdentity": ("principal_id", "principal_type", "principal_is_user"),
    "resolveAccess": (
        "access_decision", "access_policy", "session_key", "session_persona", "permissions",
    ),
    "executeTriggers": ("hooks_matched", "hooks_fired", "hooks_handled", "hooks_context"),
    "runAgent": (
        "turn_id", "agent_model", "agent_tokens_prompt", "agent_tokens_completion",
        "agent_tokens_total", "agent_tool_calls",
    ),
    "deliverResponse": (
        "delivery_channel", "delivery_message_ids", "delivery_success", "delivery_error",
    ),
}  # fmt: skip

RAN, FAILED, NOT_REACHED, RUNNING, SKIPPED = (
    "ran",
    "failed here",
    "not reached",
    "running",
    "skipped",
)


@dataclass(frozen=True)
class StageCard:
    stage: str
    state: str  # RAN, FAILED, NOT_REACHED, RUNNING or SKIPPED
    has_data: bool  # the row holds a value in one of the stage's columns
    note: str = ""  # the state in a sentence, for every state but RAN

    @property
    def slug(self) -> str:
        return self.state.replace(" ", "-")

    @property
    def shows_facts(self) -> bool:
        """Facts of a stage that never ran would all read "—": say why instead (but never hide
        values a row holds, however odd)."""
        return self.has_data or self.state in (RAN, FAILED)


def _filled(value) -> bool:
    return value is not None and value != ""


def _why_not_reached(r) -> str:
    if r.status == "failed":
        return f"Not reached: the request failed at {r.error_stage or r.stage} before this stage."
    if r.status == "processing":
        return f"Not reached yet: the request is still at {r.stage}."
    return f"Not reached: the request stopped at {r.stage}."


def _why_skipped(r) -> str:
    if r.access_decision == "deny":
        return "Skipped: access was denied."
    if flag_value(r.hooks_handled) == "yes":  # read as the charts and list filters read it
        return "Skipped: a hook handled the event."
    return "Skipped: the request finished without this stage."


def _card(bar: Bar, r) -> StageCard:
    has_data = any(_filled(getattr(r, name)) for name in CARD_FIELDS[bar.stage])
    if bar.state == "failed":
        return StageCard(bar.stage, FAILED, has_data, "This stage failed.")
    if bar.state == "not reached":
        note = _why_not_reached(r)
        if has_data:
            note += " Yet the row holds values for it (shown as stored)."
        return StageCard(bar.stage, NOT_REACHED, has_data, note)
    if bar.state == "running":
        return StageCard(bar.stage, RUNNING, has_data, "Running now: nothing final yet.")
    # A finalized request passed over a stage that left no timing and no values: skipped.
    if (
        bar.state in ("skipped", "no timing")
        and not has_data
        and r.status in ("completed", "skipped")
    ):
        return StageCard(bar.stage, SKIPPED, has_data, _why_skipped(r))
    return StageCard(bar.stage, RAN, has_data)


def stage_cards(bars: list[Bar], r) -> dict[str, StageCard]:
    """The card of each stage that has one, keyed by stage name."""
    return {bar.stage: _card(bar, r) for bar in bars if bar.stage in CARD_FIELDS}


MESSAGE_SCAN, KNOWN_SCAN = 2_000, 200
# "Hook 'calendar-invite-parser' raised …", "Hook script exited with code 1: legacy-forwarder-v0"
_QUOTED_HOOK = re.compile(r"""\bhook\b[^'"`:]*['"`]([^'"`]{1,200})['"`]""", re.I)
_TRAILING_HOOK = re.compile(r"\bhook\b[^:]*:\s*([\w.:/@-]{1,200})\s*$", re.I)


def failing_hook(error_message, known: list[str]) -> str | None:
    """The hook an executeTriggers error names: a hook the row lists, else one quoted or
    trailing after "hook …:" in the message (the failing hook is often in neither list)."""
    if not error_message:
        return None
    # The name is near the start; a megabyte of message must not cost a scan per listed hook.
    message = str(error_message)[:MESSAGE_SCAN]
    for hook in sorted(set(known[:KNOWN_SCAN]), key=len, reverse=True):
        if hook and hook in message:
            return hook
    match = _QUOTED_HOOK.search(message) or _TRAILING_HOOK.search(message)
    return match.group(1) if match else None


def hooks_handled_text(handled, cards: dict[str, StageCard]) -> str:
    """The "handled" line of the hooks card, in words that agree with the agent's card."""
    if cards["executeTriggers"].state == FAILED:
        return "— the stage failed before the hooks could decide"
    state = flag_value(handled)
    stored = "" if handled is True or handled is False else f" (the ledger holds {handled!r})"
    if state == "unknown":
        return "—"
    if state == "yes":
        return "yes — a hook handled the event" + stored
    if state == "no":
        agent = cards["runAgent"]
        if agent.state in (RAN, RUNNING, FAILED):
            return "no — passed to the agent" + stored
        return f"no — passed on, but the agent did not run ({agent.state})" + stored
    return f"{handled!r} (not a boolean: the ledger holds this value)"
