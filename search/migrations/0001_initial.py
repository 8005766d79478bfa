from django.db import migrations, models


def create_index_tables(apps, schema_editor):
    # FTS5 on SQLite, full-text search on PostgreSQL (engine_postgres.py); nothing elsewhere.
    if schema_editor.connection.vendor in ("sqlite", "postgresql"):
        from search import engine

        with schema_editor.connection.cursor() as cursor:
            engine.create_tables(cursor)


def drop_index_tables(apps, schema_editor):
    if schema_editor.connection.vendor in ("sqlite", "postgresql"):
        from search import engine

        with schema_editor.connection.cursor() as cursor:
            for sql in engine.DROP:
                cursor.execute(sql)


class Migration(migrations.Migration):
    initial = True
    dependencies = []

    operations = [
        migrations.CreateModel(
            name="IndexState",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("ledger", models.TextField(default="")),
                ("anchor", models.JSONField(default=dict)),
                ("marks", models.JSONField(default=dict)),
                ("caught_up_at", models.BigIntegerField(null=True)),
            ],
            options={"db_table": "search_indexstate"},
        ),
        migrations.RunPython(create_index_tables, drop_index_tables),
    ]
