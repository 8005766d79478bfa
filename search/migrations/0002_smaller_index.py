"""The index's smaller layout (detail=none, one document per ledger row, integers only): the old
tables are dropped and the index is built again from nothing by the next step."""

from django.db import migrations


def recreate_index_tables(apps, schema_editor):
    if schema_editor.connection.vendor in ("sqlite", "postgresql"):
        from search import engine

        with schema_editor.connection.cursor() as cursor:
            engine.recreate_tables(cursor)
    # Forget how far the old index reached: the next step starts again from the first row.
    apps.get_model("search", "IndexState").objects.update(ledger="", anchor={}, marks={})


class Migration(migrations.Migration):
    dependencies = [("search", "0001_initial")]

    operations = [migrations.RunPython(recreate_index_tables, migrations.RunPython.noop)]
