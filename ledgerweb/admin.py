"""The admin site's settings and the pieces every ledger app's admin shares: read-only model
admins with capped counts, and ledger times shown as local wall-clock time."""

from django.contrib import admin, messages
from django.core.paginator import Paginator
from django.db.models import BooleanField
from django.utils import timezone
from django.utils.functional import cached_property
from django.utils.text import smart_split

from ledgerfacts.timestamps import ms_to_datetime
from ledgerweb.formatting import ledger_bool
from ledgerweb.paging import capped

# The ledger is append-only (seed 000) and ledgerweb deletes nothing: no bulk delete anywhere.
admin.site.disable_action("delete_selected")
admin.site.site_header = "ledgerweb admin"
admin.site.site_title = "ledgerweb"

PAGINATOR_CAP = 10_000


class CappedPaginator(Paginator):
    """Counts at most PAGINATOR_CAP rows: a page of a million-row table must not count them
    all (the list then offers the first PAGINATOR_CAP rows' pages, and search narrows)."""

    @cached_property
    def count(self) -> int:
        return capped(self.object_list, PAGINATOR_CAP).value


def _as_stored(field_name: str):
    """A BOOLEAN column shown as yes / no / — or, when the writer put 2 or 'true' there, as
    stored (Django's boolean icon raises KeyError on anything but True, False and None)."""

    @admin.display(description=field_name.replace("_", " "))
    def show(obj):
        return ledger_bool(getattr(obj, field_name))

    return show


class ReadOnlyLedgerAdmin(admin.ModelAdmin):
    """Lists and detail pages, no add / change / delete: the ledger belongs to the runtime."""

    list_per_page = 50
    show_full_result_count = False  # no count(*) of a million rows on every page
    paginator = CappedPaginator
    # Every term is one more LIKE in one expression: ~1,900 of them make SQLite refuse the
    # query ("Expression tree is too large"). More than this are dropped, and the page says so.
    max_search_terms = 20

    def get_fields(self, request, obj=None):
        return [
            _as_stored(f.name) if isinstance(f, BooleanField) else f.name
            for f in self.model._meta.concrete_fields
        ]

    def get_search_results(self, request, queryset, search_term):
        terms = list(smart_split(search_term))
        if len(terms) > self.max_search_terms:
            self.message_user(
                request,
                f"Searched for the first {self.max_search_terms} of {len(terms):,} terms;"
                " the rest were left out. Narrow the search.",
                messages.WARNING,
            )
            search_term = " ".join(terms[: self.max_search_terms])
        return super().get_search_results(request, queryset, search_term)

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


def when(ms) -> str:
    """A ledger time as local wall-clock time for an admin column; junk shown as stored."""
    moment = ms_to_datetime(ms)
    return timezone.localtime(moment).strftime("%Y-%m-%d %H:%M") if moment else str(ms)
