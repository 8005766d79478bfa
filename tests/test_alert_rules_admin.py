"""Alert rules are managed in the admin by admins (issue 30, item 3): added with what their kind
needs (refused with the field named otherwise), a test alert sent through them; operators see
none of it; the issues' decisions are there to read."""

import pytest
from django.urls import reverse

from alerts.models import Alert, AlertRule, Delivery
from issues.models import Issue
from ledgerfacts.timestamps import now_ms

pytestmark = pytest.mark.django_db(databases="__all__")
RATE = {
    "name": "Discord failing", "kind": "failure_rate", "enabled": "on", "cooldown_minutes": "60",
    "dimension": "channel", "value": "discord", "threshold_percent": "20", "minutes": "10",
    "min_requests": "5", "cost_usd": "", "webhook_url": "https://chat.example/hook",
    "email_to": "ops@example.org, oncall@example.org",
}  # fmt: skip


def test_an_admin_adds_a_rule_and_sends_a_test_alert_through_it(client, admin_user):
    client.force_login(admin_user)
    before = now_ms()
    response = client.post(reverse("admin:alerts_alertrule_add"), RATE)
    assert response.status_code == 302
    rule = AlertRule.objects.get()
    assert rule.recipients == ["ops@example.org", "oncall@example.org"]
    assert before <= rule.created_at <= now_ms()  # a new-issue rule tells of later issues only

    response = client.post(
        reverse("admin:alerts_alertrule_changelist"),
        {"action": "send_test_alert", "_selected_action": [rule.pk]},
    )
    assert response.status_code == 302
    alert = Alert.objects.get()
    assert alert.text == "test alert of the rule 'Discord failing': its webhook and addresses work"
    assert sorted(Delivery.objects.values_list("channel", "target", "status")) == [
        ("email", "oncall@example.org", "pending"),
        ("email", "ops@example.org", "pending"),
        ("webhook", "https://chat.example/hook", "pending"),
    ]
    page = client.get(reverse("admin:alerts_alertrule_changelist")).content.decode()
    assert "Discord failing" in page and f"{reverse('alerts:log')}?rule={rule.pk}" in page


def test_a_rule_missing_what_its_kind_needs_is_refused_in_the_admin(client, admin_user):
    client.force_login(admin_user)
    response = client.post(reverse("admin:alerts_alertrule_add"), RATE | {"dimension": ""})
    assert response.status_code == 200
    assert "A failure rate is of a stage, a channel or a persona." in response.content.decode()
    assert not AlertRule.objects.exists()


def test_operators_manage_no_alert_rule(client, operator):
    client.force_login(operator)
    assert client.get(reverse("admin:alerts_alertrule_changelist")).status_code == 403
    assert client.post(reverse("admin:alerts_alertrule_add"), RATE).status_code == 403
    assert not AlertRule.objects.exists()


def test_the_issues_decisions_are_in_the_admin_to_read(client, admin_user):
    Issue.objects.create(ledger="x", issue_id="0123456789abcdef", error_stage="runAgent",
                         signature="Tool crashed", decision="resolved")  # fmt: skip
    client.force_login(admin_user)
    page = client.get(reverse("admin:issues_issue_changelist")).content.decode()
    assert "0123456789abcdef" in page and "/pipeline/issues/0123456789abcdef/" in page
    assert client.get(reverse("admin:issues_issue_add")).status_code == 403
