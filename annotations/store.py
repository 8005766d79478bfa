"""The few functions other rooms use to read and write annotations (see annotations/__init__).

Every read here is bounded by what a page shows: a page's sessions or turns (ids given), a
label's name, or a capped list; none reads every annotation of a big ledger."""

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from django.db import transaction
from django.db.models import Count, Q
from django.db.models.expressions import RawSQL

from annotations.models import Annotation, Label, Preference, Visit
from ledgerfacts.timestamps import now_ms
from ledgerweb.sqlite import in_list

# Labels offered as choices ("the ones in use"): the most used first, this many.
LABELS_OFFERED = 200
# Filters turn annotations into ledger ids: at most this many sessions or turns (the page says
# when there are more: a filter past it would read an unbounded list into every query).
FILTER_IDS_CAP = 10_000


def on_session(session_id: str, turn_ids: Iterable[str] | None = None) -> dict[str, list]:
    """Everyone's annotations on a session and its turns, by turn id ('' for the session), labels
    fetched with them: two queries whatever the number."""
    found = Annotation.objects.filter(session_id=session_id)
    if turn_ids is not None:
        found = found.filter(turn_id__in=["", *turn_ids])
    by_turn: dict[str, list] = defaultdict(list)
    for annotation in found.select_related("user").prefetch_related("labels").order_by("id"):
        by_turn[annotation.turn_id].append(annotation)
    return dict(by_turn)


def on_target(session_id: str, turn_id: str = "") -> list[Annotation]:
    """Everyone's annotations on one session ('' turn) or turn, oldest first, with their labels
    and authors: two queries. A turn's are all of them, made in whichever session it was seen
    in (a fork shows the turns it inherits from its origin)."""
    if turn_id:
        found = Annotation.objects.filter(turn_id=turn_id)
    else:
        found = Annotation.objects.filter(session_id=session_id, turn_id="")
    return list(found.select_related("user").prefetch_related("labels").order_by("id"))


def bookmarks(user=None, session_id: str | None = None):
    """Bookmarks, newest first: one person's, one session's, or all."""
    found = Annotation.objects.filter(bookmarked=True)
    if user is not None:
        found = found.filter(user=user)
    if session_id is not None:
        found = found.filter(session_id=session_id)
    return found.select_related("user").order_by("-updated_at", "-id")


def mine(user, session_id: str, turn_id: str = "") -> Annotation:
    """This person's annotation on a target, created empty (unsaved) when there is none."""
    found = Annotation.objects.filter(user=user, session_id=session_id, turn_id=turn_id).first()
    if found is not None:
        return found
    now = now_ms()
    return Annotation(user=user, session_id=session_id, turn_id=turn_id, created_at=now,
                      updated_at=now)  # fmt: skip


def set_bookmark(user, session_id: str, turn_id: str, on: bool, note: str = "") -> Annotation:
    annotation = mine(user, session_id, turn_id)
    annotation.bookmarked = on
    annotation.bookmark_note = note[:200] if on else ""
    annotation.updated_at = now_ms()
    annotation.save()
    return annotation


# -- Writing marks ---------------------------------------------------------------------------


@dataclass
class Marks:
    """What a person gives a target: all of it replaces what they gave before."""

    thumb: int | None = None  # +1, -1 or None
    score: int | None = None  # 1-5 or None
    note: str = ""
    labels: list[str] = field(default_factory=list)

    @property
    def is_empty(self) -> bool:
        return self.thumb is None and self.score is None and not self.note and not self.labels


