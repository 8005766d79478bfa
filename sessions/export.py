"""A thread as a replayable transcript: chat messages in the widely used role/content form (the
OpenAI chat format, which most SDKs and replay tools accept), tool calls attached to an assistant
message and their results as `tool` messages, with ledger ids for traceability."""

from sessions.models import Session
from sessions.thread import Thread

FORMAT = "ledgerweb.thread/1"


def transcript(session: Session, thread: Thread) -> dict:
    messages = []
    for step in thread.steps:
        turn_ref = {"turn_id": step.turn.id, "session_id": step.turn.session_id}
        answers = []
        for m in step.messages:
            entry = {
                "role": m.role,
                "content": m.content,
                "ledger": turn_ref | {"message_id": m.id},
            }
            # The turn's question comes before its tool calls, its answer after them.
            (answers if m.role == "assistant" else messages).append(entry)
        if step.tool_calls:
            messages.append(
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [
                        {
                            "id": c.id,
                            "type": "function",
                            "function": {"name": c.tool_name, "arguments": c.parameters or "{}"},
                        }
                        for c in step.tool_calls
                    ],
                    "ledger": turn_ref,
                }
            )
            for c in step.tool_calls:
                messages.append(
                    {
                        "role": "tool",
                        "tool_call_id": c.id,
                        "content": c.result if c.error is None else f"Error: {c.error}",
                        "ledger": turn_ref | {"tool_call_id": c.id, "status": c.status},
                    }
                )
        messages += answers
    return {
        "format": FORMAT,
        "session": {"id": session.id, "persona": session.persona, "label": session.label},
        "turn_id": thread.turn.id,
        "turn_ids": [s.turn.id for s in thread.steps],
        "model": thread.turn.model,
        "tokens": {"context": thread.context_tokens, "cumulative": thread.total_tokens},
        "problems": thread.problems,
        "messages": messages,
    }
