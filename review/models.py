from django.conf import settings
from django.db import models


class Queue(models.Model):
    """A saved selection, frozen into items when it is made (the page says from what)."""

    name = models.CharField(max_length=200)
    source = models.CharField(max_length=20)  # failed / label / search / branches
    params = models.JSONField(default=dict)  # what the selection was: window, persona, label, q
    description = models.CharField(max_length=500, default="")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.BigIntegerField()  # Unix ms
    total = models.IntegerField(default=0)
    capped = models.BooleanField(default=False)  # the selection held more than was taken

    class Meta:
        # A JSONField's system check asks the database; this spares a fresh checkout (no var/
        # yet) a connection on every manage.py command, as ledgerweb.HealthReport does.
        required_db_features = {"supports_json_field"}

    def __str__(self) -> str:
        return self.name


class Item(models.Model):
    """One turn (to annotate) or branch point (to prefer among its answers) of a queue."""

    OPEN, DONE, SKIPPED = "open", "done", "skipped"
    TURN, BRANCH = "turn", "branch"

    queue = models.ForeignKey(Queue, on_delete=models.CASCADE, related_name="items")
    position = models.IntegerField()
    kind = models.CharField(max_length=10, default=TURN)
    session_id = models.TextField()
    turn_id = models.TextField()
    state = models.CharField(max_length=10, default=OPEN)
    claimed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    claimed_at = models.BigIntegerField(null=True, blank=True)
    done_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    done_at = models.BigIntegerField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["queue", "position"], name="one_item_per_position")
        ]
        indexes = [models.Index(fields=["queue", "state", "position"], name="review_next_item")]

    def __str__(self) -> str:
        return f"{self.queue_id}#{self.position} {self.kind} {self.turn_id}"
