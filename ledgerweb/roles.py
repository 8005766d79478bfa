"""The three roles of ARCHITECTURE.md §7 and the permissions each one holds.

viewer   browse and export
operator a viewer who can also archive/restore sessions (in the admin site), fork from a turn,
         remove anyone's annotation (everyone annotates and edits their own) and triage failure
         issues (resolve, ignore, merge)
admin    an operator who can also mark sessions deleted, run retention, see the health page,
         give people their roles and manage alert rules

A role is enough for what it promises: the admin site lets in operators and admins by their
role, without Django's staff flag (docs/decisions.md). A refused page says which role it needs
(RoleRequired) and whom to ask (who_gives_roles).
"""

from django.core.exceptions import PermissionDenied

VIEW_MODELS = {
    "conversations": ["session", "turn", "message", "toolcall", "compaction"],
    "pipeline": ["nexusrequest"],
}
VIEWER = [f"{app}.view_{model}" for app, models in VIEW_MODELS.items() for model in models]
OPERATOR = [
    *VIEWER,
    "conversations.archive_session",
    "conversations.fork_session",
    # Anyone with a role annotates (it changes nothing in the ledger) and edits their own;
    # operators may also remove anyone's (issue 31).
    "annotations.remove_any_annotation",
    "issues.triage_issue",
]
ADMIN = [
    *OPERATOR,
    "conversations.mark_session_deleted",
    "pipeline.run_retention",
    "admin.view_logentry",
    "ledgerweb.view_person",
    "ledgerweb.assign_role",
    "issues.view_issue",
    "issues.view_issuechange",
    *(f"alerts.{do}_alertrule" for do in ("view", "add", "change", "delete")),
    "alerts.view_alert",
]

ROLES = {"viewer": VIEWER, "operator": OPERATOR, "admin": ADMIN}
# What each role adds, as a refused page and the admin's people list say it.
ROLE_PROMISES = {
    "viewer": "browse and export",
    "operator": "also archive, restore and fork, and resolve, ignore and merge issues",
    "admin": "also mark sessions deleted, run retention, see the health page, give roles and"
    " manage alert rules",
}
ASKED = 3  # admins named on a refused page


class RoleRequired(PermissionDenied):
    """Refused for want of a role: the 403 page names the role and whom to ask."""

    def __init__(self, role: str, what: str):
        self.role, self.what = role, what
        super().__init__(f"{what} needs the {role} role.")


def role_of(user) -> str | None:
    """The highest role a user holds (by its permissions: a superuser is an admin)."""
    for name in ("admin", "operator", "viewer"):
        if user.has_perms(ROLES[name]):
            return name
    return None


def may_use_admin_site(user) -> bool:
    """Operators and admins, by their role; staff as Django has it."""
    return user.is_active and (user.is_staff or user.has_perms(OPERATOR))


def may_see_health(user) -> bool:
    return user.is_active and (user.is_staff or user.has_perms(ADMIN))


def who_gives_roles() -> list[str]:
    """The usernames of the first few active admins (by role or superuser), for a refused page."""
    from django.contrib.auth import get_user_model
    from django.db.models import Q

    people = get_user_model().objects.filter(is_active=True)
    admins = people.filter(Q(groups__name="admin") | Q(is_superuser=True)).distinct()
    return list(admins.order_by("username").values_list("username", flat=True)[:ASKED])


def set_role(user, role: str | None) -> None:
    """Make `role` the user's one role (None: no role): the other role groups are left."""
    from django.contrib.auth.models import Group

    others = Group.objects.filter(name__in=ROLES).exclude(name=role or "")
    user.groups.remove(*others)
    if role:
        user.groups.add(Group.objects.get(name=role))


def has_a_role(user) -> bool:
    """A signed-in user in none of the groups (and without their permissions) may see nothing:
    an account alone is not a role (docs/decisions.md). Superusers hold every permission."""
    return user.has_perms(VIEWER)


def sync_roles(group_model, permission_model, *, missing_ok: bool = False) -> None:
    """Create or update the groups so each holds exactly its role's permissions.

    Takes the models as arguments so the data migration can pass its historical ones. A data
    migration passes `missing_ok`: a permission of an app migrated after it does not exist yet,
    and that app's own migration grants it (annotations/migrations/0003_…).
    """
    for name, codenames in ROLES.items():
        group, _ = group_model.objects.get_or_create(name=name)
        permissions = []
        for app, codename in (dotted.split(".", 1) for dotted in codenames):
            found = permission_model.objects.filter(content_type__app_label=app, codename=codename)
            if not found and missing_ok:
                continue
            permissions.append(found.get())
        group.permissions.set(permissions)


def sync_roles_in_migration(apps, schema_editor, *, missing_ok: bool = False) -> None:
    """sync_roles from a data migration. Permissions are normally created after all migrations
    ran; they are created now so the groups can hold them on a fresh database."""
    from django.contrib.auth.management import create_permissions
    from django.contrib.contenttypes.management import create_contenttypes

    using = schema_editor.connection.alias
    for app_config in apps.get_app_configs():
        app_config.models_module = True
        create_contenttypes(app_config, verbosity=0, using=using, apps=apps)
        create_permissions(app_config, verbosity=0, using=using, apps=apps)
        app_config.models_module = None
    group, permission = apps.get_model("auth", "Group"), apps.get_model("auth", "Permission")
    sync_roles(group, permission, missing_ok=missing_ok)


def grant_app_permissions(apps, schema_editor, app_label: str) -> None:
    """A data migration's step for an app migrated after the roles: create its permissions now
    (Django makes them only after every migration) and give each to the groups that hold it in
    ROLES (as annotations/migrations/0003_… does for its one)."""
    from django.contrib.auth.management import create_permissions

    config = apps.get_app_config(app_label)
    config.models_module = True
    create_permissions(config, verbosity=0, using=schema_editor.connection.alias, apps=apps)
    config.models_module = None
    permissions = apps.get_model("auth", "Permission").objects.filter(
        content_type__app_label=app_label
    )
    for group in apps.get_model("auth", "Group").objects.filter(name__in=ROLES):
        wanted = {p.split(".", 1)[1] for p in ROLES[group.name] if p.startswith(app_label + ".")}
        group.permissions.add(*[p for p in permissions if p.codename in wanted])
