"""Create the viewer, operator and admin groups with their permissions."""

from django.contrib.auth.management import create_permissions
from django.contrib.contenttypes.management import create_contenttypes
from django.db import migrations

from ledgerweb.roles import ROLES, sync_roles


def create_roles(apps, schema_editor):
    # Permissions are normally created after all migrations ran; create them now so the groups
    # can hold them on a fresh database.
    for app_config in apps.get_app_configs():
        app_config.models_module = True
        create_contenttypes(app_config, verbosity=0, using=schema_editor.connection.alias, apps=apps)
        create_permissions(app_config, verbosity=0, using=schema_editor.connection.alias, apps=apps)
        app_config.models_module = None

    # missing_ok: the permissions of apps migrated later are granted by their own migrations.
    sync_roles(
        apps.get_model("auth", "Group"), apps.get_model("auth", "Permission"), missing_ok=True
    )


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
