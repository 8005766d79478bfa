"""Stored rollups built by the earlier facts queries count differently (NULL error stages and
models folded into '', a flag of 2 not counted, every fired hook credited with a handled
request): they are derived data, so they are dropped and rebuilt as charts load."""

from django.db import migrations


def drop_stored_rollups(apps, schema_editor):
    for model in ("RollupFact", "RollupTimings", "RollupHour"):
        apps.get_model("pipeline", model).objects.all().delete()


class Migration(migrations.Migration):
    dependencies = [("pipeline", "0002_rollups")]

    operations = [migrations.RunPython(drop_stored_rollups, migrations.RunPython.noop)]
