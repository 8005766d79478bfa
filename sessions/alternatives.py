"""Telling sibling turns apart (issue 16).

Regenerations, retries and edited prompts are siblings in the tree: turns with the same parent
(or roots of the same session). A row shows the turn's prompt, so regenerations of one prompt
looked identical ("What is my little pony about?" four times). For turns that have siblings we
also read the first words of the answer (or of the first tool call), and a row whose prompt is
shared by a sibling shows its answer instead, with "2/3" saying which alternative it is.

Regenerations often begin alike ("I. Introduction", "The Chernobyl nuclear power plant accident
happened on April…" four times in real conversations), so each sibling's line starts where its
text leaves the siblings' (`TurnInfo.differs_at`): the row writer shows "…" and the words from
there, and the whole text is a hover away.
"""

from collections import Counter
from dataclasses import dataclass

from ledgerweb import sqlite
from ledgerweb.text import plain_words
from sessions import tree

# A sibling's answer is read far enough to find where it leaves the others' (real regenerations
# share up to ~150 characters); every other row's answer (its hover) to ANSWER_CHARS.
SIBLING_ANSWER_CHARS = 1_000
ANSWER_CHARS = 300


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


def alternatives_of(
    layout: tree.Layout,
    kept: dict[str, Alternative] | None = None,
    kept_turns: dict | None = None,
) -> dict[str, Alternative]:
    """Every turn that has siblings, with its place among them. Reads the answers of those turns
    (one query), so that siblings sharing a prompt can show what differs.

    `kept` and `kept_turns`: the alternatives and turns of the tree this one brings up to date
    (sessions/detail.py, at each commit). A group whose turns are all kept (the same objects:
    their rows unchanged) in the same places keeps its alternatives, and its turns the place
    each differs at: only groups that changed are worked out again."""
    kept, kept_turns = kept or {}, kept_turns or {}
    groups = sibling_groups(layout)
    unchanged = [_unchanged(group, kept, kept_turns) for group in groups]
    turns = {
        row.node.id: row.node.data
        for group, same in zip(groups, unchanged, strict=True)
        if not same
        for row in group
    }
    add_answers(turns, SIBLING_ANSWER_CHARS)
    found = {}
    for group, same in zip(groups, unchanged, strict=True):
        if same:
            found.update((row.node.id, kept[row.node.id]) for row in group)
            continue
        prompts = Counter(row.node.data.preview for row in group)  # linear: groups can be huge
        shown = []
        for position, row in enumerate(group, start=1):
            shared = prompts[row.node.data.preview] > 1
            found[row.node.id] = Alternative(position, len(group), shared, row.on_head_path)
            shown.append(row.node.data.answer if shared else row.node.data.preview)
        for row, at in zip(group, where_they_differ(shown), strict=True):
            row.node.data.differs_at = at
    return found  # a turn's differs_at counts only where it has an alternative (rows_html)


def _unchanged(group: list[tree.Row], kept: dict[str, Alternative], kept_turns: dict) -> bool:
    count = len(group)
    for position, row in enumerate(group, start=1):
        alt = kept.get(row.node.id)
        if (
            alt is None
            or kept_turns.get(row.node.id) is not row.node.data
            or (alt.position, alt.count, alt.on_head_path) != (position, count, row.on_head_path)
        ):
            return False
    return True


def where_they_differ(texts: list[str]) -> list[int]:
    """For each text, where it leaves the one most like it: the longest prefix it shares with
    any other. Sorted, a text's closest neighbours share its longest prefix, so a group of
    20,000 siblings costs a sort, not 20,000² comparisons."""
    order = sorted(range(len(texts)), key=texts.__getitem__)
    shared = [0] * len(texts)
    for before, after in zip(order, order[1:], strict=False):
        common = _common_prefix(texts[before], texts[after])
        shared[before] = max(shared[before], common)
        shared[after] = max(shared[after], common)
    return shared


def _common_prefix(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def add_answers(turns: dict, chars: int = ANSWER_CHARS) -> None:
    """Each turn's answer in a line: its first assistant message, else its first tool call (name
    and the start of its parameters). One query, whatever the number of turns; a turn whose
    answer was read already, as far, is not read again (the tree's rows ask for theirs page by
    page, and a tree brought up to date keeps its turns' answers)."""
    turns = {k: t for k, t in turns.items() if t.answer_read < chars}
    if not turns:
        return
    ids_sql, ids = sqlite.in_list(turns)
    for turn_id, message, call_name, call_params in sqlite.rows(
        f"""SELECT t.value,
                (SELECT substr(m.content, 1, %s) FROM messages m
                 WHERE m.turn_id = t.value AND m.role = 'assistant' ORDER BY m.sequence LIMIT 1),
                c.tool_name, substr(c.parameters, 1, 200)
            FROM {ids_sql} AS t
            LEFT JOIN tool_calls c ON c.id = (
                SELECT id FROM tool_calls WHERE turn_id = t.value ORDER BY sequence LIMIT 1)""",
        [chars * 2, *ids],
    ):
        answer = plain_words(message, chars)
        if not answer and call_name is not None:
            params = call_params if isinstance(call_params, str) else ""
            answer = f"{call_name}({' '.join(params.split())[:100]})"
        turns[turn_id].answer = answer
    for turn in turns.values():
        turn.answer_read = chars