def save_marks(user, session_id: str, turn_id: str, marks: Marks) -> Annotation | None:
    """Replace this person's thumb, score, note and labels on a target. An annotation left with
    nothing (and no bookmark) is deleted: None. One short transaction."""
    with transaction.atomic():
        annotation = mine(user, session_id, turn_id)
        if marks.is_empty and not annotation.bookmarked:
            if annotation.pk:
                annotation.delete()
            return None
        annotation.thumb, annotation.score, annotation.note = marks.thumb, marks.score, marks.note
        annotation.updated_at = now_ms()
        annotation.save()
        kept = set(marks.labels)
        annotation.labels.exclude(name__in=kept).delete()
        have = set(annotation.labels.values_list("name", flat=True))
        Label.objects.bulk_create(
            [Label(annotation=annotation, name=name) for name in marks.labels if name not in have]
        )
    return annotation


def may_remove(user, annotation: Annotation) -> bool:
    """Each person edits and removes their own; operators may remove anyone's."""
    return annotation.user_id == user.pk or user.has_perm("annotations.remove_any_annotation")


def remove(annotation: Annotation) -> None:
    """Remove an annotation's marks (thumb, score, note, labels). A bookmark is its owner's
    and stays (it is the tree's, issue 28); with none the row goes."""
    with transaction.atomic():
        if annotation.bookmarked:
            annotation.labels.all().delete()
            annotation.thumb = annotation.score = None
            annotation.note = ""
            annotation.updated_at = now_ms()
            annotation.save()
        else:
            annotation.delete()


# -- Reading marks for pages ------------------------------------------------------------------


def marked() -> Q:
    """Annotations holding a mark (not only a bookmark)."""
    return Q(thumb__isnull=False) | Q(score__isnull=False) | ~Q(note="") | Q(labels__isnull=False)


@dataclass
class Summary:
    """Everyone's marks on a target (or on a session and all its turns), counted."""

    up: int = 0
    down: int = 0
    notes: int = 0
    scores: list[int] = field(default_factory=list)
    labels: Counter = field(default_factory=Counter)
    people: int = 0

    @property
    def score(self) -> float | None:
        """The mean score, when anyone gave one."""
        return sum(self.scores) / len(self.scores) if self.scores else None

    @property
    def is_empty(self) -> bool:
        return not (self.up or self.down or self.notes or self.scores or self.labels)

    SHOWN_LABELS = 3

    @property
    def top_labels(self) -> list[tuple[str, int]]:
        """The most used labels, as a row has room for (a template cannot call most_common:
        it looks the name up in the Counter first, and finds 0)."""
        return self.labels.most_common(self.SHOWN_LABELS)

    @property
    def more_labels(self) -> int:
        return max(0, len(self.labels) - self.SHOWN_LABELS)

    def as_json(self) -> dict:
        return {
            "up": self.up,
            "down": self.down,
            "notes": self.notes,
            "score": self.score,
            "scores": len(self.scores),
            "labels": dict(self.labels.most_common()),
        }


def summaries(session_ids: Iterable[str]) -> dict[str, Summary]:
    """Marks counted per session, its turns' included, for a page's sessions."""
    return _summaries("session_id", list(dict.fromkeys(session_ids)))


def by_turn(turn_ids: Iterable[str]) -> dict[str, Summary]:
    """Marks counted per turn, wherever they were made, for a page's turns (the turn index)."""
    return _summaries("turn_id", [t for t in dict.fromkeys(turn_ids) if t])


def _summaries(key: str, ids: list[str]) -> dict[str, Summary]:
    """Marks counted per value of `key` (session_id or turn_id) among `ids`: two grouped
    queries, whatever the number of annotations."""
    if not ids:
        return {}
    found: dict[str, Summary] = defaultdict(Summary)
    rows = (
        Annotation.objects.filter(**{f"{key}__in": _one_parameter(ids)})
        .values(key, "thumb", "score")
        .annotate(n=Count("id"), notes=Count("id", filter=~Q(note="")))
        .order_by()
    )
    for row in rows:
        _count(found[row[key]], row)
    labels = (
        Label.objects.filter(**{f"annotation__{key}__in": _one_parameter(ids)})
        .values(f"annotation__{key}", "name")
        .annotate(n=Count("id"))
        .order_by()
    )
    for row in labels:
        found[row[f"annotation__{key}"]].labels[row["name"]] += row["n"]
    return {k: v for k, v in found.items() if not v.is_empty}


