"""The admin site's settings and the pieces every ledger app's admin shares: read-only model
admins with capped counts, and ledger times shown as local wall-clock time."""

import json

from django.contrib import admin, messages
from django.contrib.admin.options import IncorrectLookupParameters
from django.contrib.admin.utils import quote
from django.contrib.admin.views.main import ORDER_VAR, PAGE_VAR, ChangeList
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.db.models import BooleanField, F, Q, TextField, Value
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from django.utils.functional import cached_property
from django.utils.html import format_html
from django.utils.safestring import mark_safe
from django.utils.text import smart_split
from django.utils.translation import gettext as _

from ledgerfacts.timestamps import ms_to_datetime
from ledgerweb import long_values
from ledgerweb.downloads import cut_to_heads, with_heads
from ledgerweb.formatting import ledger_bool
from ledgerweb.paging import capped
from ledgerweb.text import as_text

# The ledger is append-only (seed 000) and ledgerweb deletes nothing: no bulk delete anywhere.
admin.site.disable_action("delete_selected")

PAGINATOR_CAP = 10_000


class CappedPaginator(Paginator):
    """Counts at most PAGINATOR_CAP rows: a page of a million-row table must not count them
    all. The list then offers the first PAGINATOR_CAP rows' pages, says "10,000+", and goes on
    past them a page at a time by keyset (LinkableChangeList)."""

    @cached_property
    def capped_count(self):
        return capped(self.object_list, PAGINATOR_CAP)

    @cached_property
    def count(self) -> int:
        return self.capped_count.value


def _cut_to_a_page(field_name: str):
    """A text column on a row's admin page: its first PAGE_CHARS characters (the row was read
    with only those, downloads.with_heads), and when there is more, how much and a link that
    downloads the whole value where the site has one (a tool call's 60 MB result was a 60 MB
    page)."""

    @admin.display(description=field_name.replace("_", " "))
    def show(obj):
        value = getattr(obj, field_name)
        if value is None:
            return "-"
        shown = format_html('<pre class="admin-long">{}</pre>', as_text(value))
        total = obj.cut_lengths.get(field_name)
        if total is None:
            return shown
        note = render_to_string("_cut_note.html", {
            "shown": len(value), "total": total, "what": field_name.replace("_", " "),
            "href": obj.download_urls.get(field_name),
        })  # fmt: skip
        return shown + mark_safe(note)  # noqa: S308 - a template's own output, escaped there

    return show


def _as_stored(field_name: str):
    """A BOOLEAN column shown as yes / no / — or, when the writer put 2 or 'true' there, as
    stored (Django's boolean icon raises KeyError on anything but True, False and None)."""

    @admin.display(description=field_name.replace("_", " "))
    def show(obj):
        return ledger_bool(getattr(obj, field_name))

    return show


# ?after=… on a change list: where the previous page ended, past the pages the capped count
# numbers (the admin would read an unknown parameter as a filter and refuse it).
KEYSET_VAR = "after"


