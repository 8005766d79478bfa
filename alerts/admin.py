"""Alert rules are managed in the admin (admins: the admin role holds their permissions)."""

from django.contrib import admin, messages
from django.urls import reverse
from django.utils.html import format_html

from alerts.models import AlertRule
from alerts.rules import Finding, fire, link
from ledgerfacts.timestamps import now_ms


@admin.register(AlertRule)
class AlertRuleAdmin(admin.ModelAdmin):
    list_display = ("name", "kind", "enabled", "where_it_goes", "cooldown_minutes", "alert_log")
    list_filter = ("kind", "enabled")
    search_fields = ("name",)
    actions = ["send_test_alert"]
    fieldsets = [
        (None, {"fields": ("name", "kind", "enabled", "cooldown_minutes")}),
        (
            "A failure rate or stuck requests",
            {"fields": ("dimension", "value", "threshold_percent", "minutes", "min_requests")},
        ),
        ("The cost of the last 24 hours", {"fields": ("cost_usd",)}),
        (
            "Where alerts go",
            {
                "fields": ("webhook_url", "email_to"),
                "description": "Links in alerts start with the BASE_URL setting; email goes"
                " out through Django's mail settings (EMAIL_HOST, …, see the README).",
            },
        ),
    ]

    @admin.display(description="sent to")
    def where_it_goes(self, rule: AlertRule) -> str:
        places = (["webhook"] if rule.webhook_url else []) + rule.recipients
        return ", ".join(places)

    @admin.display(description="log")
    def alert_log(self, rule: AlertRule):
        return format_html('<a href="{}?rule={}">alerts</a>', reverse("alerts:log"), rule.pk)

    def save_model(self, request, obj: AlertRule, form, change) -> None:
        if not change or obj.created_at is None:
            obj.created_at = now_ms()  # a new-issue rule tells of issues first seen after this
        super().save_model(request, obj, form, change)

    def get_exclude(self, request, obj=None):
        return ("created_at",)

    @admin.action(description="Send a test alert through the selected rules")
    def send_test_alert(self, request, queryset) -> None:
        now = now_ms()
        for rule in queryset:
            text = f"test alert of the rule {rule.name!r}: its webhook and addresses work"
            fire(rule, [Finding(f"test:{now}", text, link(reverse("alerts:log")))], now)
        self.message_user(
            request,
            f"{queryset.count()} test alert(s) queued: the background process sends them within"
            " a minute, and the alert log shows how it went.",
            messages.SUCCESS,
        )