def _one_parameter(ids: list[str]) -> RawSQL:
    """`ids` for an `__in` filter as one bound parameter (sqlite.in_list): the ORM prepares each
    value of a list on its own, ~1 ms for the 500 turns of a page that a live page redraws
    every second."""
    sql, params = in_list(ids, alias="default")
    return RawSQL(sql.removeprefix("(").removesuffix(")"), params)  # RawSQL adds its own


def _count(summary: Summary, row: dict) -> None:
    """Add a grouped row (thumb, score, n annotations, notes of them) to a summary."""
    summary.up += row["n"] if row["thumb"] == 1 else 0
    summary.down += row["n"] if row["thumb"] == -1 else 0
    summary.notes += row["notes"]
    if row["score"] is not None:
        summary.scores += [row["score"]] * row["n"]
    summary.people += row["n"]


def labels_in_use(limit: int = LABELS_OFFERED) -> list[str]:
    """Label names, the most used first (ties by name)."""
    rows = Label.objects.values("name").annotate(n=Count("id")).order_by("-n", "name")[:limit]
    return [row["name"] for row in rows]


# -- Filters: annotations to ledger ids --------------------------------------------------------


@dataclass(frozen=True)
class MarkFilter:
    """Which annotations a filter keeps: a label, a thumb (+1/-1), a note holding text, or any
    mark at all (`annotated`). Empty: no filter."""

    label: str = ""
    thumb: int | None = None
    annotated: bool = False

    def __bool__(self) -> bool:
        return bool(self.label or self.thumb is not None or self.annotated)

    def annotations(self, *, turns: bool | None = None):
        found = Annotation.objects.all()
        if turns is True:
            found = found.exclude(turn_id="")
        elif turns is False:
            found = found.filter(turn_id="")
        if self.label:
            found = found.filter(labels__name=self.label)
        if self.thumb is not None:
            found = found.filter(thumb=self.thumb)
        if self.annotated:
            found = found.filter(marked())
        return found

    def describe(self) -> str:
        parts = []
        if self.label:
            parts.append(f"labelled “{self.label}”")
        if self.thumb == 1:
            parts.append("with a 👍")
        elif self.thumb == -1:
            parts.append("with a 👎")
        if self.annotated and not parts:
            parts.append("annotated")
        return " and ".join(parts)


@dataclass
class Ids:
    """Ledger ids a filter matched, and whether it stopped at the cap."""

    ids: list
    capped: bool


def session_ids(mark: MarkFilter, cap: int = FILTER_IDS_CAP) -> Ids:
    """Sessions holding such an annotation, on the session itself or on one of its turns (in no
    order: the ledger query that uses them orders its page)."""
    rows = mark.annotations().order_by().values_list("session_id", flat=True).distinct()
    found = list(rows[: cap + 1])
    return Ids(found[:cap], len(found) > cap)


def turn_ids(mark: MarkFilter, session_id: str | None = None, cap: int = FILTER_IDS_CAP) -> Ids:
    """(session id, turn id) of the turns holding such an annotation, newest first."""
    found = mark.annotations(turns=True)
    if session_id is not None:
        found = found.filter(session_id=session_id)
    # Newest first; a turn labelled by two people comes once (deduplicated here: DISTINCT with
    # that order would keep both rows).
    rows = found.order_by("-updated_at", "-id").values_list("session_id", "turn_id")
    unique = list(dict.fromkeys(rows[: 2 * cap + 1]))
    return Ids(unique[:cap], len(unique) > cap)


# -- Preferences at branch points --------------------------------------------------------------


