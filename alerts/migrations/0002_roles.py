"""The admin's role manages alert rules and reads what they sent: the groups get the
permissions this app's models brought (ledgerweb.roles)."""

from django.db import migrations

from ledgerweb.roles import grant_app_permissions


def grant(apps, schema_editor):
    grant_app_permissions(apps, schema_editor, "alerts")


class Migration(migrations.Migration):
    dependencies = [
        ("alerts", "0001_initial"),
        ("ledgerweb", "0001_roles"),
    ]

    operations = [migrations.RunPython(grant, migrations.RunPython.noop)]
