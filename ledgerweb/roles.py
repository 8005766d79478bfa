"""The three roles of ARCHITECTURE.md §7 and the permissions each one holds.

viewer   browse and export
operator a viewer who can also archive/restore sessions, fork from a turn and remove anyone's
         annotation (everyone annotates and edits their own)
admin    an operator who can also mark sessions deleted and run retention (and, as staff, use
         the admin site and the health page)
"""

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
]
ADMIN = [
    *OPERATOR,
    "conversations.mark_session_deleted",
    "pipeline.run_retention",
    "admin.view_logentry",
]

ROLES = {"viewer": VIEWER, "operator": OPERATOR, "admin": ADMIN}


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
