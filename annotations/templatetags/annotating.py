"""{% annotation_block session_id turn_id %}: the annotations of a turn (or, without a turn id,
of a session) with the signed-in person's form, wherever a page shows that target."""

from django import template

from annotations.display import block

register = template.Library()


@register.inclusion_tag("annotations/_block.html", takes_context=True)
def annotation_block(context, session_id: str, turn_id: str = "") -> dict:
    request = context["request"]
    return {"request": request, "csrf_token": context.get("csrf_token")} | block(
        request.user, session_id, turn_id
    )
