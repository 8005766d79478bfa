"""The three roles of ARCHITECTURE.md §7 and the permissions each one holds.

viewer   browse and export
operator a viewer who can also archive/restore sessions and fork from a turn
admin    an operator who can also mark sessions deleted and run retention (and, as staff, use
         the admin site and the health page)
"""

VIEW_MODELS = {
    "conversations": ["session", "turn", "message", "toolcall", "compaction"],
    "pipeline": ["nexusrequest"],
}
VIEWER = [f"{app}.view_{model}" for app, models in VIEW_MODELS.items() for model in models]
OPERATOR = [*VIEWER, "conversations.archive_session", "conversations.fork_session"]
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


def sync_roles(group_model, permission_model) -> None:
    """Create or update the groups so each holds exactly its role's permissions.

    Takes the models as arguments so the data migration can pass its historical ones.
    """
    for name, codenames in ROLES.items():
        group, _ = group_model.objects.get_or_create(name=name)
        permissions = [
            permission_model.objects.get(content_type__app_label=app, codename=codename)
            for app, codename in (dotted.split(".", 1) for dotted in codenames)
        ]
        group.permissions.set(permissions)
