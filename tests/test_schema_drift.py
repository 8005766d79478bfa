"""The unmanaged models must mirror the ledger DDL column for column, both ways."""

import pytest
from django.apps import apps
from django.db import models

from ledgerfacts import schema
from ledgerweb.db import in_ledger

# SQLite's declared type for each kind of model field we use.
DECLARED_TYPE = {
    models.TextField: "TEXT",
    models.IntegerField: "INTEGER",
    models.BigIntegerField: "INTEGER",
    models.BooleanField: "BOOLEAN",
}
LEDGER_MODELS = [
    model
    for label in ("conversations", "pipeline")
    for model in apps.get_app_config(label).get_models()
    if in_ledger(model)  # not the pipeline's rollups: those are ours, in Django's database
]


def declared_type(field) -> str:
    if field.is_relation:  # a reference column has the type of the key it points to
        return declared_type(field.target_field)
    for field_class, sql_type in DECLARED_TYPE.items():
        if type(field) is field_class:
            return sql_type
    raise AssertionError(f"{field} is a {type(field).__name__}, which the ledger cannot hold")


def model_columns(model) -> list[schema.Column]:
    return [
        schema.Column(
            name=field.column,
            type=declared_type(field),
            not_null=not field.null,
            primary_key=field.primary_key,
            default=None,
        )
        for field in model._meta.concrete_fields
    ]


def drift(model, ddl_columns) -> list[str]:
    """What differs between a model and the DDL's columns, in both directions."""
    ours = {c.name: (c.type, c.not_null, c.primary_key) for c in model_columns(model)}
    theirs = {c.name: (c.type, c.not_null, c.primary_key) for c in ddl_columns}
    problems = [f"model has {n}, the DDL does not" for n in ours.keys() - theirs.keys()]
    problems += [f"DDL has {n}, the model does not" for n in theirs.keys() - ours.keys()]
    problems += [
        f"{n}: model says {ours[n]}, DDL says {theirs[n]}"
        for n in ours.keys() & theirs.keys()
        if ours[n] != theirs[n]
    ]
    return sorted(problems)


def test_every_ledger_table_has_exactly_one_model():
    tables = sorted(model._meta.db_table for model in LEDGER_MODELS)
    assert tables == sorted(schema.LEDGER_TABLES)


@pytest.mark.parametrize("model", LEDGER_MODELS, ids=lambda m: m._meta.db_table)
def test_model_mirrors_the_ddl_column_for_column(model):
    assert model._meta.managed is False
    assert drift(model, schema.expected_columns()[model._meta.db_table]) == []


@pytest.mark.parametrize("model", LEDGER_MODELS, ids=lambda m: m._meta.db_table)
def test_model_defaults_match_the_ddl_defaults(model):
    ddl_defaults = {
        c.name: c.default.strip("'")
        for c in schema.expected_columns()[model._meta.db_table]
        if c.default is not None
    }
    model_defaults = {
        f.column: str(f.default) for f in model._meta.concrete_fields if f.has_default()
    }
    assert model_defaults == ddl_defaults


def test_drift_is_caught_in_both_directions():
    from sessions.models import Turn

    columns = list(schema.expected_columns()["turns"])
    missing_one = [c for c in columns if c.name != "model"]
    assert drift(Turn, missing_one) == ["model has model, the DDL does not"]

    extra = [*columns, schema.Column("cost_usd", "REAL", False, False, None)]
    assert drift(Turn, extra) == ["DDL has cost_usd, the model does not"]

    nullable_status = [
        schema.Column(c.name, c.type, False, c.primary_key, c.default) if c.name == "status" else c
        for c in columns
    ]
    assert drift(Turn, nullable_status) == [
        "status: model says ('TEXT', True, False), DDL says ('TEXT', False, False)"
    ]


def test_the_ddl_files_hold_the_seed_indexes_and_ours():
    names = {s.split()[2] for s in schema.index_statements(schema.ddl())}
    assert names == {
        "idx_tool_call_source_ids_source",  # ours: a pasted call_id is looked up by it
        "idx_sessions_persona",
        "idx_sessions_routing_key",
        "idx_sessions_updated",
        "idx_turns_session",
        "idx_turns_parent",
        "idx_turns_started",
        "idx_messages_turn",
        "idx_tool_calls_turn",
        "idx_tool_calls_tool",
        "idx_nexus_requests_event",
        "idx_nexus_requests_status",
        "idx_nexus_requests_started",
        "idx_nexus_requests_principal",
        "idx_nexus_requests_session",
        "idx_nexus_requests_turn",
        "idx_nexus_requests_stage",
    }


# -- The PostgreSQL DDL is the SQLite DDL translated, table for table ---------------------------


@pytest.fixture
def both_schemas(postgres_database):
    """(SQLite connection, PostgreSQL connection), each holding the ledger's whole DDL."""
    import sqlite3

    import psycopg

    from ledgerweb.pg_schema import create_postgres_ledger

    lite = sqlite3.connect(":memory:")
    lite.executescript(schema.ddl())
    with psycopg.connect(postgres_database, autocommit=True) as pg:
        create_postgres_ledger(pg)
        yield lite, pg
    lite.close()


def test_postgres_ledger_has_the_same_tables(both_schemas):
    from ledgerweb.pg_schema import postgres_tables

    lite, pg = both_schemas
    assert postgres_tables(pg) == set(schema.LEDGER_TABLES)


# The one allowed difference: PostgreSQL has no implicit rowid, so each of its ledger tables has
# it as a column, unique and numbered at insert (ledgerweb/sql/postgres/rowids.sql), for search.
ROWID = schema.Column("rowid", "INTEGER", True, False, None)


@pytest.mark.parametrize("table", schema.LEDGER_TABLES)
def test_postgres_table_has_the_same_columns_nullability_and_defaults(both_schemas, table):
    from ledgerweb.pg_schema import postgres_columns

    lite, pg = both_schemas
    assert postgres_columns(pg, table) == [*schema.columns_of(lite, table), ROWID]


def test_postgres_ledger_has_the_same_indexes(both_schemas):
    from ledgerweb.pg_schema import postgres_indexes, sqlite_indexes

    lite, pg = both_schemas
    rowid_indexes = {
        name: table for name, (table, columns) in postgres_indexes(pg).items()
        if columns == (("rowid", False),)
    }  # fmt: skip
    assert sorted(rowid_indexes.values()) == sorted(schema.LEDGER_TABLES)
    others = {k: v for k, v in postgres_indexes(pg).items() if k not in rowid_indexes}
    assert others == sqlite_indexes(lite)
    assert len(sqlite_indexes(lite)) == 17  # the seeds' indexes and ours: not an empty comparison


def test_a_postgres_ledger_with_its_rowids_is_not_reported_as_drift(both_schemas):
    from ledgerweb.pg_schema import inspect_postgres_ledger

    lite, pg = both_schemas
    assert inspect_postgres_ledger(pg).mismatches == {}
    pg.execute("ALTER TABLE turns ADD COLUMN cost_usd DOUBLE PRECISION")  # real drift still is
    assert inspect_postgres_ledger(pg).mismatches == {"turns": ["extra column cost_usd"]}