class LinkableChangeList(ChangeList):
    """A ledger table's change list. Every row can be reached: when the capped count stops at
    PAGINATOR_CAP, its last numbered page links on to the rows after it, a page at a time in
    the list's own order, by keyset (never an OFFSET into millions). Row links that a server
    takes: a row whose id is too long for a link goes by its key (ledgerweb/long_values.py;
    ReadOnlyLedgerAdmin.get_object reads it back)."""

    def get_filters_params(self, params=None):
        lookup = super().get_filters_params(params)
        lookup.pop(KEYSET_VAR, None)
        return lookup

    def get_query_string(self, new_params=None, remove=None):
        """Sorting, filtering or a page number starts from the top again."""
        new_params = dict(new_params or {})
        new_params.setdefault(KEYSET_VAR, None)
        return super().get_query_string(new_params, remove)

    def get_results(self, request):
        super().get_results(request)
        self.count_capped = getattr(self.paginator, "capped_count", None) is not None and (
            self.paginator.capped_count.capped
        )
        self.keyset_mode, self.next_url, self.newest_url = False, None, None
        self.page_range = (
            list(self.paginator.get_elided_page_range(self.page_num)) if self.multi_page else []
        )
        column = self._keyset_column()
        raw = request.GET.get(KEYSET_VAR)
        if raw and column:
            after = _read_cursor(raw)
            self.result_list, last = _keyset_page(self.queryset, column, after, self.list_per_page)
            self.keyset_mode, self.page_range = True, []
            self.newest_url = self.get_query_string({PAGE_VAR: None})
        elif self.multi_page and self.page_num < self.paginator.num_pages:
            self.next_url = self.get_query_string({PAGE_VAR: self.page_num + 1})
            return
        elif self.count_capped and column and self.page_num == self.paginator.num_pages:
            rows = list(self.result_list)
            last = rows[-1] if rows else None
        else:
            return
        if last is not None:
            cursor = long_values.for_link(json.dumps([_stamp(getattr(last, column)), last.pk]))
            self.next_url = self.get_query_string({KEYSET_VAR: cursor, PAGE_VAR: None})

    def _keyset_column(self) -> str | None:
        """The column the list is ordered by when no one chose another (?o=): the admin's
        first ordering field (newest first), else the key."""
        if ORDER_VAR in self.params:
            return None
        ordering = self.model_admin.ordering or ["-pk"]
        first = ordering[0]
        if not isinstance(first, str) or not first.startswith("-"):
            return None  # ascending lists end at their cap: none of ours is
        return first.removeprefix("-")

    def url_for_result(self, result):
        pk = getattr(result, self.pk_attname)
        return reverse(
            f"admin:{self.opts.app_label}_{self.opts.model_name}_change",
            args=(quote(long_values.for_link(pk)),),
            current_app=self.model_admin.admin_site.name,
        )


def _stamp(value):
    """A row's ordering value as a cursor holds it (JSON): a BLOB as text."""
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def _read_cursor(raw: str) -> tuple:
    try:
        stamp, last_pk = json.loads(long_values.resolve(raw))
    except (ValueError, TypeError, long_values.UnknownKey) as error:
        raise IncorrectLookupParameters(f"after={raw[:40]}: not a page link") from error
    if isinstance(stamp, bool) or not isinstance(stamp, int | float | str | None):
        raise IncorrectLookupParameters(f"after={raw[:40]}: not a page link")
    return stamp, last_pk


def _keyset_page(queryset, column: str, after: tuple, size: int) -> tuple[list, object]:
    """The `size` rows after `after` (the last row's (value, key)) newest first by (column,
    key), NULLs last on both engines; and the last row when more follow."""
    stamp, last_pk = after
    ordered = queryset.order_by(F(column).desc(nulls_last=True), F("pk").desc())
    if stamp is None:
        ordered = ordered.filter(**{f"{column}__isnull": True, "pk__lt": last_pk})
    else:
        at = Value(stamp)  # as written: the field would round a REAL value
        ordered = ordered.filter(
            Q(**{f"{column}__lt": at})
            | Q(**{column: at, "pk__lt": last_pk})
            | Q(**{f"{column}__isnull": True})
        )
    rows = list(ordered[: size + 1])
    return rows[:size], (rows[size - 1] if len(rows) > size else None)


