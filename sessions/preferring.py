"""Preferences at branch points (issue 31, item 2): a reviewer marks which of a turn's children
(answers to one context, or branches) is better, or ranks them; each choice is kept as pairs in
ledgerweb's database (annotations.Preference), shown at the branch point and in compare.

The siblings are read from the ledger (a turn's children); a post naming a turn that is not a
child of the branch point is refused, so a stale page cannot record a pair that is no pair."""

from dataclasses import dataclass, field

from django.contrib import messages as flash
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from annotations import store
from ledgerweb import sqlite
from ledgerweb.http import see_other
from sessions.alternatives import add_answers
from sessions.detail import TURN_COLUMNS, TurnInfo, add_aggregates
from sessions.membership import turn_in_session
from sessions.models import Session

# Siblings a branch point offers to rank (a root with thousands of children is not ranked here).
MAX_SIBLINGS = 50
BLOCK = "sessions/_prefer.html"


@dataclass
class Choice:
    who: str
    chosen: str
    rejected: str
    mine: bool


@dataclass
class BranchPoint:
    session_id: str
    turn_id: str
    siblings: list[TurnInfo]
    more: int = 0  # children not offered (past MAX_SIBLINGS)
    choices: list[Choice] = field(default_factory=list)
    wins: dict[str, int] = field(default_factory=dict)  # sibling → pairs it was chosen in

    @property
    def has_mine(self) -> bool:
        return any(c.mine for c in self.choices)

    @property
    def position(self) -> dict[str, int]:
        return {t.id: n for n, t in enumerate(self.siblings, start=1)}


def children(turn_id: str, limit: int = MAX_SIBLINGS) -> tuple[list[TurnInfo], int]:
    """A turn's children in the order they started (the tree's order), with previews and
    answers, and how many more there are."""
    rows = sqlite.rows(
        f"SELECT {TURN_COLUMNS} FROM turns WHERE parent_turn_id = %s"
        " ORDER BY started_at, id LIMIT %s",
        [turn_id, limit + 1],
    )
    turns = [TurnInfo(*row) for row in rows[:limit]]
    if len(turns) < 2:
        return turns, 0  # no branch point: nothing more to read
    by_id = {t.id: t for t in turns}
    add_aggregates(by_id)
    add_answers(by_id)
    more = 0
    if len(rows) > limit:
        ((count,),) = sqlite.rows("SELECT count(*) FROM turns WHERE parent_turn_id = %s", [turn_id])
        more = count - limit
    return turns, more


def branch_point(session_id: str, turn_id: str, user, siblings=None) -> BranchPoint | None:
    """The branch point at a turn (None when it has fewer than two children), with everyone's
    choices there. `siblings`: only these children (compare shows two)."""
    kids, more = children(turn_id)
    if len(kids) < 2:
        return None
    if siblings is not None:  # in the order given
        by_id = {t.id: t for t in kids}
        kids = [by_id[t] for t in siblings if t in by_id]
    point = BranchPoint(session_id, turn_id, kids, more)
    point.choices, point.wins = choices_at(turn_id, [t.id for t in kids], user)
    return point


def choices_at(turn_id: str, sibling_ids: list[str], user) -> tuple[list[Choice], dict[str, int]]:
    """Everyone's choices between these children of a branch point (one query), and how many
    pairs each child was chosen in."""
    shown = set(sibling_ids)
    choices: list[Choice] = []
    wins: dict[str, int] = {}
    for p in store.preferences_at([turn_id]).get(turn_id, []):
        if p.chosen_turn_id in shown and p.rejected_turn_id in shown:
            who = p.user.get_username()
            choices.append(Choice(who, p.chosen_turn_id, p.rejected_turn_id, p.user_id == user.pk))
            wins[p.chosen_turn_id] = wins.get(p.chosen_turn_id, 0) + 1
    return choices, wins


@require_POST
def prefer(request: HttpRequest, session_id: str, turn_id: str) -> HttpResponse:
    """Record this person's order of the branch point's children: `ranked` best first (one or
    more), the other children named in `rest` below them; `clear` forgets their choices here."""
    session = Session.objects.filter(id=session_id).first()
    if session is None or not turn_in_session(session.id, session.current_turn_id, turn_id):
        raise Http404(f"No turn {turn_id!r} in session {session_id!r}")
    ranked = _unique(request.POST.getlist("ranked"))
    rest = [t for t in _unique(request.POST.getlist("rest")) if t not in ranked]
    kids = {row[0] for row in sqlite.rows(
        "SELECT id FROM turns WHERE parent_turn_id = %s", [turn_id]
    )}  # fmt: skip
    problem = ""
    if request.POST.get("clear") == "1":
        store.forget_preferences(request.user, turn_id)
        said = "Your choices at this branch point were cleared."
    elif not ranked or len(ranked) + len(rest) < 2:
        problem = "Choose the better of at least two answers."
    elif strangers := [t for t in ranked + rest if t not in kids]:
        problem = f"Turn {strangers[0]} is not an answer at this branch point: nothing was kept."
    else:
        pairs = store.prefer(request.user, session.id, turn_id, ranked, rest)
        said = f"Kept: {ranked[0]} preferred ({len(pairs)} pair{'s' if len(pairs) != 1 else ''})."
    if request.htmx:
        siblings = request.POST.getlist("sibling") if request.POST.get("only") == "these" else None
        point = branch_point(session.id, turn_id, request.user, siblings)
        names = dict(zip(siblings, "AB", strict=False)) if siblings else {}
        ctx = {"point": point, "session": session, "problem": problem, "only": siblings}
        ctx["names"] = names
        return render(request, BLOCK, ctx, status=422 if problem else 200)
    if problem:
        flash.error(request, problem)
    else:
        flash.success(request, said)
    return see_other(_back(request, session.id, turn_id))


def _back(request: HttpRequest, session_id: str, turn_id: str) -> str:
    """Where the form was: `next` when it is a page of this site, else the branch point."""
    next_url = request.POST.get("next", "")
    if next_url and url_has_allowed_host_and_scheme(next_url, allowed_hosts={request.get_host()}):
        return next_url
    return reverse("sessions:turn", args=[session_id, turn_id]) + "#branch-point"


def _unique(values: list[str]) -> list[str]:
    return [v for v in dict.fromkeys(values) if v]
