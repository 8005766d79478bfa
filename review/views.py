"""/review/: make a queue from a selection, see how far it is, and walk it item by item."""

from django.contrib import messages as flash
from django.db.models import Count
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotations import store
from annotations.display import block as annotation_block
from annotations.marks_form import MarksForm
from ledgerfacts.timestamps import now_ms
from ledgerweb import sqlite
from ledgerweb.http import respond, see_other
from ledgerweb.params import WINDOWS
from review import claims
from review.models import Item, Queue
from review.selections import SOURCES, Selection, SelectionError, items_of
from sessions.preferring import branch_point
from sessions.thread import load_thread

QUEUES_LISTED = 50
ITEMS_LISTED = 100
CONTEXT_TURNS = 3  # the turns an item page shows: the item's turn and the two before it


def _queue(queue_id: str) -> Queue:
    if not (queue_id.isascii() and queue_id.isdigit() and len(queue_id) < 19):
        raise Http404("No such queue")
    queue = Queue.objects.select_related("created_by").filter(pk=int(queue_id)).first()
    if queue is None:
        raise Http404("No such queue")
    return queue


@require_GET
def index(request: HttpRequest) -> HttpResponse:
    return _index(request, Selection.read(request.GET) if request.GET.get("source") else None)


def _index(request: HttpRequest, selection: Selection | None, status: int = 200) -> HttpResponse:
    queues = list(
        Queue.objects.select_related("created_by").order_by("-created_at")[:QUEUES_LISTED]
    )
    counts: dict[int, dict] = {}
    for queue_id, state, n in (
        Item.objects.filter(queue__in=queues)
        .values_list("queue_id", "state")
        .annotate(n=Count("id"))
        .order_by()
    ):
        counts.setdefault(queue_id, {})[state] = n
    rows = [
        {
            "queue": q,
            "done": counts.get(q.pk, {}).get(Item.DONE, 0),
            "skipped": counts.get(q.pk, {}).get(Item.SKIPPED, 0),
        }
        for q in queues
    ]
    ctx = {
        "rows": rows,
        "sources": SOURCES,
        "windows": WINDOWS,
        "selection": selection or Selection("failed"),
        "labels": store.labels_in_use(),
        "personas": [p for p in sqlite.distinct_values("sessions", "persona", limit=100) if p],
    }
    return respond(
        request,
        page=lambda: render(request, "review/index.html", ctx, status=status),
        twin=lambda: {"queues": [_queue_json(r["queue"], r) for r in rows]},
    )


def _queue_json(queue: Queue, counts: dict) -> dict:
    return {
        "id": queue.pk,
        "name": queue.name,
        "source": queue.source,
        "params": queue.params,
        "description": queue.description,
        "created_by": queue.created_by.get_username() if queue.created_by else None,
        "created_at": queue.created_at,
        "total": queue.total,
        "capped": queue.capped,
        "done": counts.get("done", 0),
        "skipped": counts.get("skipped", 0),
        "url": reverse("review:queue", args=[queue.pk]),
    }


@require_POST
def new(request: HttpRequest) -> HttpResponse:
    selection = Selection.read(request.POST)
    if selection.errors:
        for error in selection.errors:
            flash.error(request, error)
        return _index(request, selection, status=422)
    try:
        found, capped = items_of(selection)
    except SelectionError as error:
        flash.error(request, str(error))
        return _index(request, selection, status=422)
    description = selection.describe()
    name = request.POST.get("name", "").strip()[:200] or description
    queue = Queue.objects.create(
        name=name,
        source=selection.source,
        params=selection.params(),
        description=description,
        created_by=request.user,
        created_at=now_ms(),
        total=len(found),
        capped=capped,
    )
    kind = Item.BRANCH if selection.source == "branches" else Item.TURN
    Item.objects.bulk_create(
        [
            Item(queue=queue, position=n, kind=kind, session_id=session_id, turn_id=turn_id)
            for n, (session_id, turn_id) in enumerate(found, start=1)
        ],
        batch_size=500,
    )
    flash.success(request, f"Queue made: {len(found):,} item{'s' if len(found) != 1 else ''}.")
    return see_other(reverse("review:queue", args=[queue.pk]))


@require_GET
def queue_page(request: HttpRequest, queue_id: str) -> HttpResponse:
    queue = _queue(queue_id)
    progress = claims.progress(queue)
    items = list(
        queue.items.select_related("done_by", "claimed_by").order_by("position")[:ITEMS_LISTED]
    )
    held = claims.held_by(queue, request.user)
    return respond(
        request,
        page=lambda: render(
            request,
            "review/queue.html",
            {"queue": queue, "progress": progress, "items": items, "held": held},
        ),
        twin=lambda: (
            _queue_json(queue, progress)
            | {
                "progress": progress,
                "items": [
                    {
                        "position": i.position,
                        "kind": i.kind,
                        "session_id": i.session_id,
                        "turn_id": i.turn_id,
                        "state": i.state,
                        "done_by": i.done_by.get_username() if i.done_by else None,
                    }
                    for i in items
                ],
            }
        ),
    )


