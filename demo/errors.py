"""How pipeline stages fail: an error message and a multi-line stack trace per failure kind."""

import random


def _ts_stack(error: str, frames: tuple[str, ...]) -> str:
    return error + "".join(f"\n    at {frame}" for frame in frames)


def _py_stack(error: str, frames: tuple[tuple[str, int, str, str], ...]) -> str:
    lines = ["Traceback (most recent call last):"]
    for path, line, func, code in frames:
        lines += [f'  File "{path}", line {line}, in {func}', f"    {code}"]
    return "\n".join([*lines, error])


STAGE_ERRORS = {
    "receiveEvent": (
        ("Malformed event payload: missing field 'sender'",
         _ts_stack("ValidationError: Malformed event payload: missing field 'sender'", (
             "parseEvent (src/nex/events/parse.ts:88:11)",
             "receiveEvent (src/nex/pipeline/receive.ts:41:19)",
             "Pipeline.run (src/nex/pipeline/index.ts:112:24)"))),
        ("Event queue overflow: dropped after 3 retries",
         _ts_stack("QueueOverflowError: Event queue overflow: dropped after 3 retries", (
             "EventQueue.push (src/nex/queue.ts:57:13)",
             "receiveEvent (src/nex/pipeline/receive.ts:29:5)"))),
    ),
    "resolveIdentity": (
        ("Identity lookup timed out after 5000 ms",
         _ts_stack("TimeoutError: Identity lookup timed out after 5000 ms", (
             "IdentityGraph.lookup (src/identity/graph.ts:203:15)",
             "async resolveIdentity (src/nex/pipeline/identity.ts:34:22)",
             "async Pipeline.run (src/nex/pipeline/index.ts:118:7)"))),
        ("SQLITE_BUSY: database is locked (identity.db)",
         _ts_stack("SqliteError: SQLITE_BUSY: database is locked", (
             "Statement.get (node_modules/better-sqlite3/lib/methods/wrappers.js:5:21)",
             "IdentityStore.byHandle (src/identity/store.ts:71:8)",
             "resolveIdentity (src/nex/pipeline/identity.ts:29:30)"))),
    ),
    "resolveAccess": (
        ("Policy evaluation failed: unknown condition 'time_between'",
         _ts_stack("PolicyError: Policy evaluation failed: unknown condition 'time_between'", (
             "evaluateCondition (src/iam/policy.ts:144:11)",
             "PolicyEngine.decide (src/iam/engine.ts:62:18)",
             "resolveAccess (src/nex/pipeline/access.ts:27:33)"))),
        ("No policy matched and no default policy configured",
         _ts_stack("PolicyError: No policy matched and no default policy configured", (
             "PolicyEngine.decide (src/iam/engine.ts:90:13)",
             "resolveAccess (src/nex/pipeline/access.ts:27:33)"))),
    ),
    "executeTriggers": (
        ("Hook 'calendar-invite-parser' raised KeyError: 'DTSTART'",
         _py_stack("KeyError: 'DTSTART'", (
             ("/home/nex/hooks/calendar_invite_parser.py", 48, "run", "start = event['DTSTART']"),
             ("/home/nex/hooks/calendar_invite_parser.py", 21, "parse_ics", "return build(vevent)"),
         ))),
        ("Hook script exited with code 1: legacy-forwarder-v0",
         _ts_stack("HookError: Hook script exited with code 1: legacy-forwarder-v0", (
             "runHookScript (src/nex/hooks/runner.ts:77:11)",
             "async executeTriggers (src/nex/pipeline/triggers.ts:52:9)"))),
    ),
    "assembleContext": (
        ("Context too long: 212,480 tokens exceeds the 200,000 token window",
         _ts_stack("ContextOverflowError: Context too long: 212480 > 200000", (
             "ContextBuilder.fit (src/broker/context.ts:188:13)",
             "assembleContext (src/nex/pipeline/context.ts:45:25)"))),
        ("Turn 01J… referenced as parent not found in Agents Ledger",
         _ts_stack("LedgerError: parent turn not found", (
             "AgentsLedger.thread (src/ledger/agents.ts:131:11)",
             "assembleContext (src/nex/pipeline/context.ts:38:31)"))),
    ),
    "runAgent": (
        ("Anthropic API error 529: overloaded_error",
         _ts_stack("APIError: 529 {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\"}}", (
             "Anthropic.makeRequest (node_modules/@anthropic-ai/sdk/core.ts:411:15)",
             "async Broker.stream (src/broker/stream.ts:96:20)",
             "async runAgent (src/nex/pipeline/agent.ts:58:18)"))),
        ("Rate limited: 429 rate_limit_error (retry after 30 s)",
         _ts_stack("RateLimitError: 429 rate_limit_error", (
             "OpenAI.makeRequest (node_modules/openai/core.ts:388:15)",
             "async Broker.stream (src/broker/stream.ts:96:20)",
             "async runAgent (src/nex/pipeline/agent.ts:58:18)"))),
        ("Tool crashed: run_terminal_command_v2 killed by SIGKILL (out of memory)",
         _ts_stack("ToolCrashError: run_terminal_command_v2 killed by SIGKILL", (
             "ToolRunner.exec (src/broker/tools/runner.ts:142:17)",
             "async Broker.callTool (src/broker/tools/index.ts:66:12)",
             "async runAgent (src/nex/pipeline/agent.ts:71:9)"))),
    ),
    "deliverResponse": (
        ("iMessage send failed: AppleScript error -1743",
         _ts_stack("DeliveryError: iMessage send failed: AppleScript error -1743", (
             "IMessageAdapter.send (src/adapters/imessage.ts:119:13)",
             "deliverResponse (src/nex/pipeline/deliver.ts:40:22)"))),
        ("Discord API 50013: Missing Permissions",
         _ts_stack("DiscordAPIError[50013]: Missing Permissions", (
             "SequentialHandler.runRequest (node_modules/@discordjs/rest/src/lib/handlers/"
             "SequentialHandler.ts:293:11)",
             "DiscordAdapter.send (src/adapters/discord.ts:84:5)",
             "deliverResponse (src/nex/pipeline/deliver.ts:40:22)"))),
        ("Gmail send failed: 400 Invalid To header",
         _ts_stack("GaxiosError: Invalid To header", (
             "Gaxios._request (node_modules/gaxios/src/gaxios.ts:142:13)",
             "GmailAdapter.reply (src/adapters/gmail.ts:203:7)",
             "deliverResponse (src/nex/pipeline/deliver.ts:40:22)"))),
    ),
    "finalize": (
        ("Failed to write request snapshot: SQLITE_FULL: database or disk is full",
         _ts_stack("SqliteError: SQLITE_FULL: database or disk is full", (
             "NexusLedger.finalize (src/ledger/nexus.ts:77:10)",
             "finalize (src/nex/pipeline/finalize.ts:19:9)"))),
    ),
}  # fmt: skip

# A failed delivery's message depends on where it was going.
DELIVERY_ERRORS = {"imessage": 0, "discord": 1, "gmail": 2}


def stage_error(rng: random.Random, stage: str, channel: str | None = None) -> tuple[str, str]:
    """(error_message, error_stack) for a failure at a stage."""
    choices = STAGE_ERRORS[stage]
    if stage == "deliverResponse" and channel in DELIVERY_ERRORS:
        return choices[DELIVERY_ERRORS[channel]]
    return rng.choice(choices)