def prefer(user, session_id: str, branch_turn_id: str, ranked: list[str], rest: list[str]):
    """Record a person's order of sibling turns at a branch point: `ranked` best first, then
    `rest` (not ordered among themselves) below the last of them. Replaces this person's earlier
    choices between these turns (a pair the other way round goes). Returns the pairs kept."""
    pairs = [
        (better, worse)
        for i, better in enumerate(ranked)
        for worse in [*ranked[i + 1 :], *rest]
        if better != worse
    ]
    involved = {*ranked, *rest}
    now = now_ms()
    with transaction.atomic():
        Preference.objects.filter(
            user=user,
            branch_turn_id=branch_turn_id,
            chosen_turn_id__in=involved,
            rejected_turn_id__in=involved,
        ).delete()
        Preference.objects.bulk_create(
            [
                Preference(
                    user=user,
                    session_id=session_id,
                    branch_turn_id=branch_turn_id,
                    chosen_turn_id=better,
                    rejected_turn_id=worse,
                    created_at=now,
                )
                for better, worse in pairs
            ]
        )
    return pairs


def forget_preferences(user, branch_turn_id: str) -> int:
    deleted, _ = Preference.objects.filter(user=user, branch_turn_id=branch_turn_id).delete()
    return deleted


def preferences_at(branch_turn_ids: Iterable[str]) -> dict[str, list[Preference]]:
    """Everyone's preference pairs at these branch points, by branch point: one query."""
    ids = list(dict.fromkeys(branch_turn_ids))
    found: dict[str, list[Preference]] = defaultdict(list)
    if not ids:
        return {}
    rows = Preference.objects.filter(branch_turn_id__in=ids).select_related("user")
    for preference in rows.order_by("created_at", "id"):
        found[preference.branch_turn_id].append(preference)
    return dict(found)


def preferences_between(a: str, b: str) -> list[Preference]:
    """Everyone's choices between two turns, either way round."""
    pair = Q(chosen_turn_id=a, rejected_turn_id=b) | Q(chosen_turn_id=b, rejected_turn_id=a)
    return list(Preference.objects.filter(pair).select_related("user").order_by("id"))


@dataclass
class Scope:
    """The ledger rows a mark filter keeps, for a walk that meets rows one by one (search): a
    row of an annotated turn, or any row of a session annotated as a whole."""

    turns: set
    sessions: set
    capped: bool

    def holds(self, session_id, turn_id) -> bool:
        return str(turn_id) in self.turns or str(session_id) in self.sessions


def scope(mark: MarkFilter, cap: int = FILTER_IDS_CAP) -> Scope:
    turns = turn_ids(mark, cap=cap)
    sessions = list(
        mark.annotations(turns=False).values_list("session_id", flat=True).distinct()[: cap + 1]
    )
    return Scope(
        {turn for _, turn in turns.ids}, set(sessions[:cap]), turns.capped or len(sessions) > cap
    )


def with_notes(mark: MarkFilter | None = None, session_id: str = ""):
    """Annotations holding a note, newest first (for note search), narrowed by a mark filter
    and a session."""
    found = (mark.annotations() if mark else Annotation.objects.all()).exclude(note="")
    if session_id:
        found = found.filter(session_id=session_id)
    return found.select_related("user").order_by("-updated_at", "-id")


# -- The tree's marks (issue 28): bookmarks by turn, visited turns ------------------------------


def bookmarked_turns(user, session_id: str) -> dict[str, Annotation]:
    """One person's bookmarks in a session, by turn id: one query."""
    found = Annotation.objects.filter(user=user, session_id=session_id, bookmarked=True)
    return {a.turn_id: a for a in found.exclude(turn_id="").order_by("-updated_at", "-id")}


def mark_visited(user, session_id: str, turn_id: str) -> None:
    """Remember that this person opened this turn: one short write (an upsert), no transaction
    held open."""
    now = now_ms()
    Visit.objects.update_or_create(
        user=user, session_id=session_id, turn_id=turn_id,
        defaults={"last_at": now}, create_defaults={"first_at": now, "last_at": now},
    )  # fmt: skip


