"""The issues' decisions in the admin, to read: operators change them on the issue's page, which
keeps the history (and Django's admin log says who did what)."""

from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html

from issues.models import Issue, IssueChange


class IssueChangeInline(admin.TabularInline):
    model = IssueChange
    fields = ("at", "action", "detail", "note", "by_name")
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Issue)
class IssueAdmin(admin.ModelAdmin):
    list_display = ("issue_id", "error_stage", "signature", "decision", "merged_into", "page")
    list_filter = ("decision",)
    search_fields = ("issue_id", "signature", "error_stage")
    inlines = [IssueChangeInline]

    @admin.display(description="page")
    def page(self, issue: Issue):
        return format_html('<a href="{}">open</a>', reverse("issues:issue", args=[issue.issue_id]))

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
