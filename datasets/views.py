"""/datasets/: export annotated turns and branch-point choices as JSONL, and see what each
export left out. Viewers may export (ARCHITECTURE.md §7: viewers browse and export)."""

from django.db.models import Count
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from annotations import store
from annotations.models import Annotation, Preference
from datasets import exports
from datasets.models import ExportRun
from datasets.records import CHAT, FORMS
from ledgerweb import downloads
from ledgerweb.http import respond
from ledgerweb.params import answers_bad_parameters, choice, strict

RUNS_LISTED = 20


def _selection(request: HttpRequest) -> exports.Selection:
    kind = strict(request.GET, "kind", choice(*FORMS), CHAT)
    forms = sorted({form for forms in FORMS.values() for form in forms})
    form = strict(request.GET, "form", choice(*forms), FORMS[kind][0])
    labels = [name for name in request.GET.getlist("label") if name]
    thumbs_up = strict(request.GET, "thumb", choice("up"), "") == "up"
    return exports.Selection(kind, form, labels, thumbs_up)


@require_GET
@answers_bad_parameters
def index(request: HttpRequest) -> HttpResponse:
    runs = list(ExportRun.objects.select_related("user").order_by("-started_at")[:RUNS_LISTED])
    counts = {
        "thumbs_up_turns": Annotation.objects.exclude(turn_id="")
        .filter(thumb=1)
        .values("turn_id")
        .distinct()
        .count(),
        "preference_pairs": Preference.objects.count(),
    }
    labels = _label_counts()
    return respond(
        request,
        page=lambda: render(
            request,
            "datasets/index.html",
            {"runs": runs, "counts": counts, "labels": labels, "forms": FORMS},
        ),
        twin=lambda: {
            "counts": counts,
            "labels": labels,
            "runs": [_run_json(run) for run in runs],
        },
    )


def _label_counts() -> list[dict]:
    """The labels on turns, the most used first, with how many turns hold each."""
    rows = (
        Annotation.objects.exclude(turn_id="")
        .filter(labels__name__in=store.labels_in_use())
        .values("labels__name")
        .annotate(turns=Count("turn_id", distinct=True))
        .order_by("-turns", "labels__name")
    )
    return [{"name": row["labels__name"], "turns": row["turns"]} for row in rows]


@require_GET
@answers_bad_parameters
def export(request: HttpRequest) -> StreamingHttpResponse:
    selection = _selection(request)
    run, report = exports.start(selection, request.user)
    response = StreamingHttpResponse(
        exports.stream(selection, run, report), content_type="application/jsonl"
    )
    response["Content-Disposition"] = downloads.attachment_disposition(
        f"{selection.filename}-{run.pk}", "jsonl"
    )
    response["X-Export-Run"] = str(run.pk)  # where its report will be: /datasets/runs/<id>/
    return response


@require_GET
def run_detail(request: HttpRequest, run_id: str) -> HttpResponse:
    if not (run_id.isascii() and run_id.isdigit() and len(run_id) < 19):
        raise Http404("No such export")
    run = ExportRun.objects.select_related("user").filter(pk=int(run_id)).first()
    if run is None:
        raise Http404("No such export")
    return respond(
        request,
        page=lambda: render(request, "datasets/run.html", {"run": run}),
        twin=lambda: _run_json(run),
    )


def _run_json(run: ExportRun) -> dict:
    return {
        "id": run.pk,
        "kind": run.kind,
        "selection": run.selection,
        "by": run.user.get_username() if run.user else ("command" if run.by_command else None),
        "started_at": run.started_at,
        "finished_at": run.finished_at,
        "records": run.records,
        "report": run.report,
    }
