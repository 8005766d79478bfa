"""{% branch_point_block session turn_id %}: at a turn with two answers or more, which is better
(sessions/preferring.py), wherever the page shows that turn."""

from django import template

from sessions.preferring import BLOCK, branch_point

register = template.Library()


@register.inclusion_tag(BLOCK, takes_context=True)
def branch_point_block(context, session, turn_id: str, siblings=None) -> dict:
    request = context["request"]
    only = list(siblings) if siblings else None
    tree = context.get("tree")
    row = tree.layout.by_id.get(turn_id) if tree is not None and hasattr(tree, "layout") else None
    if row is not None and len(row.child_ids) < 2 and only is None:
        return {"point": None}  # the page's tree says it is no branch point: nothing to read
    return {
        "request": request,
        "csrf_token": context.get("csrf_token"),
        "session": session,
        "point": branch_point(session.id, turn_id, request.user, only),
        "only": only,
        # In compare: which branch is A's and which B's.
        "names": dict(zip(only, "AB", strict=False)) if only else {},
    }