class ValuesFilter(admin.AllValuesFieldListFilter):
    """A column's values to filter by (status, persona, role): at most CHOICES of them, each
    shown at most SHOWN characters long, and each link carrying its value by its key when the
    value is too long for a link (a 100,000-character persona made a 600 kB link)."""

    CHOICES = 100
    SHOWN = 80

    def __init__(self, field, request, params, model, model_admin, field_path):
        super().__init__(field, request, params, model, model_admin, field_path)
        self.lookup_choices = list(self.lookup_choices[: self.CHOICES])
        values = self.used_parameters.get(self.lookup_kwarg)
        if values:
            try:
                resolved = [long_values.resolve(str(v)) for v in values]
            except long_values.UnknownKey as error:
                raise admin.options.IncorrectLookupParameters(error) from None
            self.used_parameters[self.lookup_kwarg] = self.lookup_val = resolved

    def choices(self, changelist):
        """As Django's, with each value's link and label made for any length."""
        counts = self.get_facet_queryset(changelist) if changelist.add_facets else None
        kwarg, isnull = self.lookup_kwarg, self.lookup_kwarg_isnull
        yield {
            "selected": self.lookup_val is None and self.lookup_val_isnull is None,
            "query_string": changelist.get_query_string(remove=[kwarg, isnull]),
            "display": _("All"),
        }
        empty = None
        for i, value in enumerate(self.lookup_choices):
            count = f" ({counts[f'{i}__c']})" if counts else ""
            if value is None:
                empty = f"{self.empty_value_display}{count}"
                continue
            value = str(value)
            yield {
                "selected": self.lookup_val is not None and value in self.lookup_val,
                "query_string": changelist.get_query_string(
                    {kwarg: long_values.for_link(value)}, [isnull]
                ),
                "display": _shortened(value, self.SHOWN) + count,
            }
        if empty is not None:
            yield {
                "selected": bool(self.lookup_val_isnull),
                "query_string": changelist.get_query_string({isnull: "True"}, [kwarg]),
                "display": empty,
            }


def _shortened(text, length: int) -> str:
    text = str(text)
    return text if len(text) <= length else f"{text[:length]}… ({len(text):,} characters)"


class ReadOnlyLedgerAdmin(admin.ModelAdmin):
    """Lists and detail pages, no add / change / delete: the ledger belongs to the runtime."""

    list_per_page = 50
    change_list_template = "ledgerweb/admin/change_list.html"
    change_form_template = "ledgerweb/admin/change_form.html"

    object_history_template = "ledgerweb/admin/object_history.html"

    class Media:
        css = {"all": ["css/admin.css"]}  # long values wrap

    show_full_result_count = False  # no count(*) of a million rows on every page
    paginator = CappedPaginator
    # Every term is one more LIKE in one expression: ~1,900 of them make SQLite refuse the
    # query ("Expression tree is too large"). More than this are dropped, and the page says so.
    max_search_terms = 20

    def get_fields(self, request, obj=None):
        return [
            _as_stored(f.name)
            if isinstance(f, BooleanField)
            else _cut_to_a_page(f.name)
            if f.name in self.long_fields()
            else f.name
            for f in self.model._meta.concrete_fields
        ]

    def long_fields(self) -> tuple[str, ...]:
        """The text columns a row's page shows at most a page of: every text column but the
        key (the ledger's text may be megabytes anywhere)."""
        return tuple(
            f.name
            for f in self.model._meta.concrete_fields
            if isinstance(f, TextField) and not f.primary_key
        )

    def download_urls(self, obj) -> dict[str, str]:
        """Where the whole value of each long field downloads from (none by default)."""
        return {}

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

    def get_changelist(self, request, **kwargs):
        return LinkableChangeList

    def get_object(self, request, object_id, from_field=None):
        """The row of a change or history page, whose address may carry its id by its key."""
        try:
            object_id = long_values.resolve(object_id)
        except long_values.UnknownKey:
            return None  # the admin says the object does not exist
        fields = self.long_fields()
        model = self.model
        try:
            obj = with_heads(self.get_queryset(request), fields).get(
                **{from_field or model._meta.pk.name: object_id}
            )
        except (model.DoesNotExist, ValidationError, ValueError):
            return None
        obj.cut_lengths = cut_to_heads(obj, fields)
        obj.download_urls = self.download_urls(obj) if obj.cut_lengths else {}
        return obj

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


from ledgerweb import people_admin  # noqa: E402,F401 - registers People and roles
