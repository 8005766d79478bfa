"""People and roles in the admin: who has which role, and giving one, for admins by their role
(the `ledgerweb.assign_role` permission). Nothing else of an account changes here: passwords and
the superuser flag stay with Django's own user admin, which only superusers reach."""

from django.contrib import admin, messages

from ledgerweb.models import Person
from ledgerweb.roles import ROLE_PROMISES, ROLES, set_role


def _give(role: str | None):
    label = f"Give the {role} role ({ROLE_PROMISES[role]})" if role else "Take their role away"

    @admin.action(permissions=["assign_role"], description=label)
    def give(modeladmin, request, queryset):
        people = list(queryset)
        if role != "admin" and any(p.pk == request.user.pk for p in people):
            # An admin cannot take their own admin role away by a slip of the checkbox.
            modeladmin.message_user(
                request, "You cannot change your own role: ask another admin.", messages.ERROR
            )
            return
        for person in people:
            set_role(person, role)
        names = ", ".join(p.get_username() for p in people)
        # The admin's message list capitalises a message's first letter: the names go last, as
        # they are spelt (a username is case-sensitive).
        what = f"Given the {role} role" if role else "No role any more"
        modeladmin.message_user(request, f"{what}: {names}.", messages.SUCCESS)

    give.__name__ = f"give_{role or 'no'}_role"
    return give


class RoleFilter(admin.SimpleListFilter):
    title, parameter_name = "role", "role"

    def lookups(self, request, model_admin):
        return [(name, name) for name in ROLES] + [("none", "no role")]

    def queryset(self, request, queryset):
        if self.value() in ROLES:
            return queryset.filter(groups__name=self.value())
        if self.value() == "none":
            return queryset.exclude(groups__name__in=ROLES).exclude(is_superuser=True)
        return queryset


@admin.register(Person)
class PersonAdmin(admin.ModelAdmin):
    list_display = ["username", "role", "is_active", "last_login"]
    list_filter = [RoleFilter]
    search_fields = ["username", "email"]
    ordering = ["username"]
    actions = [_give(name) for name in ROLES] + [_give(None)]

    class Media:
        css = {"all": ["css/admin.css"]}  # the action menu's long choices stay in the list

    @admin.display(description="role")
    def role(self, obj):
        if obj.is_superuser:
            return "admin (superuser)"
        held = {group.name for group in obj.groups.all()}  # fetched with the page's rows
        return next((name for name in ("admin", "operator", "viewer") if name in held), "—")

    def get_queryset(self, request):
        return super().get_queryset(request).prefetch_related("groups")

    def has_assign_role_permission(self, request) -> bool:
        return request.user.has_perm("ledgerweb.assign_role")

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    def get_fields(self, request, obj=None):
        return ["username", "role", "is_active", "last_login", "date_joined"]