@require_POST
def next_item(request: HttpRequest, queue_id: str) -> HttpResponse:
    queue = _queue(queue_id)
    return _to_next(request, queue)


def _to_next(request: HttpRequest, queue: Queue) -> HttpResponse:
    item = claims.claim_next(queue, request.user)
    if item is None:
        flash.success(request, "Nothing left to review in this queue: every item is done or held.")
        return see_other(reverse("review:queue", args=[queue.pk]))
    return see_other(reverse("review:item", args=[queue.pk, item.pk]))


@require_POST
def reopen(request: HttpRequest, queue_id: str) -> HttpResponse:
    queue = _queue(queue_id)
    n = claims.reopen_skipped(queue)
    flash.success(request, f"{n} skipped item{'s' if n != 1 else ''} put back in the queue.")
    return see_other(reverse("review:queue", args=[queue.pk]))


@require_http_methods(["GET", "POST"])
def item_page(request: HttpRequest, queue_id: str, item_id: str) -> HttpResponse:
    queue = _queue(queue_id)
    if not (item_id.isascii() and item_id.isdigit() and len(item_id) < 19):
        raise Http404("No such item")
    item = queue.items.select_related("done_by", "claimed_by").filter(pk=int(item_id)).first()
    if item is None:
        raise Http404("No such item in this queue")
    if request.method == "POST":
        return _act(request, queue, item)
    return _item_view(request, queue, item)


def _item_view(request, queue, item, errors=(), posted=None, status=200) -> HttpResponse:
    if item.state == Item.OPEN and item.claimed_by_id != request.user.pk:
        # Opened from a link: take it if nobody holds it (an expired claim counts as free).
        fresh = item.claimed_at is not None and item.claimed_at >= now_ms() - claims.CLAIM_MS
        if not fresh:
            claims.take(item, request.user, now_ms())
    thread = load_thread(item.turn_id, page_size=CONTEXT_TURNS)
    ctx = {
        "queue": queue,
        "item": item,
        "progress": claims.progress(queue),
        "thread": thread,
        # Whether this person holds the item (its controls act); not "mine": the annotation
        # block's own "mine" (their annotation) joins this context.
        "holding": item.state == Item.OPEN and item.claimed_by_id == request.user.pk,
    }
    if item.kind == Item.BRANCH:
        ctx["point"] = branch_point(item.session_id, item.turn_id, request.user)
    else:
        ctx |= annotation_block(request.user, item.session_id, item.turn_id, errors, posted)
    return respond(
        request,
        page=lambda: render(request, "review/item.html", ctx, status=status),
        twin=lambda: _item_json(ctx),
    )


def _item_json(ctx: dict) -> dict:
    item, point = ctx["item"], ctx.get("point")
    return {
        "queue": ctx["queue"].pk,
        "position": item.position,
        "kind": item.kind,
        "session_id": item.session_id,
        "turn_id": item.turn_id,
        "state": item.state,
        "yours": ctx["holding"],
        "progress": ctx["progress"],
        "annotations": [
            {
                "user": a.annotation.user.get_username(),
                "thumb": a.annotation.thumb,
                "score": a.annotation.score,
                "labels": a.labels,
                "note": a.annotation.note,
            }
            for a in ctx.get("annotations", [])
        ],  # fmt: skip
        "answers": [t.id for t in point.siblings] if point else None,
    }


def _act(request: HttpRequest, queue: Queue, item: Item) -> HttpResponse:
    """Save what the reviewer gave the item, mark it done (or skipped) and go to the next."""
    action = request.POST.get("action", "done")
    if action == "stop":
        claims.release(item, request.user)
        return see_other(reverse("review:queue", args=[queue.pk]))
    if action == "skip":
        claims.finish(item, request.user, Item.SKIPPED)
        return _to_next(request, queue)
    if item.kind == Item.BRANCH:
        ranked = [t for t in dict.fromkeys(request.POST.getlist("ranked")) if t]
        point = branch_point(item.session_id, item.turn_id, request.user)
        siblings = [t.id for t in point.siblings] if point else []
        if ranked and all(t in siblings for t in ranked):
            rest = [t for t in siblings if t not in ranked]
            store.prefer(request.user, item.session_id, item.turn_id, ranked, rest)
        elif ranked:
            flash.error(request, "That answer is not one of this branch point's: nothing was kept.")
            return see_other(reverse("review:item", args=[queue.pk, item.pk]))
    else:
        form = MarksForm.read(request.POST)
        if form.errors:
            return _item_view(request, queue, item, form.errors, form.marks, status=422)
        store.save_marks(request.user, item.session_id, item.turn_id, form.marks)
    if not claims.finish(item, request.user):
        flash.info(request, "Someone finished this item meanwhile; your marks were kept too.")
    return _to_next(request, queue)
