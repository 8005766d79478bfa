"""A failure's signature is now the masked first line of its message that holds text: a message
starting with a blank line had the signature "", shared by unrelated failures. Hours stored
before keep the old signatures (in their failure facts and their FailureSignature rows), so they
are forgotten, not their facts (a rebuilt hour replaces those): the summariser builds them again."""

from django.db import migrations


def forget_stored_hours(apps, schema_editor):
    apps.get_model("pipeline", "RollupHour").objects.all().delete()


class Migration(migrations.Migration):
    dependencies = [("pipeline", "0005_failure_signatures")]

    operations = [migrations.RunPython(forget_stored_hours, migrations.RunPython.noop)]
