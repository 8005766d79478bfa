from django.apps import AppConfig
from django.db.backends.signals import connection_created


class PipelineConfig(AppConfig):
    name = "pipeline"
    verbose_name = "Nexus Ledger"

    def ready(self) -> None:
        connection_created.connect(register_sql_functions, dispatch_uid="pipeline.sql_functions")
        from pipeline import summariser

        summariser.register_job()


def register_sql_functions(sender, connection, **kwargs) -> None:
    """Make error signatures available in SQL, so grouping failures by signature (charts) and
    filtering by one (the request list) use the very same function and always agree."""
    if connection.vendor != "sqlite":
        return
    from pipeline.rollups import CHECKSUM_FUNCTION, row_checksum
    from pipeline.signatures import SQL_FUNCTION, signature

    connection.connection.create_function(SQL_FUNCTION, 1, signature, deterministic=True)
    # The rollups' content checksum of a row (pipeline/rollups.py).
    connection.connection.create_function(CHECKSUM_FUNCTION, 1, row_checksum, deterministic=True)
