"""Datasette plugin for bench.scale_bench: the SQL functions our pages call, so Datasette can run
the very same statements (error signatures group and filter failures)."""

from datasette import hookimpl

from pipeline.signatures import SQL_FUNCTION, signature


@hookimpl
def prepare_connection(conn):
    conn.create_function(SQL_FUNCTION, 1, signature, deterministic=True)
