"""Operators and admins may remove anyone's annotation (ledgerweb/roles.py).

Adds the one permission to the groups that hold it in ROLES rather than syncing every role: a
full sync here would need the permissions of apps whose migrations may not have run yet."""

from django.contrib.auth.management import create_permissions
from django.db import migrations

CODENAME = "remove_any_annotation"


def grant(apps, schema_editor):
    from ledgerweb.roles import ROLES

    config = apps.get_app_config("annotations")
    config.models_module = True
    create_permissions(config, verbosity=0, using=schema_editor.connection.alias, apps=apps)
    config.models_module = None
    permission = apps.get_model("auth", "Permission").objects.get(
        content_type__app_label="annotations", codename=CODENAME
    )
    for group in apps.get_model("auth", "Group").objects.all():
        if f"annotations.{CODENAME}" in ROLES.get(group.name, []):
            group.permissions.add(permission)


def revoke(apps, schema_editor):
    apps.get_model("auth", "Permission").objects.filter(
        content_type__app_label="annotations", codename=CODENAME
    ).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("annotations", "0002_marks_and_preferences"),
        ("ledgerweb", "0001_roles"),
    ]

    operations = [migrations.RunPython(grant, revoke)]
