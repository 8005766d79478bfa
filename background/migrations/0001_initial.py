from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True
    dependencies = []

    operations = [
        migrations.CreateModel(
            name="JobStatus",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("ledger", models.TextField()),
                ("name", models.CharField(max_length=100)),
                ("last_started_at", models.BigIntegerField(null=True)),
                ("last_finished_at", models.BigIntegerField(null=True)),
                ("last_message", models.TextField(default="")),
                ("last_ok_at", models.BigIntegerField(null=True)),
                ("last_error", models.TextField(default="")),
                ("last_error_at", models.BigIntegerField(null=True)),
                ("failures", models.BigIntegerField(default=0)),
                ("steps", models.BigIntegerField(default=0)),
            ],
            options={"ordering": ["name"]},
        ),
        migrations.AddConstraint(
            model_name="jobstatus",
            constraint=models.UniqueConstraint(
                fields=("ledger", "name"), name="one_status_per_job"
            ),
        ),
    ]
