"""Create the viewer, operator and admin groups with their permissions."""

from django.db import migrations

from ledgerweb.roles import ROLES, sync_roles_in_migration


def create_roles(apps, schema_editor):
    # missing_ok: the permissions of apps (and models) migrated later are granted by their own
    # migrations (annotations 0003, ledgerweb 0004).
    sync_roles_in_migration(apps, schema_editor, missing_ok=True)


def remove_roles(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(name__in=ROLES).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("admin", "0003_logentry_add_action_flag_choices"),
        ("conversations", "0001_initial"),
        ("pipeline", "0001_initial"),
    ]

    operations = [migrations.RunPython(create_roles, remove_roles)]
