"""Annotating a session or a turn from its page: everyone sees everyone's marks, each person
edits their own, operators may remove anyone's (annotations/ keeps them, never the ledger).

With htmx a post answers the annotations block it came from; without, it goes back to the page
(303) with what happened said at the top."""

from django.contrib import messages as flash
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from annotations import store
from annotations.display import as_json, block
from annotations.marks_form import MarksForm
from annotations.models import Annotation
from ledgerweb.http import respond, see_other
from sessions.membership import turn_in_session
from sessions.models import Session

BLOCK = "annotations/_block.html"


def _session(session_id: str) -> Session:
    session = Session.objects.filter(id=session_id).first()
    if session is None:
        raise Http404(f"No session {session_id!r} in this ledger")
    return session


def _page_of(session_id: str, turn_id: str) -> str:
    if turn_id:
        return reverse("sessions:turn", args=[session_id, turn_id]) + "#turn-annotations"
    return reverse("sessions:detail", args=[session_id]) + "#session-annotations"


@require_http_methods(["GET", "POST"])
def annotate_session(request: HttpRequest, session_id: str) -> HttpResponse:
    session = _session(session_id)
    return _annotate(request, session.id, "")


@require_http_methods(["GET", "POST"])
def annotate_turn(request: HttpRequest, session_id: str, turn_id: str) -> HttpResponse:
    session = _session(session_id)
    if not turn_in_session(session.id, session.current_turn_id, turn_id):
        raise Http404(f"No turn {turn_id!r} in session {session_id!r}")
    return _annotate(request, session.id, turn_id)


def _annotate(request: HttpRequest, session_id: str, turn_id: str) -> HttpResponse:
    if request.method == "GET":
        # The block alone for htmx; followed as a link, a page of its own around it.
        template = BLOCK if request.htmx else "annotations/page.html"
        return respond(
            request,
            page=lambda: render(request, template, block(request.user, session_id, turn_id)),
            twin=lambda: {
                "session_id": session_id,
                "turn_id": turn_id or None,
                "annotations": as_json(store.on_target(session_id, turn_id)),
            },
        )
    form = MarksForm.read(request.POST)
    if request.POST.get("clear") == "1":
        form = MarksForm(store.Marks())
    if form.errors:
        if request.htmx:
            ctx = block(request.user, session_id, turn_id, form.errors, posted=form.marks)
            return render(request, BLOCK, ctx, status=422)
        for error in form.errors:
            flash.error(request, f"Not saved: {error}")
        return see_other(_page_of(session_id, turn_id))
    kept = store.save_marks(request.user, session_id, turn_id, form.marks)
    said = "Annotation saved." if kept else "Your annotation was cleared."
    if request.htmx:
        return render(request, BLOCK, block(request.user, session_id, turn_id))
    flash.success(request, said)
    return see_other(_page_of(session_id, turn_id))


@require_POST
def remove_annotation(request: HttpRequest, session_id: str, annotation_id: str) -> HttpResponse:
    # str in the URL (every address answers the login page first, tests/test_login_required.py)
    if not (annotation_id.isascii() and annotation_id.isdigit() and len(annotation_id) < 19):
        raise Http404("No such annotation")
    annotation = (
        Annotation.objects.filter(pk=int(annotation_id), session_id=session_id)
        .select_related("user")
        .first()
    )
    if annotation is None:
        raise Http404("No such annotation (it may have been removed already)")
    if not store.may_remove(request.user, annotation):
        raise PermissionDenied("Only its author or an operator can remove an annotation.")
    turn_id, whose = annotation.turn_id, annotation.user.get_username()
    store.remove(annotation)
    if request.htmx:
        return render(request, BLOCK, block(request.user, session_id, turn_id))
    flash.success(request, f"Removed {whose}'s annotation.")
    return see_other(_page_of(session_id, turn_id))
