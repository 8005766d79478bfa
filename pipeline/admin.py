"""The Nexus Ledger in the admin: read-only, each row linking to its debugging page."""

from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html

from pipeline.models import NexusRequest
from sessions.admin import ReadOnlyLedgerAdmin, when


@admin.register(NexusRequest)
class NexusRequestAdmin(ReadOnlyLedgerAdmin):
    list_display = ["id", "status", "stage", "event_source", "principal_id", "started", "open"]
    list_filter = ["status", "stage", "error_stage", "event_source"]
    search_fields = ["=id", "=event_id", "=principal_id", "=session_key", "=turn_id"]
    ordering = ["-started_at"]

    @admin.display(description="started", ordering="started_at")
    def started(self, obj):
        return when(obj.started_at)

    @admin.display(description="")
    def open(self, obj):
        return format_html('<a href="{}">open ↗</a>', reverse("pipeline:request", args=[obj.id]))
