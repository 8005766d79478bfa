"""Alert rules, what they fired and its deliveries: ours, in ledgerweb's own database."""

from django.core.exceptions import ValidationError
from django.db import models

TimestampMs = models.BigIntegerField


class AlertRule(models.Model):
    """One rule: when it fires, and where its alerts go."""

    NEW_ISSUE = "new_issue"
    REGRESSION = "regression"
    FAILURE_RATE = "failure_rate"
    STUCK = "stuck"
    DAILY_COST = "daily_cost"
    KINDS = [
        (NEW_ISSUE, "a new issue"),
        (REGRESSION, "a resolved issue failing again (regression)"),
        (FAILURE_RATE, "a failure rate above a threshold"),
        (STUCK, "requests stuck in processing"),
        (DAILY_COST, "the cost of the last 24 hours above an amount"),
    ]
    STAGE, CHANNEL, PERSONA = "stage", "channel", "persona"
    DIMENSIONS = [
        (STAGE, "failed stage"),
        (CHANNEL, "channel (event source)"),
        (PERSONA, "persona"),
    ]

    name = models.CharField(max_length=200)
    kind = models.CharField(max_length=20, choices=KINDS)
    enabled = models.BooleanField(default=True)
    # A failure rate: of which stage, channel or persona ("": each one), over how long, above
    # what share, counting only windows with at least `min_requests` requests.
    dimension = models.CharField(max_length=10, choices=DIMENSIONS, blank=True)
    value = models.CharField(
        max_length=500, blank=True, help_text="One stage, channel or persona; empty: each one."
    )
    threshold_percent = models.FloatField(null=True, blank=True)
    minutes = models.PositiveIntegerField(
        null=True, blank=True,
        help_text="A failure rate: over the last N minutes. Stuck: processing for longer.",
    )  # fmt: skip
    min_requests = models.PositiveIntegerField(default=10)
    cost_usd = models.DecimalField(max_digits=14, decimal_places=4, null=True, blank=True)
    cooldown_minutes = models.PositiveIntegerField(
        default=60, help_text="At most one alert per issue (or per rule) this often."
    )
    webhook_url = models.URLField(
        max_length=2000, blank=True,
        help_text="Gets a JSON POST whose 'text' a chat tool shows (Slack, Mattermost…).",
    )  # fmt: skip
    email_to = models.TextField(blank=True, help_text="Addresses, comma-separated.")
    created_at = TimestampMs()

    class Meta:
        ordering = ["name", "id"]

    def __str__(self) -> str:
        return self.name

    @property
    def recipients(self) -> list[str]:
        return [a.strip() for a in self.email_to.split(",") if a.strip()]

    def clean(self) -> None:
        problems = {}
        if self.kind == self.FAILURE_RATE:
            if not self.dimension:
                problems["dimension"] = "A failure rate is of a stage, a channel or a persona."
            if self.threshold_percent is None or not 0 <= self.threshold_percent < 100:
                problems["threshold_percent"] = "A share from 0 to 100 (percent)."
        if self.kind in (self.FAILURE_RATE, self.STUCK) and not self.minutes:
            problems["minutes"] = "How many minutes."
        if self.kind == self.DAILY_COST and (self.cost_usd is None or self.cost_usd < 0):
            problems["cost_usd"] = "An amount in USD."
        if not self.webhook_url and not self.recipients:
            problems["webhook_url"] = "Give a webhook, an email address, or both."
        if problems:
            raise ValidationError(problems)


class Alert(models.Model):
    """What a rule fired: its words, its link back, and the issues or values it is about."""

    ledger = models.TextField()  # ledgerweb.db.ledger_identity()
    rule = models.ForeignKey(AlertRule, null=True, on_delete=models.SET_NULL)
    rule_name = models.CharField(max_length=200)  # kept when the rule is deleted
    kind = models.CharField(max_length=20)
    subjects = models.JSONField(default=list)  # issue ids, "channel:discord", "stuck", "cost"
    text = models.TextField()
    url = models.TextField()  # the issue, request or page it links to (absolute)
    fired_at = TimestampMs()

    class Meta:
        ordering = ["-fired_at", "-id"]
        indexes = [models.Index(fields=["ledger", "fired_at"], name="alert_fired")]
        # A JSONField's system check asks the database; this spares a fresh checkout (no var/
        # yet) a connection on every manage.py command, as ledgerweb.HealthReport does.
        required_db_features = {"supports_json_field"}

    def __str__(self) -> str:
        return self.text[:100]


class Delivery(models.Model):
    """One alert sent to one place, tried again with backoff while it fails."""

    PENDING, SENT, FAILED = "pending", "sent", "failed"
    WEBHOOK, EMAIL = "webhook", "email"

    alert = models.ForeignKey(Alert, on_delete=models.CASCADE, related_name="deliveries")
    channel = models.CharField(max_length=10)  # webhook or email
    target = models.TextField()  # the URL or the address
    status = models.CharField(max_length=10, default=PENDING)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = TimestampMs()
    last_error = models.TextField(blank=True, default="")
    sent_at = TimestampMs(null=True)

    class Meta:
        indexes = [models.Index(fields=["status", "next_attempt_at"], name="delivery_due")]

    def __str__(self) -> str:
        return f"{self.channel} to {self.target}: {self.status}"


class Cooldown(models.Model):
    """When a rule last alerted about one subject (an issue, a value, itself), so that it alerts
    at most once per cooldown, never on every evaluation."""

    ledger = models.TextField()
    rule = models.ForeignKey(AlertRule, on_delete=models.CASCADE)
    subject = models.CharField(max_length=600)
    alerted_at = TimestampMs()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["ledger", "rule", "subject"], name="one_cooldown")
        ]
