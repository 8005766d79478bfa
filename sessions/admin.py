"""The admin for the Agents Ledger: browse everything, change nothing but a session's status.

The ledger is append-only (seed 000), so nothing here adds, edits or deletes rows: sessions get
archive / restore / mark-deleted actions (status changes through sessions.status_changes), the
other tables are read-only lists that link to their pages in the dashboard.
"""

from dataclasses import dataclass

from django.contrib import admin, messages
from django.db.models import Count, OuterRef, Subquery
from django.db.models.functions import Coalesce
from django.shortcuts import redirect
from django.template.defaultfilters import pluralize
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.timesince import timesince

from ledgerfacts.timestamps import ms_to_datetime
from ledgerweb import sqlite
from ledgerweb.admin import ReadOnlyLedgerAdmin, ValuesFilter, when
from ledgerweb.paging import capped
from ledgerweb.roles import RoleRequired
from sessions.kinds import RoutingKey
from sessions.models import Compaction, Message, Session, ToolCall, Turn
from sessions.status_changes import change_status

DAY_MS = 86_400_000
COUNT_CAP = 100_000
PREVIEW_ROWS = 50  # sessions listed by name on a confirmation page; the rest are counted


MAX_IDLE_DAYS = 36_500  # a century: anything longer is a typing mistake


def idle_days(raw: str) -> tuple[int, str]:
    """The "idle for more than N days" of the archive form, and what is wrong with it (the
    form then previews 30 days and archives nothing)."""
    if raw.isascii() and raw.isdigit() and 1 <= int(raw) <= MAX_IDLE_DAYS:
        return int(raw), ""
    return 30, f"days={raw[:40]!r}: give a whole number of days from 1 to {MAX_IDLE_DAYS:,}."


def idle_for(ms) -> str:
    """How long ago a last-activity time was, in words ("3 months"); "?" for junk."""
    moment = ms_to_datetime(ms)
    return timesince(moment, timezone.now(), depth=2) if moment else "?"


@dataclass(frozen=True)
class PreviewRow:
    """A session as the confirmation pages list it: enough to tell two "Untitled" apart."""

    id: str
    label: str
    status: str
    last_activity: str
    idle: str
    url: str


def preview(sessions, total: int) -> dict:
    """The longest idle sessions first, as rows (`sample`), and how many are not listed."""
    rows = [
        PreviewRow(s.id, s.label or s.routing_key or "", s.status, when(s.updated_at),
                   idle_for(s.updated_at), reverse("sessions:detail", args=[s.id]))
        for s in sessions.order_by("updated_at", "id")[:PREVIEW_ROWS]
    ]  # fmt: skip
    return {"sample": rows, "more": max(0, total - len(rows))}


class IdleFilter(admin.SimpleListFilter):
    title = "last activity"
    parameter_name = "idle"
    AGES = {"week": 7, "month": 30, "quarter": 91}

    def lookups(self, request, model_admin):
        return [
            ("week", "idle for more than a week"),
            ("month", "idle for more than a month"),
            ("quarter", "idle for more than a quarter"),
            ("active-week", "active in the last week"),
        ]

    def queryset(self, request, queryset):
        now = int(timezone.now().timestamp() * 1000)
        if self.value() in self.AGES:
            return queryset.filter(updated_at__lt=now - self.AGES[self.value()] * DAY_MS)
        if self.value() == "active-week":
            return queryset.filter(updated_at__gte=now - 7 * DAY_MS)
        return queryset


