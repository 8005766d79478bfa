"""Telling sibling turns apart (issue 16).

Regenerations, retries and edited prompts are siblings in the tree: turns with the same parent
(or roots of the same session). A row shows the turn's prompt, so regenerations of one prompt
looked identical ("What is my little pony about?" four times). For turns that have siblings we
also read the first words of the answer (or of the first tool call), and a row whose prompt is
shared by a sibling shows its answer instead, with "2/3" saying which alternative it is.
"""

from collections import Counter
from dataclasses import dataclass

from ledgerweb import sqlite
from ledgerweb.text import plain_preview
from sessions import tree

ANSWER_CHARS = 140


@dataclass(frozen=True, slots=True)
class Alternative:
    """A turn's place among its siblings, as drawn (the branch to the head comes last)."""

    position: int  # 1-based
    count: int
    same_prompt: bool  # another sibling asks the same: the answer tells them apart
    on_head_path: bool


def sibling_groups(layout: tree.Layout) -> list[list[tree.Row]]:
    """Groups of two or more alternatives: the children of a branch point, and the session's own
    roots (turns with no parent: several first prompts, or regenerations of the first answer)."""
    groups = []
    for row in layout.rows:
        if len(row.child_ids) > 1:
            groups.append([layout.by_id[kid] for kid in row.child_ids if kid in layout.by_id])
    roots = [
        r
        for r in layout.rows
        if r.is_root and r.node.parent_id is None and not getattr(r.node.data, "inherited", False)
    ]
    if len(roots) > 1:
        groups.append(roots)
    return groups


def alternatives_of(layout: tree.Layout) -> dict[str, Alternative]:
    """Every turn that has siblings, with its place among them. Reads the answers of those turns
    (one query), so that siblings sharing a prompt can show what differs."""
    groups = sibling_groups(layout)
    turns = {row.node.id: row.node.data for group in groups for row in group}
    add_answers(turns)
    found = {}
    for group in groups:
        prompts = Counter(row.node.data.preview for row in group)  # linear: groups can be huge
        for position, row in enumerate(group, start=1):
            shared = prompts[row.node.data.preview] > 1
            found[row.node.id] = Alternative(position, len(group), shared, row.on_head_path)
    return found


def add_answers(turns: dict) -> None:
    """Each turn's answer in a line: its first assistant message, else its first tool call (name
    and the start of its parameters). One query, whatever the number of turns."""
    if not turns:
        return
    ids_sql, ids = sqlite.in_list(turns)
    for turn_id, message, call_name, call_params in sqlite.rows(
        f"""SELECT t.value,
                (SELECT substr(m.content, 1, 400) FROM messages m
                 WHERE m.turn_id = t.value AND m.role = 'assistant' ORDER BY m.sequence LIMIT 1),
                c.tool_name, substr(c.parameters, 1, 200)
            FROM {ids_sql} AS t
            LEFT JOIN tool_calls c ON c.id = (
                SELECT id FROM tool_calls WHERE turn_id = t.value ORDER BY sequence LIMIT 1)""",
        ids,
    ):
        answer = plain_preview(message, ANSWER_CHARS)
        if not answer and call_name is not None:
            params = call_params if isinstance(call_params, str) else ""
            answer = f"{call_name}({' '.join(params.split())[:100]})"
        turns[turn_id].answer = answer
