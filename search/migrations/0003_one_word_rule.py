"""Tokens cut in Python by one rule on both engines (search/words.py: folding that keeps words
whole, Chinese and Japanese runs in pairs), rows of several documents marked, and huge values
indexed a slice per step (search_pending): the index is made again, and built again from
nothing by the next step (the background process, ledger_index or a search page)."""

from django.db import migrations


def recreate_index_tables(apps, schema_editor):
    if schema_editor.connection.vendor in ("sqlite", "postgresql"):
        from search import engine

        with schema_editor.connection.cursor() as cursor:
            engine.recreate_tables(cursor)
    apps.get_model("search", "IndexState").objects.update(
        ledger="", anchor={}, marks={}, caught_up_at=None
    )


class Migration(migrations.Migration):
    dependencies = [("search", "0002_smaller_index")]

    operations = [migrations.RunPython(recreate_index_tables, migrations.RunPython.noop)]
