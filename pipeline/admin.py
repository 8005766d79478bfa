"""The Nexus Ledger in the admin: read-only, each row linking to its debugging page."""

from django.contrib import admin
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html

from ledgerweb.admin import ReadOnlyLedgerAdmin, when
from ledgerweb.db import LEDGER_WRITE, ledger_connectable, ledger_place
from ledgerweb.roles import RoleRequired
from pipeline.detail import LONG_FIELDS
from pipeline.models import NexusRequest
from pipeline.retention import apply_retention
from pipeline.retention_db import TookTooLong
from pipeline.stages import STAGES, STATUSES

# The dry run counts rows on an index; on a huge ledger the page still ends.
DRY_RUN_TIME_LIMIT_S = 60


class ChoicesFilter(admin.SimpleListFilter):
    """A filter on one column over a fixed list of values."""

    values: tuple[str, ...] = ()

    def lookups(self, request, model_admin):
        return [(value, value) for value in self.values]

    def queryset(self, request, queryset):
        return queryset.filter(**{self.parameter_name: self.value()}) if self.value() else queryset


class StatusFilter(ChoicesFilter):
    title, parameter_name, values = "status", "status", STATUSES


class StageFilter(ChoicesFilter):
    title, parameter_name, values = "stage reached", "stage", STAGES


class ErrorStageFilter(ChoicesFilter):
    title, parameter_name, values = "failed at", "error_stage", STAGES


@admin.register(NexusRequest)
class NexusRequestAdmin(ReadOnlyLedgerAdmin):
    list_display = ["id", "status", "stage", "event_source", "principal_id", "started", "open"]
    # Fixed choices: a field filter would ask the table for its DISTINCT values on every page.
    list_filter = [StatusFilter, StageFilter, ErrorStageFilter]
    search_fields = ["=id", "=event_id", "=principal_id", "=session_key", "=turn_id"]
    ordering = ["-started_at"]

    change_list_template = "pipeline/admin/nexusrequest/change_list.html"

    def download_urls(self, obj) -> dict[str, str]:
        """The request page's downloads of its long fields."""
        page = reverse("pipeline:request", args=[obj.id])
        return {field: f"{page}?download={field}" for field in LONG_FIELDS}

    def get_urls(self):
        dry_run = path(
            "retention/",
            self.admin_site.admin_view(self.retention_view),
            name="pipeline_nexusrequest_retention",
        )
        return [dry_run, *super().get_urls()]

    def retention_view(self, request):
        """What `manage.py ledger_retention` would do now, for admins (a dry run: no change)."""
        if not request.user.has_perm("pipeline.run_retention"):
            raise RoleRequired("admin", "The retention dry run")
        try:
            lines = apply_retention(
                ledger_connectable(LEDGER_WRITE), dry_run=True, time_limit_s=DRY_RUN_TIME_LIMIT_S
            ).lines()
        except TookTooLong:
            lines = [
                f"The dry run took longer than {DRY_RUN_TIME_LIMIT_S} s and was stopped: run"
                " `manage.py ledger_retention --dry-run` instead, which has no time limit."
            ]
        context = {
            **self.admin_site.each_context(request),
            "title": "Retention: what it would do",
            "opts": self.model._meta,
            "lines": lines,
            "ledger": ledger_place(LEDGER_WRITE),  # admins are staff: where it is
        }
        return TemplateResponse(request, "pipeline/admin/nexusrequest/retention.html", context)

    @admin.display(description="started", ordering="started_at")
    def started(self, obj):
        return when(obj.started_at)

    @admin.display(description="")
    def open(self, obj):
        return format_html('<a href="{}">open ↗</a>', reverse("pipeline:request", args=[obj.id]))
