from django.conf import settings
from django.db import models


class Annotation(models.Model):
    """One person's marks on a session (turn_id '') or on one of its turns. Ids are the
    ledger's, kept as text: nothing here points into the ledger by a foreign key, and a turn seen
    through a fork's session is annotated under the session it was looked at in."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    session_id = models.TextField()
    turn_id = models.TextField(default="", blank=True)  # '' = the session itself
    thumb = models.SmallIntegerField(null=True, blank=True)  # +1 👍, -1 👎, None: not given
    score = models.SmallIntegerField(null=True, blank=True)  # 1-5, None: not given
    note = models.TextField(default="", blank=True)  # Markdown, rendered sanitised
    bookmarked = models.BooleanField(default=False)
    bookmark_note = models.CharField(max_length=200, default="", blank=True)
    created_at = models.BigIntegerField()  # Unix ms, as the ledger's times
    updated_at = models.BigIntegerField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["user", "session_id", "turn_id"], name="one_annotation_per_person"
            )
        ]
        indexes = [
            models.Index(fields=["session_id", "turn_id"], name="annotation_target"),
            # A turn's marks wherever they were made (a fork shows its origin's turns).
            models.Index(fields=["turn_id"], name="annotation_turn"),
            # "Sessions with a 👎", "👍 turns" (filters, datasets): by thumb, then target.
            models.Index(fields=["thumb", "session_id"], name="annotation_thumb"),
            models.Index(fields=["updated_at"], name="annotation_updated"),
        ]
        permissions = [("remove_any_annotation", "Can remove anyone's annotation")]

    def __str__(self) -> str:
        return f"{self.user} on {self.session_id}/{self.turn_id or '(session)'}"


class Label(models.Model):
    """A label on an annotation ("wrong-tool"), a row of its own so that "turns labelled X" is an
    indexed lookup on any database."""

    annotation = models.ForeignKey(Annotation, on_delete=models.CASCADE, related_name="labels")
    name = models.CharField(max_length=100, db_index=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["annotation", "name"], name="one_label_per_name")
        ]

    def __str__(self) -> str:
        return self.name


class Preference(models.Model):
    """One person's choice at a branch point: of two sibling turns (two answers to one context,
    or two branches), `chosen` is better than `rejected`. A ranking of N siblings is its
    N·(N-1)/2 pairs; marking one the best, a pair with each other sibling. The branch point is
    the siblings' common parent; ids are the ledger's, as text."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    session_id = models.TextField()  # the session it was chosen in
    branch_turn_id = models.TextField()  # the siblings' parent
    chosen_turn_id = models.TextField()
    rejected_turn_id = models.TextField()
    created_at = models.BigIntegerField()  # Unix ms

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["user", "branch_turn_id", "chosen_turn_id", "rejected_turn_id"],
                name="one_preference_per_pair",
            )
        ]
        indexes = [
            models.Index(fields=["branch_turn_id"], name="preference_branch"),
            models.Index(fields=["session_id"], name="preference_session"),
        ]

    def __str__(self) -> str:
        return f"{self.user}: {self.chosen_turn_id} over {self.rejected_turn_id}"


class Visit(models.Model):
    """A turn a person has opened (its panel or its page), so the tree can mark where they have
    been (issue 28). One row per person and turn: the first and the latest time."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    session_id = models.TextField()
    turn_id = models.TextField()
    first_at = models.BigIntegerField()  # Unix ms
    last_at = models.BigIntegerField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["user", "session_id", "turn_id"], name="one_visit_per_person_and_turn"
            )
        ]

    def __str__(self) -> str:
        return f"{self.user} saw {self.session_id}/{self.turn_id}"