@admin.register(Session)
class SessionAdmin(ReadOnlyLedgerAdmin):
    list_display = [
        "title", "persona", "channel", "status", "turn_total", "last_activity", "open",
    ]  # fmt: skip
    list_filter = [("status", ValuesFilter), ("persona", ValuesFilter), IdleFilter]
    search_fields = ["label", "routing_key", "=id"]
    ordering = ["-updated_at"]
    actions = ["archive", "restore", "mark_deleted"]

    def get_queryset(self, request):
        # The turn count of each listed row, in the page's one query (a correlated subquery
        # that SQLite runs only for the rows it returns).
        turns = (
            Turn.objects.filter(session_id=OuterRef("pk"))
            .order_by()
            .values("session_id")
            .annotate(n=Count("*"))
            .values("n")
        )
        # Coalesce: a session without turns counts 0 and sorts first on both engines (SQLite
        # puts NULL first in ascending order, PostgreSQL last).
        return super().get_queryset(request).annotate(turn_count=Coalesce(Subquery(turns), 0))

    # Not named `turns`: the changelist sorts a column named like a model field (here the
    # reverse relation Session.turns) by that field, which joined turns and ordered by turns.id.
    @admin.display(description="turns", ordering="turn_count")
    def turn_total(self, obj):
        return obj.turn_count or 0

    @admin.display(description="session", ordering="label")
    def title(self, obj):
        # With its id: labels repeat ("Untitled"), and the admin must tell the rows apart.
        return format_html(
            '{} <small class="session-id"><code>{}</code></small>',
            obj.label or obj.routing_key,
            obj.id,
        )

    @admin.display(description="channel")
    def channel(self, obj):
        routing = RoutingKey(obj.routing_key)
        return routing.kind if routing.kind != "main" else routing.channel or "—"

    @admin.display(description="last activity", ordering="updated_at")
    def last_activity(self, obj):
        # How long idle, too: a restored session still shows it (a status change is not activity).
        last, idle = when(obj.updated_at), idle_for(obj.updated_at)
        return format_html('{}<br><small class="idle">idle {}</small>', last, idle)

    @admin.display(description="")
    def open(self, obj):
        return format_html('<a href="{}">open ↗</a>', reverse("sessions:detail", args=[obj.id]))

    change_list_template = "sessions/admin/session/change_list.html"

    def get_urls(self):
        idle = path(
            "archive-idle/",
            self.admin_site.admin_view(self.archive_idle_view),
            name="conversations_session_archive_idle",
        )
        return [idle, *super().get_urls()]

    def archive_idle_view(self, request):
        """Archive every active session idle for more than N days, after a preview count."""
        if not self.has_archive_permission(request):
            raise RoleRequired("operator", "Archiving idle sessions")
        raw = (request.POST.get("days") or request.GET.get("days") or "30").strip()
        days, problem = idle_days(raw)
        if problem:  # said, and never acted on: a bad number must not archive by a default
            self.message_user(request, problem, messages.ERROR)
        cutoff = int(timezone.now().timestamp() * 1000) - days * DAY_MS
        idle = Session.objects.filter(status="active", updated_at__lt=cutoff)
        if request.method == "POST" and request.POST.get("confirmed") == "yes" and not problem:
            ids = list(idle.values_list("id", flat=True))
            changed = change_status(ids, "archived", request.user)
            note = (
                f"Archived {changed} session{pluralize(changed)} idle for more than {days}"
                f" day{pluralize(days)}. Nothing was deleted."
            )
            self.message_user(request, note, messages.SUCCESS)
            return redirect("admin:conversations_session_changelist")
        count = capped(idle, COUNT_CAP)
        context = {
            **self.admin_site.each_context(request),
            "title": "Archive idle sessions",
            "opts": self.model._meta,
            "days": days,
            "count": count,
            **preview(idle, count.value),
        }
        return TemplateResponse(request, "sessions/admin/session/archive_idle.html", context)

    # Actions change the status only, after a confirmation page, and are logged.

    def has_archive_permission(self, request):
        return request.user.has_perm("conversations.archive_session")

    def has_mark_deleted_permission(self, request):
        return request.user.has_perm("conversations.mark_session_deleted")

    def has_view_permission(self, request, obj=None):
        return request.user.has_perm("conversations.view_session")

    @admin.action(permissions=["archive"], description="Archive the selected sessions")
    def archive(self, request, queryset):
        return self._confirm_status(request, queryset, "archived", "archive")

    @admin.action(permissions=["archive"], description="Restore the selected sessions (active)")
    def restore(self, request, queryset):
        return self._confirm_status(request, queryset, "active", "restore")

    @admin.action(permissions=["mark_deleted"], description="Mark the selected sessions deleted")
    def mark_deleted(self, request, queryset):
        return self._confirm_status(request, queryset, "deleted", "mark_deleted")

    def _confirm_status(self, request, queryset, status, action):
        ids = list(queryset.values_list("id", flat=True))
        if request.POST.get("confirmed") != "yes":
            context = {
                **self.admin_site.each_context(request),
                "title": f"Set {len(ids)} session{'s' if len(ids) != 1 else ''} to {status}?",
                "opts": self.model._meta,
                **preview(queryset, len(ids)),
                "count": len(ids),
                "ids": ids,
                "status": status,
                "action": action,
            }
            return TemplateResponse(request, "sessions/admin/session/confirm_status.html", context)
        changed = change_status(ids, status, request.user)
        self.message_user(
            request,
            f"{changed} session{'s' if changed != 1 else ''} set to {status}"
            f" ({len(ids) - changed} already were). Nothing was deleted.",
            messages.SUCCESS,
        )
        return None