def visited_turns(user, session_id: str, turn_ids: Iterable[str]) -> set[str]:
    """Which of these turns this person has opened: one query (the ids of a page of rows)."""
    ids = list(turn_ids)
    if not ids:
        return set()
    found = Visit.objects.filter(user=user, session_id=session_id, turn_id__in=_one_parameter(ids))
    return set(found.values_list("turn_id", flat=True))


# -- What datasets are built from -------------------------------------------------------------


@dataclass
class TurnMarks:
    """Everyone's marks on one turn, gathered for a dataset record."""

    turn_id: str
    session_ids: list[str] = field(default_factory=list)  # where it was annotated
    labels: set = field(default_factory=set)
    up: int = 0
    down: int = 0
    scores: list[int] = field(default_factory=list)
    people: list[str] = field(default_factory=list)

    def as_json(self) -> dict:
        return {
            "labels": sorted(self.labels),
            "thumbs_up": self.up,
            "thumbs_down": self.down,
            "scores": self.scores,
            "annotated_by": sorted(set(self.people)),
        }


def marked_turns(labels=(), thumbs_up: bool = False, chunk: int = 1000):
    """The turns holding one of `labels` or (thumbs_up) a 👍, in turn-id order, each with
    everyone's marks on it: read `chunk` turns at a time (a dataset of 100,000 turns holds one
    chunk in memory, never the list)."""
    wanted = Q()
    if labels:
        wanted |= Q(labels__name__in=list(labels))
    if thumbs_up:
        wanted |= Q(thumb=1)
    if not wanted:
        return
    matching = Annotation.objects.exclude(turn_id="").filter(wanted)
    after = None
    while True:
        page = matching if after is None else matching.filter(turn_id__gt=after)
        ids = list(page.order_by("turn_id").values_list("turn_id", flat=True).distinct()[:chunk])
        if not ids:
            return
        found = {turn_id: TurnMarks(turn_id) for turn_id in ids}
        rows = (
            Annotation.objects.filter(turn_id__in=ids)
            .select_related("user")
            .prefetch_related("labels")
            .order_by("id")
        )
        for annotation in rows:
            marks = found[annotation.turn_id]
            if annotation.session_id not in marks.session_ids:
                marks.session_ids.append(annotation.session_id)
            marks.labels |= {label.name for label in annotation.labels.all()}
            marks.up += annotation.thumb == 1
            marks.down += annotation.thumb == -1
            if annotation.score is not None:
                marks.scores.append(annotation.score)
            marks.people.append(annotation.user.get_username())
        yield from (found[turn_id] for turn_id in ids)
        after = ids[-1]


@dataclass
class PairChoice:
    """A preference pair as datasets export it: who chose it (several people may have)."""

    session_id: str
    branch_turn_id: str
    chosen_turn_id: str
    rejected_turn_id: str
    chosen_by: list[str]


def preference_pairs(chunk: int = 1000):
    """Every distinct (branch point, chosen, rejected) with the people who chose it, in that
    order, read a chunk of branch points at a time."""
    after = None
    while True:
        page = (
            Preference.objects.all()
            if after is None
            else Preference.objects.filter(branch_turn_id__gt=after)
        )
        branches = list(
            page.order_by("branch_turn_id")
            .values_list("branch_turn_id", flat=True)
            .distinct()[:chunk]
        )
        if not branches:
            return
        pairs: dict[tuple, PairChoice] = {}
        rows = (
            Preference.objects.filter(branch_turn_id__in=branches)
            .select_related("user")
            .order_by("branch_turn_id", "chosen_turn_id", "rejected_turn_id", "id")
        )
        for p in rows:
            key = (p.branch_turn_id, p.chosen_turn_id, p.rejected_turn_id)
            if key not in pairs:
                pairs[key] = PairChoice(p.session_id, *key, [])
            pairs[key].chosen_by.append(p.user.get_username())
        yield from pairs.values()
        after = branches[-1]