def _turn_link(turn_id, session_id):
    url = reverse("sessions:turn", args=[session_id, turn_id])
    return format_html('<a href="{}">open ↗</a>', url)


@admin.register(Turn)
class TurnAdmin(ReadOnlyLedgerAdmin):
    list_display = ["id", "session_id", "status", "model", "total_tokens", "started", "open"]
    list_filter = [("status", ValuesFilter)]
    search_fields = ["=id", "=session__id"]
    ordering = ["-started_at"]

    @admin.display(description="started", ordering="started_at")
    def started(self, obj):
        return when(obj.started_at)

    @admin.display(description="")
    def open(self, obj):
        return _turn_link(obj.id, obj.session_id)


def _payload_downloads(obj, kinds: dict[str, str]) -> dict[str, str]:
    """Where a message's or tool call's long fields download whole (the turn page's links)."""
    session_id = Turn.objects.filter(id=obj.turn_id).values_list("session_id", flat=True).first()
    if session_id is None:  # an orphan row: no page of its turn to download from
        return {}
    return {
        field: reverse("sessions:payload", args=[session_id, obj.turn_id, kind, obj.id])
        + "?download=1"
        for field, kind in kinds.items()
    }


@admin.register(Message)
class MessageAdmin(ReadOnlyLedgerAdmin):
    list_display = ["id", "turn_id", "role", "sequence", "excerpt"]
    list_filter = [("role", ValuesFilter)]
    search_fields = ["=id", "=turn__id"]

    def download_urls(self, obj) -> dict[str, str]:
        return _payload_downloads(obj, {"content": "message"})

    @admin.display(description="content")
    def excerpt(self, obj):
        return (obj.content or "")[:120]


@admin.register(ToolCall)
class ToolCallAdmin(ReadOnlyLedgerAdmin):
    list_display = ["id", "turn_id", "tool_name", "status", "sequence", "started"]
    list_filter = [("status", ValuesFilter)]
    search_fields = ["=id", "=turn__id", "tool_name"]
    ordering = ["-started_at"]

    def download_urls(self, obj) -> dict[str, str]:
        return _payload_downloads(obj, {"parameters": "parameters", "result": "result"})

    @admin.display(description="started", ordering="started_at")
    def started(self, obj):
        return when(obj.started_at)


@admin.register(Compaction)
class CompactionAdmin(ReadOnlyLedgerAdmin):
    list_display = ["turn_id", "model", "tokens_before", "tokens_after", "trigger_reason"]

    # The compactions table is optional (ARCHITECTURE.md §2): without it, say so.

    def changelist_view(self, request, extra_context=None):
        return self._table_absent(request) or super().changelist_view(request, extra_context)

    def changeform_view(self, request, object_id=None, form_url="", extra_context=None):
        return self._table_absent(request) or super().changeform_view(
            request, object_id, form_url, extra_context
        )

    def _table_absent(self, request):
        table = self.model._meta.db_table
        if table in sqlite.table_names():
            return None
        context = {
            **self.admin_site.each_context(request),
            "title": "Compactions",
            "opts": self.model._meta,
            "table": table,
        }
        return TemplateResponse(request, "sessions/admin/table_absent.html", context)
